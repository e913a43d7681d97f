// Perplexity of a model on documents at a context length, with disjoint or strided windows (the
// sliding-window procedure of HF's perplexity guide); the documents are io::text_documents_read's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

// The documents of a text file encoded by one model's tokenizer (once for every context length).
struct PerplexityText {
  std::string name;                       // the file: errors and warnings name it
  std::vector<std::vector<int32_t>> ids;  // one list per document
  int64_t bytes = 0;                      // UTF-8 bytes of the documents
};

// Each document encoded on its own, with the tokenizer's special tokens when `add_special_tokens`
// (transformers' add_special_tokens=True: BOS where its post-processor adds one), else none.
PerplexityText perplexity_text_encode(const io::Tokenizer& tokenizer, const std::vector<std::string>& documents,
                                      bool add_special_tokens, std::string name);

// Before any window is scored: throws std::invalid_argument naming the file when it gives no
// token to score (no document of 2 tokens or more) or, for some ctx_len of `ctx_lens`, fewer tokens
// in all than one window; when no document fills a window of some ctx_len (every window shorter:
// not the perplexity at that context), prints a `linear-ard: warning:` line on stderr (rank 0 only
// under torchrun).
void perplexity_text_check(const EvalModel& model, const PerplexityText& text, const std::vector<int64_t>& ctx_lens);

struct PerplexityOptions {
  int64_t ctx_len = 0;
  int64_t stride = 0;           // 0: ctx_len (disjoint windows)
  int64_t batch_size = 1;       // windows per forward
  bool progress = false;        // progress lines on stderr
  // When set: also the mean KL(p_reference || p_model) of the next-token distributions over the same
  // scored tokens (token_scores_compute's kl), e.g. a restored model's distance from the native one.
  const EvalModel* kl_reference = nullptr;
};

struct PerplexityResult {
  int64_t ctx_len = 0, stride = 0;
  int64_t documents = 0, windows = 0;
  int64_t tokens = 0;        // tokens scored
  int64_t bytes = 0;         // UTF-8 bytes of the documents
  double nll = 0;            // summed negative log-likelihood (nats)
  double ppl = 0;            // exp(nll / tokens)
  double bits_per_byte = 0;  // nll / ln 2 / bytes
  double seconds = 0;
  double tokens_per_s = 0;   // tokens fed through the model per second
  std::optional<double> kl;  // mean KL to options.kl_reference (nats per scored token), when asked
};

// Each document is encoded on its own and cut into windows as HF's guide does: window k starts at
// k * stride and ends at min(start + ctx_len, n); it scores the tokens past the previous window's
// end (all of its tokens but the first, for the first window and for disjoint windows). The last
// window is the one reaching the document's end. Throws std::invalid_argument naming the file when
// there is no window (perplexity_text_check's first error), never a perplexity of 0; throws
// std::runtime_error naming the model when the perplexity or the KL is not finite.
PerplexityResult perplexity_compute(const EvalModel& model, const PerplexityText& text, const PerplexityOptions& options);

}  // namespace linear_ard::eval

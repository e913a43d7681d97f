// Perplexity of a model on documents at a context length, with disjoint or strided windows (the
// sliding-window procedure of HF's perplexity guide), and the documents it reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"

namespace linear_ard::eval {

// `path` ending in .jsonl: one document per line from its string "text" field; any other file is
// one document. Throws std::invalid_argument naming file and line for a line that is not a JSON
// object with a string "text".
std::vector<std::string> text_documents_read(const std::string& path);

struct PerplexityOptions {
  int64_t ctx_len = 0;
  int64_t stride = 0;           // 0: ctx_len (disjoint windows)
  int64_t batch_size = 1;       // windows per forward
  // Each document is encoded with the tokenizer's special tokens (transformers'
  // add_special_tokens=True: BOS where its post-processor adds one); false: none.
  bool add_special_tokens = true;
  bool progress = false;  // progress lines on stderr
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
};

// Each document is encoded on its own and cut into windows as HF's guide does: window k starts at
// k * stride and ends at min(start + ctx_len, n); it scores the tokens past the previous window's
// end (all of its tokens but the first, for the first window and for disjoint windows). The last
// window is the one reaching the document's end.
PerplexityResult perplexity_compute(const EvalModel& model, const std::vector<std::string>& documents,
                                    const PerplexityOptions& options);

}  // namespace linear_ard::eval

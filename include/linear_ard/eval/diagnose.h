// diagnose: the damage each candidate RoPE scaling does to a native model before any training — KL
// to the native model and perplexity at a short context, passkey retrieval at L/4, L/2 and L, and
// the Q/Q, K/K, V/V relation KL between native and scaled (the quantity LinearARD minimises) by
// layer — with the recommendation rule, the JSON report and the table (docs/diagnose.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/eval/eval_model.h"
#include "linear_ard/io/hf_folder.h"
#include "linear_ard/io/text_dataset.h"

namespace linear_ard::eval {

// The candidate names, in the report's order: pi (linear), yarn, ntk (dynamic), llama3, longrope.
const std::vector<std::string>& diagnose_scaling_names();

// The HF rope dict of candidate `name` at `factor` for `teacher` (native RoPE, native length its
// max_position_embeddings), built as transformers builds that rope_type for such a model:
//   pi       {rope_type: linear, factor}
//   ntk      {rope_type: dynamic, factor}
//   yarn     {rope_type: yarn, factor, original_max_position_embeddings}
//   llama3   {rope_type: llama3, factor, low_freq_factor: 1, high_freq_factor: 4, original_...}
//            (Llama 3.1's bands)
//   longrope {rope_type: longrope, factor, short_factor: all 1, long_factor, original_...}: below
//            the native length the native frequencies; past it, per rotary pair, the ratio of the
//            native frequency to YaRN's at this factor (the ramp LongRoPE's search starts from;
//            diagnose does not run that search).
// Throws std::invalid_argument naming `name` for an unknown one.
nlohmann::json diagnose_scaling_rope(const std::string& name, const model::ModelConfig& teacher, double factor);

struct DiagnoseOptions {
  int64_t length = 0;                   // target context L; the factor is L / native
  std::vector<std::string> scalings;    // diagnose_scaling_names() entries
  int64_t ctx = 0;                      // short context C of KL, perplexity and relation KL
  int64_t blocks = 4;                   // at most this many blocks of C tokens from the text
  int64_t batch_size = 1;               // blocks per forward
  int64_t passkey_samples = 1;          // prompts per passkey length and depth
  std::vector<double> passkey_depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  uint64_t seed = 0;                    // first passkey prompt's seed
  bool all_layers = false;              // relation KL of every layer, else the final layer's
  int64_t relation_length = 0;          // > 0: also the final layer's relation KL on one block of it
  double margin = 10.0;                 // recommendation: passkey points from the best at L
  bool progress = false;                // progress lines on stderr
};

// Relation KL (nats, mean over rows, heads and blocks; causal) of each layer in `layers`.
struct DiagnoseRelation {
  std::vector<int64_t> layers;
  std::vector<double> q, k, v;
};

// One model's measurements; the native model's row has kl 0, no relation, and passkey only at the
// lengths within its native context.
struct DiagnoseRow {
  std::string name;                   // "native" or a scaling name
  nlohmann::json rope;                // its rope dict (null for native)
  double kl = 0, ppl = 0;
  std::map<int64_t, double> passkey;  // accuracy in [0, 1] by prompt length
  DiagnoseRelation relation;          // at C
  std::optional<DiagnoseRelation> relation_long;  // final layer at relation_length
};

struct DiagnoseResult {
  std::string teacher, text, device, dtype;
  int64_t native_length = 0, length = 0, ctx = 0, blocks = 0, tokens = 0;
  double factor = 1;
  std::vector<int64_t> passkey_lengths;  // L/4, L/2, L (less those too short for a prompt)
  int64_t passkey_prompts = 0;           // per length
  int64_t relation_length = 0;
  double margin = 0;
  std::vector<DiagnoseRow> rows;         // native first, then the scalings in the asked order
  std::string recommended;               // diagnose_recommend's choice
};

// The checks diagnose_run starts with, cheap enough to run before the weights are loaded: throws
// std::invalid_argument naming the problem — a scaled teacher, L below the native length, C outside
// [2, native], relation_length outside [2, L], an unknown or no scaling, L too short for a passkey
// prompt of `tokenizer`.
void diagnose_options_check(const io::HfFolder& folder, const io::Tokenizer& tokenizer, const DiagnoseOptions& options);

// Measures every scaling of `options` on `teacher` (its folder's config.json in `folder`): the KL
// and perplexities through train::native_kl_evaluate on up to options.blocks blocks of C tokens of
// `text` (train::TokenStream's packing, restore's), passkey_evaluate of each model, relation KL
// through ops::relation_loss. Throws std::invalid_argument naming the problem: diagnose_options_check's,
// a scaling that cannot be built for this teacher (by name, with transformers' reason), text without
// a block of C (or relation_length) tokens.
DiagnoseResult diagnose_run(const EvalModel& teacher, const io::HfFolder& folder, const io::TextSource& text,
                            const DiagnoseOptions& options);

// The recommendation rule: among the scalings whose passkey accuracy at L is within `margin` points
// of the best scaling's, the one with the lowest KL to native at C (ties: the higher passkey at L,
// then the order of the rows). Empty when there is no scaling.
std::string diagnose_recommend(const std::vector<DiagnoseRow>& rows, int64_t length, double margin);
// The rule in one sentence with its margin, as the report prints it.
std::string diagnose_rule_text(double margin);

// The report: {"teacher", "text", "device", "dtype", "native_length", "length", "factor", "ctx",
// "blocks", "tokens", "passkey": {"lengths", "prompts_per_length"}, "relation_length", "rule",
// "margin", "recommended", "rows": [{"name", "rope", "kl", "ppl", "passkey": {length: accuracy},
// "relation": {"layers", "q", "k", "v"}, "relation_long": {...} or absent}]}.
nlohmann::json diagnose_report_json(const DiagnoseResult& result);
// One table (a row per model: KL, PPL, passkey per length, relation KL q/k/v of the final layer,
// and at relation_length when measured), the settings line, and the recommendation line.
std::string diagnose_report_markdown(const DiagnoseResult& result);

}  // namespace linear_ard::eval

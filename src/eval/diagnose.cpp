// diagnose_run: every candidate scaling measured against the native model.
#include "linear_ard/eval/diagnose.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "diagnose_relation.h"                  // defines: diagnose_relation_kl
#include "linear_ard/eval/passkey.h"            // defines: passkey_evaluate, passkey_prompt_make
#include "linear_ard/io/hf_config.h"            // defines: hf_rope_dict_from_json
#include "linear_ard/model/rope_compose.h"      // defines: rope_compose
#include "linear_ard/train/native_kl.h"         // defines: native_kl_evaluate
#include "linear_ard/train/token_stream.h"      // defines: TokenStream

namespace linear_ard::eval {

namespace {

// A scaled model sharing the teacher's weights.
struct Candidate {
  std::string name;
  nlohmann::json rope;
  EvalModel model;
};

std::string factor_text(double factor) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", factor);
  return s;
}

Candidate candidate_make(const EvalModel& teacher, const io::HfFolder& folder, const std::string& name, double factor) {
  const nlohmann::json rope = diagnose_scaling_rope(name, folder.model_config, factor);
  try {
    // The student's config as restore builds it from the same rope dict (docs/rope.md).
    const model::ModelConfig config =
        model::rope_compose(folder.model_config, io::hf_rope_dict_from_json(rope, folder.model_config.rope));
    return {name, rope, eval_model_rescaled(teacher, config, teacher.path + " with " + name + " x" + factor_text(factor))};
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("scaling '" + name + "' cannot be built for " + folder.path + ": " + e.what());
  }
}

// Up to `count` blocks of `length` tokens from one pass over `text` (restore's packing: documents
// with BOS and EOS, concatenated, cut), at least one.
std::vector<std::vector<int32_t>> blocks_read(const io::TextSource& text, const io::Tokenizer& tokenizer,
                                              int64_t length, int64_t count, int64_t vocab_size) {
  std::vector<std::vector<int32_t>> blocks;
  try {
    train::TokenStream::files_check({text});
    train::TokenStream stream({text}, tokenizer, vocab_size, "--text");
    stream.block_fits(length, "--text");
    while (static_cast<int64_t>(blocks.size()) < count) {
      train::TokenStream::Block block = stream.block_next(length);
      if (stream.passes() > 0) break;  // the text is used once
      blocks.push_back(std::move(block.ids));
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--text " + text.path + " for blocks of " + std::to_string(length) + " tokens: " + e.what());
  }
  return blocks;
}

// Passkey accuracy by length: the mean over the depths (equal prompts each).
std::map<int64_t, double> passkey_by_length(const EvalModel& model, const DiagnoseOptions& o,
                                            const std::vector<int64_t>& lengths) {
  std::map<int64_t, double> out;
  if (lengths.empty()) return out;
  PasskeyOptions p;
  p.lengths = lengths;
  p.depths = o.passkey_depths;
  p.samples = o.passkey_samples;
  p.seed = o.seed;
  p.progress = o.progress;
  std::map<int64_t, int64_t> rows;
  for (const PasskeyRow& row : passkey_evaluate(model, p).rows) {
    out[row.length] += row.accuracy;
    ++rows[row.length];
  }
  for (auto& [length, sum] : out) sum /= static_cast<double>(rows[length]);
  return out;
}

// L/4, L/2 and L, less those too short for a prompt of `tokenizer` (one warning each).
std::vector<int64_t> passkey_lengths(const io::Tokenizer& tokenizer, const DiagnoseOptions& o) {
  std::vector<int64_t> lengths;
  for (int64_t n : {o.length / 4, o.length / 2, o.length}) {
    try {
      passkey_prompt_make(tokenizer, n, 0.0, o.seed);
      lengths.push_back(n);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "linear-ard: warning: diagnose leaves out passkey at %ld tokens: %s\n",
                   static_cast<long>(n), e.what());
    }
  }
  return lengths;
}

// The teacher is the model at its native RoPE: every candidate's factor is L / its
// max_position_embeddings, and its passkey runs only up to that length.
void teacher_native_check(const io::HfFolder& teacher) {
  const model::RopeConfig& rope = teacher.model_config.rope;
  if (rope.type == model::RopeType::kDefault) return;
  char factor[32] = "";
  if (rope.factor) std::snprintf(factor, sizeof factor, ", factor %g", *rope.factor);
  throw std::invalid_argument("teacher " + teacher.path + " is already RoPE-scaled (config.json: rope_type " +
                              model::rope_type_name(rope.type) + factor +
                              "): diagnose compares scalings of the native-RoPE model; give the checkpoint before scaling");
}

void progress_line(const DiagnoseOptions& o, const std::string& line) {
  if (o.progress) std::fprintf(stderr, "[diagnose] %s\n", line.c_str());
}

// What every candidate is measured on: the text's blocks at C and at relation_length (none when not
// asked), the layers of the relation KL, the passkey lengths.
struct Inputs {
  std::vector<std::vector<int32_t>> blocks, long_blocks;
  std::vector<int64_t> layers, passkey_lengths;
};

// One scaling's row: KL and perplexity, relation KL, passkey; the native model's perplexity on the
// same blocks into `native_ppl`.
DiagnoseRow candidate_measure(const EvalModel& teacher, const Candidate& c, const DiagnoseOptions& o,
                              const Inputs& in, double& native_ppl) {
  DiagnoseRow row{c.name, c.rope};
  const train::NativeKl kl = train::native_kl_evaluate(teacher.weights, teacher.rope, c.model.rope, model::Overrides{},
                                                       in.blocks, o.batch_size, teacher.device);
  row.kl = kl.kl;
  row.ppl = kl.ppl;
  native_ppl = kl.native_ppl;
  progress_line(o, c.name + ": KL to native " + std::to_string(kl.kl) + ", PPL " + std::to_string(kl.ppl) +
                       " (native " + std::to_string(kl.native_ppl) + ")");
  row.relation = diagnose_relation_kl(teacher.weights, teacher.rope, c.model.rope, in.blocks, in.layers, o.batch_size,
                                      teacher.device);
  if (!in.long_blocks.empty())
    row.relation_long = diagnose_relation_kl(teacher.weights, teacher.rope, c.model.rope, in.long_blocks,
                                             {in.layers.back()}, 1, teacher.device);
  row.passkey = passkey_by_length(c.model, o, in.passkey_lengths);
  return row;
}

// The blocks, layers and passkey lengths of a run, read and checked before any model runs.
Inputs inputs_make(const EvalModel& teacher, const io::TextSource& text, const DiagnoseOptions& o) {
  Inputs in;
  const int64_t vocab = teacher.weights.config.vocab_size;
  in.blocks = blocks_read(text, *teacher.tokenizer, o.ctx, o.blocks, vocab);
  if (o.relation_length > 0) in.long_blocks = blocks_read(text, *teacher.tokenizer, o.relation_length, 1, vocab);
  const int64_t n_layers = teacher.weights.config.num_hidden_layers;
  for (int64_t l = o.all_layers ? 0 : n_layers - 1; l < n_layers; ++l) in.layers.push_back(l);
  in.passkey_lengths = passkey_lengths(*teacher.tokenizer, o);
  return in;
}

}  // namespace

void diagnose_options_check(const io::HfFolder& folder, const io::Tokenizer& tokenizer, const DiagnoseOptions& o) {
  teacher_native_check(folder);
  const int64_t native = folder.model_config.max_position_embeddings;
  const auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(o.length >= native, "--length " + std::to_string(o.length) + " is below the native length " +
                               std::to_string(native) + " of " + folder.path + ": nothing to extend");
  need(o.ctx >= 2 && o.ctx <= native, "--ctx " + std::to_string(o.ctx) + " must be in [2, " + std::to_string(native) +
                                          "] (the native model is the reference)");
  need(o.relation_length == 0 || (o.relation_length >= 2 && o.relation_length <= o.length),
       "--relation-length " + std::to_string(o.relation_length) + " must be in [2, --length " +
           std::to_string(o.length) + "]");
  need(!o.scalings.empty(), "no scaling to diagnose");
  for (const auto& name : o.scalings) diagnose_scaling_rope(name, folder.model_config, 1.0);  // unknown names
  // L must hold a passkey prompt (shorter lengths that do not are left out: passkey_lengths).
  passkey_prompt_make(tokenizer, o.length, 0.0, o.seed);
}

DiagnoseResult diagnose_run(const EvalModel& teacher, const io::HfFolder& folder, const io::TextSource& text,
                            const DiagnoseOptions& options) {
  diagnose_options_check(folder, *teacher.tokenizer, options);
  DiagnoseResult r;
  r.teacher = folder.path;
  r.text = text.path;
  r.device = teacher.device_name;
  r.dtype = teacher.dtype_name;
  r.native_length = folder.model_config.max_position_embeddings;
  r.length = options.length;
  r.factor = static_cast<double>(options.length) / static_cast<double>(r.native_length);
  r.ctx = options.ctx;
  r.relation_length = options.relation_length;
  r.margin = options.margin;
  r.passkey_prompts = options.passkey_samples * static_cast<int64_t>(options.passkey_depths.size());

  std::vector<Candidate> candidates;  // all built before anything runs: a bad one fails first
  for (const auto& name : options.scalings) candidates.push_back(candidate_make(teacher, folder, name, r.factor));
  const Inputs in = inputs_make(teacher, text, options);
  r.passkey_lengths = in.passkey_lengths;
  r.blocks = static_cast<int64_t>(in.blocks.size());
  r.tokens = r.blocks * (options.ctx - 1);

  DiagnoseRow native{"native", nullptr};
  std::vector<int64_t> native_lengths;
  for (int64_t n : r.passkey_lengths)
    if (n <= r.native_length) native_lengths.push_back(n);
  progress_line(options, "native: passkey at " + std::to_string(native_lengths.size()) + " length(s)");
  native.passkey = passkey_by_length(teacher, options, native_lengths);
  r.rows.push_back(native);
  double native_ppl = 0;  // the same on every candidate's blocks
  for (const Candidate& c : candidates) r.rows.push_back(candidate_measure(teacher, c, options, in, native_ppl));
  r.rows.front().ppl = native_ppl;
  r.recommended = diagnose_recommend(r.rows, r.length, r.margin);
  return r;
}

}  // namespace linear_ard::eval

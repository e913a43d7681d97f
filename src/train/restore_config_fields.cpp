// restore_config_fields: the field table (key, member, parser, emitter, doc line) and its lookups.
#include "restore_config_fields.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "restore_config_values.h"  // defines: value_parse, value_emit, the free-form parsers

namespace linear_ard::train {
namespace {

// `get` maps a (const) RestoreConfig to the member; `parse` is a value_parse-shaped function.
template <class Get, class Parse>
ConfigField field_make(std::string key, std::string alias, Get get, Parse parse, const char* what, std::string doc) {
  return {key, std::move(alias), std::move(doc),
          [get, parse, key, what](RestoreConfig& c, const YAML::Node& v) { parse(v, key, get(c), what); },
          [get](YAML::Emitter& out, const RestoreConfig& c) { value_emit(out, get(c)); }};
}

#define CONFIG_MEMBER(path) [](auto& c) -> auto& { return c.path; }
// A member parsed by the value_parse overload of its type.
#define CONFIG_FIELD(key, path, doc) \
  field_make(key, "", CONFIG_MEMBER(path), [](const YAML::Node& v, const std::string& k, auto& m, const char* w) { value_parse(v, k, m, w); }, nullptr, doc)
#define CONFIG_FIELD_ALIAS(key, alias, path, what, doc) \
  field_make(key, alias, CONFIG_MEMBER(path), [](const YAML::Node& v, const std::string& k, auto& m, const char* w) { value_parse(v, k, m, w); }, what, doc)
#define CONFIG_FIELD_PARSE(key, path, parse, doc) field_make(key, "", CONFIG_MEMBER(path), parse, nullptr, doc)

// The keys of the model, the objective and the trainables.
std::vector<ConfigField> fields_model() {
  return {
      CONFIG_FIELD("recipe", recipe,
                   "a bundled recipe (`configs/recipes/<name>.yaml`, compiled in; `paper`: the paper's, Appendix B) whose keys apply before the file's own: the file and the overrides replace any of them (nested maps key by key); empty: none"),
      CONFIG_FIELD_ALIAS("teacher", "model_name_or_path", teacher, "a folder path",
                         "HF folder of the model to extend (required unless pretraining); the RoPE its config.json holds, scaled or not, is its native one (docs/rope.md); NaN/Inf weights are refused (naming the tensors)"),
      CONFIG_FIELD_PARSE("student_rope", student_rope, student_rope_parse,
                         "HF rope dict, e.g. `{rope_type: linear, factor: 8}` (required unless pretraining), with the keys transformers accepts for its rope_type (another key is an error naming it) and `factor` >= 1; composed with the teacher's own RoPE as docs/rope.md says; the student's config.json gets `max_position_embeddings` = the teacher's context × factor (dynamic: unchanged) and the original length as `original_max_position_embeddings`"),
      CONFIG_FIELD("data", data,
                   "list of files (required), each a path or `{path: FILE, field: KEY}` (below, \"Data\"): `.jsonl` (a JSON record per line), `.json` (a JSON array of records, or JSON Lines) or plain text (one document); a record is an object whose string at `field` (default `text`, dotted for nested objects) is the document, or a string. Tokenised with the teacher's tokenizer (BOS per document, EOS after it); or pre-tokenised `.npy` files: one 1-D little-endian `uint16`/`uint32` array (`np.save(p, ids.astype(np.uint32))`), ids used as they are (BOS/EOS are the user's), each checked `< vocab_size` (an id beyond it, i.e. another tokenizer's data, is an error naming file, index and id). Streamed, cut into blocks of `ctx_len` tokens after the validation blocks held out at its start (below, \"Data flow\")"),
      CONFIG_FIELD("method", method,
                   "`ard`: LinearARD; `cpt`: next-token loss of the student only (ctx_len may then reach the student's extended length); `longred`: LongReD-style baseline, mean over `layers` of 1 − cos(h_teacher, h_student) of the layer's output hidden state (the last layer's after the final norm)"),
      CONFIG_FIELD_PARSE("layers", layers, layers_parse,
                         "distilled layers: `last:k`, `all`, or a list `[30, 31]` (negative from the end); the loss is the mean over them (Appendix E)"),
      CONFIG_FIELD("objective.relations", objective.relations,
                   "`qkv`: Q/Q+K/K+V/V; `attention`: attention-map KL softmax(QKᵀ/√d) (Appendix D; GQA via the op, y = K) weighted by `lambda_q`, in place of Q/Q and K/K, plus `lambda_v`·V/V (`lambda_v: 0` = w/o V/V). `objective` applies to `method: ard` only"),
      CONFIG_FIELD("objective.logit_kl", objective.logit_kl,
                   "weight of KL(softmax(z_t/T) ‖ softmax(z_s/T)) (Eq. logits_kl, no T² factor); > 0 runs both forwards to the logits"),
      CONFIG_FIELD("objective.temperature", objective.temperature, "T of the logit KL"),
      CONFIG_FIELD("objective.last_k_positions", objective.last_k_positions,
                   "logit KL as the mean over the last k positions of each block and the batch (0: all)"),
      CONFIG_FIELD("trainable", trainable,
                   "`qkv`: fp32 master copies of q/k/v weights and biases; `lora_qkv` / `lora_all` (q,k,v,o,gate,up,down): fp32 LoRA adapters, A kaiming-uniform, B = 0 (PEFT's init), scale α/r; `full`: fp32 masters of every tensor. Layers 0..last distilled layer, or all layers when the objective reads the whole model (logit KL, cpt, longred, stage 2)"),
      CONFIG_FIELD("lora.rank", lora.rank, "LoRA rank r"),
      CONFIG_FIELD("lora.alpha", lora.alpha, "LoRA α (scale α/r)"),
      CONFIG_FIELD("lora.dropout", lora.dropout,
                   "in [0, 1): PEFT's `lora_dropout`, on the input of each adapter's branch (its own mask per module, scaled by 1/(1−p)) in training steps only, not in evaluation or the merged weights; masks come from torch's generator of the device (seeded by `seed`, kept in checkpoints, and restored when `checkpoint_layers` recomputes a layer, as torch.utils.checkpoint does)"),
      CONFIG_FIELD("save_adapters", save_adapters, "with LoRA: also write `adapters/` in PEFT's format (below)"),
      CONFIG_FIELD("longred.max_skip", longred_max_skip,
                   "short-to-long position skipping: the student reads position ids arange(n)·s with s ~ U{1..max_skip} per batch (torch's generator), the teacher arange(n); (ctx_len−1)·max_skip must stay below the student's max positions"),
  };
}

// The keys of the run's validation and of the model it keeps.
std::vector<ConfigField> fields_validation() {
  return {
      CONFIG_FIELD("val_data", val_data,
                   "files of the validation split, as `data` (empty: the first `val_blocks` blocks of `data` are held out: every pass over the data starts after them, so they are never trained on)"),
      CONFIG_FIELD("val_blocks", val_blocks, "validation blocks (of `val_ctx_len` tokens)"),
      CONFIG_FIELD("val_ctx_len", val_ctx_len,
                   "validation block length (0: `ctx_len`, at most the teacher's native length: the restoration metric is read at a short context)"),
      CONFIG_FIELD("val_passkey.lengths", val_passkey.lengths,
                   "passkey-retrieval lengths of every validation (empty: each stage's target length, i.e. the native length and stage 2's `ctx_len`, so that every validation is read at the same lengths); a length whose prompt does not fit is left out with a warning"),
      CONFIG_FIELD("val_passkey.samples", val_passkey.samples,
                   "passkey prompts per length, spread evenly over the depths (0: no passkey)"),
      CONFIG_FIELD("val_passkey.depths", val_passkey.depths, "depths in [0, 1] of the passkey in its filler"),
      CONFIG_FIELD("select.criterion", select.criterion,
                   "the model written: `kl_passkey`, the lowest `val_kl` among the validations whose `passkey_mean` is within `passkey_margin` of the best seen (without passkey: the lowest `val_kl`); `kl`: the lowest `val_kl`; `last`: the weights after the last step"),
      CONFIG_FIELD("select.passkey_margin", select.passkey_margin, "kl_passkey's margin on the mean passkey accuracy (0..1)"),
  };
}

// The keys of stage 2, light CPT.
std::vector<ConfigField> fields_stage2() {
  return {
      CONFIG_FIELD("stage2.steps", stage2.steps,
                   "optimizer steps of stage 2 (0: off), light CPT (next-token loss under the scaled RoPE) after stage 1, with its own AdamW, schedule and budget"),
      CONFIG_FIELD("stage2.ctx_len", stage2.ctx_len,
                   "stage 2's block length (0: the student's max_position_embeddings; may exceed the native length)"),
      CONFIG_FIELD("stage2.batch_size", stage2.batch_size, "stage 2's blocks per micro-batch"),
      CONFIG_FIELD("stage2.grad_accum", stage2.grad_accum, "stage 2's micro-batches per step"),
      CONFIG_FIELD("stage2.lr", stage2.lr, "stage 2's peak learning rate"),
      CONFIG_FIELD("stage2.warmup_steps", stage2.warmup_steps, "stage 2's linear warmup"),
      CONFIG_FIELD("stage2.min_lr_ratio", stage2.min_lr_ratio, "stage 2's cosine decay ends at min_lr_ratio · lr"),
      CONFIG_FIELD("stage2.data", stage2.data,
                   "files of stage 2, as `data`, e.g. long documents for the long context (empty: the stream of `data` continued where stage 1 stopped)"),
  };
}

// The keys of stage 1's data and optimisation.
std::vector<ConfigField> fields_schedule() {
  return {
      CONFIG_FIELD("ctx_len", ctx_len, "block length (0: the teacher's `max_position_embeddings`); beyond it, or below 2 tokens, is an error; below 16 a warning"),
      CONFIG_FIELD("batch_size", batch_size, "blocks per micro-batch"),
      CONFIG_FIELD_ALIAS("grad_accum", "gradient_accumulation_steps", grad_accum, nullptr, "micro-batches per optimizer step"),
      CONFIG_FIELD("steps", steps, "optimizer steps of stage 1"),
      CONFIG_FIELD_ALIAS("lr", "learning_rate", lr, nullptr, "peak learning rate (AdamW)"),
      CONFIG_FIELD("warmup_steps", warmup_steps, "linear warmup from 0 to lr (beyond `steps`: a warning, lr is never reached)"),
      CONFIG_FIELD("min_lr_ratio", min_lr_ratio, "cosine decay ends at min_lr_ratio · lr"),
      CONFIG_FIELD("weight_decay", weight_decay, "AdamW's decoupled weight decay"),
      CONFIG_FIELD("clip_grad_norm", clip_grad_norm, "gradient clipping by global norm (0: measure only)"),
      CONFIG_FIELD("divergence_factor", divergence_factor,
                   "a step whose loss exceeds divergence_factor × its stage's first loss (or any non-finite loss, gradient norm or validation) stops the run: `model/` gets the weights `select` chooses among the validations before it, the checkpoint that led there is removed and the last good one kept, exit status 1 (0: only the non-finite checks); may differ on resume"),
      CONFIG_FIELD("lambda_q", lambda_q, "weight of the Q/Q relation loss (of the attention map with `objective.relations: attention`)"),
      CONFIG_FIELD("lambda_k", lambda_k, "weight of the K/K relation loss"),
      CONFIG_FIELD("lambda_v", lambda_v, "weight of the V/V relation loss"),
      CONFIG_FIELD("seed", seed, "seeds torch (LoRA init, dropout, LongReD skips) and the data order (`data_shuffle`)"),
      CONFIG_FIELD("data_shuffle", data_shuffle, "blocks in the data's shuffle buffer: K > 0 draws every training block at random from the stage's next K blocks (std::mt19937_64 seeded by `seed`, stage 2's by `seed` + 1; the buffer never reads past the stage's own blocks), so a stage of at most K blocks is drawn in a uniformly random order, and seeds 0 and 1 put 298 (99.3 %) of the demo run's 300 blocks at different positions; 0 keeps the files' order; a resumed run draws the same blocks"),
      CONFIG_FIELD("deterministic", deterministic,
                   "the same config and seed give bitwise-identical weights: on CUDA torch's deterministic algorithms, strict (an op without one fails naming itself; costs 1.6–2.3× a step, docs/restore.md), `CUBLAS_WORKSPACE_CONFIG=:4096:8` when unset, and the relation-KL backward without atomics; the CPU is deterministic either way (for a given thread count)"),
  };
}

// The keys of the run: device, outputs, evaluation, checkpoints.
std::vector<ConfigField> fields_run() {
  return {
      CONFIG_FIELD("device", device, "`auto`: cuda if available"),
      CONFIG_FIELD("dtype", dtype, "model dtype; `auto`: bf16 on cuda, fp32 on cpu"),
      ConfigField{"checkpoint_layers", "",
                  "activation recomputation: `true` recomputes every layer of the student in backward instead of storing its activations, a number N the first N layers only (the others store theirs: a faster step for more memory; the memory plan the run prints before it starts counts them), `false` none",
                  [](RestoreConfig& c, const YAML::Node& v) { checkpoint_layers_parse(v, "checkpoint_layers", c.checkpoint_layers, nullptr); },
                  [](YAML::Emitter& out, const RestoreConfig& c) { checkpoint_layers_emit(out, c.checkpoint_layers); }},
      CONFIG_FIELD("overlap_teacher", overlap_teacher, "on CUDA, run the frozen teacher's forward on a second host thread and CUDA stream beside the student's (+3-4 % on SmolLM2-135M's step; the same training as false, up to the dX atomics' order: docs/training.md)"),
      CONFIG_FIELD_ALIAS("output", "output_dir", output, "a folder path",
                         "output folder (required); a run holds `run.lock` in it (flock): a second run on the folder is refused naming the first one's pid"),
      CONFIG_FIELD("overwrite", overwrite, "replace a previous run's output folder (one holding the .linear-ard-run marker): only the entries a run writes are removed, any other file is kept"),
      CONFIG_FIELD("eval_every", eval_every, "validation every N global steps, and always before the first step and after each stage's last (0: only those)"),
      CONFIG_FIELD("log_every", log_every, "progress line every N global steps"),
      CONFIG_FIELD("tensorboard", tensorboard, "also write every metrics.jsonl line as TensorBoard scalars into `tensorboard/` while the run goes (`tensorboard --logdir OUT`; training lines as `stage<N>/<key>`, held-out ones as `eval/<key>`), through scripts/tensorboard_follow.py (torch.utils.tensorboard); a writer that cannot run is a warning"),
      CONFIG_FIELD("checkpoint_every", checkpoint_every, "write `checkpoint-<step>/` every N global steps (0: none; below)"),
      CONFIG_FIELD("resume", resume, "continue from the output folder's newest checkpoint, after checking the teacher, tokenizer and data files against those the run started from (none there: a fresh run, the interrupted attempt's files removed)"),
      CONFIG_FIELD("stop_after_step", stop_after_step, "write a checkpoint after this global step and end the run (0: never; time-sliced jobs, tests)"),
      CONFIG_FIELD("profile_steps", profile_steps,
                   "profile global steps 2..1+N with torch's profiler (0: off): writes `profile/trace.json` (Chrome trace: Perfetto, chrome://tracing) and `profile/summary.md` (per step: phase times, device kernels, CPU operators' self time); the profiled steps synchronize the device at each phase boundary, so their times in the metrics are not the run's"),
  };
}

// The keys of `linear-ard pretrain`'s model.
std::vector<ConfigField> fields_pretrain() {
  return {
      CONFIG_FIELD_PARSE("pretrain.model", pretrain.model, pretrain_model_parse,
                         "`linear-ard pretrain` only: the new model's config.json keys, or the path of a config.json (docs/pretrain.md)"),
      CONFIG_FIELD_ALIAS("pretrain.tokenizer", "", pretrain.tokenizer, "a folder path",
                         "`linear-ard pretrain` only: folder with `tokenizer.json` or `tokenizer.model`"),
      CONFIG_FIELD("pretrain.init_std", pretrain.init_std, "`linear-ard pretrain` only: every matrix ~ normal(0, init_std)"),
      CONFIG_FIELD("pretrain.passkey_fraction", pretrain.passkey_fraction,
                   "`linear-ard pretrain` only: share of training blocks whose tail is a passkey-retrieval sample"),
      CONFIG_FIELD("pretrain.answer_weight", pretrain.answer_weight,
                   "`linear-ard pretrain` only: LM-loss weight of each sample's answer tokens, every other token 1"),
      CONFIG_FIELD("pretrain.save_dtype", pretrain.save_dtype, "`linear-ard pretrain` only: dtype of `model.safetensors`"),
  };
}

#undef CONFIG_FIELD_PARSE
#undef CONFIG_FIELD_ALIAS
#undef CONFIG_FIELD
#undef CONFIG_MEMBER

}  // namespace

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = [] {
    std::vector<ConfigField> all;
    for (auto section : {fields_model, fields_validation, fields_stage2, fields_schedule, fields_run, fields_pretrain}) {
      std::vector<ConfigField> some = section();
      all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
    }
    return all;
  }();
  return fields;
}

std::pair<std::string, std::string> key_split(const std::string& key) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos) return {"", key};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

const ConfigField* field_find(const std::string& key) {
  for (const auto& f : config_fields())
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string> top_keys() {
  std::vector<std::string> keys;
  for (const auto& f : config_fields()) {
    const auto [parent, name] = key_split(f.key);
    const std::string top = parent.empty() ? name : parent;
    if (std::find(keys.begin(), keys.end(), top) == keys.end()) keys.push_back(top);
  }
  return keys;
}

std::vector<std::string> sub_keys(const std::string& parent) {
  std::vector<std::string> keys;
  for (const auto& f : config_fields()) {
    const auto [p, name] = key_split(f.key);
    if (p == parent && !parent.empty()) keys.push_back(name);
  }
  return keys;
}

std::string key_canonical(const std::string& key) {
  for (const auto& f : config_fields())
    if (!f.alias.empty() && f.alias == key) return f.key;
  return key;
}

bool is_free_map(const std::string& key) { return key == "student_rope" || key == "pretrain.model"; }

void entry_parse(RestoreConfig& c, const std::string& key, const YAML::Node& v) {
  if (v.IsNull()) return;  // "key:" with no value keeps the default
  if (const ConfigField* f = field_find(key)) {
    f->parse(c, v);
    return;
  }
  const std::vector<std::string> known = sub_keys(key);
  key_check(v.IsMap(), key, "must be a map (sub-keys: " + list_text(known) + ")");
  for (const auto& sub : v) {
    const std::string full = key + "." + sub.first.as<std::string>();
    const ConfigField* f = field_find(full);
    if (!f) throw std::invalid_argument("unknown config key '" + full + "' (known sub-keys of " + key + ": " + list_text(known) + ")");
    if (!sub.second.IsNull()) f->parse(c, sub.second);
  }
}

}  // namespace linear_ard::train

// restore_config: YAML + overrides -> RestoreConfig through one field table (key, member, parser,
// emitter, doc line), with every error naming the key at fault.
#include "linear_ard/train/restore_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "linear_ard/model/model_config.h"  // defines: rope_type_from_name, RopeType

namespace linear_ard::train {
namespace {

using nlohmann::json;

[[noreturn]] void key_error(const std::string& key, const std::string& what) {
  throw std::invalid_argument("config key '" + key + "' " + what);
}

void check(bool ok, const std::string& key, const std::string& what) {
  if (!ok) key_error(key, what);
}

std::string list_text(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& k : items) text += (text.empty() ? "" : ", ") + k;
  return text;
}

template <class T>
T scalar_as(const YAML::Node& node, const std::string& key, const std::string& type_name) {
  if (!node.IsScalar()) key_error(key, "must be " + type_name);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    key_error(key, "must be " + type_name + ", got '" + node.Scalar() + "'");
  }
}

// YAML scalars carry no type: integers, then numbers, then booleans, else strings.
json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    json j = json::object();
    for (const auto& kv : node) j[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return j;
  }
  if (node.IsSequence()) {
    json j = json::array();
    for (const auto& x : node) j.push_back(yaml_to_json(x));
    return j;
  }
  if (!node.IsScalar()) return nullptr;
  int64_t i;
  double d;
  bool b;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  if (YAML::convert<bool>::decode(node, b)) return b;
  return node.Scalar();
}

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

// ---- values by member type: parse (`what` replaces the type's description in errors) and emit

void value_parse(const YAML::Node& v, const std::string& key, int64_t& out, const char* what) {
  out = scalar_as<int64_t>(v, key, what ? what : "an integer");
}
void value_parse(const YAML::Node& v, const std::string& key, uint64_t& out, const char* what) {
  out = scalar_as<uint64_t>(v, key, what ? what : "a non-negative integer");
}
void value_parse(const YAML::Node& v, const std::string& key, double& out, const char* what) {
  out = scalar_as<double>(v, key, what ? what : "a number");
}
void value_parse(const YAML::Node& v, const std::string& key, bool& out, const char* what) {
  out = scalar_as<bool>(v, key, what ? what : "true or false");
}
void value_parse(const YAML::Node& v, const std::string& key, std::string& out, const char* what) {
  out = scalar_as<std::string>(v, key, what ? what : "a string");
}
// One data file: a path, or a map {path: ..., field: ...} naming the text's key in its JSON records.
io::TextSource source_parse(const YAML::Node& v, const std::string& key) {
  const char* what = "a file path or a map {path: FILE, field: KEY}";
  if (!v.IsMap()) return {scalar_as<std::string>(v, key, what)};
  io::TextSource s;
  for (const auto& kv : v) {
    const std::string name = kv.first.as<std::string>();
    if (name == "path") s.path = scalar_as<std::string>(kv.second, key + ".path", "a file path");
    else if (name == "field") s.field = scalar_as<std::string>(kv.second, key + ".field", "a JSON key");
    else throw std::invalid_argument("unknown config key '" + key + "." + name + "' (a data file's keys: path, field)");
  }
  check(!s.path.empty(), key + ".path", "is required (the data file)");
  check(!s.field.empty(), key + ".field", "must not be empty (the key of the text in JSON records)");
  return s;
}

// A data file or a list of them; errors name the entry (`data[2].field`).
void value_parse(const YAML::Node& v, const std::string& key, std::vector<io::TextSource>& out, const char*) {
  out.clear();
  if (!v.IsSequence()) {
    out = {source_parse(v, key)};
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) out.push_back(source_parse(v[i], key + "[" + std::to_string(i) + "]"));
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void value_parse(const YAML::Node& v, const std::string& key, E& out, const char*) {
  const std::string name = scalar_as<std::string>(v, key, enum_names_text<E>());
  const std::optional<E> e = enum_from_name<E>(name);
  if (!e) key_error(key, "must be " + enum_names_text<E>() + ", got '" + name + "'");
  out = *e;
}

void value_emit(YAML::Emitter& out, int64_t v) { out << v; }
void value_emit(YAML::Emitter& out, uint64_t v) { out << v; }
void value_emit(YAML::Emitter& out, double v) { out << number_text(v); }
void value_emit(YAML::Emitter& out, bool v) { out << v; }
void value_emit(YAML::Emitter& out, const std::string& v) { out << v; }
// A file whose records keep their text under "text" is written as its path alone.
void value_emit(YAML::Emitter& out, const std::vector<io::TextSource>& v) {
  out << YAML::BeginSeq;
  for (const auto& s : v) {
    if (s.field == io::TextSource().field) out << s.path;
    else out << YAML::Flow << YAML::BeginMap << YAML::Key << "path" << YAML::Value << s.path << YAML::Key << "field"
             << YAML::Value << s.field << YAML::EndMap;
  }
  out << YAML::EndSeq;
}
// JSON is YAML flow syntax, so maps and lists round-trip without a second converter.
void value_emit(YAML::Emitter& out, const json& v) { out << YAML::Flow << YAML::Load(v.dump()); }
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void value_emit(YAML::Emitter& out, E v) {
  out << enum_name(v);
}

// ---- the free-form values: student_rope, layers, pretrain.model

void student_rope_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  check(v.IsMap(), key, "must be a map, e.g. {rope_type: linear, factor: 8}");
  out = yaml_to_json(v);
}

void layers_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  const char* what = "last:k, all or a list of layer indices";
  if (!v.IsSequence()) {
    out = scalar_as<std::string>(v, key, what);
    return;
  }
  out = json::array();
  for (const auto& x : v) out.push_back(scalar_as<int64_t>(x, key, what));
  check(!out.empty(), key, "must not be an empty list");
}

void pretrain_model_parse(const YAML::Node& v, const std::string& key, json& out, const char*) {
  out = v.IsMap() ? yaml_to_json(v) : json(scalar_as<std::string>(v, key, "a map of config.json keys or a config.json path"));
}

// ---- the field table

struct ConfigField {
  std::string key;    // dotted for nested maps: "stage2.lr"
  std::string alias;  // another spelling users bring from HF's Trainer arguments; empty: none
  std::string doc;    // the docs' line
  std::function<void(RestoreConfig&, const YAML::Node&)> parse;
  std::function<void(YAML::Emitter&, const RestoreConfig&)> emit;
};

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

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = {
      CONFIG_FIELD_ALIAS("teacher", "model_name_or_path", teacher, "a folder path",
                         "HF folder of the native-RoPE model (required unless pretraining); a teacher whose config.json already carries RoPE scaling is refused, and so are NaN/Inf weights (naming the tensors)"),
      CONFIG_FIELD_PARSE("student_rope", student_rope, student_rope_parse,
                         "HF rope dict, e.g. `{rope_type: linear, factor: 8}` (required unless pretraining), with the keys transformers accepts for its rope_type (another key is an error naming it) and `factor` >= 1; the student's config.json gets `max_position_embeddings` = native × factor (dynamic: unchanged) and `original_max_position_embeddings` = native"),
      CONFIG_FIELD("data", data,
                   "list of files (required), each a path or `{path: FILE, field: KEY}` (below, \"Data\"): `.jsonl` (a JSON record per line), `.json` (a JSON array of records, or JSON Lines) or plain text (one document); a record is an object whose string at `field` (default `text`, dotted for nested objects) is the document, or a string. Tokenised with the teacher's tokenizer (BOS per document, EOS after it); or pre-tokenised `.npy` files: one 1-D little-endian `uint16`/`uint32` array (`np.save(p, ids.astype(np.uint32))`), ids used as they are (BOS/EOS are the user's), each checked `< vocab_size` (an id beyond it, i.e. another tokenizer's data, is an error naming file, index and id). Streamed, cut into blocks of `ctx_len` tokens; the first block is held out for evaluation"),
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
      CONFIG_FIELD("stage2.steps", stage2.steps,
                   "optimizer steps of stage 2 (0: off), light CPT (next-token loss under the scaled RoPE) after stage 1, with its own AdamW, schedule and budget"),
      CONFIG_FIELD("stage2.ctx_len", stage2.ctx_len,
                   "stage 2's block length (0: the student's max_position_embeddings; may exceed the native length); its blocks skip as many blocks as cover the held-out one"),
      CONFIG_FIELD("stage2.batch_size", stage2.batch_size, "stage 2's blocks per micro-batch"),
      CONFIG_FIELD("stage2.grad_accum", stage2.grad_accum, "stage 2's micro-batches per step"),
      CONFIG_FIELD("stage2.lr", stage2.lr, "stage 2's peak learning rate"),
      CONFIG_FIELD("stage2.warmup_steps", stage2.warmup_steps, "stage 2's linear warmup"),
      CONFIG_FIELD("stage2.min_lr_ratio", stage2.min_lr_ratio, "stage 2's cosine decay ends at min_lr_ratio · lr"),
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
                   "a step whose loss exceeds divergence_factor × its stage's first loss (or any non-finite loss, gradient norm or held-out evaluation) stops the run: no model is written, the checkpoint that led there is removed and the last good one kept, exit status 1 (0: only the non-finite checks); may differ on resume"),
      CONFIG_FIELD("lambda_q", lambda_q, "weight of the Q/Q relation loss (of the attention map with `objective.relations: attention`)"),
      CONFIG_FIELD("lambda_k", lambda_k, "weight of the K/K relation loss"),
      CONFIG_FIELD("lambda_v", lambda_v, "weight of the V/V relation loss"),
      CONFIG_FIELD("seed", seed, "seeds torch (LoRA init, dropout, LongReD skips) and, with `data_shuffle` > 0, the data order; with `data_shuffle` 0 the data order is sequential, and a run that trains full matrices (no LoRA, no dropout, not LongReD) differs from another seed's only by the GPU kernels' floating-point nondeterminism"),
      CONFIG_FIELD("data_shuffle", data_shuffle, "blocks in the data's shuffle buffer: 0 keeps the files' order; K > 0 draws every training block at random from the stream's next K blocks (std::mt19937_64 seeded by `seed`, stage 2's by `seed` + 1), so that seeds also vary the data order; a resumed run draws the same blocks"),
      CONFIG_FIELD("device", device, "`auto`: cuda if available"),
      CONFIG_FIELD("dtype", dtype, "model dtype; `auto`: bf16 on cuda, fp32 on cpu"),
      CONFIG_FIELD("checkpoint_layers", checkpoint_layers, "recompute the student's layers in backward (activation recomputation)"),
      CONFIG_FIELD("overlap_teacher", overlap_teacher, "on CUDA, run the frozen teacher's forward on a second host thread and CUDA stream beside the student's (+3-4 % on SmolLM2-135M's step; the same training as false, up to the dX atomics' order: docs/training.md)"),
      CONFIG_FIELD_ALIAS("output", "output_dir", output, "a folder path",
                         "output folder (required); a run holds `run.lock` in it (flock): a second run on the folder is refused naming the first one's pid"),
      CONFIG_FIELD("overwrite", overwrite, "replace an existing output folder, only when it holds a previous run"),
      CONFIG_FIELD("eval_every", eval_every, "held-out evaluation every N global steps (0: before the first step and after each stage only)"),
      CONFIG_FIELD("log_every", log_every, "progress line every N global steps"),
      CONFIG_FIELD("tensorboard", tensorboard, "also write every metrics.jsonl line as TensorBoard scalars into `tensorboard/` while the run goes (`tensorboard --logdir OUT`; training lines as `stage<N>/<key>`, held-out ones as `eval/<key>`), through scripts/tensorboard_follow.py (torch.utils.tensorboard); a writer that cannot run is a warning"),
      CONFIG_FIELD("checkpoint_every", checkpoint_every, "write `checkpoint-<step>/` every N global steps (0: none; below)"),
      CONFIG_FIELD("resume", resume, "continue from the output folder's newest checkpoint (none there: a fresh run)"),
      CONFIG_FIELD("stop_after_step", stop_after_step, "write a checkpoint after this global step and end the run (0: never; time-sliced jobs, tests)"),
      CONFIG_FIELD("profile_steps", profile_steps,
                   "profile global steps 2..1+N with torch's profiler (0: off): writes `profile/trace.json` (Chrome trace: Perfetto, chrome://tracing) and `profile/summary.md` (per step: phase times, device kernels, CPU operators' self time); the profiled steps synchronize the device at each phase boundary, so their times in the metrics are not the run's"),
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
  return fields;
}

#undef CONFIG_FIELD_PARSE
#undef CONFIG_FIELD_ALIAS
#undef CONFIG_FIELD
#undef CONFIG_MEMBER

// "stage2.lr" -> {"stage2", "lr"}; "lr" -> {"", "lr"}.
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

// The top-level keys, in table order (a nested map once).
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

// The canonical spelling of a top-level key (an alias's target, else the key itself).
std::string key_canonical(const std::string& key) {
  for (const auto& f : config_fields())
    if (!f.alias.empty() && f.alias == key) return f.key;
  return key;
}

// Free-form maps: set through dotted overrides, checked by their own rules (student_rope's rope
// keys, pretrain.model's config.json keys).
bool is_free_map(const std::string& key) { return key == "student_rope" || key == "pretrain.model"; }

void key_check_known(const std::string& key, const std::string& where) {
  const std::vector<std::string> keys = top_keys();
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  throw std::invalid_argument("unknown config key '" + key + "' in " + where + " (known keys: " + list_text(keys) + ")");
}

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

// A key given twice in one map (YAML allows it, yaml-cpp keeps both, the last would win silently).
void duplicates_check(const YAML::Node& map, const std::string& prefix, const std::string& path) {
  std::map<std::string, int> seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    const auto [it, fresh] = seen.emplace(key, line_of(kv.first));
    if (!fresh)
      throw std::invalid_argument("config file " + path + " line " + std::to_string(line_of(kv.first)) + ": key '" +
                                  prefix + key + "' is given twice (first at line " + std::to_string(it->second) + ")");
    if (kv.second.IsMap()) duplicates_check(kv.second, prefix + key + ".", path);
  }
}

// The root with every alias replaced by its key, in the same order; both spellings is an error.
YAML::Node aliases_resolve(const YAML::Node& root, const std::string& path) {
  YAML::Node out(YAML::NodeType::Map);
  std::map<std::string, std::pair<std::string, int>> given;  // canonical -> (spelling, line)
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const std::string canonical = key_canonical(key);
    const auto [it, fresh] = given.emplace(canonical, std::make_pair(key, line_of(kv.first)));
    if (!fresh)
      throw std::invalid_argument("config file " + path + " line " + std::to_string(line_of(kv.first)) + ": '" + key +
                                  "' and '" + it->second.first + "' (line " + std::to_string(it->second.second) +
                                  ") are two spellings of config key '" + canonical + "'; give one");
    key_check_known(canonical, path);
    out[canonical] = kv.second;
  }
  return out;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = s.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(s.substr(start, dot - start));
  parts.push_back(s.substr(start));
  return parts;
}

// yaml-cpp nodes are handles: assignment copies values, reset() rebinds, hence the explicit walk.
void override_apply(YAML::Node& root, const std::string& override_text, std::map<std::string, std::string>& spellings) {
  const size_t eq = override_text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("override '" + override_text + "' must be key=value");
  std::vector<std::string> parts = split_dots(override_text.substr(0, eq));
  const std::string canonical = key_canonical(parts[0]);
  const auto [it, fresh] = spellings.emplace(canonical, parts[0]);
  if (!fresh && it->second != parts[0])
    throw std::invalid_argument("overrides '" + it->second + "' and '" + parts[0] + "' are two spellings of config key '" +
                                canonical + "'; give one");
  parts[0] = canonical;
  key_check_known(parts[0], "override '" + override_text + "'");
  if (parts.size() > 1 && sub_keys(parts[0]).empty() && !is_free_map(parts[0]))
    key_error(parts[0], "has no sub-keys (override '" + override_text + "')");
  YAML::Node value;
  try {
    value = YAML::Load(override_text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("override '" + override_text + "': value is not valid YAML: " + e.what());
  }
  YAML::Node cur;
  cur.reset(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) key_error(override_text.substr(0, eq), "has an empty component");
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    if (!cur[parts[i]].IsMap()) key_error(override_text.substr(0, eq), "cannot be set: '" + parts[i] + "' is not a map");
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

// One top-level entry: a field, or a map of fields.
void entry_parse(RestoreConfig& c, const std::string& key, const YAML::Node& v) {
  if (v.IsNull()) return;  // "key:" with no value keeps the default
  if (const ConfigField* f = field_find(key)) {
    f->parse(c, v);
    return;
  }
  const std::vector<std::string> known = sub_keys(key);
  check(v.IsMap(), key, "must be a map (sub-keys: " + list_text(known) + ")");
  for (const auto& sub : v) {
    const std::string full = key + "." + sub.first.as<std::string>();
    const ConfigField* f = field_find(full);
    if (!f) throw std::invalid_argument("unknown config key '" + full + "' (known sub-keys of " + key + ": " + list_text(known) + ")");
    if (!sub.second.IsNull()) f->parse(c, sub.second);
  }
}

// The keys a rope dict of `type` may hold (without a type: those of any type): transformers 5.23's
// _validate_<type>_rope_parameters (required + optional) and what every type takes (rope_theta,
// partial_rotary_factor, the legacy "type"; original_max_position_embeddings, which the student's
// config always records).
std::vector<std::string> rope_keys(std::optional<model::RopeType> type) {
  std::vector<std::string> keys = {"rope_type", "type", "factor", "rope_theta", "partial_rotary_factor",
                                   "original_max_position_embeddings"};
  const auto add = [&](model::RopeType t, std::initializer_list<const char*> more) {
    if (type && *type != t) return;
    for (const char* k : more)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  add(model::RopeType::kYarn, {"attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"});
  add(model::RopeType::kLongrope, {"short_factor", "long_factor", "attention_factor"});
  add(model::RopeType::kLlama3, {"low_freq_factor", "high_freq_factor"});
  return keys;
}

// student_rope as transformers reads a rope dict: its keys (a misspelt one named, against its
// rope_type's keys when that is known), a known scaled rope_type, a numeric factor >= 1.
void student_rope_validate(const json& rope) {
  const char* shape = "must be a map with rope_type, e.g. {rope_type: linear, factor: 8}";
  check(rope.is_object(), "student_rope", shape);
  const json type_name = rope.contains("rope_type") ? rope["rope_type"] : rope.value("type", json());
  std::optional<model::RopeType> type;
  std::string type_error;
  try {
    if (type_name.is_string()) type = model::rope_type_from_name(type_name.get<std::string>());
  } catch (const std::invalid_argument& e) {
    type_error = e.what();
  }
  const std::vector<std::string> known = rope_keys(type);
  for (const auto& [k, v] : rope.items())
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw std::invalid_argument("unknown config key 'student_rope." + k + "' (" +
                                  (type ? "a " + type_name.get<std::string>() + " rope dict" : std::string("a rope dict")) +
                                  " takes: " + list_text(known) + ")");
  check(type_name.is_string(), "student_rope", shape);
  if (!type) throw std::invalid_argument("config key 'student_rope.rope_type': " + type_error);
  if (type == model::RopeType::kDefault)
    throw std::invalid_argument("config key 'student_rope': rope_type default is the teacher's own RoPE; nothing to restore");
  const json* factor = rope.contains("factor") ? &rope["factor"] : nullptr;
  check(factor && factor->is_number(), "student_rope", "needs a numeric factor (the context extension ratio)");
  // Below 1 the student would claim a shorter context than the teacher's (transformers warns, we stop).
  check(factor->get<double>() >= 1, "student_rope.factor", "must be >= 1 (the context extension ratio), got " + factor->dump());
}

// A pretraining run (`pretrain.model` set) has no teacher and no scaled RoPE: it trains every
// tensor of a random model with the LM loss at its native context.
void pretrain_validate(const RestoreConfig& c) {
  const PretrainConfig& p = c.pretrain;
  check(c.teacher.empty(), "teacher", "does not apply to pretraining (the model comes from pretrain.model)");
  check(c.student_rope.is_null(), "student_rope", "does not apply to pretraining (the model keeps its native RoPE)");
  check(c.method == Method::kCpt, "method",
        std::string("must be cpt when pretraining (the next-token loss), got '") + enum_name(c.method) + "'");
  check(c.trainable == Trainable::kFull, "trainable",
        std::string("must be full when pretraining, got '") + enum_name(c.trainable) + "'");
  check(c.stage2.steps == 0, "stage2.steps", "must be 0 when pretraining");
  check(p.model.is_object() || p.model.is_string(), "pretrain.model",
        "must be a map of config.json keys (hidden_size, ...) or the path of a config.json");
  check(!p.tokenizer.empty(), "pretrain.tokenizer", "is required (folder with tokenizer.json or tokenizer.model)");
  check(p.init_std > 0, "pretrain.init_std", "must be > 0");
  check(p.passkey_fraction >= 0 && p.passkey_fraction <= 1, "pretrain.passkey_fraction", "must be in [0, 1]");
  check(std::isfinite(p.answer_weight) && p.answer_weight >= 0, "pretrain.answer_weight",
        "must be a finite number >= 0 (1: the answer tokens weigh as much as every other token)");
}

bool layers_text_valid(const std::string& l) {
  if (l == "all") return true;
  if (l.rfind("last:", 0) != 0) return false;
  try {
    size_t used = 0;
    return std::stoll(l.substr(5), &used) >= 1 && used == l.size() - 5;
  } catch (const std::exception&) {
    return false;
  }
}

// The optimisation keys of stage 1 and stage 2.
void schedule_validate(const RestoreConfig& c) {
  check(c.ctx_len >= 0, "ctx_len", "must be >= 0 (0: the teacher's max_position_embeddings)");
  check(c.batch_size >= 1, "batch_size", "must be >= 1");
  check(c.grad_accum >= 1, "grad_accum", "must be >= 1");
  check(c.steps >= 1, "steps", "must be >= 1");
  check(c.lr > 0, "lr", "must be > 0");
  check(c.warmup_steps >= 0, "warmup_steps", "must be >= 0");  // > steps: a warning (the trainer's)
  check(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1, "min_lr_ratio", "must be in [0, 1]");
  check(c.weight_decay >= 0, "weight_decay", "must be >= 0");
  check(c.clip_grad_norm >= 0, "clip_grad_norm", "must be >= 0 (0: no clipping)");
  check(c.divergence_factor >= 0, "divergence_factor", "must be >= 0 (0: only non-finite losses stop the run)");
  const Stage2Config& s = c.stage2;
  check(s.steps >= 0, "stage2.steps", "must be >= 0 (0: no stage 2)");
  check(s.ctx_len >= 0, "stage2.ctx_len", "must be >= 0 (0: the student's max_position_embeddings)");
  check(s.batch_size >= 1, "stage2.batch_size", "must be >= 1");
  check(s.grad_accum >= 1, "stage2.grad_accum", "must be >= 1");
  check(s.lr > 0, "stage2.lr", "must be > 0");
  check(s.warmup_steps >= 0, "stage2.warmup_steps", "must be >= 0");
  check(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1, "stage2.min_lr_ratio", "must be in [0, 1]");
  check(c.checkpoint_every >= 0, "checkpoint_every", "must be >= 0 (0: no checkpoints)");
  check(c.stop_after_step >= 0, "stop_after_step", "must be >= 0 (0: run to the end)");
  check(c.eval_every >= 0, "eval_every", "must be >= 0 (0: before and after training only)");
  check(c.data_shuffle >= 0, "data_shuffle", "must be >= 0 (0: the files' order)");
  check(c.log_every >= 1, "log_every", "must be >= 1");
  check(c.profile_steps >= 0, "profile_steps", "must be >= 0 (0: no profile)");
}

// The objective keys: relations, weights, layers, trainables.
void objective_validate(const RestoreConfig& c) {
  check(c.lambda_q >= 0, "lambda_q", "must be >= 0");
  check(c.lambda_k >= 0, "lambda_k", "must be >= 0");
  check(c.lambda_v >= 0, "lambda_v", "must be >= 0");
  check(c.lambda_q + c.lambda_k + c.lambda_v > 0, "lambda_q", "lambda_q, lambda_k, lambda_v cannot all be 0");
  if (c.layers.is_string())
    check(layers_text_valid(c.layers.get<std::string>()), "layers",
          "must be last:k (k >= 1), all or a list of layer indices, got '" + c.layers.get<std::string>() + "'");
  check(c.objective.logit_kl >= 0, "objective.logit_kl", "must be >= 0 (0: off)");
  check(c.objective.temperature > 0, "objective.temperature", "must be > 0");
  check(c.objective.last_k_positions >= 0, "objective.last_k_positions", "must be >= 0 (0: all positions)");
  check(c.method == Method::kArd || (c.objective.logit_kl == 0 && c.objective.relations == Relations::kQkv), "objective",
        std::string("applies to method ard only (method is ") + enum_name(c.method) + ")");
  check(c.lora.rank >= 1, "lora.rank", "must be >= 1");
  check(c.lora.alpha > 0, "lora.alpha", "must be > 0");
  check(c.lora.dropout >= 0 && c.lora.dropout < 1, "lora.dropout", "must be in [0, 1)");
  check(!c.save_adapters || trainable_is_lora(c.trainable), "save_adapters",
        "needs trainable lora_qkv or lora_all (there are no adapters to save)");
  check(c.longred_max_skip >= 1, "longred.max_skip", "must be >= 1 (1: no position skipping)");
}

void config_validate(const RestoreConfig& c) {
  if (c.pretrain.enabled()) {
    pretrain_validate(c);
  } else {
    check(!c.teacher.empty(), "teacher", "is required (HF model folder of the native-RoPE model)");
    student_rope_validate(c.student_rope);
  }
  check(!c.output.empty(), "output", "is required (folder the run writes)");
  check(!c.data.empty(), "data", "is required (list of text or JSONL files)");
  schedule_validate(c);
  objective_validate(c);
}

YAML::Node config_file_read(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::invalid_argument("cannot read config file " + path);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("config file " + path + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw std::invalid_argument("config file " + path + " must hold a map of key: value");
  duplicates_check(root, "", path);
  return aliases_resolve(root, path);
}

}  // namespace

RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = config_file_read(path);
  std::map<std::string, std::string> spellings;
  for (const auto& o : overrides) override_apply(root, o, spellings);
  RestoreConfig c;
  for (const auto& kv : root) entry_parse(c, kv.first.as<std::string>(), kv.second);
  // Pretraining trains every tensor with the LM loss unless the config says otherwise (validated).
  if (c.pretrain.enabled()) {
    if (!root["method"]) c.method = Method::kCpt;
    if (!root["trainable"]) c.trainable = Trainable::kFull;
  }
  config_validate(c);
  return c;
}

std::string restore_config_to_yaml(const RestoreConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string open;  // the nested map being written
  for (const auto& f : config_fields()) {
    const auto [parent, name] = key_split(f.key);
    if (parent == "pretrain" && !c.pretrain.enabled()) continue;
    if (parent != open) {
      if (!open.empty()) out << YAML::EndMap;
      if (!parent.empty()) out << YAML::Key << parent << YAML::Value << YAML::BeginMap;
      open = parent;
    }
    out << YAML::Key << name << YAML::Value;
    f.emit(out, c);
  }
  if (!open.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<ConfigKeyDoc> restore_config_keys() {
  const RestoreConfig defaults;
  std::vector<ConfigKeyDoc> keys;
  for (const auto& f : config_fields()) {
    YAML::Emitter value;
    value << YAML::Flow;
    f.emit(value, defaults);
    keys.push_back({f.key, f.alias, value.c_str(), f.doc});
  }
  return keys;
}

std::string restore_config_keys_markdown() {
  std::string text = "| key | default | meaning |\n|---|---|---|\n";
  for (const auto& k : restore_config_keys()) {
    std::string key = "`" + k.key + "`";
    if (!k.alias.empty()) key += " (alias `" + k.alias + "`)";
    text += "| " + key + " | `" + k.default_yaml + "` | " + k.doc + " |\n";
  }
  return text;
}

std::vector<int64_t> restore_layers_resolve(const nlohmann::json& layers, int64_t num_layers) {
  std::vector<int64_t> out;
  if (layers.is_string()) {
    const std::string l = layers.get<std::string>();
    const int64_t k = l == "all" ? num_layers : std::stoll(l.substr(5));
    if (k > num_layers)
      key_error("layers", "(" + l + ") asks for more than the teacher's " + std::to_string(num_layers) + " layers");
    for (int64_t i = num_layers - k; i < num_layers; ++i) out.push_back(i);
    return out;
  }
  for (const auto& x : layers) {
    const int64_t i = x.get<int64_t>();
    if (i < -num_layers || i >= num_layers)
      key_error("layers", "(" + std::to_string(i) + ") is outside the teacher's " + std::to_string(num_layers) + " layers");
    out.push_back(i < 0 ? i + num_layers : i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace linear_ard::train

// restore_config: YAML + overrides -> RestoreConfig, with every error naming the key at fault.
#include "linear_ard/train/restore_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace linear_ard::train {
namespace {

using nlohmann::json;

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = {
      "teacher", "student_rope", "data", "method", "layers", "objective", "trainable", "lora",
      "save_adapters", "longred", "stage2", "ctx_len", "batch_size", "grad_accum", "steps", "lr",
      "warmup_steps", "min_lr_ratio", "weight_decay", "clip_grad_norm", "lambda_q", "lambda_k",
      "lambda_v", "seed", "device", "dtype", "checkpoint_layers", "output", "overwrite",
      "eval_every", "log_every", "checkpoint_every", "resume", "stop_after_step", "pretrain"};
  return keys;
}

// The maps with a fixed set of sub-keys (student_rope is free-form: HF's rope dict).
const std::vector<std::string>& sub_keys(const std::string& key) {
  static const std::vector<std::string> objective = {"relations", "logit_kl", "temperature", "last_k_positions"};
  static const std::vector<std::string> lora = {"rank", "alpha", "dropout"};
  static const std::vector<std::string> longred = {"max_skip"};
  static const std::vector<std::string> stage2 = {"steps", "ctx_len", "batch_size", "grad_accum", "lr",
                                                  "warmup_steps", "min_lr_ratio"};
  static const std::vector<std::string> pretrain = {"model", "tokenizer", "init_std", "passkey_fraction",
                                                    "answer_weight", "save_dtype"};
  static const std::vector<std::string> none;
  if (key == "pretrain") return pretrain;
  if (key == "objective") return objective;
  if (key == "lora") return lora;
  if (key == "longred") return longred;
  if (key == "stage2") return stage2;
  return none;
}

bool is_map_key(const std::string& key) { return key == "student_rope" || !sub_keys(key).empty(); }

[[noreturn]] void key_error(const std::string& key, const std::string& what) {
  throw std::invalid_argument("config key '" + key + "' " + what);
}

void key_check_known(const std::string& key, const std::string& where) {
  const auto& keys = config_keys();
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
  std::string known;
  for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
  throw std::invalid_argument("unknown config key '" + key + "' in " + where + " (known keys: " + known + ")");
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
void override_apply(YAML::Node& root, const std::string& override_text) {
  const size_t eq = override_text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("override '" + override_text + "' must be key=value");
  const std::string key = override_text.substr(0, eq);
  const std::vector<std::string> parts = split_dots(key);
  key_check_known(parts[0], "override '" + override_text + "'");
  if (parts.size() > 1 && !is_map_key(parts[0])) key_error(parts[0], "has no sub-keys (override '" + override_text + "')");
  YAML::Node value;
  try {
    value = YAML::Load(override_text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("override '" + override_text + "': value is not valid YAML: " + e.what());
  }
  YAML::Node cur;
  cur.reset(root);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) key_error(key, "has an empty component");
    if (!cur[parts[i]] || cur[parts[i]].IsNull()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    if (!cur[parts[i]].IsMap()) key_error(key, "cannot be set: '" + parts[i] + "' is not a map");
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  cur[parts.back()] = value;
}

template <class T>
T scalar_as(const YAML::Node& node, const std::string& key, const char* type_name) {
  if (!node.IsScalar()) key_error(key, std::string("must be ") + type_name);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    key_error(key, std::string("must be ") + type_name + ", got '" + node.Scalar() + "'");
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

void check(bool ok, const std::string& key, const std::string& what) {
  if (!ok) key_error(key, what);
}

// A pretraining run (`pretrain.model` set) has no teacher and no scaled RoPE: it trains every
// tensor of a random model with the LM loss at its native context.
void pretrain_validate(const RestoreConfig& c) {
  const PretrainConfig& p = c.pretrain;
  check(c.teacher.empty(), "teacher", "does not apply to pretraining (the model comes from pretrain.model)");
  check(c.student_rope.is_null(), "student_rope", "does not apply to pretraining (the model keeps its native RoPE)");
  check(c.method == "cpt", "method", "must be cpt when pretraining (the next-token loss), got '" + c.method + "'");
  check(c.trainable == "full", "trainable", "must be full when pretraining, got '" + c.trainable + "'");
  check(c.stage2.steps == 0, "stage2.steps", "must be 0 when pretraining");
  check(p.model.is_object() || p.model.is_string(), "pretrain.model",
        "must be a map of config.json keys (hidden_size, ...) or the path of a config.json");
  check(!p.tokenizer.empty(), "pretrain.tokenizer", "is required (folder with tokenizer.json or tokenizer.model)");
  check(p.init_std > 0, "pretrain.init_std", "must be > 0");
  check(p.passkey_fraction >= 0 && p.passkey_fraction <= 1, "pretrain.passkey_fraction", "must be in [0, 1]");
  check(std::isfinite(p.answer_weight) && p.answer_weight >= 0, "pretrain.answer_weight",
        "must be a finite number >= 0 (1: the answer tokens weigh as much as every other token)");
  check(p.save_dtype == "fp32" || p.save_dtype == "bf16", "pretrain.save_dtype",
        "must be fp32 or bf16, got '" + p.save_dtype + "'");
}

void config_validate(const RestoreConfig& c) {
  if (c.pretrain.enabled()) {
    pretrain_validate(c);
  } else {
    check(!c.teacher.empty(), "teacher", "is required (HF model folder of the native-RoPE model)");
    check(c.student_rope.is_object() && (c.student_rope.contains("rope_type") || c.student_rope.contains("type")),
          "student_rope", "must be a map with rope_type, e.g. {rope_type: linear, factor: 8}");
  }
  check(!c.output.empty(), "output", "is required (folder the run writes)");
  check(!c.data.empty(), "data", "is required (list of text or JSONL files)");
  check(c.ctx_len >= 0, "ctx_len", "must be >= 0 (0: the teacher's max_position_embeddings)");
  check(c.batch_size >= 1, "batch_size", "must be >= 1");
  check(c.grad_accum >= 1, "grad_accum", "must be >= 1");
  check(c.steps >= 1, "steps", "must be >= 1");
  check(c.lr > 0, "lr", "must be > 0");
  check(c.warmup_steps >= 0 && c.warmup_steps <= c.steps, "warmup_steps", "must be in [0, steps]");
  check(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1, "min_lr_ratio", "must be in [0, 1]");
  check(c.weight_decay >= 0, "weight_decay", "must be >= 0");
  check(c.clip_grad_norm >= 0, "clip_grad_norm", "must be >= 0 (0: no clipping)");
  check(c.lambda_q >= 0, "lambda_q", "must be >= 0");
  check(c.lambda_k >= 0, "lambda_k", "must be >= 0");
  check(c.lambda_v >= 0, "lambda_v", "must be >= 0");
  check(c.lambda_q + c.lambda_k + c.lambda_v > 0, "lambda_q", "lambda_q, lambda_k, lambda_v cannot all be 0");
  check(c.method == "ard" || c.method == "cpt" || c.method == "longred", "method",
        "must be ard, cpt or longred, got '" + c.method + "'");
  if (c.layers.is_string()) {
    const std::string l = c.layers.get<std::string>();
    bool ok = l == "all";
    if (l.rfind("last:", 0) == 0) {
      try {
        size_t used = 0;
        ok = std::stoll(l.substr(5), &used) >= 1 && used == l.size() - 5;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    check(ok, "layers", "must be last:k (k >= 1), all or a list of layer indices, got '" + l + "'");
  }
  check(c.objective.relations == "qkv" || c.objective.relations == "attention", "objective.relations",
        "must be qkv or attention, got '" + c.objective.relations + "'");
  check(c.objective.logit_kl >= 0, "objective.logit_kl", "must be >= 0 (0: off)");
  check(c.objective.temperature > 0, "objective.temperature", "must be > 0");
  check(c.objective.last_k_positions >= 0, "objective.last_k_positions", "must be >= 0 (0: all positions)");
  check(c.method == "ard" || (c.objective.logit_kl == 0 && c.objective.relations == "qkv"), "objective",
        "applies to method ard only (method is " + c.method + ")");
  check(c.trainable == "qkv" || c.trainable == "lora_qkv" || c.trainable == "lora_all" || c.trainable == "full",
        "trainable", "must be qkv, lora_qkv, lora_all or full, got '" + c.trainable + "'");
  check(c.lora.rank >= 1, "lora.rank", "must be >= 1");
  check(c.lora.alpha > 0, "lora.alpha", "must be > 0");
  check(c.lora.dropout >= 0 && c.lora.dropout < 1, "lora.dropout", "must be in [0, 1)");
  check(!c.save_adapters || c.trainable.rfind("lora_", 0) == 0, "save_adapters",
        "needs trainable lora_qkv or lora_all (there are no adapters to save)");
  check(c.longred_max_skip >= 1, "longred.max_skip", "must be >= 1 (1: no position skipping)");
  check(c.stage2.steps >= 0, "stage2.steps", "must be >= 0 (0: no stage 2)");
  check(c.stage2.ctx_len >= 0, "stage2.ctx_len", "must be >= 0 (0: the student's max_position_embeddings)");
  check(c.stage2.batch_size >= 1, "stage2.batch_size", "must be >= 1");
  check(c.stage2.grad_accum >= 1, "stage2.grad_accum", "must be >= 1");
  check(c.stage2.lr > 0, "stage2.lr", "must be > 0");
  check(c.stage2.warmup_steps >= 0 && c.stage2.warmup_steps <= std::max<int64_t>(c.stage2.steps, 0),
        "stage2.warmup_steps", "must be in [0, stage2.steps]");
  check(c.stage2.min_lr_ratio >= 0 && c.stage2.min_lr_ratio <= 1, "stage2.min_lr_ratio", "must be in [0, 1]");
  check(c.checkpoint_every >= 0, "checkpoint_every", "must be >= 0 (0: no checkpoints)");
  check(c.stop_after_step >= 0, "stop_after_step", "must be >= 0 (0: run to the end)");
  check(c.device == "auto" || c.device == "cpu" || c.device == "cuda", "device",
        "must be cpu, cuda or auto, got '" + c.device + "'");
  check(c.dtype == "auto" || c.dtype == "fp32" || c.dtype == "bf16", "dtype",
        "must be fp32, bf16 or auto, got '" + c.dtype + "'");
  check(c.eval_every >= 0, "eval_every", "must be >= 0 (0: before and after training only)");
  check(c.log_every >= 1, "log_every", "must be >= 1");
}

}  // namespace

RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::invalid_argument("cannot read config file " + path);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("config file " + path + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw std::invalid_argument("config file " + path + " must hold a map of key: value");
  for (const auto& kv : root) key_check_known(kv.first.as<std::string>(), path);
  for (const auto& o : overrides) override_apply(root, o);

  RestoreConfig c;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (v.IsNull()) continue;  // "key:" with no value keeps the default
    if (key == "teacher") c.teacher = scalar_as<std::string>(v, key, "a folder path");
    else if (key == "output") c.output = scalar_as<std::string>(v, key, "a folder path");
    else if (key == "device") c.device = scalar_as<std::string>(v, key, "a string");
    else if (key == "dtype") c.dtype = scalar_as<std::string>(v, key, "a string");
    else if (key == "student_rope") {
      check(v.IsMap(), key, "must be a map, e.g. {rope_type: linear, factor: 8}");
      c.student_rope = yaml_to_json(v);
    } else if (key == "data") {
      if (v.IsScalar()) {
        c.data = {v.Scalar()};
      } else {
        check(v.IsSequence(), key, "must be a file path or a list of file paths");
        for (const auto& x : v) c.data.push_back(scalar_as<std::string>(x, key, "a list of file paths"));
      }
    }
    else if (key == "method") c.method = scalar_as<std::string>(v, key, "ard, cpt or longred");
    else if (key == "trainable") c.trainable = scalar_as<std::string>(v, key, "qkv, lora_qkv, lora_all or full");
    else if (key == "save_adapters") c.save_adapters = scalar_as<bool>(v, key, "true or false");
    else if (key == "layers") {
      if (v.IsSequence()) {
        c.layers = json::array();
        for (const auto& x : v) c.layers.push_back(scalar_as<int64_t>(x, key, "last:k, all or a list of layer indices"));
        check(!c.layers.empty(), key, "must not be an empty list");
      } else {
        c.layers = scalar_as<std::string>(v, key, "last:k, all or a list of layer indices");
      }
    } else if (is_map_key(key)) {
      check(v.IsMap(), key, "must be a map (sub-keys: " + [&] {
        std::string list;
        for (const auto& k : sub_keys(key)) list += (list.empty() ? "" : ", ") + k;
        return list;
      }() + ")");
      for (const auto& sub : v) {
        const std::string name = sub.first.as<std::string>();
        const std::string full = key + "." + name;
        const auto& known = sub_keys(key);
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          std::string list;
          for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
          throw std::invalid_argument("unknown config key '" + full + "' (known sub-keys of " + key + ": " + list + ")");
        }
        const YAML::Node& x = sub.second;
        if (x.IsNull()) continue;
        if (full == "pretrain.model") {
          c.pretrain.model = x.IsMap() ? yaml_to_json(x)
                                       : json(scalar_as<std::string>(x, full, "a map of config.json keys or a config.json path"));
        }
        else if (full == "pretrain.tokenizer") c.pretrain.tokenizer = scalar_as<std::string>(x, full, "a folder path");
        else if (full == "pretrain.init_std") c.pretrain.init_std = scalar_as<double>(x, full, "a number");
        else if (full == "pretrain.passkey_fraction") c.pretrain.passkey_fraction = scalar_as<double>(x, full, "a number");
        else if (full == "pretrain.answer_weight") c.pretrain.answer_weight = scalar_as<double>(x, full, "a number");
        else if (full == "pretrain.save_dtype") c.pretrain.save_dtype = scalar_as<std::string>(x, full, "fp32 or bf16");
        else if (full == "objective.relations") c.objective.relations = scalar_as<std::string>(x, full, "qkv or attention");
        else if (full == "objective.logit_kl") c.objective.logit_kl = scalar_as<double>(x, full, "a number");
        else if (full == "objective.temperature") c.objective.temperature = scalar_as<double>(x, full, "a number");
        else if (full == "objective.last_k_positions") c.objective.last_k_positions = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "lora.rank") c.lora.rank = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "lora.alpha") c.lora.alpha = scalar_as<double>(x, full, "a number");
        else if (full == "lora.dropout") c.lora.dropout = scalar_as<double>(x, full, "a number");
        else if (full == "longred.max_skip") c.longred_max_skip = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.steps") c.stage2.steps = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.ctx_len") c.stage2.ctx_len = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.batch_size") c.stage2.batch_size = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.grad_accum") c.stage2.grad_accum = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.lr") c.stage2.lr = scalar_as<double>(x, full, "a number");
        else if (full == "stage2.warmup_steps") c.stage2.warmup_steps = scalar_as<int64_t>(x, full, "an integer");
        else if (full == "stage2.min_lr_ratio") c.stage2.min_lr_ratio = scalar_as<double>(x, full, "a number");
      }
    }
    else if (key == "ctx_len") c.ctx_len = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "batch_size") c.batch_size = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "grad_accum") c.grad_accum = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "steps") c.steps = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "warmup_steps") c.warmup_steps = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "checkpoint_every") c.checkpoint_every = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "stop_after_step") c.stop_after_step = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "resume") c.resume = scalar_as<bool>(v, key, "true or false");
    else if (key == "eval_every") c.eval_every = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "log_every") c.log_every = scalar_as<int64_t>(v, key, "an integer");
    else if (key == "seed") c.seed = scalar_as<uint64_t>(v, key, "a non-negative integer");
    else if (key == "lr") c.lr = scalar_as<double>(v, key, "a number");
    else if (key == "min_lr_ratio") c.min_lr_ratio = scalar_as<double>(v, key, "a number");
    else if (key == "weight_decay") c.weight_decay = scalar_as<double>(v, key, "a number");
    else if (key == "clip_grad_norm") c.clip_grad_norm = scalar_as<double>(v, key, "a number");
    else if (key == "lambda_q") c.lambda_q = scalar_as<double>(v, key, "a number");
    else if (key == "lambda_k") c.lambda_k = scalar_as<double>(v, key, "a number");
    else if (key == "lambda_v") c.lambda_v = scalar_as<double>(v, key, "a number");
    else if (key == "checkpoint_layers") c.checkpoint_layers = scalar_as<bool>(v, key, "true or false");
    else if (key == "overwrite") c.overwrite = scalar_as<bool>(v, key, "true or false");
  }
  // Pretraining trains every tensor with the LM loss unless the config says otherwise (validated).
  if (c.pretrain.enabled()) {
    if (!root["method"]) c.method = "cpt";
    if (!root["trainable"]) c.trainable = "full";
  }
  config_validate(c);
  return c;
}

std::string restore_config_to_yaml(const RestoreConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "teacher" << YAML::Value << c.teacher;
  // JSON is YAML flow syntax, so the rope dict round-trips without a second converter.
  out << YAML::Key << "student_rope" << YAML::Value << YAML::Flow << YAML::Load(c.student_rope.dump());
  out << YAML::Key << "data" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : c.data) out << f;
  out << YAML::EndSeq;
  out << YAML::Key << "method" << YAML::Value << c.method;
  out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::Load(c.layers.dump());
  out << YAML::Key << "objective" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "relations" << YAML::Value << c.objective.relations;
  out << YAML::Key << "logit_kl" << YAML::Value << number_text(c.objective.logit_kl);
  out << YAML::Key << "temperature" << YAML::Value << number_text(c.objective.temperature);
  out << YAML::Key << "last_k_positions" << YAML::Value << c.objective.last_k_positions;
  out << YAML::EndMap;
  out << YAML::Key << "trainable" << YAML::Value << c.trainable;
  out << YAML::Key << "lora" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "rank" << YAML::Value << c.lora.rank;
  out << YAML::Key << "alpha" << YAML::Value << number_text(c.lora.alpha);
  out << YAML::Key << "dropout" << YAML::Value << number_text(c.lora.dropout);
  out << YAML::EndMap;
  out << YAML::Key << "save_adapters" << YAML::Value << c.save_adapters;
  out << YAML::Key << "longred" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_skip" << YAML::Value << c.longred_max_skip;
  out << YAML::EndMap;
  out << YAML::Key << "stage2" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "steps" << YAML::Value << c.stage2.steps;
  out << YAML::Key << "ctx_len" << YAML::Value << c.stage2.ctx_len;
  out << YAML::Key << "batch_size" << YAML::Value << c.stage2.batch_size;
  out << YAML::Key << "grad_accum" << YAML::Value << c.stage2.grad_accum;
  out << YAML::Key << "lr" << YAML::Value << number_text(c.stage2.lr);
  out << YAML::Key << "warmup_steps" << YAML::Value << c.stage2.warmup_steps;
  out << YAML::Key << "min_lr_ratio" << YAML::Value << number_text(c.stage2.min_lr_ratio);
  out << YAML::EndMap;
  out << YAML::Key << "ctx_len" << YAML::Value << c.ctx_len;
  out << YAML::Key << "batch_size" << YAML::Value << c.batch_size;
  out << YAML::Key << "grad_accum" << YAML::Value << c.grad_accum;
  out << YAML::Key << "steps" << YAML::Value << c.steps;
  out << YAML::Key << "lr" << YAML::Value << number_text(c.lr);
  out << YAML::Key << "warmup_steps" << YAML::Value << c.warmup_steps;
  out << YAML::Key << "min_lr_ratio" << YAML::Value << number_text(c.min_lr_ratio);
  out << YAML::Key << "weight_decay" << YAML::Value << number_text(c.weight_decay);
  out << YAML::Key << "clip_grad_norm" << YAML::Value << number_text(c.clip_grad_norm);
  out << YAML::Key << "lambda_q" << YAML::Value << number_text(c.lambda_q);
  out << YAML::Key << "lambda_k" << YAML::Value << number_text(c.lambda_k);
  out << YAML::Key << "lambda_v" << YAML::Value << number_text(c.lambda_v);
  out << YAML::Key << "seed" << YAML::Value << c.seed;
  out << YAML::Key << "device" << YAML::Value << c.device;
  out << YAML::Key << "dtype" << YAML::Value << c.dtype;
  out << YAML::Key << "checkpoint_layers" << YAML::Value << c.checkpoint_layers;
  out << YAML::Key << "output" << YAML::Value << c.output;
  out << YAML::Key << "overwrite" << YAML::Value << c.overwrite;
  out << YAML::Key << "eval_every" << YAML::Value << c.eval_every;
  out << YAML::Key << "log_every" << YAML::Value << c.log_every;
  out << YAML::Key << "checkpoint_every" << YAML::Value << c.checkpoint_every;
  out << YAML::Key << "resume" << YAML::Value << c.resume;
  out << YAML::Key << "stop_after_step" << YAML::Value << c.stop_after_step;
  if (c.pretrain.enabled()) {
    out << YAML::Key << "pretrain" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "model" << YAML::Value << YAML::Flow << YAML::Load(c.pretrain.model.dump());
    out << YAML::Key << "tokenizer" << YAML::Value << c.pretrain.tokenizer;
    out << YAML::Key << "init_std" << YAML::Value << number_text(c.pretrain.init_std);
    out << YAML::Key << "passkey_fraction" << YAML::Value << number_text(c.pretrain.passkey_fraction);
    out << YAML::Key << "answer_weight" << YAML::Value << number_text(c.pretrain.answer_weight);
    out << YAML::Key << "save_dtype" << YAML::Value << c.pretrain.save_dtype;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
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

// restore_config_validate: the rules a restore (or pretrain) config must meet.
#include "restore_config_validate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "linear_ard/model/model_config.h"  // defines: rope_type_from_name, RopeType
#include "restore_config_values.h"          // defines: key_check, list_text

namespace linear_ard::train {
namespace {

using nlohmann::json;

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
  key_check(rope.is_object(), "student_rope", shape);
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
  key_check(type_name.is_string(), "student_rope", shape);
  if (!type) throw std::invalid_argument("config key 'student_rope.rope_type': " + type_error);
  if (type == model::RopeType::kDefault)
    throw std::invalid_argument("config key 'student_rope': rope_type default is the teacher's own RoPE; nothing to restore");
  const json* factor = rope.contains("factor") ? &rope["factor"] : nullptr;
  key_check(factor && factor->is_number(), "student_rope", "needs a numeric factor (the context extension ratio)");
  // Below 1 the student would claim a shorter context than the teacher's (transformers warns, we stop).
  key_check(factor->get<double>() >= 1, "student_rope.factor", "must be >= 1 (the context extension ratio), got " + factor->dump());
}

// A pretraining run (`pretrain.model` set) has no teacher and no scaled RoPE: it trains every
// tensor of a random model with the LM loss at its native context.
void pretrain_validate(const RestoreConfig& c) {
  const PretrainConfig& p = c.pretrain;
  key_check(c.teacher.empty(), "teacher", "does not apply to pretraining (the model comes from pretrain.model)");
  key_check(c.student_rope.is_null(), "student_rope", "does not apply to pretraining (the model keeps its native RoPE)");
  key_check(c.method == Method::kCpt, "method",
        std::string("must be cpt when pretraining (the next-token loss), got '") + enum_name(c.method) + "'");
  key_check(c.trainable == Trainable::kFull, "trainable",
        std::string("must be full when pretraining, got '") + enum_name(c.trainable) + "'");
  key_check(c.stage2.steps == 0, "stage2.steps", "must be 0 when pretraining");
  key_check(p.model.is_object() || p.model.is_string(), "pretrain.model",
        "must be a map of config.json keys (hidden_size, ...) or the path of a config.json");
  key_check(!p.tokenizer.empty(), "pretrain.tokenizer", "is required (folder with tokenizer.json or tokenizer.model)");
  key_check(p.init_std > 0, "pretrain.init_std", "must be > 0");
  key_check(p.passkey_fraction >= 0 && p.passkey_fraction <= 1, "pretrain.passkey_fraction", "must be in [0, 1]");
  key_check(std::isfinite(p.answer_weight) && p.answer_weight >= 0, "pretrain.answer_weight",
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
  key_check(c.ctx_len >= 0, "ctx_len", "must be >= 0 (0: the teacher's max_position_embeddings)");
  key_check(c.batch_size >= 1, "batch_size", "must be >= 1");
  key_check(c.grad_accum >= 1, "grad_accum", "must be >= 1");
  key_check(c.steps >= 1, "steps", "must be >= 1");
  key_check(c.lr > 0, "lr", "must be > 0");
  key_check(c.warmup_steps >= 0, "warmup_steps", "must be >= 0");  // > steps: a warning (the trainer's)
  key_check(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1, "min_lr_ratio", "must be in [0, 1]");
  key_check(c.weight_decay >= 0, "weight_decay", "must be >= 0");
  key_check(c.clip_grad_norm >= 0, "clip_grad_norm", "must be >= 0 (0: no clipping)");
  key_check(c.divergence_factor >= 0, "divergence_factor", "must be >= 0 (0: only non-finite losses stop the run)");
  const Stage2Config& s = c.stage2;
  key_check(s.steps >= 0, "stage2.steps", "must be >= 0 (0: no stage 2)");
  key_check(s.ctx_len >= 0, "stage2.ctx_len", "must be >= 0 (0: the student's max_position_embeddings)");
  key_check(s.batch_size >= 1, "stage2.batch_size", "must be >= 1");
  key_check(s.grad_accum >= 1, "stage2.grad_accum", "must be >= 1");
  key_check(s.lr > 0, "stage2.lr", "must be > 0");
  key_check(s.warmup_steps >= 0, "stage2.warmup_steps", "must be >= 0");
  key_check(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1, "stage2.min_lr_ratio", "must be in [0, 1]");
  key_check(c.checkpoint_every >= 0, "checkpoint_every", "must be >= 0 (0: no checkpoints)");
  key_check(c.stop_after_step >= 0, "stop_after_step", "must be >= 0 (0: run to the end)");
  key_check(c.eval_every >= 0, "eval_every", "must be >= 0 (0: before and after training only)");
  key_check(c.data_shuffle >= 0, "data_shuffle", "must be >= 0 (0: the files' order)");
  key_check(c.log_every >= 1, "log_every", "must be >= 1");
  key_check(c.profile_steps >= 0, "profile_steps", "must be >= 0 (0: no profile)");
}

// The objective keys: relations, weights, layers, trainables.
void objective_validate(const RestoreConfig& c) {
  key_check(c.lambda_q >= 0, "lambda_q", "must be >= 0");
  key_check(c.lambda_k >= 0, "lambda_k", "must be >= 0");
  key_check(c.lambda_v >= 0, "lambda_v", "must be >= 0");
  key_check(c.lambda_q + c.lambda_k + c.lambda_v > 0, "lambda_q", "lambda_q, lambda_k, lambda_v cannot all be 0");
  if (c.layers.is_string())
    key_check(layers_text_valid(c.layers.get<std::string>()), "layers",
          "must be last:k (k >= 1), all or a list of layer indices, got '" + c.layers.get<std::string>() + "'");
  key_check(c.objective.logit_kl >= 0, "objective.logit_kl", "must be >= 0 (0: off)");
  key_check(c.objective.temperature > 0, "objective.temperature", "must be > 0");
  key_check(c.objective.last_k_positions >= 0, "objective.last_k_positions", "must be >= 0 (0: all positions)");
  key_check(c.method == Method::kArd || (c.objective.logit_kl == 0 && c.objective.relations == Relations::kQkv), "objective",
        std::string("applies to method ard only (method is ") + enum_name(c.method) + ")");
  key_check(c.lora.rank >= 1, "lora.rank", "must be >= 1");
  key_check(c.lora.alpha > 0, "lora.alpha", "must be > 0");
  key_check(c.lora.dropout >= 0 && c.lora.dropout < 1, "lora.dropout", "must be in [0, 1)");
  key_check(!c.save_adapters || trainable_is_lora(c.trainable), "save_adapters",
        "needs trainable lora_qkv or lora_all (there are no adapters to save)");
  key_check(c.longred_max_skip >= 1, "longred.max_skip", "must be >= 1 (1: no position skipping)");
}

}  // namespace

void config_validate(const RestoreConfig& c) {
  if (c.pretrain.enabled()) {
    pretrain_validate(c);
  } else {
    key_check(!c.teacher.empty(), "teacher", "is required (HF model folder of the native-RoPE model)");
    student_rope_validate(c.student_rope);
  }
  key_check(!c.output.empty(), "output", "is required (folder the run writes)");
  key_check(!c.data.empty(), "data", "is required (list of text or JSONL files)");
  schedule_validate(c);
  objective_validate(c);
}

}  // namespace linear_ard::train

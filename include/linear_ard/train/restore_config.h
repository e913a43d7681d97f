// RestoreConfig: every setting of `linear-ard restore`, read from YAML plus `key=value` overrides,
// validated with errors naming the key, and written back (defaults filled in) as resolved YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace linear_ard::train {

struct RestoreConfig {
  std::string teacher;               // HF folder of the native-RoPE model (required)
  nlohmann::json student_rope;       // HF rope dict of the student, e.g. {rope_type: linear, factor: 8}
  std::vector<std::string> data;     // plain-text or JSONL (`text` field) files (required)
  int64_t ctx_len = 0;               // block length; 0: the teacher's max_position_embeddings
  int64_t batch_size = 1;
  int64_t grad_accum = 1;
  int64_t steps = 100;               // optimizer updates
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;         // cosine decay ends at min_lr_ratio * lr
  double weight_decay = 0.0;
  double clip_grad_norm = 5.0;       // 0: no clipping (the norm is still measured and checked)
  double lambda_q = 1.0;
  double lambda_k = 1.0;
  double lambda_v = 1.0;
  int64_t distill_layer = -1;        // negative counts from the end; -1 is the paper's final layer
  uint64_t seed = 0;
  std::string device = "auto";       // cpu, cuda, or auto (cuda when available)
  std::string dtype = "auto";        // fp32, bf16, or auto (bf16 on cuda, fp32 on cpu)
  bool checkpoint_layers = false;    // recompute the student's layers in backward
  std::string output;                // output folder (required)
  bool overwrite = false;            // replace an existing non-empty output folder
  int64_t eval_every = 0;            // 0: evaluate only before the first and after the last step
  int64_t log_every = 1;
};

// Reads YAML `path`, applies `overrides` ("key=value", dotted keys for nested maps such as
// student_rope.factor=4; values are parsed as YAML so lists and numbers keep their type) and
// validates. Throws std::invalid_argument naming the key or file at fault (unknown keys included).
RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides = {});

// The config as YAML with every key present: what `resolved_config.yaml` holds.
std::string restore_config_to_yaml(const RestoreConfig& config);

}  // namespace linear_ard::train

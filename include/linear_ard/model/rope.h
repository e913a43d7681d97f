// Rotary position embeddings: inverse frequencies for every HF scaling type (RopeTables), the
// cos/sin tables for given positions, and their application to Q and K.
//
// Numerics follow transformers 5.23 (modeling_rope_utils.py) op for op in fp32, so inv_freq and the
// attention scaling agree with HF to the last bit on CPU.
#pragma once

#include <torch/torch.h>

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

struct RopeFrequencies {
  torch::Tensor inv_freq;          // [rotary_dim / 2], fp32, CPU
  double attention_scaling = 1.0;  // multiplies cos and sin (yarn, longrope)
};

// inv_freq and attention scaling as HF's rope init function computes them for `seq_len`
// (nullopt: at model construction). seq_len matters for dynamic (NTK base) and longrope (factor set).
RopeFrequencies rope_frequencies(const ModelConfig& config, const RopeConfig& rope,
                                 std::optional<int64_t> seq_len = std::nullopt);

// One model's RoPE: the teacher and the student share weights and differ in this object only.
struct RopeTables {
  ModelConfig config;  // dimensions and max_position_embeddings the RoPE formulas read
  RopeConfig rope;
  RopeFrequencies base;         // at construction (dynamic/longrope below their thresholds)
  RopeFrequencies long_range;   // longrope past original_max_position_embeddings; else unset
};

RopeTables rope_tables_init(const ModelConfig& config, const RopeConfig& rope);
inline RopeTables rope_tables_init(const ModelConfig& config) {
  return rope_tables_init(config, config.rope);
}

struct RopeCosSin {
  // [B or 1, n, rotary_dim], in the activation dtype; sin_signed is sin with its first half
  // negated (rope_apply's form of rotate_half)
  torch::Tensor cos, sin_signed;
};

// cos/sin for position_ids [B or 1, n] (int64). `seq_len` is the length the dynamic/longrope
// variants key on: HF uses max(position_ids) + 1 of the current call, which is the default.
RopeCosSin rope_cos_sin(const RopeTables& tables, const torch::Tensor& position_ids,
                        torch::ScalarType dtype, std::optional<int64_t> seq_len = std::nullopt);

// x [B, heads, n, head_dim] rotated on its first rotary_dim features (rotate-half convention),
// bit for bit as HF's x * cos + rotate_half(x) * sin.
torch::Tensor rope_apply(const torch::Tensor& x, const RopeCosSin& cs);

}  // namespace linear_ard::model

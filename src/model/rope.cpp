// RoPE inverse frequencies for every HF scaling type, cos/sin tables, rotate-half application.
//
// Each formula is written with the same tensor ops, in the same order and dtype, as transformers
// 5.23: `1.0 / t` in Python is `t.reciprocal() * 1.0`, `base ** t` is pow(Scalar, Tensor), and the
// dynamic-NTK update runs on an fp32 0-dim tensor; reproducing those keeps inv_freq bit-identical.
#include "linear_ard/model/rope.h"

#include <cmath>
#include <stdexcept>

namespace linear_ard::model {
namespace {

constexpr double kPi = 3.14159265358979323846;

// base ** (arange(0, dim, 2) / dim) in fp32: the per-pair wavelength scale before any scaling.
torch::Tensor rope_pos_freqs(double base, int64_t dim) {
  auto exponent = torch::arange(0, dim, 2, torch::kLong).to(torch::kFloat) / dim;
  return torch::pow(base, exponent);
}

double rope_factor(const RopeConfig& rope, const char* type_name) {
  if (!rope.factor)
    throw std::invalid_argument(std::string("rope type ") + type_name + " needs `factor`");
  return *rope.factor;
}

RopeFrequencies rope_dynamic(const ModelConfig& config, const RopeConfig& rope, int64_t dim,
                             std::optional<int64_t> seq_len) {
  const double factor = rope_factor(rope, "dynamic");
  const int64_t max_pos = config.max_position_embeddings;
  const double exponent = static_cast<double>(dim) / static_cast<double>(dim - 2);
  if (!seq_len || *seq_len <= max_pos) {
    // Construction time: HF evaluates the base in Python doubles with seq_len = max positions.
    const double ratio = factor * static_cast<double>(max_pos) / static_cast<double>(max_pos);
    const double base = rope.theta * std::pow(ratio - (factor - 1.0), exponent);
    return {rope_pos_freqs(base, dim).reciprocal(), 1.0};
  }
  // Growth during a forward: HF's seq_len is an int64 tensor, so the base becomes an fp32 tensor.
  auto len = torch::tensor(*seq_len, torch::kLong);
  auto base = ((len * factor) / max_pos - (factor - 1.0)).pow(exponent) * rope.theta;
  auto shape = torch::arange(0, dim, 2, torch::kLong).to(torch::kFloat) / dim;
  return {torch::pow(base, shape).reciprocal(), 1.0};
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// Dimension index at which a frequency completes `rotations` turns over `max_pos` positions.
double yarn_correction_dim(double rotations, int64_t dim, double base, int64_t max_pos) {
  return (static_cast<double>(dim) *
          std::log(static_cast<double>(max_pos) / (rotations * 2.0 * kPi))) /
         (2.0 * std::log(base));
}

RopeFrequencies rope_yarn(const ModelConfig& config, const RopeConfig& rope, int64_t dim) {
  const int64_t original = rope_original_max_positions(config, rope);
  const double factor = rope.factor.value_or(static_cast<double>(config.max_position_embeddings) /
                                             static_cast<double>(original));
  double attention = 0.0;
  if (rope.attention_factor) {
    attention = *rope.attention_factor;
  } else if (rope.mscale.value_or(0.0) != 0.0 && rope.mscale_all_dim.value_or(0.0) != 0.0) {
    attention = yarn_mscale(factor, *rope.mscale) / yarn_mscale(factor, *rope.mscale_all_dim);
  } else {
    attention = yarn_mscale(factor, 1.0);
  }
  // HF writes `get("beta_fast") or 32`: an explicit 0 also falls back to the default.
  const double beta_fast = rope.beta_fast.value_or(0.0) != 0.0 ? *rope.beta_fast : 32.0;
  const double beta_slow = rope.beta_slow.value_or(0.0) != 0.0 ? *rope.beta_slow : 1.0;

  double low = yarn_correction_dim(beta_fast, dim, rope.theta, original);
  double high = yarn_correction_dim(beta_slow, dim, rope.theta, original);
  if (rope.truncate.value_or(true)) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // the ramp would divide by zero

  auto pos_freqs = rope_pos_freqs(rope.theta, dim);
  auto extrapolation = pos_freqs.reciprocal();
  auto interpolation = (pos_freqs * factor).reciprocal();
  auto ramp = ((torch::arange(dim / 2, torch::kFloat) - low) / (high - low)).clamp(0, 1);
  auto extrapolation_weight = 1 - ramp;
  auto inv_freq = interpolation * (1 - extrapolation_weight) + extrapolation * extrapolation_weight;
  return {inv_freq, attention};
}

RopeFrequencies rope_llama3(const ModelConfig& config, const RopeConfig& rope, int64_t dim) {
  const double factor = rope_factor(rope, "llama3");
  if (!rope.low_freq_factor || !rope.high_freq_factor)
    throw std::invalid_argument("rope type llama3 needs low_freq_factor and high_freq_factor");
  const double low_ff = *rope.low_freq_factor, high_ff = *rope.high_freq_factor;
  const auto old_len = static_cast<double>(rope_original_max_positions(config, rope));
  const double low_wavelen = old_len / low_ff, high_wavelen = old_len / high_ff;

  auto inv_freq = rope_pos_freqs(rope.theta, dim).reciprocal();
  auto wavelen = inv_freq.reciprocal() * (2.0 * kPi);
  auto scaled = torch::where(wavelen > low_wavelen, inv_freq / factor, inv_freq);
  auto smooth = (wavelen.reciprocal() * old_len - low_ff) / (high_ff - low_ff);
  auto smoothed = (1 - smooth) * scaled / factor + smooth * scaled;
  auto is_medium = (wavelen < high_wavelen).logical_not() * (wavelen > low_wavelen).logical_not();
  return {torch::where(is_medium, smoothed, scaled), 1.0};
}

RopeFrequencies rope_longrope(const ModelConfig& config, const RopeConfig& rope, int64_t dim,
                              std::optional<int64_t> seq_len) {
  const int64_t original = rope_original_max_positions(config, rope);
  const double factor = rope.factor.value_or(static_cast<double>(config.max_position_embeddings) /
                                             static_cast<double>(original));
  double attention = 1.0;
  if (rope.attention_factor) {
    attention = *rope.attention_factor;
  } else if (factor > 1.0) {
    attention = std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(original)));
  }
  const bool long_range = seq_len && *seq_len > original;
  const std::vector<double>& ext = long_range ? rope.long_factor : rope.short_factor;
  if (static_cast<int64_t>(ext.size()) != dim / 2)
    throw std::invalid_argument("longrope " + std::string(long_range ? "long" : "short") +
                                "_factor has " + std::to_string(ext.size()) + " entries, expected " +
                                std::to_string(dim / 2));
  auto ext_factors = torch::tensor(ext, torch::kDouble).to(torch::kFloat);
  return {(ext_factors * rope_pos_freqs(rope.theta, dim)).reciprocal(), attention};
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelConfig& config, const RopeConfig& rope,
                                 std::optional<int64_t> seq_len) {
  const int64_t dim = rope_rotary_dim(config, rope);
  switch (rope.type) {
    case RopeType::kDefault:
      return {rope_pos_freqs(rope.theta, dim).reciprocal(), 1.0};
    case RopeType::kLinear:
      return {rope_pos_freqs(rope.theta, dim).reciprocal() / rope_factor(rope, "linear"), 1.0};
    case RopeType::kDynamic:
      return rope_dynamic(config, rope, dim, seq_len);
    case RopeType::kYarn:
      return rope_yarn(config, rope, dim);
    case RopeType::kLlama3:
      return rope_llama3(config, rope, dim);
    case RopeType::kLongrope:
      return rope_longrope(config, rope, dim, seq_len);
  }
  throw std::invalid_argument("unknown rope type");
}

RopeTables rope_tables_init(const ModelConfig& config, const RopeConfig& rope) {
  RopeTables tables{config, rope, rope_frequencies(config, rope), {}};
  if (rope.type == RopeType::kLongrope)
    tables.long_range = rope_frequencies(config, rope, rope_original_max_positions(config, rope) + 1);
  return tables;
}

RopeCosSin rope_cos_sin(const RopeTables& tables, const torch::Tensor& position_ids,
                        torch::ScalarType dtype, std::optional<int64_t> seq_len) {
  const RopeType type = tables.rope.type;
  const bool length_dependent = type == RopeType::kDynamic || type == RopeType::kLongrope;
  if (length_dependent && !seq_len) seq_len = position_ids.max().item<int64_t>() + 1;

  const RopeFrequencies* freqs = &tables.base;
  RopeFrequencies grown;
  if (type == RopeType::kDynamic && *seq_len > tables.config.max_position_embeddings) {
    grown = rope_frequencies(tables.config, tables.rope, seq_len);
    freqs = &grown;
  } else if (type == RopeType::kLongrope &&
             *seq_len > rope_original_max_positions(tables.config, tables.rope)) {
    freqs = &tables.long_range;
  }
  auto inv_freq = freqs->inv_freq.to(position_ids.device());
  auto angles = position_ids.unsqueeze(-1).to(torch::kFloat) * inv_freq;
  auto emb = torch::cat({angles, angles}, -1);
  auto sin = (emb.sin() * freqs->attention_scaling).to(dtype);
  const int64_t half = sin.size(-1) / 2;
  return {(emb.cos() * freqs->attention_scaling).to(dtype),
          torch::cat({-sin.narrow(-1, 0, half), sin.narrow(-1, half, half)}, -1)};
}

torch::Tensor rope_apply(const torch::Tensor& x, const RopeCosSin& cs) {
  const int64_t rot = cs.cos.size(-1);
  auto cos = cs.cos.unsqueeze(1), sin_signed = cs.sin_signed.unsqueeze(1);
  // rotate_half(x) = cat(-x2, x1), so rotate_half(x) * sin = roll(x, rot / 2) * sin_signed bit for
  // bit (negation is exact): one kernel for the rotation where HF's takes a negation and a
  // concatenation, and no slices, whose gradients would each be a zero-filled full-size tensor.
  if (rot == x.size(-1)) return x * cos + x.roll(rot / 2, -1) * sin_signed;
  auto parts = x.split_with_sizes({rot, x.size(-1) - rot}, -1);
  auto out = parts[0] * cos + parts[0].roll(rot / 2, -1) * sin_signed;
  return torch::cat({out, parts[1]}, -1);
}

}  // namespace linear_ard::model

// diagnose's candidate RoPE scalings as HF rope dicts.
#include <stdexcept>

#include "linear_ard/eval/diagnose.h"
#include "linear_ard/model/rope.h"  // defines: rope_frequencies

namespace linear_ard::eval {

namespace {

// Per rotary pair, native frequency / YaRN's at `factor`: 1 where YaRN extrapolates (high
// frequencies), `factor` where it interpolates, its ramp between.
std::vector<double> yarn_ratios(const model::ModelConfig& teacher, double factor) {
  model::RopeConfig yarn = teacher.rope;
  yarn.type = model::RopeType::kYarn;
  yarn.factor = factor;
  yarn.original_max_position_embeddings = teacher.max_position_embeddings;
  const torch::Tensor ratio = (model::rope_frequencies(teacher, teacher.rope).inv_freq /
                               model::rope_frequencies(teacher, yarn).inv_freq).to(torch::kDouble).contiguous();
  return {ratio.data_ptr<double>(), ratio.data_ptr<double>() + ratio.numel()};
}

}  // namespace

const std::vector<std::string>& diagnose_scaling_names() {
  static const std::vector<std::string> names = {"pi", "yarn", "ntk", "llama3", "longrope"};
  return names;
}

nlohmann::json diagnose_scaling_rope(const std::string& name, const model::ModelConfig& teacher, double factor) {
  const int64_t native = teacher.max_position_embeddings;
  if (name == "pi") return {{"rope_type", "linear"}, {"factor", factor}};
  if (name == "ntk") return {{"rope_type", "dynamic"}, {"factor", factor}};
  if (name == "yarn") return {{"rope_type", "yarn"}, {"factor", factor}, {"original_max_position_embeddings", native}};
  if (name == "llama3")
    return {{"rope_type", "llama3"}, {"factor", factor}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", native}};
  if (name == "longrope") {
    const std::vector<double> long_factor = yarn_ratios(teacher, factor);
    return {{"rope_type", "longrope"}, {"factor", factor}, {"original_max_position_embeddings", native},
            {"short_factor", std::vector<double>(long_factor.size(), 1.0)}, {"long_factor", long_factor}};
  }
  std::string known;
  for (const auto& n : diagnose_scaling_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown scaling '" + name + "' (known: " + known + ")");
}

}  // namespace linear_ard::eval

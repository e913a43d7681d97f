// The config of a RoPE-scaled student, and the native-teacher check.
#include "linear_ard/train/student_config.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "linear_ard/io/hf_config.h"  // defines: hf_config_from_json

namespace linear_ard::train {

model::ModelConfig student_config_make(const io::HfFolder& teacher, const nlohmann::json& student_rope) {
  const model::ModelConfig& t = teacher.model_config;
  nlohmann::json rope = student_rope;
  const model::RopeType type = model::rope_type_from_name(rope.value("rope_type", rope.value("type", "")));
  if (!rope.contains("original_max_position_embeddings"))
    rope["original_max_position_embeddings"] = t.max_position_embeddings;

  nlohmann::json j = teacher.config;
  j.erase("rope_parameters");
  j["rope_theta"] = t.rope.theta;
  if (t.rope.partial_rotary_factor) j["partial_rotary_factor"] = *t.rope.partial_rotary_factor;
  j["rope_scaling"] = rope;
  if (type != model::RopeType::kDynamic)
    j["max_position_embeddings"] = static_cast<int64_t>(std::llround(t.max_position_embeddings * rope["factor"].get<double>()));
  return io::hf_config_from_json(j);
}

void teacher_native_check(const io::HfFolder& teacher) {
  const model::RopeConfig& rope = teacher.model_config.rope;
  if (rope.type == model::RopeType::kDefault) return;
  char factor[32] = "";
  if (rope.factor) std::snprintf(factor, sizeof factor, ", factor %g", *rope.factor);
  throw std::invalid_argument("teacher " + teacher.path + " is already RoPE-scaled (config.json: rope_type " +
                              model::rope_type_name(rope.type) + factor +
                              "): restore and diagnose start from the native-RoPE model; give the checkpoint "
                              "before scaling");
}

}  // namespace linear_ard::train

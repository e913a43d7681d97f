// student_config_make and teacher_native_check: the config.json of a RoPE-scaled student built from
// a native teacher, the one construction `restore` trains and `diagnose` measures.
#pragma once

#include <nlohmann/json.hpp>

#include "linear_ard/io/hf_folder.h"
#include "linear_ard/model/model_config.h"

namespace linear_ard::train {

// The student's config.json: the teacher's with `student_rope` (an HF rope dict, e.g. {rope_type:
// yarn, factor: 4}) as its rope_scaling and, as HF expects for a scaled model,
// max_position_embeddings = native x factor. The rope dict names the native length as
// original_max_position_embeddings unless it gives one (yarn, llama3 and longrope compute with it;
// for linear it records what was scaled); dynamic NTK keeps the native max_position_embeddings, its
// threshold. `student_rope` must name a known type and hold a numeric factor. Throws
// std::invalid_argument with hf_config_from_json's message (the key and what is wrong with it) for
// a rope dict transformers would refuse.
model::ModelConfig student_config_make(const io::HfFolder& teacher, const nlohmann::json& student_rope);

// Throws std::invalid_argument naming the folder and its rope type when the teacher's RoPE is
// already scaled: the student's RoPE replaces the teacher's, and a scaled teacher would be compared
// under a config claiming native x factor positions over a context already extended
// (docs/restore.md, "Teachers").
void teacher_native_check(const io::HfFolder& teacher);

}  // namespace linear_ard::train

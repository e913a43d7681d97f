// The student's RoPE from the teacher's and a requested scaling: the teacher keeps whatever scaling
// its config.json holds as its native positions, and the student extends it the way the family's
// own scaling extends (docs/rope.md has the rule of each type and the combinations refused).
#pragma once

#include <string>

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

// The context length the teacher's RoPE serves, which the request's factor multiplies:
// max_position_embeddings, or for scaled RoPE the original length times the factor when larger
// (dynamic NTK: max_position_embeddings times the factor; linear without an original length:
// max_position_embeddings, which such checkpoints already write extended).
int64_t rope_teacher_context(const ModelConfig& teacher);

// The teacher's config with its RoPE replaced by the student's: `request` is a rope dict as the
// user gave it (type, factor = the extension over rope_teacher_context, and any keys of its type),
// with rope_theta / partial_rotary_factor already defaulted to the teacher's. Sets
// max_position_embeddings (the teacher's context x factor; dynamic: unchanged, its threshold) and
// original_max_position_embeddings. Throws std::invalid_argument naming the combination of types
// transformers cannot express, or the key a type needs that neither the request nor the teacher
// gives.
ModelConfig rope_compose(const ModelConfig& teacher, const RopeConfig& request);

}  // namespace linear_ard::model

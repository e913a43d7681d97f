// Validation of a parsed restore config: each rule an error naming the key at fault. Private to
// src/train.
#pragma once

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// Throws std::invalid_argument naming the key: required keys, student_rope as transformers reads a
// rope dict (or the pretraining rules), ranges of the optimisation and objective keys.
void config_validate(const RestoreConfig& c);

}  // namespace linear_ard::train

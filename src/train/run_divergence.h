// The divergence rule of a training run: a step loss far above its stage's first one, or a
// non-finite number in an evaluation, stops the run. Private to src/train.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// Why `loss` diverged against its stage's first loss `reference` (config.divergence_factor), if it
// did.
std::optional<std::string> loss_diverged(const RestoreConfig& config, double loss, double reference);

// The first non-finite number of an evaluation record ("relation_loss nan"), if any.
std::optional<std::string> eval_nonfinite(const nlohmann::json& record);

}  // namespace linear_ard::train

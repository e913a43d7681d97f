// training_curves: the training-dynamics figure of a run (training_curves.svg). Private to src/train.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace linear_ard::train {

// The optimised loss per stage, its parts, and the held-out monitors vs step, from the run's
// metrics.jsonl records; an SVG document.
std::string training_curves_render(const std::vector<nlohmann::json>& records);

}  // namespace linear_ard::train

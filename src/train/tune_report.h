// tune_report: tune.md, the report of `linear-ard tune` (what was tried, how each trial scored, why the
// winner won, the final run). Private to src/train.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace linear_ard::train {

// The Markdown of tune.json's content `t` (trials so far, the winner and the final run once known).
std::string tune_markdown(const nlohmann::json& t);

}  // namespace linear_ard::train

// Side-by-side report of several models (native, scaled, restored): perplexity, tasks with Rec.
// against a named reference model (paper Table 1), passkey and RULER, as markdown and JSON (which
// scripts/plot.py draws).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace linear_ard::eval {

// `report` is {"reference": NAME or null, "models": [{"name", "path", "device", "dtype",
// "ppl": [ppl_result_json...] (optional), "tasks": tasks_report_json (optional),
// "passkey": passkey_report_json (optional), "ruler": ruler_report_json (optional)}]}.
// Adds linear_ard.recovery (tasks Avg / reference's tasks Avg, in %) to every model's "tasks" when
// there is a reference with tasks, and returns the report. Throws std::invalid_argument when the
// reference is not one of the models.
nlohmann::json compare_recovery_add(nlohmann::json report);

// One section per evaluation present: PPL per context length; the tasks table with Avg. and Rec.;
// passkey accuracy per length (mean over depths); RULER Avg. per length and Avg. all, then the
// per-task table of Appendix G.
std::string compare_report_markdown(const nlohmann::json& report);

}  // namespace linear_ard::eval

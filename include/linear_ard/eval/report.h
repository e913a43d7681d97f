// Evaluation reports: markdown tables, the per-task table with Avg. and Rec. (recovery against a
// reference model, paper Table 1), and writing a report as markdown + JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/eval/passkey.h"
#include "linear_ard/eval/perplexity.h"
#include "linear_ard/eval/task_eval.h"

namespace linear_ard::eval {

// A GitHub-markdown table.
std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows);

// Fixed-point text of `value` with `digits` decimals.
std::string number_text(double value, int digits);

// Task results as JSON: {"tasks": {name: {type, docs, metrics..., tokens_per_s}}, "avg": ...}.
// `avg` is the mean over tasks of `avg_metric` (acc or acc_norm; last-word tasks have only acc).
nlohmann::json tasks_report_json(const std::vector<TaskResult>& results, const std::string& avg_metric);

// One row per model: the metric of every task in %, Avg., and Rec. = Avg / reference Avg in %
// when `reference` (a tasks_report_json of the reference model) is given. `reports` are
// tasks_report_json values, `names` their models; tasks are the first report's.
std::string tasks_report_markdown(const std::vector<std::string>& names,
                                  const std::vector<nlohmann::json>& reports,
                                  const std::optional<nlohmann::json>& reference);

// One context length's perplexity as JSON (ctx_len, stride, documents, windows, tokens, bytes, nll,
// ppl, bits_per_byte, seconds, tokens_per_s).
nlohmann::json ppl_result_json(const PerplexityResult& r);

// Passkey results as JSON: {"tokens_per_s", "rows": [{length, depth, samples, accuracy, outputs,
// output_ids, prompts: [{text, passkey, tokens}]}]}.
nlohmann::json passkey_report_json(const PasskeyResult& r);

// Writes `markdown` to `<stem>.md` and `json` to `<stem>.json`, atomically.
void report_write(const std::string& stem, const std::string& markdown, const nlohmann::json& json);

}  // namespace linear_ard::eval

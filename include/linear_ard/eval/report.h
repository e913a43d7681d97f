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

// Task results as lm-evaluation-harness writes them (results_<date>.json, v0.4.13):
// {"results": {task: {"alias", "acc,none", "acc_stderr,none", "acc_norm,none",
// "acc_norm_stderr,none"} (last word: "acc,none", "acc_stderr,none", "perplexity,none")},
// "group_subtasks", "configs": {task: {task, dataset_path, output_type, target_delimiter,
// fewshot_delimiter, num_fewshot, metric_list}}, "versions", "n-shot", "higher_is_better",
// "n-samples": {task: {original, effective}}}, plus this project's "linear_ard": {"order",
// "avg_metric", "avg" (the mean over tasks of avg_metric: acc or acc_norm; last-word tasks have only
// acc), "tasks": {task: {type, tokens, seconds, tokens_per_s}}}. The caller adds "config" (model,
// device, batch size...) and the run's other top-level keys.
nlohmann::json tasks_report_json(const std::vector<TaskResult>& results, const TaskOptions& options,
                                 const std::string& avg_metric);

// The number a tasks report shows for `task`: its avg_metric ("acc" or "acc_norm"), else acc.
double tasks_report_headline(const nlohmann::json& report, const std::string& task);

// One row per model: the headline of every task in %, Avg., and Rec. = Avg / reference Avg in %
// when `reference` (a tasks_report_json of the reference model) is given. `reports` are
// tasks_report_json values, `names` their models; tasks are the first report's.
std::string tasks_report_markdown(const std::vector<std::string>& names,
                                  const std::vector<nlohmann::json>& reports,
                                  const std::optional<nlohmann::json>& reference);

// One line of lm-eval's samples_<task>_<date>.jsonl for `sample`: doc_id, doc, target (as a
// string), arguments {"gen_args_i": {"arg_0": context, "arg_1": continuation}}, resps and
// filtered_resps (loglikelihood and greedy flag as strings, as lm-eval logs them), filter "none",
// metrics and their per-doc values (acc, acc_norm; last word: perplexity = the loglikelihood, acc).
nlohmann::json task_sample_json(const TaskSample& sample, TaskType type);

// Where lm-eval's --output_path PATH puts its files: for PATH ending in .json the results go to
// <PATH less .json>_<date>.json and the samples beside it; else to PATH/<model>/results_<date>.json
// and the samples there, <model> being the model path with every run of the characters "<>:/|\?*[]
// replaced by "__". `date` is the local time as 2026-11-23T21-40-34.409756 (ISO, ':' made '-').
struct LmEvalPaths {
  std::string results;
  std::string samples_dir;
  std::string date;
};
LmEvalPaths lm_eval_paths(const std::string& output_path, const std::string& model);

// One context length's perplexity as JSON (ctx_len, stride, documents, windows, tokens, bytes, nll,
// ppl, bits_per_byte, seconds, tokens_per_s).
nlohmann::json ppl_result_json(const PerplexityResult& r);

// Passkey results as JSON: {"tokens_per_s", "answer_lead", "rows": [{length, depth, samples,
// accuracy, outputs, output_ids, prompts: [{text, passkey, tokens, answer_lead_ids}]}]}.
nlohmann::json passkey_report_json(const PasskeyResult& r);

// Writes `markdown` to `<stem>.md` and `json` to `<stem>.json`, atomically.
void report_write(const std::string& stem, const std::string& markdown, const nlohmann::json& json);

}  // namespace linear_ard::eval

// Report tables and files.
#include "linear_ard/eval/report.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"  // defines: file_write_atomic

namespace linear_ard::eval {

std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  for (const auto& h : header) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const auto& cell : row) out += " " + cell + " |";
    out += "\n";
  }
  return out;
}

std::string number_text(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

namespace {

// lm-eval's metric names per task type, each with whether higher is better.
std::vector<std::pair<std::string, bool>> task_metrics(TaskType type) {
  if (type == TaskType::task_type_multiple_choice) return {{"acc", true}, {"acc_norm", true}};
  return {{"perplexity", false}, {"acc", true}};
}

}  // namespace

nlohmann::json tasks_report_json(const std::vector<TaskResult>& results, const TaskOptions& options,
                                 const std::string& avg_metric) {
  if (avg_metric != "acc" && avg_metric != "acc_norm")
    throw std::invalid_argument("the averaged metric must be acc or acc_norm, not '" + avg_metric + "'");
  using nlohmann::json;
  json out = {{"results", json::object()}, {"group_subtasks", json::object()}, {"configs", json::object()},
              {"versions", json::object()}, {"n-shot", json::object()}, {"higher_is_better", json::object()},
              {"n-samples", json::object()}};
  json ours = {{"order", json::array()}, {"avg_metric", avg_metric}, {"tasks", json::object()}};
  double sum = 0;
  for (const auto& r : results) {
    json metrics = {{"alias", r.name}};
    for (const auto& [k, v] : r.metrics) metrics[k + ",none"] = v;
    out["results"][r.name] = metrics;
    json metric_list = json::array();
    for (const auto& [metric, higher] : task_metrics(r.type)) {
      metric_list.push_back({{"metric", metric}, {"aggregation", metric == "perplexity" ? "perplexity" : "mean"},
                             {"higher_is_better", higher}});
      out["higher_is_better"][r.name][metric] = higher;
    }
    // An lm-eval samples log's prompts hold examples this run does not know the number of.
    const json shots = r.from_lm_eval_samples ? json(nullptr) : json(options.num_fewshot);
    out["configs"][r.name] = {{"task", r.name}, {"dataset_path", r.path}, {"output_type", task_type_lm_eval_name(r.type)},
                              {"target_delimiter", options.target_delimiter},
                              {"fewshot_delimiter", options.fewshot_delimiter}, {"num_fewshot", shots},
                              {"metric_list", metric_list}};
    out["versions"][r.name] = nullptr;
    out["n-shot"][r.name] = shots;
    out["n-samples"][r.name] = {{"original", r.docs_total}, {"effective", r.docs}};
    ours["order"].push_back(r.name);
    ours["tasks"][r.name] = {{"type", task_type_name(r.type)}, {"tokens", r.tokens}, {"seconds", r.seconds},
                             {"tokens_per_s", r.tokens_per_s}};
    sum += r.metrics.count(avg_metric) ? r.metrics.at(avg_metric) : r.metrics.at("acc");
  }
  ours["avg"] = results.empty() ? 0.0 : sum / static_cast<double>(results.size());
  out["linear_ard"] = ours;
  return out;
}

double tasks_report_headline(const nlohmann::json& report, const std::string& task) {
  const auto& metrics = report.at("results").at(task);
  const std::string key = report.at("linear_ard").at("avg_metric").get<std::string>() + ",none";
  return (metrics.contains(key) ? metrics.at(key) : metrics.at("acc,none")).get<double>();
}

std::string tasks_report_markdown(const std::vector<std::string>& names,
                                  const std::vector<nlohmann::json>& reports,
                                  const std::optional<nlohmann::json>& reference) {
  std::vector<std::string> header{"model"};
  const auto& order = reports.at(0).at("linear_ard").at("order");
  for (const auto& t : order) header.push_back(t.get<std::string>());
  header.push_back("Avg.");
  if (reference) header.push_back("Rec.");
  std::vector<std::vector<std::string>> rows;
  for (size_t m = 0; m < reports.size(); ++m) {
    std::vector<std::string> row{names[m]};
    for (const auto& t : order) {
      const std::string name = t.get<std::string>();
      row.push_back(reports[m].at("results").contains(name)
                        ? number_text(100 * tasks_report_headline(reports[m], name), 2)
                        : "-");
    }
    const double avg = reports[m].at("linear_ard").at("avg").get<double>();
    row.push_back(number_text(100 * avg, 2));
    if (reference) {
      const double ref = reference->at("linear_ard").at("avg").get<double>();
      row.push_back(ref > 0 ? number_text(100 * avg / ref, 2) : "-");
    }
    rows.push_back(std::move(row));
  }
  return markdown_table(header, rows);
}

nlohmann::json task_sample_json(const TaskSample& sample, TaskType type) {
  using nlohmann::json;
  const TaskDoc& doc = *sample.doc;
  json arguments = json::object(), resps = json::array(), filtered = json::array();
  for (size_t i = 0; i < sample.requests.size(); ++i) {
    const TaskRequest& r = sample.requests[i];
    arguments["gen_args_" + std::to_string(i)] = {{"arg_0", r.context}, {"arg_1", r.continuation}};
    // lm-eval logs str() of its floats and bools; a JSON number's shortest text is Python's repr.
    const json response = {json(r.logprob).dump(), r.greedy ? "True" : "False"};
    resps.push_back(json::array({response}));
    filtered.push_back(response);
  }
  const bool mc = type == TaskType::task_type_multiple_choice;
  json out = {{"doc_id", doc.doc_id}, {"doc", doc.doc}, {"target", doc.logged_target},
              {"arguments", arguments}, {"resps", resps}, {"filtered_resps", filtered}, {"filter", "none"}};
  json metrics = json::array();
  for (const auto& [metric, higher] : task_metrics(type)) metrics.push_back(metric);
  out["metrics"] = metrics;
  if (mc) {
    out["acc"] = sample.acc;
    out["acc_norm"] = sample.acc_norm;
  } else {
    out["perplexity"] = sample.requests.front().logprob;
    out["acc"] = sample.acc;
  }
  return out;
}

LmEvalPaths lm_eval_paths(const std::string& output_path, const std::string& model) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm local{};
  localtime_r(&t, &local);
  char date[64];
  const size_t n = std::strftime(date, sizeof date, "%Y-%m-%dT%H-%M-%S", &local);
  std::snprintf(date + n, sizeof date - n, ".%06lld", static_cast<long long>(micros));
  LmEvalPaths paths;
  paths.date = date;
  const std::filesystem::path path(output_path);
  if (path.extension() == ".json") {
    paths.samples_dir = path.parent_path().empty() ? "." : path.parent_path().string();
    paths.results = (path.parent_path() / (path.stem().string() + "_" + paths.date + ".json")).string();
    return paths;
  }
  static const std::regex unsafe(R"(["<>:/|\\?*\[\]]+)");
  paths.samples_dir = (path / std::regex_replace(model, unsafe, "__")).string();
  paths.results = (std::filesystem::path(paths.samples_dir) / ("results_" + paths.date + ".json")).string();
  return paths;
}

nlohmann::json ppl_result_json(const PerplexityResult& r) {
  nlohmann::json j = {{"ctx_len", r.ctx_len}, {"stride", r.stride}, {"documents", r.documents}, {"windows", r.windows},
                      {"tokens", r.tokens}, {"bytes", r.bytes}, {"nll", r.nll}, {"ppl", r.ppl},
                      {"bits_per_byte", r.bits_per_byte}, {"seconds", r.seconds}, {"tokens_per_s", r.tokens_per_s}};
  if (r.kl) j["kl"] = *r.kl;
  return j;
}

nlohmann::json passkey_report_json(const PasskeyResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json prompts = nlohmann::json::array();
    for (const auto& p : row.prompts)
      prompts.push_back({{"text", p.text}, {"passkey", p.passkey}, {"tokens", p.tokens}, {"answer_lead_ids", p.answer_lead}});
    rows.push_back({{"length", row.length}, {"depth", row.depth}, {"samples", row.samples},
                    {"accuracy", row.accuracy}, {"outputs", row.outputs}, {"output_ids", row.output_ids},
                    {"prompts", prompts}});
  }
  return {{"tokens_per_s", r.tokens_per_s}, {"answer_lead", r.answer_lead}, {"rows", rows}};
}

// Generated text may hold invalid UTF-8 (a model can stop inside a character): replaced, not fatal.
void report_write(const std::string& stem, const std::string& markdown, const nlohmann::json& json) {
  io::file_write_atomic(stem + ".md", markdown);
  io::file_write_atomic(stem + ".json", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace linear_ard::eval

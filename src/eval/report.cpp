// Report tables and files.
#include "linear_ard/eval/report.h"

#include <cstdio>
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

nlohmann::json tasks_report_json(const std::vector<TaskResult>& results, const std::string& avg_metric) {
  if (avg_metric != "acc" && avg_metric != "acc_norm")
    throw std::invalid_argument("the averaged metric must be acc or acc_norm, not '" + avg_metric + "'");
  nlohmann::json tasks = nlohmann::json::object();
  nlohmann::json order = nlohmann::json::array();
  double sum = 0;
  for (const auto& r : results) {
    nlohmann::json t = {{"type", task_type_name(r.type)}, {"docs", r.docs}, {"tokens", r.tokens},
                        {"seconds", r.seconds}, {"tokens_per_s", r.tokens_per_s}};
    for (const auto& [k, v] : r.metrics) t[k] = v;
    const double headline = r.metrics.count(avg_metric) ? r.metrics.at(avg_metric) : r.metrics.at("acc");
    t["headline"] = headline;
    sum += headline;
    tasks[r.name] = t;
    order.push_back(r.name);
  }
  return {{"tasks", tasks}, {"order", order}, {"avg_metric", avg_metric},
          {"avg", results.empty() ? 0.0 : sum / static_cast<double>(results.size())}};
}

std::string tasks_report_markdown(const std::vector<std::string>& names,
                                  const std::vector<nlohmann::json>& reports,
                                  const std::optional<nlohmann::json>& reference) {
  std::vector<std::string> header{"model"};
  const auto& order = reports.at(0).at("order");
  for (const auto& t : order) header.push_back(t.get<std::string>());
  header.push_back("Avg.");
  if (reference) header.push_back("Rec.");
  std::vector<std::vector<std::string>> rows;
  for (size_t m = 0; m < reports.size(); ++m) {
    std::vector<std::string> row{names[m]};
    for (const auto& t : order) {
      const auto& tasks = reports[m].at("tasks");
      const std::string name = t.get<std::string>();
      row.push_back(tasks.contains(name) ? number_text(100 * tasks[name]["headline"].get<double>(), 2) : "-");
    }
    const double avg = reports[m].at("avg").get<double>();
    row.push_back(number_text(100 * avg, 2));
    if (reference) {
      const double ref = reference->at("avg").get<double>();
      row.push_back(ref > 0 ? number_text(100 * avg / ref, 2) : "-");
    }
    rows.push_back(std::move(row));
  }
  return markdown_table(header, rows);
}

nlohmann::json ppl_result_json(const PerplexityResult& r) {
  return {{"ctx_len", r.ctx_len}, {"stride", r.stride}, {"documents", r.documents}, {"windows", r.windows},
          {"tokens", r.tokens}, {"bytes", r.bytes}, {"nll", r.nll}, {"ppl", r.ppl},
          {"bits_per_byte", r.bits_per_byte}, {"seconds", r.seconds}, {"tokens_per_s", r.tokens_per_s}};
}

nlohmann::json passkey_report_json(const PasskeyResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json prompts = nlohmann::json::array();
    for (const auto& p : row.prompts) prompts.push_back({{"text", p.text}, {"passkey", p.passkey}, {"tokens", p.tokens}});
    rows.push_back({{"length", row.length}, {"depth", row.depth}, {"samples", row.samples},
                    {"accuracy", row.accuracy}, {"outputs", row.outputs}, {"output_ids", row.output_ids},
                    {"prompts", prompts}});
  }
  return {{"tokens_per_s", r.tokens_per_s}, {"rows", rows}};
}

// Generated text may hold invalid UTF-8 (a model can stop inside a character): replaced, not fatal.
void report_write(const std::string& stem, const std::string& markdown, const nlohmann::json& json) {
  io::file_write_atomic(stem + ".md", markdown);
  io::file_write_atomic(stem + ".json", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace linear_ard::eval

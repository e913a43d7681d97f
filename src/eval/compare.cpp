// Comparison reports over several models.
#include "linear_ard/eval/compare.h"

#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "linear_ard/eval/report.h"     // defines: markdown_table, number_text, tasks_report_markdown
#include "linear_ard/eval/ruler.h"      // defines: ruler_report_markdown

namespace linear_ard::eval {

namespace {

// Mean passkey accuracy per length (over depths and samples), in %.
std::map<int64_t, double> passkey_by_length(const nlohmann::json& passkey) {
  std::map<int64_t, double> sum, count;
  for (const auto& row : passkey.at("rows")) {
    const int64_t l = row.at("length").get<int64_t>();
    sum[l] += 100 * row.at("accuracy").get<double>();
    count[l] += 1;
  }
  for (auto& [l, s] : sum) s /= count[l];
  return sum;
}

bool any_has(const nlohmann::json& models, const char* key) {
  for (const auto& m : models)
    if (m.contains(key)) return true;
  return false;
}

std::vector<std::string> model_names(const nlohmann::json& models) {
  std::vector<std::string> names;
  for (const auto& m : models) names.push_back(m.at("name").get<std::string>());
  return names;
}

}  // namespace

nlohmann::json compare_recovery_add(nlohmann::json report) {
  if (!report.contains("reference") || report["reference"].is_null()) return report;
  const std::string ref = report["reference"].get<std::string>();
  const nlohmann::json* reference = nullptr;
  for (const auto& m : report.at("models"))
    if (m.at("name") == ref) reference = &m;
  if (!reference) throw std::invalid_argument("the reference model '" + ref + "' is not one of --names");
  if (!reference->contains("tasks")) return report;
  const double ref_avg = reference->at("tasks").at("linear_ard").at("avg").get<double>();
  for (auto& m : report["models"])
    if (m.contains("tasks") && ref_avg > 0)
      m["tasks"]["linear_ard"]["recovery"] = 100 * m["tasks"]["linear_ard"]["avg"].get<double>() / ref_avg;
  return report;
}

std::string compare_report_markdown(const nlohmann::json& report) {
  const auto& models = report.at("models");
  const auto names = model_names(models);
  std::string out;
  if (any_has(models, "ppl")) {
    std::vector<std::string> header{"model"};
    for (const auto& r : models[0].at("ppl")) header.push_back("PPL@" + std::to_string(r.at("ctx_len").get<int64_t>()));
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : models) {
      std::vector<std::string> row{m.at("name").get<std::string>()};
      for (const auto& r : m.at("ppl")) row.push_back(number_text(r.at("ppl").get<double>(), 3));
      rows.push_back(row);
    }
    out += "## Perplexity\n\n" + markdown_table(header, rows) + "\n";
  }
  if (any_has(models, "ppl") && models[0].at("ppl").at(0).contains("kl")) {
    std::vector<std::string> header{"model"};
    for (const auto& r : models[0].at("ppl")) header.push_back("KL@" + std::to_string(r.at("ctx_len").get<int64_t>()));
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : models) {
      std::vector<std::string> row{m.at("name").get<std::string>()};
      for (const auto& r : m.at("ppl")) row.push_back(r.contains("kl") ? number_text(r.at("kl").get<double>(), 4) : "-");
      rows.push_back(row);
    }
    out += "## KL to " + report.value("kl_to", std::string("the reference")) +
           " (nats per token, next-token distributions)\n\n" + markdown_table(header, rows) + "\n";
  }
  if (any_has(models, "tasks")) {
    std::vector<nlohmann::json> reports;
    for (const auto& m : models) reports.push_back(m.at("tasks"));
    std::optional<nlohmann::json> reference;
    if (report.contains("reference") && !report["reference"].is_null())
      for (const auto& m : models)
        if (m.at("name") == report["reference"]) reference = m.at("tasks");
    out += "## Tasks (%" + std::string(reference ? ", Rec. against " + report["reference"].get<std::string>() : "") +
           ")\n\n" + tasks_report_markdown(names, reports, reference) + "\n";
  }
  if (any_has(models, "passkey")) {
    std::vector<std::string> header{"model"};
    for (const auto& [l, a] : passkey_by_length(models[0].at("passkey"))) header.push_back(std::to_string(l));
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : models) {
      std::vector<std::string> row{m.at("name").get<std::string>()};
      for (const auto& [l, a] : passkey_by_length(m.at("passkey"))) row.push_back(number_text(a, 1));
      rows.push_back(row);
    }
    out += "## Passkey accuracy (%, mean over depths)\n\n" + markdown_table(header, rows) + "\n";
  }
  if (any_has(models, "ruler")) {
    std::vector<std::string> header{"model"};
    for (const auto& l : models[0].at("ruler").at("lengths")) header.push_back(std::to_string(l.get<int64_t>()));
    header.push_back("Avg. all");
    std::vector<std::vector<std::string>> rows;
    std::vector<nlohmann::json> reports;
    for (const auto& m : models) {
      const auto& r = m.at("ruler");
      reports.push_back(r);
      std::vector<std::string> row{m.at("name").get<std::string>()};
      for (const auto& l : r.at("lengths"))
        row.push_back(number_text(r.at("avg").at(std::to_string(l.get<int64_t>())).get<double>(), 1));
      row.push_back(number_text(r.at("avg_all").get<double>(), 1));
      rows.push_back(row);
    }
    out += "## RULER (%)\n\n" + markdown_table(header, rows) + "\n" + ruler_report_markdown(names, reports) + "\n";
  }
  return out;
}

}  // namespace linear_ard::eval

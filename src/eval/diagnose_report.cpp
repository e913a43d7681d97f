// diagnose's recommendation rule and its report (JSON, markdown).
#include <algorithm>

#include "linear_ard/eval/diagnose.h"
#include "linear_ard/eval/report.h"  // defines: markdown_table, number_text

namespace linear_ard::eval {

namespace {

double passkey_at(const DiagnoseRow& row, int64_t length) {
  const auto it = row.passkey.find(length);
  return it == row.passkey.end() ? 0.0 : it->second;
}

nlohmann::json relation_json(const DiagnoseRelation& r) {
  return {{"layers", r.layers}, {"q", r.q}, {"k", r.k}, {"v", r.v}};
}

std::string percent_or_dash(const DiagnoseRow& row, int64_t length) {
  const auto it = row.passkey.find(length);
  return it == row.passkey.end() ? "–" : number_text(100 * it->second, 0);
}

// The last layer's three relation KLs of `r`, or dashes without one (the native row).
void relation_cells(std::vector<std::string>& cells, const DiagnoseRelation* r) {
  for (const auto* v : {r ? &r->q : nullptr, r ? &r->k : nullptr, r ? &r->v : nullptr})
    cells.push_back(v && !v->empty() ? number_text(v->back(), 4) : "–");
}

std::string settings_text(const DiagnoseResult& r) {
  std::string s = "Teacher " + r.teacher + " (native " + std::to_string(r.native_length) + " positions) at L = " +
                  std::to_string(r.length) + " (factor " + number_text(r.factor, 3) + "), " + r.device + " " +
                  r.dtype + ". KL to native, PPL and relation KL: " + std::to_string(r.blocks) + " block(s) of C = " +
                  std::to_string(r.ctx) + " tokens of " + r.text + " (" + std::to_string(r.tokens) +
                  " predicted tokens). Relation KL: the final layer's, causal" +
                  (r.relation_length > 0 ? "; @" + std::to_string(r.relation_length) + " on one block of that length" : "") +
                  ". Passkey: " + std::to_string(r.passkey_prompts) + " prompts a length, greedy, % retrieved";
  if (r.passkey_prompts < 20)
    s += " (fewer than the 20 of the GPU setting: a CPU setting, each prompt moves the figure by " +
         number_text(100.0 / static_cast<double>(r.passkey_prompts), 0) + " points)";
  return s + ".\n";
}

}  // namespace

std::string diagnose_rule_text(double margin) {
  return "among the scalings whose passkey accuracy at L is within " + number_text(margin, 0) +
         " points of the best, the lowest KL to native at C";
}

std::string diagnose_recommend(const std::vector<DiagnoseRow>& rows, int64_t length, double margin) {
  double best = -1;
  for (const auto& row : rows)
    if (row.name != "native") best = std::max(best, 100 * passkey_at(row, length));
  const DiagnoseRow* chosen = nullptr;
  for (const auto& row : rows) {
    if (row.name == "native" || 100 * passkey_at(row, length) < best - margin) continue;
    if (!chosen || row.kl < chosen->kl ||
        (row.kl == chosen->kl && passkey_at(row, length) > passkey_at(*chosen, length)))
      chosen = &row;
  }
  return chosen ? chosen->name : "";
}

nlohmann::json diagnose_report_json(const DiagnoseResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json passkey = nlohmann::json::object();
    for (const auto& [length, accuracy] : row.passkey) passkey[std::to_string(length)] = accuracy;
    nlohmann::json j = {{"name", row.name}, {"rope", row.rope}, {"kl", row.kl}, {"ppl", row.ppl},
                        {"passkey", passkey}, {"relation", relation_json(row.relation)}};
    if (row.relation_long) j["relation_long"] = relation_json(*row.relation_long);
    rows.push_back(j);
  }
  return {{"teacher", r.teacher}, {"text", r.text}, {"device", r.device}, {"dtype", r.dtype},
          {"native_length", r.native_length}, {"length", r.length}, {"factor", r.factor}, {"ctx", r.ctx},
          {"blocks", r.blocks}, {"tokens", r.tokens},
          {"passkey", {{"lengths", r.passkey_lengths}, {"prompts_per_length", r.passkey_prompts}}},
          {"relation_length", r.relation_length}, {"rule", diagnose_rule_text(r.margin)}, {"margin", r.margin},
          {"recommended", r.recommended}, {"rows", rows}};
}

std::string diagnose_report_markdown(const DiagnoseResult& r) {
  std::vector<std::string> header = {"model", "KL @" + std::to_string(r.ctx), "PPL @" + std::to_string(r.ctx)};
  for (int64_t n : r.passkey_lengths) header.push_back("passkey " + std::to_string(n) + " %");
  for (const char* rel : {"Q/Q", "K/K", "V/V"}) header.push_back(std::string("rel. KL ") + rel);
  if (r.relation_length > 0)
    for (const char* rel : {"Q/Q", "K/K", "V/V"}) header.push_back(std::string(rel) + " @" + std::to_string(r.relation_length));
  std::vector<std::vector<std::string>> table;
  for (const auto& row : r.rows) {
    const bool native = row.name == "native";
    std::vector<std::string> cells = {row.name, native ? "0" : number_text(row.kl, 4), number_text(row.ppl, 3)};
    for (int64_t n : r.passkey_lengths) cells.push_back(percent_or_dash(row, n));
    relation_cells(cells, native ? nullptr : &row.relation);
    if (r.relation_length > 0) relation_cells(cells, row.relation_long ? &*row.relation_long : nullptr);
    table.push_back(cells);
  }
  std::string out = markdown_table(header, table) + "\n" + settings_text(r);
  if (std::any_of(r.rows.begin(), r.rows.end(), [](const DiagnoseRow& row) { return row.name == "ntk"; }))
    out += "ntk (dynamic NTK) is the native RoPE up to " + std::to_string(r.native_length) +
           " positions, so its KL and relation KL at C are 0 by construction; its damage shows at length only.\n";
  out += "\nrecommendation: " + (r.recommended.empty() ? std::string("none") : r.recommended) + " (rule: " +
         diagnose_rule_text(r.margin) + ")\n";
  const bool retrieves = std::any_of(r.rows.begin(), r.rows.end(), [&](const DiagnoseRow& row) {
    return row.name != "native" && passkey_at(row, r.length) > 0;
  });
  if (!r.recommended.empty() && !retrieves)
    out += "No scaling retrieves a passkey at L: the choice rests on the KL alone.\n";
  return out;
}

}  // namespace linear_ard::eval

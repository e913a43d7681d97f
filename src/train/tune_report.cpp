// tune_report: tune.json as Markdown.
#include "tune_report.h"

#include <algorithm>
#include <cstdio>

namespace linear_ard::train {
namespace {

using nlohmann::json;

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string settings_text(const json& settings) {
  std::string text;
  for (const json& s : settings) text += (text.empty() ? "" : " ") + ("`" + s.get<std::string>() + "`");
  return text.empty() ? "(the config as given)" : text;
}

// "4096: 60 %, 8192: 45 %" from a validation record's passkey map.
std::string passkey_text(const json& chosen) {
  if (!chosen.is_object() || !chosen.contains("passkey")) return "-";
  std::string text;
  for (const auto& [length, accuracy] : chosen["passkey"].items())
    text += (text.empty() ? "" : ", ") + length + ": " + fixed(100 * accuracy.get<double>(), 0) + " %";
  return text;
}

const char* const kTableHead =
    "| run | settings | tokens | step chosen | val KL | passkey mean | passkey by length | status |\n"
    "|---|---|---:|---:|---:|---:|---|---|\n";

// One table row: name, settings, tokens, the validation the run's model is, status.
std::string row(const std::string& name, const json& settings, const json& r) {
  const json& c = r.value("chosen", json());
  const bool scored = c.is_object() && c.contains("val_kl");
  std::string status = r.value("status", "");
  if (r.contains("error")) status += ": " + r["error"].get<std::string>().substr(0, 160);
  return "| " + name + " | " + settings_text(settings) + " | " + std::to_string(r.value("tokens", int64_t{0})) + " | " +
         (scored ? std::to_string(c.value("step", int64_t{0})) : "-") + " | " +
         (scored ? fixed(c["val_kl"].get<double>(), 4) : "-") + " | " +
         (scored && c.contains("passkey_mean") ? fixed(100 * c["passkey_mean"].get<double>(), 1) + " %" : "-") + " | " +
         passkey_text(c) + " | " + status + " |\n";
}

// "320", or "320 to 352" when the grid's combinations train different tokens per step.
std::string span_text(const json& values) {
  int64_t lo = values.at(0).get<int64_t>(), hi = lo;
  for (const json& v : values) lo = std::min(lo, v.get<int64_t>()), hi = std::max(hi, v.get<int64_t>());
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
}

// The budget's paragraph: the tokens asked and those planned after rounding the steps (the full
// run's: the winner's once known, else every combination's).
std::string budget_text(const json& t) {
  const json& b = t["budget"];
  const json& full = b["full_run_tokens"];
  const std::string full_text = t.contains("winner") ? std::to_string(full[t["winner"].get<size_t>()].get<int64_t>()) : span_text(full);
  return "Budget: " + std::to_string(b["asked"].get<int64_t>()) + " tokens asked for the full run (`--budget`); planned " +
         "after rounding each stage's steps: " + full_text + " tokens for the full run, " + span_text(b["trial_tokens"]) +
         " for each trial, " + std::to_string(b["trial_tokens_total"].get<int64_t>()) + " for the " +
         std::to_string(b["trial_tokens"].size()) + " trials.\n\n";
}

}  // namespace

std::string tune_markdown(const json& t) {
  const json& plan = t["plan"];
  std::string md = "# tune: " + t["config"].get<std::string>() + "\n\n";
  const bool budget = t.contains("budget");
  if (budget) md += budget_text(t);
  md += std::to_string(t["trials"].size()) + " trials, each " + fixed(100 * plan["trial_fraction"].get<double>(), 0) +
        (budget ? " % of the full run's steps, " : " % of the config's steps, ") +
        std::to_string(t["trial_tokens"].get<int64_t>()) + " tokens in all; scored on the run's validation split: " +
        "select.criterion " + t["select"]["criterion"].get<std::string>() + " (passkey margin " +
        fixed(t["select"]["passkey_margin"].get<double>(), 2) + ") over each trial's chosen validation.\n\n";
  md += kTableHead;
  for (const json& r : t["trials"]) md += row(r["name"].get<std::string>(), r["settings"], r);
  if (t.contains("winner")) {
    const json& w = t["trials"][t["winner"].get<size_t>()];
    md += "\n**Winner: " + w["name"].get<std::string>() + "** (" + settings_text(w["settings"]) + "): " +
          t["why"].get<std::string>() + ".\n";
    if (w["chosen"].value("step", int64_t{-1}) == 0)
      md += "\nThe winner keeps its validation before training (step 0): no trial lowered the validation KL "
            "below the unrestored model's, so the choice among them is a tie. Widen the grid (a lower learning "
            "rate, another trainable set or objective) or give the trials more steps.\n";
  }
  if (t.contains("final")) {
    md += "\nThe winner's full run, `" + t["final"]["folder"].get<std::string>() + "` (its model in `model/`):\n\n" + kTableHead +
          row("final", t["trials"][t["winner"].get<size_t>()]["settings"], t["final"]);
  }
  return md;
}

}  // namespace linear_ard::train

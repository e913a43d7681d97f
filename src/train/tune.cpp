// tune: trials over a grid, the winner by the run's own validation, then its full run.
#include "linear_ard/train/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"             // defines: file_write_atomic
#include "linear_ard/io/json_file.h"               // defines: json_file_read, json_file_write
#include "linear_ard/train/run_signal.h"           // defines: RunInterrupted
#include "linear_ard/train/validation_select.h"    // defines: validation_select, validation_select_why
#include "tune_budget.h"                           // defines: tune_tokens, tune_budget_factor
#include "tune_report.h"                           // defines: tune_markdown

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Trial {
  std::string name;
  std::vector<std::string> settings;  // the grid's key=value
  RestoreConfig config;
  RestoreConfig full;                 // its full run's, in OUTPUT/restored (run when it wins)
};

// `c`'s steps times `f` (a trial's fraction, or the budget's factor): each stage's (at least 1 where
// the stage has any), its warm-up and the validation interval scaled alike, so that every run keeps
// the schedule's shape.
std::vector<std::string> steps_scaled(const RestoreConfig& c, double f) {
  const auto scaled = [f](int64_t n, int64_t least) { return n > 0 ? std::max<int64_t>(least, std::llround(n * f)) : 0; };
  const int64_t steps = scaled(c.steps, 1), steps2 = scaled(c.stage2.steps, 1);
  const int64_t warmup = std::min(scaled(c.warmup_steps, 0), steps - 1);
  const int64_t warmup2 = std::min(scaled(c.stage2.warmup_steps, 0), std::max<int64_t>(steps2 - 1, 0));
  return {"steps=" + std::to_string(steps), "warmup_steps=" + std::to_string(warmup),
          "stage2.steps=" + std::to_string(steps2), "stage2.warmup_steps=" + std::to_string(warmup2),
          "eval_every=" + std::to_string(scaled(c.eval_every, 1))};
}

// A restore config of the tune: the user's overrides, then `extra`, resumed in `folder`.
RestoreConfig config_at(const TuneOptions& o, std::vector<std::string> extra, const fs::path& folder) {
  std::vector<std::string> overrides = o.overrides;
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  for (const char* s : {"resume=true", "overwrite=false"}) overrides.emplace_back(s);
  overrides.push_back("output=" + folder.string());
  return restore_config_load(o.config_path, overrides);
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Trial `i` of the grid, `combo` its settings: its full run (the config's steps, or those of the
// budget at this combination's tokens per step) and the trial itself (trial_fraction of those).
Trial trial_make(const TuneOptions& o, size_t i, const std::vector<std::string>& combo, const fs::path& out) {
  char name[32];
  std::snprintf(name, sizeof name, "trial-%02zu", i);
  std::vector<std::string> full = combo;
  if (o.budget > 0) {
    const RestoreConfig given = config_at(o, combo, out / "restored");
    for (const std::string& s : steps_scaled(given, tune_budget_factor(given, o.budget))) full.push_back(s);
  }
  Trial trial;
  trial.name = name;
  trial.settings = combo;
  trial.full = config_at(o, full, out / "restored");
  std::vector<std::string> extra = combo;
  for (const std::string& s : steps_scaled(trial.full, o.trial_fraction)) extra.push_back(s);
  trial.config = config_at(o, extra, out / "trials" / name);  // every config checked before a trial runs
  return trial;
}

// What makes two tunes the same: the config's text (wherever the file is), the overrides, the grid,
// the fraction and the budget (when given).
json plan_of(const TuneOptions& o) {
  json grid = json::array();
  for (const TuneAxis& a : o.grid) grid.push_back({{"key", a.key}, {"values", a.values}});
  json plan = {{"config_text", file_text(o.config_path)}, {"overrides", o.overrides}, {"grid", grid},
               {"trial_fraction", o.trial_fraction}};
  if (o.budget > 0) plan["budget"] = o.budget;
  return plan;
}

// tune.json's budget: the tokens asked and those planned after rounding the steps, per grid
// combination (the full run's and the trial's) and for all the trials.
json budget_record(const TuneOptions& o, const std::vector<Trial>& trials) {
  json full = json::array(), trial = json::array();
  int64_t total = 0;
  for (const Trial& t : trials) {
    full.push_back(tune_tokens(t.full));
    trial.push_back(tune_tokens(t.config));
    total += trial.back().get<int64_t>();
  }
  return {{"asked", o.budget}, {"full_run_tokens", full}, {"trial_tokens", trial}, {"trial_tokens_total", total}};
}

// OUTPUT for this plan: new, or a tune of the same plan (resumed); a tune of another plan is replaced
// when the config says overwrite, refused otherwise; anything else there is refused.
void output_claim(const fs::path& out, const json& plan, bool overwrite) {
  if (!fs::exists(out) || fs::is_empty(out)) {
    fs::create_directories(out);
    return;
  }
  const fs::path record = out / "tune.json";
  if (!fs::exists(record))
    throw std::invalid_argument("output " + out.string() + " exists, is not empty and holds no tune.json: it is not a "
                                "folder tune wrote; choose another output or empty it");
  const json before = io::json_file_read(record.string());
  if (before.is_object() && before.value("plan", json()) == plan) return;
  if (!overwrite)
    throw std::invalid_argument("output " + out.string() + " holds a tune of another config, grid, fraction or budget "
                                "(tune.json); set overwrite=true to replace it, or choose another output");
  std::fprintf(stderr, "linear-ard: warning: output %s: replacing a tune of another plan\n", out.string().c_str());
  for (const char* name : {"trials", "restored", "tune.json", "tune.md"}) fs::remove_all(out / name);
}

// A finished run's record for tune.json: its folder, tokens and the validation its model is.
json run_record(const fs::path& folder) {
  const json s = io::json_file_read((folder / "training_summary.json").string());
  json r = {{"folder", folder.string()}, {"tokens", s.value("tokens_trained", int64_t{0})},
            {"chosen", s.at("validation").value("chosen", json())}};
  r["status"] = s.contains("diverged") ? "diverged" : "ok";
  if (s.contains("diverged")) r["error"] = s["diverged"].value("error", "");
  return r;
}

// Runs (or resumes) `config` unless its folder holds a finished run; the run's record, or a failed
// one naming the error. A signal stops the tune.
json run_or_read(const TuneOptions& o, const RestoreConfig& config) {
  const fs::path folder(config.output);
  if (!fs::exists(folder / "training_summary.json")) {
    try {
      o.restore(config);
    } catch (const RunInterrupted&) {
      throw;
    } catch (const std::exception& e) {
      if (!fs::exists(folder / "training_summary.json"))
        return {{"folder", folder.string()}, {"status", "failed"}, {"error", e.what()}, {"tokens", 0}};
    }
  }
  return run_record(folder);
}

// The winner among the trials that finished with a validation: the config's select rule over each
// trial's chosen validation (kl_passkey when the config keeps the last step).
void winner_choose(json& t, const RestoreConfig& base) {
  std::vector<json> records;
  std::vector<size_t> index;
  for (size_t i = 0; i < t["trials"].size(); ++i) {
    const json& trial = t["trials"][i];
    const json& c = trial["chosen"];
    if (trial["status"] != "ok" || !c.is_object() || !c.contains("val_kl")) continue;
    json r = c;
    r["step"] = static_cast<int64_t>(i);  // ties go to the earlier trial
    records.push_back(r);
    index.push_back(i);
  }
  if (records.empty()) throw std::runtime_error("tune: no trial finished with a validation (tune.md lists the errors)");
  const Select rule = base.select.criterion == Select::kLast ? Select::kKlPasskey : base.select.criterion;
  const size_t w = *validation_select(records, rule, base.select.passkey_margin);
  t["winner"] = index[w];
  t["why"] = validation_select_why(records, w, rule, base.select.passkey_margin, "trials");
}

void record_write(const fs::path& out, const json& t) {
  io::json_file_write((out / "tune.json").string(), t);
  io::file_write_atomic((out / "tune.md").string(), tune_markdown(t));
}

}  // namespace

json tune_run(const TuneOptions& o) {
  if (const char* w = std::getenv("WORLD_SIZE"); w && std::atoi(w) > 1)
    throw std::invalid_argument("tune runs its trials in one process (WORLD_SIZE is " + std::string(w) +
                                "); run it without torchrun, then the winner's restore under torchrun");
  if (!(o.trial_fraction > 0 && o.trial_fraction <= 1))
    throw std::invalid_argument("--trial-fraction must be in (0, 1], got " + std::to_string(o.trial_fraction));
  if (o.budget < 0) throw std::invalid_argument("--budget must be positive, got " + std::to_string(o.budget));
  const RestoreConfig base = restore_config_load(o.config_path, o.overrides);
  const fs::path out(base.output);
  std::vector<Trial> trials;
  const auto combos = tune_grid_expand(o.grid);
  for (size_t i = 0; i < combos.size(); ++i) trials.push_back(trial_make(o, i, combos[i], out));
  const json plan = plan_of(o);
  json t = {{"config", o.config_path}, {"plan", plan}, {"output", out.string()}, {"select", {{"criterion", enum_name(base.select.criterion)},
                                        {"passkey_margin", base.select.passkey_margin}}},
            {"trials", json::array()}, {"trial_tokens", 0}};
  if (o.budget > 0) t["budget"] = budget_record(o, trials);
  output_claim(out, plan, base.overwrite);
  for (size_t i = 0; i < trials.size(); ++i) {
    std::printf("tune: trial %zu of %zu (%s) in %s\n", i + 1, trials.size(), json(trials[i].settings).dump().c_str(),
                trials[i].config.output.c_str());
    std::fflush(stdout);
    json r = run_or_read(o, trials[i].config);
    r["name"] = trials[i].name;
    r["settings"] = trials[i].settings;
    t["trials"].push_back(r);
    t["trial_tokens"] = t["trial_tokens"].get<int64_t>() + r["tokens"].get<int64_t>();
    record_write(out, t);
  }
  winner_choose(t, base);
  record_write(out, t);
  const Trial& winner = trials[t["winner"].get<size_t>()];
  std::printf("tune: the winner is %s (%s): %s\n", winner.name.c_str(), json(winner.settings).dump().c_str(),
              t["why"].get<std::string>().c_str());
  if (o.final_run) {
    std::printf("tune: the winner's full run in %s\n", (out / "restored").string().c_str());
    std::fflush(stdout);
    if (!fs::exists(out / "restored" / "training_summary.json")) o.restore(winner.full);
    t["final"] = run_record(out / "restored");
    record_write(out, t);
  }
  std::printf("\n%s", tune_markdown(t).c_str());
  return t;
}

}  // namespace linear_ard::train

// run_selection: the choice of the model among a run's validations, and the weights it may need.
#include "run_selection.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/safetensors.h"         // defines: safetensors_save, safetensors_load
#include "linear_ard/train/validation_select.h"  // defines: validation_select, validation_ranks_before

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The fields of a validation record that training_summary.json keeps (restore's validation;
// pretrain's held-out LM loss).
json record_fields(const json& r) {
  json out = json::object();
  for (const char* k : {"step", "stage", "tokens", "val_kl", "val_ppl", "native_ppl", "passkey", "passkey_mean", "loss_lm",
                        "perplexity"})
    if (r.contains(k)) out[k] = r[k];
  return out;
}

}  // namespace

RunSelection::RunSelection(const SelectConfig& config, std::string output, bool active)
    : config_(config), folder_((fs::path(output) / "selection").string()), active_(active) {}

std::string RunSelection::file(int64_t step) const {
  return (fs::path(folder_) / ("step-" + std::to_string(step) + ".safetensors")).string();
}

bool RunSelection::candidate(size_t i) const {
  if (config_.criterion == Select::kLast) return i + 1 == records_.size();
  const std::optional<size_t> now = validation_select(records_, config_.criterion, config_.passkey_margin);
  if (now == i) return true;
  if (config_.criterion == Select::kKl) return false;
  // kl_passkey: a later validation can raise the best passkey_mean and so rule out the current
  // choice; then the lowest val_kl among the eligible ones left wins. Record i can win that way
  // only if it is still eligible and no record at least as retrieving ranks before it.
  const auto passkey = [](const json& r) { return r.value("passkey_mean", 0.0); };
  double best = 0;
  for (const json& r : records_) best = std::max(best, passkey(r));
  const json& ri = records_[i];
  if (passkey(ri) < best - config_.passkey_margin - 1e-9) return false;  // as validation_select rounds
  for (size_t j = 0; j < records_.size(); ++j)
    if (j != i && passkey(records_[j]) >= passkey(ri) && validation_ranks_before(records_[j], ri)) return false;
  return true;
}

void RunSelection::observe(const json& record, const TrainableSet& trainables) {
  records_.push_back(record_fields(record));
  kept_.push_back(false);
  if (!active_) return;
  if (candidate(records_.size() - 1)) {
    fs::create_directories(folder_);
    io::safetensors_save(file(record.at("step").get<int64_t>()), trainables.state());
    kept_.back() = true;
  }
  for (size_t i = 0; i + 1 < records_.size(); ++i)
    if (kept_[i] && !candidate(i)) {
      fs::remove(file(records_[i].at("step").get<int64_t>()));
      kept_[i] = false;
    }
}

void RunSelection::resume(const std::vector<json>& records, int64_t step) {
  for (const json& r : records) {
    if (!r.value("eval", false) || r.at("step").get<int64_t>() > step) continue;
    records_.push_back(record_fields(r));
    kept_.push_back(active_ && fs::exists(file(r.at("step").get<int64_t>())));
  }
  if (!active_ || !fs::is_directory(folder_)) return;
  // Files of validations after the checkpoint: the resumed run validates those steps again.
  for (const auto& e : fs::directory_iterator(folder_)) {
    const std::string name = e.path().stem().string();
    if (name.rfind("step-", 0) == 0 && std::stoll(name.substr(5)) > step) fs::remove(e.path());
  }
}

std::optional<size_t> RunSelection::chosen() const {
  return validation_select(records_, config_.criterion, config_.passkey_margin);
}

bool RunSelection::chosen_load(TrainableSet& trainables) const {
  const std::optional<size_t> i = chosen();
  if (!i) return false;
  if (!kept_[*i])
    throw std::runtime_error("select: the weights of step " + std::to_string(records_[*i].at("step").get<int64_t>()) +
                             ", the chosen validation, are not in " + folder_ + " (removed while the run was stopped?)");
  trainables.state_load(io::safetensors_load(file(records_[*i].at("step").get<int64_t>())));
  return true;
}

bool RunSelection::chosen_kept() const {
  const std::optional<size_t> i = chosen();
  return i && kept_[*i];
}

void RunSelection::files_remove() const {
  if (active_) fs::remove_all(folder_);
}

json RunSelection::summary() const {
  json s = {{"criterion", enum_name(config_.criterion)}, {"passkey_margin", config_.passkey_margin},
            {"records", records_}};
  const std::optional<size_t> i = chosen();
  s["chosen_step"] = i ? json(records_[*i].at("step")) : json();
  s["chosen"] = i ? records_[*i] : json();
  s["why"] = i ? json(validation_select_why(records_, *i, config_.criterion, config_.passkey_margin)) : json();
  return s;
}

}  // namespace linear_ard::train

// validation_select: the choice of the model among a run's validation records.
#include "linear_ard/train/validation_select.h"

#include <algorithm>
#include <cstdio>

namespace linear_ard::train {
namespace {

using nlohmann::json;

double passkey_of(const json& r) { return r.value("passkey_mean", 0.0); }
bool has_passkey(const json& r) { return r.contains("passkey_mean"); }

// Within the margin of the best passkey_mean; the 1e-9 absorbs the rounding of best - margin.
bool eligible(const json& r, double best, double margin) { return passkey_of(r) >= best - margin - 1e-9; }

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

}  // namespace

bool validation_ranks_before(const json& a, const json& b) {
  const double ka = a.at("val_kl").get<double>(), kb = b.at("val_kl").get<double>();
  if (ka != kb) return ka < kb;
  if (passkey_of(a) != passkey_of(b)) return passkey_of(a) > passkey_of(b);
  return a.at("step").get<int64_t>() < b.at("step").get<int64_t>();
}

std::optional<size_t> validation_select(const std::vector<json>& records, Select criterion, double margin) {
  if (records.empty()) return std::nullopt;
  if (criterion == Select::kLast) return records.size() - 1;
  bool passkey = false;
  double best = 0;
  for (const json& r : records)
    if (has_passkey(r)) passkey = true, best = std::max(best, passkey_of(r));
  const bool margin_applies = criterion == Select::kKlPasskey && passkey;
  std::optional<size_t> chosen;
  for (size_t i = 0; i < records.size(); ++i) {
    if (margin_applies && !eligible(records[i], best, margin)) continue;
    if (!chosen || validation_ranks_before(records[i], records[*chosen])) chosen = i;
  }
  return chosen;
}

std::string validation_select_why(const std::vector<json>& records, size_t chosen, Select criterion, double margin,
                                  const std::string& noun) {
  const json& r = records[chosen];
  if (criterion == Select::kLast) return "the last of the " + noun + " (select.criterion last)";
  bool passkey = false;
  double best = 0;
  size_t count = 0;
  for (const json& x : records)
    if (has_passkey(x)) passkey = true, best = std::max(best, passkey_of(x));
  for (const json& x : records) count += !passkey || criterion == Select::kKl || eligible(x, best, margin);
  std::string text = "the lowest val_kl (" + number(r.at("val_kl").get<double>()) + ") of ";
  if (criterion == Select::kKl || !passkey) return text + "the " + std::to_string(records.size()) + " " + noun;
  return text + "the " + std::to_string(count) + " of " + std::to_string(records.size()) + " " + noun +
         " whose passkey_mean is within " + number(margin) + " of the best (" + number(best) + ")";
}

}  // namespace linear_ard::train

// run_divergence: the loss and evaluation checks that stop a diverged run.
#include "run_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace linear_ard::train {

std::optional<std::string> loss_diverged(const RestoreConfig& c, double loss, double reference) {
  if (c.divergence_factor <= 0 || loss <= c.divergence_factor * std::max(reference, 1e-6)) return std::nullopt;
  char text[256];
  std::snprintf(text, sizeof text,
                "loss %g is above divergence_factor (%g) x the stage's first loss %g (try a lower lr; "
                "divergence_factor=0 turns this check off)",
                loss, c.divergence_factor, reference);
  return std::string(text);
}

std::optional<std::string> eval_nonfinite(const nlohmann::json& record) {
  for (const auto& [k, v] : record.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) return k + " " + std::to_string(v.get<double>());
  return std::nullopt;
}

}  // namespace linear_ard::train

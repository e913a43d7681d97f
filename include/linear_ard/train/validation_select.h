// validation_select: the rule (config `select`) that picks, among a run's validation records, the
// one whose weights become the model, and says why in words.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The index in `records` (each with step and, unless criterion is last, val_kl; passkey_mean when
// the run evaluates retrieval) of the chosen one: kl_passkey, the lowest val_kl among the records
// whose passkey_mean is within `margin` (up to 1e-9 of rounding) of the highest passkey_mean (when
// no record has one: the lowest val_kl); kl, the lowest val_kl; last, the last record. Ties go as
// validation_ranks_before says. nullopt for no records.
std::optional<size_t> validation_select(const std::vector<nlohmann::json>& records, Select criterion, double margin);

// Whether record a ranks before b among eligible records: the lower val_kl, then the higher
// passkey_mean (absent: 0), then the earlier step.
bool validation_ranks_before(const nlohmann::json& a, const nlohmann::json& b);

// Why validation_select chose records[chosen]: "the lowest val_kl (0.3187) of the 4 of 7
// validations whose passkey_mean is within 0.1 of the best (0.65)"; `noun` names the records (tune's
// are trials).
std::string validation_select_why(const std::vector<nlohmann::json>& records, size_t chosen, Select criterion,
                                  double margin, const std::string& noun = "validations");

}  // namespace linear_ard::train

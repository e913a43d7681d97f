// The validation record of a restore run (restore_trainer.cpp's evaluation). Private to src/train.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "linear_ard/train/run_validator.h"
#include "run.h"

namespace linear_ard::train {

// The validation at global `step` of `stage`, printed as one line: {step, stage, eval: true,
// tokens}, the held-out relation diagnostics on the first validation block (relation_loss,
// loss_q/k/v, logit_kl, attention_kl), val_kl, val_ppl, native_ppl and val_tokens over every
// validation block (native_kl.h), and `validator`'s passkey and passkey_mean when the plan has
// passkey lengths.
nlohmann::json restore_validation_record(const Run& run, const RunValidator& validator, int64_t step, int64_t stage);

}  // namespace linear_ard::train

// The passkey part of a restore run's validation (train/run_validator.h): the student's retrieval
// at the run's passkey lengths, with the same prompts at every validation.
#pragma once

#include "linear_ard/train/run_validator.h"

namespace linear_ard::eval {

// A validator for train::restore_run: at each call, passkey_evaluate of the student (view.weights
// with view.overrides under view.rope, as view.student_config describes it) at view.passkey_lengths,
// view.passkey.samples prompts a length spread over view.passkey.depths (each depth ceil(samples /
// depths) prompts), prompt seeds fixed; the teacher's tokenizer, loaded at the first call. A length
// too short for a prompt of this tokenizer is left out with one warning (rank 0). Returns
// {"passkey": {"<length>": accuracy}, "passkey_mean": mean over the lengths} (nothing when no length
// is left).
train::RunValidator restore_passkey_validator();

}  // namespace linear_ard::eval

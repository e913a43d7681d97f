// deterministic_set: the process-wide switches behind the config key `deterministic`.
#pragma once

namespace linear_ard::train {

// Same config and seed, same weights: torch's deterministic algorithms and cuBLAS's fixed-workspace
// mode, which it reads when it creates its handle, so call this before the first matrix product on
// the device. Strict, not warn-only: with warn_only torch keeps SDPA's flash and memory-efficient
// backward on their atomic dQ accumulation (a warning, not the same bits), and an op without a
// deterministic implementation fails naming itself instead of silently breaking the promise.
void deterministic_set();

}  // namespace linear_ard::train

// Subcommands of the `linear-ard` binary: each registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace linear_ard::cli {

// `linear-ard inspect MODEL_DIR`: architecture, parameters, RoPE and implied context length.
void command_inspect_register(CLI::App& app);
// `linear-ard restore CONFIG.yaml [key=value ...]`: stage-1 relation distillation (docs/restore.md).
void command_restore_register(CLI::App& app);
// `linear-ard eval ppl|tasks|passkey ...`: perplexity, harness-style tasks, passkey (docs/eval.md).
void command_eval_register(CLI::App& app);

}  // namespace linear_ard::cli

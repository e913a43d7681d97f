// Subcommands of the `linear-ard` binary: each registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::cli {

// `linear-ard inspect MODEL_DIR`: architecture, parameters, RoPE and implied context length.
void command_inspect_register(CLI::App& app);
// `linear-ard diagnose TEACHER --length L --text FILE`: the damage of each candidate RoPE scaling
// before training, with a recommendation (docs/diagnose.md).
void command_diagnose_register(CLI::App& app);
// `linear-ard restore CONFIG.yaml [key=value ...]`: stage-1 relation distillation (docs/restore.md).
void command_restore_register(CLI::App& app);
// One restore run as the restore command runs it: its TensorBoard follower, the run (with the passkey
// validator), its training curves.
void restore_with_followers(const train::RestoreConfig& config);
// `linear-ard tune CONFIG.yaml [key=value ...] --grid KEY=V1,V2 ...`: short trials over a grid, the
// winner by the run's validation, then its full run (docs/tune.md).
void command_tune_register(CLI::App& app);
// `linear-ard pretrain CONFIG.yaml [key=value ...]`: a LLaMA model from random init (docs/pretrain.md).
void command_pretrain_register(CLI::App& app);
// `linear-ard tokenizer-train --data ... --output DIR`: SentencePiece BPE tokenizer (docs/pretrain.md).
void command_tokenizer_train_register(CLI::App& app);
// `linear-ard eval ppl|tasks|passkey|ruler|compare ...`: perplexity, harness-style tasks, passkey,
// RULER, side-by-side comparisons (docs/eval.md).
void command_eval_register(CLI::App& app);
// `linear-ard export-gguf MODEL OUT.gguf [--type bf16|f16|q8_0]`: a GGUF file for llama.cpp.
void command_export_gguf_register(CLI::App& app);

}  // namespace linear_ard::cli

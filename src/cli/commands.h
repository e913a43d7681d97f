// Subcommands of the `linear-ard` binary: each registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace linear_ard::cli {

// `linear-ard inspect MODEL_DIR`: architecture, parameters, RoPE and implied context length.
void command_inspect_register(CLI::App& app);
// `linear-ard diagnose TEACHER --length L --text FILE`: the damage of each candidate RoPE scaling
// before training, with a recommendation (docs/diagnose.md).
void command_diagnose_register(CLI::App& app);
// `linear-ard restore CONFIG.yaml [key=value ...]`: stage-1 relation distillation (docs/restore.md).
void command_restore_register(CLI::App& app);
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

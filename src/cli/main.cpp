// Entry point of `linear-ard`: parses the subcommand and turns exceptions into one-line errors.
// Exit codes (docs/cli.md): 0 success; 1 the command failed (bad input file or config, model load,
// training or evaluation error); 2 usage error (unknown or missing option, invalid value, options
// that do not go together); 128 + n a run stopped by signal n (SIGINT 130, SIGTERM 143) after
// writing its checkpoint.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "arg_checks.h"  // defines: subcommand_unknown
#include "commands.h"    // defines: command_*_register
#include "linear_ard/train/run_signal.h"  // defines: RunInterrupted

int main(int argc, char** argv) {
  CLI::App app{"linear-ard: restore the short-context quality of RoPE-scaled LLaMA-family models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "linear-ard " LINEAR_ARD_VERSION);
  linear_ard::cli::command_inspect_register(app);
  linear_ard::cli::command_diagnose_register(app);
  linear_ard::cli::command_restore_register(app);
  linear_ard::cli::command_tune_register(app);
  linear_ard::cli::command_pretrain_register(app);
  linear_ard::cli::command_tokenizer_train_register(app);
  linear_ard::cli::command_eval_register(app);
  linear_ard::cli::command_export_gguf_register(app);
  // CLI11 would answer a misspelt command with "A subcommand is required".
  if (const std::string unknown = linear_ard::cli::subcommand_unknown(app, argc, argv); !unknown.empty()) {
    std::cerr << "linear-ard: error: " << unknown << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A failure already reported on stderr (by a script the command ran): its exit status, no more.
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; every other one is a usage error.
    const int printed = app.exit(e);
    return printed == 0 ? 0 : 2;
  } catch (const linear_ard::train::RunInterrupted& e) {
    std::cerr << "linear-ard: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const std::exception& e) {
    std::cerr << "linear-ard: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

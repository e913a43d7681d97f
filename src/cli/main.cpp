// Entry point of `linear-ard`: parses the subcommand and turns exceptions into one-line errors.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"  // defines: command_*_register

int main(int argc, char** argv) {
  CLI::App app{"linear-ard: restore the short-context quality of RoPE-scaled LLaMA-family models"};
  app.require_subcommand(1);
  linear_ard::cli::command_inspect_register(app);
  linear_ard::cli::command_restore_register(app);
  linear_ard::cli::command_pretrain_register(app);
  linear_ard::cli::command_tokenizer_train_register(app);
  linear_ard::cli::command_eval_register(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "linear-ard: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// model_arg: the CLI11 check of a model argument, a folder or a hub name `org/name[@revision]` found
// in the local Hugging Face cache (io::model_path_resolve); the loaders resolve it again.
#pragma once

#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "linear_ard/io/model_path.h"  // defines: model_path_resolve

namespace linear_ard::cli {

// Fails the parse (exit code 2) with model_path_resolve's one line when `value` names neither.
inline CLI::Validator model_arg_check() {
  return CLI::Validator(
      [](std::string& value) {
        try {
          io::model_path_resolve(value);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      "FOLDER or ORG/NAME[@REVISION]", "MODEL");
}

// Adds the positional model argument `name` (required, checked by model_arg_check) to `sub`.
inline void model_arg_add(CLI::App* sub, std::string& model, const std::string& name = "MODEL") {
  sub->add_option(name, model, "HF model folder, or a hub name org/name[@revision] in the local HF cache")
      ->required()
      ->check(model_arg_check());
}

}  // namespace linear_ard::cli

// `linear-ard inspect MODEL_DIR`: prints what a HuggingFace folder holds, without loading weights.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "linear_ard/io/hf_folder.h"       // defines: hf_folder_load
#include "linear_ard/model/model_config.h"  // defines: model_config_describe

namespace linear_ard::cli {

void command_inspect_register(CLI::App& app) {
  auto model_dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("inspect", "Print a model folder's architecture, parameter "
                                                "count, RoPE configuration and context length");
  sub->add_option("MODEL_DIR", *model_dir, "HuggingFace model folder (config.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->callback([model_dir] {
    const io::HfFolder folder = io::hf_folder_load(*model_dir, /*load_weights=*/false);
    std::cout << "model: " << *model_dir << "\n" << model::model_config_describe(folder.model_config);
    if (!folder.tokenizer_files.empty()) {
      std::cout << "tokenizer files:";
      for (const auto& [name, path] : folder.tokenizer_files) std::cout << " " << name;
      std::cout << "\n";
    }
  });
}

}  // namespace linear_ard::cli

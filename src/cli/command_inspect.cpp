// `linear-ard inspect MODEL_DIR`: prints what a HuggingFace folder (or a hub name's cached snapshot)
// holds, its weights' headers validated against config.json (the weights are mapped, not read).
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "linear_ard/io/hf_folder.h"       // defines: hf_folder_load, hf_folder_weights_check
#include "linear_ard/io/model_path.h"      // defines: model_path_resolve
#include "linear_ard/model/model_config.h"  // defines: model_config_describe
#include "model_arg.h"                      // defines: model_arg_check

namespace linear_ard::cli {

void command_inspect_register(CLI::App& app) {
  auto model_dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("inspect", "Print a model folder's architecture, parameter "
                                                "count (from the weights' headers, checked against "
                                                "config.json), RoPE configuration and context length");
  sub->add_option("MODEL_DIR", *model_dir,
                  "HuggingFace model folder (config.json), or a hub name org/name[@revision] in the local HF cache")
      ->required()
      ->check(model_arg_check());
  sub->callback([model_dir] {
    // The weights are memory-mapped, not read: their headers are validated and checked against
    // config.json, and the parameter count is theirs.
    const std::string path = io::model_path_resolve(*model_dir);
    const io::HfFolder folder = io::hf_folder_load(path, /*load_weights=*/true);
    io::hf_folder_weights_check(folder);
    int64_t parameters = 0;
    for (const auto& [name, t] : folder.weights)
      if (name != "lm_head.weight" || !folder.model_config.tie_word_embeddings) parameters += t.numel();
    std::cout << "model: " << *model_dir << "\n";
    if (path != *model_dir) std::cout << "folder: " << path << "\n";
    std::cout << model::model_config_describe(folder.model_config, parameters);
    if (!folder.tokenizer_files.empty()) {
      std::cout << "tokenizer files:";
      for (const auto& entry : folder.tokenizer_files) std::cout << " " << entry.first;
      std::cout << "\n";
    }
  });
}

}  // namespace linear_ard::cli

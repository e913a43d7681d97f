// TokenizerConfig: the parts of a model folder's tokenizer_config.json the tokenizers use, and
// json_file_load, which both tokenizer.json and tokenizer_config.json are read with.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "added_vocabulary.h"

namespace linear_ard::io {

struct TokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::string bos_token;  // "" when absent or null
  std::string eos_token;
  std::vector<AddedToken> added_tokens;  // from added_tokens_decoder
};

// Parses the JSON file at `path`; throws std::runtime_error "<path>: cannot open" or
// "<path>: invalid JSON: ...".
nlohmann::json json_file_load(const std::string& path);

// Reads tokenizer_config.json at `path`; "" gives an empty config. Throws std::runtime_error
// naming the file and the problem.
TokenizerConfig tokenizer_config_load(const std::string& path);

}  // namespace linear_ard::io

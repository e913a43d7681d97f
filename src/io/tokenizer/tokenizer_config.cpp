// TokenizerConfig: reading tokenizer_config.json.
#include "tokenizer_config.h"

#include <fstream>
#include <stdexcept>

#include "json_field.h"

namespace linear_ard::io {
namespace {

// A special token entry is either the token string or an AddedToken object {"content": ...}.
std::string special_token_content(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return json_required<std::string>(*it, "content", key);
  throw std::invalid_argument(std::string("field \"") + key + "\" is neither a string nor an object");
}

}  // namespace

nlohmann::json json_file_load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

TokenizerConfig tokenizer_config_load(const std::string& path) {
  TokenizerConfig config;
  if (path.empty()) return config;
  const auto json = json_file_load(path);
  try {
    if (!json.is_object()) throw std::invalid_argument("not a JSON object");
    if (json.contains("add_bos_token") && !json["add_bos_token"].is_null()) {
      config.add_bos_token = json_field<bool>(json, "add_bos_token", false, "tokenizer_config");
    }
    if (json.contains("add_eos_token") && !json["add_eos_token"].is_null()) {
      config.add_eos_token = json_field<bool>(json, "add_eos_token", false, "tokenizer_config");
    }
    config.bos_token = special_token_content(json, "bos_token");
    config.eos_token = special_token_content(json, "eos_token");
    const auto decoder = json_field<nlohmann::json>(json, "added_tokens_decoder", nlohmann::json::object(),
                                                    "tokenizer_config");
    for (const auto& [id, spec] : decoder.items()) {
      config.added_tokens.push_back(added_token_from_json(spec, std::stoi(id)));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return config;
}

}  // namespace linear_ard::io

// Typed reads of tokenizer.json / tokenizer_config.json fields with errors that name the field.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tokenizer_regex.h"

namespace linear_ard::io {

// `spec[key]` as T; `fallback` when the key is absent or null. Throws std::invalid_argument
// naming `what` and the key when the value has another type.
template <typename T>
T json_field(const nlohmann::json& spec, const char* key, const T& fallback, const char* what) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string(what) + ": field \"" + key + "\" has the wrong type (" +
                                it->type_name() + ")");
  }
}

// `spec[key]` as T; throws std::invalid_argument when it is absent, null or of another type.
template <typename T>
T json_required(const nlohmann::json& spec, const char* key, const char* what) {
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) {
    throw std::invalid_argument(std::string(what) + ": missing field \"" + key + "\"");
  }
  return json_field<T>(spec, key, T{}, what);
}

// A {"String": s} or {"Regex": r} pattern object as a Regex.
Regex json_pattern(const nlohmann::json& spec, const char* what);

}  // namespace linear_ard::io

// Typed reads of tokenizer JSON fields.
#include "json_field.h"

namespace linear_ard::io {

Regex json_pattern(const nlohmann::json& spec, const char* what) {
  const auto it = spec.find("pattern");
  if (it == spec.end() || !it->is_object()) {
    throw std::invalid_argument(std::string(what) + ": missing object field \"pattern\"");
  }
  if (it->contains("String")) return Regex::literal(json_required<std::string>(*it, "String", what));
  if (it->contains("Regex")) return Regex(json_required<std::string>(*it, "Regex", what));
  throw std::invalid_argument(std::string(what) + ": \"pattern\" is neither {\"String\": ..} nor {\"Regex\": ..}");
}

}  // namespace linear_ard::io

// SpecialTokenTemplate: the single-sequence part of HF post-processors.
#include "post_processor.h"

#include <stdexcept>
#include <string>

#include "json_field.h"

namespace linear_ard::io {
namespace {

SpecialTokenTemplate template_processing_from_json(const nlohmann::json& spec) {
  const char* what = "post_processor TemplateProcessing";
  const auto& specials = json_required<nlohmann::json>(spec, "special_tokens", what);
  SpecialTokenTemplate out;
  bool seen_sequence = false;
  for (const auto& piece : json_required<nlohmann::json>(spec, "single", what)) {
    if (piece.contains("Sequence")) {
      if (seen_sequence) throw std::invalid_argument(std::string(what) + ": \"single\" holds two sequences");
      seen_sequence = true;
      continue;
    }
    if (!piece.contains("SpecialToken")) {
      throw std::invalid_argument(std::string(what) + ": unknown piece " + piece.dump());
    }
    const auto name = json_required<std::string>(piece["SpecialToken"], "id", what);
    const auto it = specials.find(name);
    if (it == specials.end()) {
      throw std::invalid_argument(std::string(what) + ": special token \"" + name + "\" is not in special_tokens");
    }
    auto& side = seen_sequence ? out.suffix : out.prefix;
    for (const auto& id : json_required<nlohmann::json>(*it, "ids", what)) side.push_back(id.get<int32_t>());
  }
  if (!seen_sequence) throw std::invalid_argument(std::string(what) + ": \"single\" has no sequence");
  return out;
}

}  // namespace

SpecialTokenTemplate post_processor_from_json(const nlohmann::json& spec) {
  if (spec.is_null()) return {};
  const auto type = json_required<std::string>(spec, "type", "post_processor");
  if (type == "ByteLevel") return {};  // only adjusts offsets
  if (type == "TemplateProcessing") return template_processing_from_json(spec);
  if (type == "Sequence") {
    SpecialTokenTemplate out;
    for (const auto& step : json_required<nlohmann::json>(spec, "processors", "post_processor Sequence")) {
      // Each processor wraps the output of the previous one.
      const auto inner = post_processor_from_json(step);
      out.prefix.insert(out.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      out.suffix.insert(out.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return out;
  }
  throw std::invalid_argument("unsupported post_processor type \"" + type +
                              "\" (supported: TemplateProcessing, ByteLevel, Sequence)");
}

}  // namespace linear_ard::io

// Normalizer: Prepend, Replace and Sequence, with HF tokenizers' semantics.
#include "normalizer.h"

#include <stdexcept>
#include <vector>

#include "json_field.h"
#include "tokenizer_regex.h"

namespace linear_ard::io {
namespace {

// Prepend: only a non-empty text gets the prefix (so an empty segment stays empty).
class NormalizerPrepend : public Normalizer {
 public:
  explicit NormalizerPrepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class NormalizerReplace : public Normalizer {
 public:
  NormalizerReplace(Regex pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    const auto matches = pattern_.find_all(text);
    if (matches.empty()) return;
    std::string out;
    out.reserve(text.size() + matches.size() * content_.size());
    size_t last = 0;
    for (const auto& [begin, end] : matches) {
      out.append(text, last, begin - last);
      out += content_;
      last = end;
    }
    out.append(text, last, std::string::npos);
    text = std::move(out);
  }

 private:
  Regex pattern_;
  std::string content_;
};

class NormalizerSequence : public Normalizer {
 public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const auto type = json_required<std::string>(spec, "type", "normalizer");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& step : json_required<nlohmann::json>(spec, "normalizers", "normalizer Sequence")) {
      if (auto n = normalizer_from_json(step)) steps.push_back(std::move(n));
    }
    return std::make_unique<NormalizerSequence>(std::move(steps));
  }
  if (type == "Prepend") {
    return std::make_unique<NormalizerPrepend>(json_required<std::string>(spec, "prepend", "normalizer Prepend"));
  }
  if (type == "Replace") {
    return std::make_unique<NormalizerReplace>(json_pattern(spec, "normalizer Replace"),
                                               json_required<std::string>(spec, "content", "normalizer Replace"));
  }
  throw std::invalid_argument("unsupported normalizer type \"" + type +
                              "\" (supported: Sequence, Prepend, Replace)");
}

}  // namespace linear_ard::io

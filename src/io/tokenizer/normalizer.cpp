// Normalizer: Unicode forms, Lowercase, Strip, StripAccents, Prepend, Replace and Sequence, with
// HF tokenizers' semantics.
#include "normalizer.h"

#include <stdexcept>
#include <string_view>
#include <vector>

#include "linear_ard/io/utf8.h"

#include "json_field.h"
#include "tokenizer_regex.h"
#include "unicode_normalize.h"
#include "unicode_properties.h"

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

class NormalizerUnicode : public Normalizer {
 public:
  explicit NormalizerUnicode(UnicodeForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = unicode_normalize(text, form_); }

 private:
  UnicodeForm form_;
};

// Rebuilds `text` one character at a time: rewrite(out, code point, its UTF-8) appends what the
// character becomes.
template <typename Rewrite>
void rewrite_chars(std::string& text, Rewrite rewrite) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_next(text, pos);
    rewrite(out, cp, std::string_view(text).substr(start, pos - start));
  }
  text = std::move(out);
}

// Maps each character on its own, as HF does: no final-sigma rule, unlike a whole-string lowercase.
class NormalizerLowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    rewrite_chars(text, [](std::string& out, char32_t cp, std::string_view) { unicode_append_lowercase(out, cp); });
  }
};

// Removes White_Space characters (Rust's char::is_whitespace) from the left and/or right end.
class NormalizerStrip : public Normalizer {
 public:
  NormalizerStrip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    const size_t begin = left_ ? leading_white_space_length(text) : 0;
    const size_t end = right_ ? trailing_white_space_begin(text) : text.size();
    text = begin < end ? text.substr(begin, end - begin) : std::string();
  }

 private:
  bool left_, right_;
};

// Drops combining marks (accents left by NFD/NFKD).
class NormalizerStripAccents : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    rewrite_chars(text, [](std::string& out, char32_t cp, std::string_view utf8) {
      if (!unicode_is_mark(cp)) out += utf8;
    });
  }
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
  if (type == "NFC") return std::make_unique<NormalizerUnicode>(UnicodeForm::kNfc);
  if (type == "NFD") return std::make_unique<NormalizerUnicode>(UnicodeForm::kNfd);
  if (type == "NFKC") return std::make_unique<NormalizerUnicode>(UnicodeForm::kNfkc);
  if (type == "NFKD") return std::make_unique<NormalizerUnicode>(UnicodeForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<NormalizerLowercase>();
  if (type == "StripAccents") return std::make_unique<NormalizerStripAccents>();
  if (type == "Strip") {
    return std::make_unique<NormalizerStrip>(json_required<bool>(spec, "strip_left", "normalizer Strip"),
                                             json_required<bool>(spec, "strip_right", "normalizer Strip"));
  }
  if (type == "Prepend") {
    return std::make_unique<NormalizerPrepend>(json_required<std::string>(spec, "prepend", "normalizer Prepend"));
  }
  if (type == "Replace") {
    return std::make_unique<NormalizerReplace>(json_pattern(spec, "normalizer Replace"),
                                               json_required<std::string>(spec, "content", "normalizer Replace"));
  }
  throw std::invalid_argument("unsupported normalizer type \"" + type +
                              "\" (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, "
                              "Prepend, Replace)");
}

}  // namespace linear_ard::io

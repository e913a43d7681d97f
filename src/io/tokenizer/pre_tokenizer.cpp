// PreTokenizer: Split, Digits, Punctuation, Whitespace, WhitespaceSplit, ByteLevel, Metaspace and
// Sequence, with HF tokenizers' semantics.
#include "pre_tokenizer.h"

#include <stdexcept>
#include <utility>

#include "byte_level.h"
#include "json_field.h"
#include "pre_token_split.h"
#include "tokenizer_regex.h"
#include "unicode_properties.h"

namespace linear_ard::io {
namespace {

class PreTokenizerSplit : public PreTokenizer {
 public:
  PreTokenizerSplit(Regex pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size());
    for (const auto& piece : pieces) split_piece(piece, pattern_.find_all(piece.text), behavior_, invert_, out);
    pieces = std::move(out);
  }

 private:
  Regex pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Cuts at the characters a predicate picks (Digits, Punctuation, WhitespaceSplit): each such
// character is a match of its own, as with HF's character patterns.
class PreTokenizerCharSplit : public PreTokenizer {
 public:
  PreTokenizerCharSplit(bool (*is_match)(char32_t), SplitBehavior behavior)
      : is_match_(is_match), behavior_(behavior) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size());
    for (const auto& piece : pieces) split_piece(piece, char_matches(piece.text, is_match_), behavior_, false, out);
    pieces = std::move(out);
  }

 private:
  bool (*is_match_)(char32_t);
  SplitBehavior behavior_;
};

// HF's Whitespace pre-tokenizer keeps the matches of \w+|[^\w\s]+ (Rust regex, Unicode \w).
std::unique_ptr<PreTokenizer> pre_tokenizer_whitespace() {
  const std::string word = std::string("[") + kRegexWordClass + "]";
  const std::string other = std::string("[^") + kRegexWordClass + "\\s]";
  return std::make_unique<PreTokenizerSplit>(Regex(word + "+|" + other + "+"), SplitBehavior::kRemoved, true);
}

// GPT-2's pre-tokenization regex, which ByteLevel applies when use_regex is set.
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class PreTokenizerByteLevel : public PreTokenizer {
 public:
  PreTokenizerByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) pattern_ = std::make_unique<Regex>(kGpt2Pattern);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size());
    for (auto& piece : pieces) {
      // HF's prepend leaves an empty text empty.
      if (add_prefix_space_ && !piece.text.empty() && piece.text[0] != ' ') piece.text.insert(0, " ");
      if (pattern_) {
        split_piece(piece, pattern_->find_all(piece.text), SplitBehavior::kIsolated, false, out);
      } else if (!piece.text.empty()) {
        out.push_back(std::move(piece));
      }
    }
    for (auto& piece : out) piece.text = byte_level_encode(piece.text);
    pieces = std::move(out);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> pattern_;
};

class PreTokenizerMetaspace : public PreTokenizer {
 public:
  PreTokenizerMetaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split),
        replacement_pattern_(Regex::literal(replacement_)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size());
    for (auto& piece : pieces) {
      std::string text;
      text.reserve(piece.text.size() + replacement_.size());
      for (const char c : piece.text) {
        if (c == ' ') {
          text += replacement_;
        } else {
          text += c;
        }
      }
      const bool has_prefix = text.compare(0, replacement_.size(), replacement_) == 0;
      const bool prepend =
          scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.starts_input);
      if (prepend && !has_prefix && !text.empty()) text.insert(0, replacement_);
      PreToken replaced{std::move(text), piece.starts_input};
      if (split_) {
        split_piece(replaced, replacement_pattern_.find_all(replaced.text), SplitBehavior::kMergedWithNext, false, out);
      } else if (!replaced.text.empty()) {
        out.push_back(std::move(replaced));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Regex replacement_pattern_;
};

class PreTokenizerSequence : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> split_from_json(const nlohmann::json& spec) {
  const char* what = "pre_tokenizer Split";
  return std::make_unique<PreTokenizerSplit>(
      json_pattern(spec, what), split_behavior_from_name(json_required<std::string>(spec, "behavior", what), what),
      json_field<bool>(spec, "invert", false, what));
}

// Digits, Punctuation and WhitespaceSplit; nullptr for any other type.
std::unique_ptr<PreTokenizer> char_split_from_json(const std::string& type, const nlohmann::json& spec) {
  if (type == "Digits") {
    const bool individual = json_required<bool>(spec, "individual_digits", "pre_tokenizer Digits");
    return std::make_unique<PreTokenizerCharSplit>(unicode_is_numeric,
                                                   individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (type == "Punctuation") {
    const char* what = "pre_tokenizer Punctuation";
    const auto behavior = split_behavior_from_name(json_field<std::string>(spec, "behavior", "Isolated", what), what);
    return std::make_unique<PreTokenizerCharSplit>(unicode_is_punctuation, behavior);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<PreTokenizerCharSplit>(unicode_is_white_space, SplitBehavior::kRemoved);
  }
  return nullptr;
}

}  // namespace

PrependScheme metaspace_prepend_scheme(const nlohmann::json& spec) {
  // Files written before prepend_scheme existed carry add_prefix_space instead.
  if (!spec.contains("prepend_scheme") && spec.contains("add_prefix_space")) {
    return json_field<bool>(spec, "add_prefix_space", true, "Metaspace") ? PrependScheme::kAlways
                                                                                      : PrependScheme::kNever;
  }
  const auto name = json_field<std::string>(spec, "prepend_scheme", "always", "Metaspace");
  if (name == "always") return PrependScheme::kAlways;
  if (name == "first") return PrependScheme::kFirst;
  if (name == "never") return PrependScheme::kNever;
  throw std::invalid_argument("Metaspace: unknown prepend_scheme \"" + name + "\"");
}

std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& spec) {
  if (spec.is_null()) return nullptr;
  const auto type = json_required<std::string>(spec, "type", "pre_tokenizer");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& step : json_required<nlohmann::json>(spec, "pretokenizers", "pre_tokenizer Sequence")) {
      if (auto p = pre_tokenizer_from_json(step)) steps.push_back(std::move(p));
    }
    return std::make_unique<PreTokenizerSequence>(std::move(steps));
  }
  if (type == "Split") return split_from_json(spec);
  if (auto char_split = char_split_from_json(type, spec)) return char_split;
  if (type == "Whitespace") return pre_tokenizer_whitespace();
  if (type == "ByteLevel") {
    return std::make_unique<PreTokenizerByteLevel>(json_field<bool>(spec, "add_prefix_space", true, "pre_tokenizer ByteLevel"),
                                                   json_field<bool>(spec, "use_regex", true, "pre_tokenizer ByteLevel"));
  }
  if (type == "Metaspace") {
    const auto replacement = json_field<std::string>(spec, "replacement", "\u2581", "pre_tokenizer Metaspace");
    return std::make_unique<PreTokenizerMetaspace>(replacement, metaspace_prepend_scheme(spec),
                                                   json_field<bool>(spec, "split", true, "pre_tokenizer Metaspace"));
  }
  throw std::invalid_argument("unsupported pre_tokenizer type \"" + type +
                              "\" (supported: Sequence, Split, Digits, Punctuation, Whitespace, "
                              "WhitespaceSplit, ByteLevel, Metaspace)");
}

}  // namespace linear_ard::io

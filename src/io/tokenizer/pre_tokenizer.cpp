// PreTokenizer: Split, ByteLevel, Metaspace and Sequence, with HF tokenizers' semantics.
#include "pre_tokenizer.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "byte_level.h"
#include "json_field.h"
#include "tokenizer_regex.h"

namespace linear_ard::io {
namespace {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

SplitBehavior split_behavior_from_name(const std::string& name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  throw std::invalid_argument("pre_tokenizer Split: unknown behavior \"" + name + "\"");
}

struct Span {
  size_t begin, end;
  bool is_match;
};

// Cuts `piece` at `matches` the way NormalizedString::split does and appends the non-empty parts.
void split_piece(const PreToken& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<PreToken>& out) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [begin, end] : matches) {
    if (prev != begin) spans.push_back({prev, begin, invert});
    spans.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev != piece.text.size()) spans.push_back({prev, piece.text.size(), invert});

  std::vector<std::pair<size_t, size_t>> parts;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const auto& s : spans) {
        if (!s.is_match) parts.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kIsolated:
      for (const auto& s : spans) parts.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !parts.empty()) {
          parts.back().second = s.end;
        } else {
          parts.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !parts.empty()) {
          parts.back().first = it->begin;
        } else {
          parts.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].is_match == previous_match) {
          parts.back().second = spans[i].end;
        } else {
          parts.emplace_back(spans[i].begin, spans[i].end);
        }
        previous_match = spans[i].is_match;
      }
      break;
  }
  for (const auto& [begin, end] : parts) {
    if (begin == end) continue;
    out.push_back({piece.text.substr(begin, end - begin), piece.starts_input && begin == 0});
  }
}

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
      if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) piece.text.insert(0, " ");
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
      const bool prepend = scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.starts_input);
      if (prepend && !has_prefix) text.insert(0, replacement_);
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
  if (type == "Split") {
    return std::make_unique<PreTokenizerSplit>(
        json_pattern(spec, "pre_tokenizer Split"),
        split_behavior_from_name(json_required<std::string>(spec, "behavior", "pre_tokenizer Split")),
        json_field<bool>(spec, "invert", false, "pre_tokenizer Split"));
  }
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
                              "\" (supported: Sequence, Split, ByteLevel, Metaspace)");
}

}  // namespace linear_ard::io

// Cutting a pre-token at matches with HF's split behaviours.
#include "pre_token_split.h"

#include <algorithm>
#include <stdexcept>

#include "linear_ard/io/utf8.h"

namespace linear_ard::io {
namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The matches and the text between them, in order, covering [0, size); with `invert` the text
// between counts as the match.
std::vector<Span> spans_of(const ByteRanges& matches, size_t size, bool invert) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [begin, end] : matches) {
    if (prev != begin) spans.push_back({prev, begin, invert});
    spans.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev != size) spans.push_back({prev, size, invert});
  return spans;
}

// The parts the spans become under `behavior` (HF's folds, one per behaviour).
ByteRanges parts_of(const std::vector<Span>& spans, SplitBehavior behavior) {
  ByteRanges parts;
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
  return parts;
}

}  // namespace

SplitBehavior split_behavior_from_name(const std::string& name, const char* what) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  throw std::invalid_argument(std::string(what) + ": unknown behavior \"" + name + "\"");
}

ByteRanges char_matches(std::string_view text, bool (*is_match)(char32_t)) {
  ByteRanges matches;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    if (is_match(utf8_next(text, pos))) matches.emplace_back(begin, pos);
  }
  return matches;
}

void split_piece(const PreToken& piece, const ByteRanges& matches, SplitBehavior behavior, bool invert,
                 std::vector<PreToken>& out) {
  for (const auto& [begin, end] : parts_of(spans_of(matches, piece.text.size(), invert), behavior)) {
    if (begin == end) continue;
    out.push_back({piece.text.substr(begin, end - begin), piece.starts_input && begin == 0});
  }
}

}  // namespace linear_ard::io

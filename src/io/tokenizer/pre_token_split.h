// Cutting a pre-token at pattern matches the way HF's NormalizedString::split does, with each
// SplitDelimiterBehavior; the Split, Digits, Punctuation, Whitespace, WhitespaceSplit, ByteLevel
// and Metaspace pre-tokenizers all go through it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pre_token.h"

namespace linear_ard::io {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// "Removed", "Isolated", ... as tokenizer.json spells them; throws std::invalid_argument naming
// `what` and the unknown name.
SplitBehavior split_behavior_from_name(const std::string& name, const char* what);

// Byte ranges [begin, end) of a text (a pattern's matches, or the parts cut at them), in order.
using ByteRanges = std::vector<std::pair<size_t, size_t>>;

// One match per character of `text` (valid UTF-8) for which `is_match` holds, as HF's
// character-predicate patterns give them (so Contiguous joins neighbours, Isolated does not).
ByteRanges char_matches(std::string_view text, bool (*is_match)(char32_t));

// Appends the non-empty parts of `piece` cut at `matches` (with `invert`, the text between them is
// what matched) and treated per `behavior`.
void split_piece(const PreToken& piece, const ByteRanges& matches, SplitBehavior behavior, bool invert,
                 std::vector<PreToken>& out);

}  // namespace linear_ard::io

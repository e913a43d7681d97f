// PreToken: a piece of normalized text that BPE merges within, as the pre-tokenizers
// (pre_tokenizer.h) and the splitting rule they share (pre_token_split.h) pass them on.
#pragma once

#include <string>

namespace linear_ard::io {

struct PreToken {
  std::string text;
  // Whether the piece begins at byte 0 of the encoded input (Metaspace's prepend_scheme "first").
  bool starts_input = false;
};

}  // namespace linear_ard::io

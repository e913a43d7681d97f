// demo_tokenizer: the bundled demo model's tokenizer (LINEAR_ARD_DEMO_MODEL), loaded once for the
// train tests that cut or mix token blocks.
#pragma once

#include <memory>

#include "linear_ard/io/tokenizer.h"  // defines: Tokenizer, tokenizer_load

namespace linear_ard::train {

inline const io::Tokenizer& demo_tokenizer() {
  static const std::unique_ptr<io::Tokenizer> tokenizer = io::tokenizer_load(LINEAR_ARD_DEMO_MODEL);
  return *tokenizer;
}

}  // namespace linear_ard::train

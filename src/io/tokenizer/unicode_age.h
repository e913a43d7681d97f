// Which Unicode version first assigned a code point, as far as HF tokenizers' pinned character
// tables need it: its normalizers and StripAccents know Unicode 9.0, its Punctuation 8.0.
#pragma once

namespace linear_ard::io {

// Whether Unicode 8.0 / 9.0 had assigned `cp` (Present_In; private use and noncharacters count).
bool unicode_present_in_8_0(char32_t cp);
bool unicode_present_in_9_0(char32_t cp);

}  // namespace linear_ard::io

// Unicode normalization through utf8proc, restricted to the code points of Unicode 9.0.
#include "unicode_normalize.h"

#include <utf8proc.h>

#include <cstdlib>
#include <new>

#include "linear_ard/io/utf8.h"

#include "unicode_age.h"

namespace linear_ard::io {
namespace {

utf8proc_option_t utf8proc_options(UnicodeForm form) {
  switch (form) {
    case UnicodeForm::kNfc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    case UnicodeForm::kNfd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    case UnicodeForm::kNfkc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case UnicodeForm::kNfkd:
      break;
  }
  return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
}

// Appends `run` (valid UTF-8, only code points of Unicode 9.0) in form `form`.
void append_normalized(std::string& out, std::string_view run, UnicodeForm form) {
  if (run.empty()) return;
  utf8proc_uint8_t* result = nullptr;
  // Valid UTF-8 only fails to normalize when memory runs out.
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                          static_cast<utf8proc_ssize_t>(run.size()), &result, utf8proc_options(form));
  if (n < 0) throw std::bad_alloc();
  out.append(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
  std::free(result);
}

bool is_ascii(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

std::string unicode_normalize(std::string_view text, UnicodeForm form) {
  // ASCII is invariant under every form; most text between special tokens is ASCII.
  if (is_ascii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  // A code point unknown to Unicode 9.0 has no decomposition, combining class 0 and no
  // composition there, so it bounds normalization: the runs between such code points are
  // normalized on their own and the code points themselves copied.
  size_t run_begin = 0, pos = 0;
  while (pos < text.size()) {
    const size_t begin = pos;
    if (unicode_present_in_9_0(utf8_next(text, pos))) continue;
    append_normalized(out, text.substr(run_begin, begin - run_begin), form);
    out.append(text.substr(begin, pos - begin));
    run_begin = pos;
  }
  append_normalized(out, text.substr(run_begin), form);
  return out;
}

}  // namespace linear_ard::io

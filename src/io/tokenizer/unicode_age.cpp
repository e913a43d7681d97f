// Unicode ages from the generated range table (dev/gen_unicode_age_table.pl).
#include "unicode_age.h"

#include <algorithm>
#include <iterator>

namespace linear_ard::io {
namespace {

struct AgeRange {
  char32_t first, last;
  bool added_in_9_0;
};

constexpr AgeRange kPresentIn9_0[] = {
#include "unicode_age_table.inc"
};

// The range holding `cp`, or nullptr when 9.0 had not assigned it.
const AgeRange* age_range(char32_t cp) {
  const auto it = std::upper_bound(std::begin(kPresentIn9_0), std::end(kPresentIn9_0), cp,
                                   [](char32_t c, const AgeRange& r) { return c < r.first; });
  if (it == std::begin(kPresentIn9_0)) return nullptr;
  const AgeRange* r = std::prev(it);
  return cp <= r->last ? r : nullptr;
}

}  // namespace

bool unicode_present_in_9_0(char32_t cp) { return age_range(cp) != nullptr; }

bool unicode_present_in_8_0(char32_t cp) {
  const AgeRange* r = age_range(cp);
  return r != nullptr && !r->added_in_9_0;
}

}  // namespace linear_ard::io

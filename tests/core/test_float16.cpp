// Tests of the bf16/fp16 <-> fp32 conversions: exhaustive round trips and ties-to-even rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "linear_ard/core/float16.h"

namespace linear_ard {
namespace {

TEST(Float16, Bf16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_float(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_bf16(f), uint16_t(h)) << h;
  }
}

TEST(Float16, Fp16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_float(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_fp16(f), uint16_t(h)) << h;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(fp16_to_float(0x3c00), 1.f);
  EXPECT_EQ(fp16_to_float(0x7bff), 65504.f);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(bf16_to_float(0x3f80), 1.f);
  EXPECT_EQ(float_to_fp16(65519.f), 0x7bff);  // below the midpoint to 2^16
  EXPECT_EQ(float_to_fp16(65520.f), 0x7c00);  // the midpoint rounds to even: infinity
  EXPECT_EQ(float_to_fp16(1e-9f), 0x0000);
}

// Midpoints between neighbouring 16-bit values round to the one with an even last bit.
TEST(Float16, TiesRoundToEven) {
  for (uint32_t h = 0x0001; h < 0x7bff; h += 97) {
    const float lo = fp16_to_float(uint16_t(h)), hi = fp16_to_float(uint16_t(h + 1));
    const uint16_t even = (h & 1u) ? uint16_t(h + 1) : uint16_t(h);
    EXPECT_EQ(float_to_fp16(lo + (hi - lo) / 2), even) << h;
  }
  for (uint32_t h = 0x0080; h < 0x7f7f; h += 97) {
    const float lo = bf16_to_float(uint16_t(h)), hi = bf16_to_float(uint16_t(h + 1));
    const uint16_t even = (h & 1u) ? uint16_t(h + 1) : uint16_t(h);
    EXPECT_EQ(float_to_bf16(lo + (hi - lo) / 2), even) << h;
  }
}

}  // namespace
}  // namespace linear_ard

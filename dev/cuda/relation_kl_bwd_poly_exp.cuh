// Backward versions 21 and 22 of dev/cuda: version 12 (the library's wgmma+tma backward) with the
// exponentials of the first one (21) or two (22) of a row tile's eight n-tiles of 8 rows computed on
// the FMA pipes by a polynomial instead of the ex2 unit (bwd_wgmma_cta's DxOut switch kPolyTiles,
// relation_kl_bwd_wgmma.cuh): 1/8 or 1/4 of the backward's two exponentials a logit. Version 23 is
// 21 and 20 (the late statistics) together, so that one GPU call can time the pair as well. The
// kernel: relation_kl_bwd_dx_variant.cuh.
// Why the backward, after forward versions 13 and 14 (the same move in the forward) lost 3-15 %: in
// the backward both warpgroups make their dZ^T at the same time, between the CTA's S^T GEMMs and its
// dY GEMMs, with the tensor cores idle. That phase is bound by the ex2 unit: at 16 exponentials a
// clock an SM, the row tile's 16,384 (64 rows x 128 keys x 2 models) take 1,024 clocks, while the
// phase issues ~500 instructions a scheduler (128 of them MUFU). A warp's MUFU.EX2 holds its
// scheduler's ex2 unit for 8 clocks; on the FMA pipes (ex2_fma) it costs 11 more issue slots
// instead, so the two limits meet with ~1/5 of the exponentials moved (1,024 (1 - f) = 508 + 1,408 f);
// 21 and 22 bracket that. (In the forward the three warpgroups' GEMMs, exponentials and updates
// overlap each other, and the issue slots were the binding limit.)
#pragma once

#include "relation_kl_bwd_late_stats.cuh"  // defines: BwdDxLateStats (version 20), BwdDxTensorOut

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// exp2 on the FMA pipes, 12 instructions (2 FMNMX, 3 FADD, 5 FFMA, 1 LEA, 1 FMUL) against one
// MUFU.EX2: x clamped to [-127, 128] with NaN kept (max.NaN / min.NaN), rounded to an integer k by
// the 1.5 * 2^23 trick (k is then the low bits of t's mantissa), 2^(x - k) by a degree-5 polynomial
// on [-1/2, 1/2] (a near-minimax fit of the relative error: 2.3e-7 at most in fp32 against
// ex2.approx's ~2^-22, forward version 13's), times 2^k built in the exponent field. A NaN stays NaN
// through the polynomial and the product. From x <= -127 the result is +0 (2^k's exponent field is
// 0; ex2.approx.ftz gives 0 below -126, this gives subnormals on (-126.5, -126)); from 128, +inf
// (2^128's field is 255; ex2 gives +inf from 128 as well, this from 127.5).
__device__ __forceinline__ float ex2_fma(float x) {
  float c;
  asm("max.NaN.f32 %0, %1, 0fC2FE0000;" : "=f"(c) : "f"(x));  // max(x, -127)
  asm("min.NaN.f32 %0, %0, 0f43000000;" : "+f"(c));            // min(., 128)
  const float t = c + 12582912.f;
  const float f = c - (t - 12582912.f);
  float p = fmaf(0.001327647129073739f, f, 0.009675541892647743f);
  p = fmaf(p, f, 0.05550713092088699f);
  p = fmaf(p, f, 0.24022120237350464f);
  p = fmaf(p, f, 0.6931469440460205f);
  p = fmaf(p, f, 1.0000001192092896f);
  return p * __int_as_float((__float_as_int(t) << 23) + 0x3f800000);
}

// Version 12's DxOut with the exponentials of the first kTiles n-tiles by ex2_fma.
template <int D, int kTiles>
struct BwdDxPolyExp : BwdDxTensorOut<D> {
  static constexpr int kPolyTiles = kTiles;
  __device__ __forceinline__ static float ex2_poly(float x) { return ex2_fma(x); }
};

// The DxOuts of versions 21 and 22 by head dim alone (relation_kl_bwd_dx_variant_launch's Out).
template <int D>
using BwdDxPolyExp1 = BwdDxPolyExp<D, 1>;
template <int D>
using BwdDxPolyExp2 = BwdDxPolyExp<D, 2>;

// Version 23's DxOut: 21's with version 20's late statistics.
template <int D>
struct BwdDxPolyExpLateStats : BwdDxPolyExp<D, 1> {
  static constexpr bool kLateStats = BwdDxLateStats<D>::kLateStats;
};

}  // namespace cuda
}  // namespace linear_ard

// What the forwards after version 2 share (dev/cuda versions 3-7; the library's sm_90a forward,
// relation_kl_fwd_wgmma.cuh, is version 6): a tile's logits as mma.sync C fragments, the per-thread
// row statistics, version 2's online softmax/KL update of them and its epilogue. Moved here from
// dev/cuda/relation_kl_fwd_pipelined.cuh (version 3) and relation_kl_fwd_wgmma.cuh (version 5,
// fwd_wgmma_pin) when version 6 was promoted.
#pragma once

#include <cstdint>

#include "relation_kl_fwd.cuh"  // defines: kFwdHidden (and, through it, ex2, kLog2e, kLn2)

namespace linear_ard {
namespace cuda {

// A warp's two 16 x 32 logit tiles (student, teacher) of one key tile, as mma C fragments: n-tile i
// holds keys 8i + 2tq, 8i + 2tq + 1 of rows g (elements 0, 1) and g + 8 (elements 2, 3).
template <int NT>
struct FwdLogits {
  float s[NT][4];
  float t[NT][4];
};

// This thread's running statistics of its rows g and g + 8 (index r), log2 units: maxima, partial
// sums of exp2(z - m) over its columns, and A = sum exp2(z_t - m_t)(z_t - z_s) (quad-reduced at the
// end).
struct FwdRowStats {
  float m_t[2] = {-INFINITY, -INFINITY}, m_s[2] = {-INFINITY, -INFINITY};
  float l_t[2] = {0.f, 0.f}, l_s[2] = {0.f, 0.f}, a[2] = {0.f, 0.f};
};

// What the per-element mask of one key tile needs: keys k0 + c with c > diag + 8r are causal-hidden
// from row r, c >= kend are past n, and key_ok (the key mask from k0, or null) hides the rest.
struct FwdTileMask {
  int diag;
  int kend;
  bool causal;
  const uint8_t* key_ok;
};

// ------------------------------------------------------------------------------------------------
// device functions

// Both running maxima over the row's quad (the 4 lanes holding its columns), teacher's then student's.
__device__ __forceinline__ void quad_max(float& mx_t, float& mx_s) {
  mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 1));
  mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 2));
  mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 1));
  mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 2));
}

// Version 2's online update of the row statistics by one key tile, on logits z (overwritten: scaled
// into log2 units, hidden ones set to kFwdHidden on masked tiles). The non-finite rule and the
// masked-row guards are version 2's; docs/kernel.md ("What every tensor-core kernel shares") says why. A copy of
// version 2's tile lambda (relation_kl_fwd.cuh), as fwd_pipe_store is of its end: moving them out
// of the mma.sync kernel would touch its generated code, which the other versions are measured against.
template <bool kMasked, int NT>
__device__ __forceinline__ void fwd_pipe_update(FwdRowStats& st, FwdLogits<NT>& z, float cs, float ct,
                                                const FwdTileMask& mk) {
  const int tq = threadIdx.x % 4;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      z.s[i][e] *= cs;
      z.t[i][e] *= ct;
      if constexpr (kMasked) {
        const int c = i * 8 + 2 * tq + (e & 1);
        if (c >= mk.kend || (mk.causal && c > mk.diag + (e >> 1) * 8) || (mk.key_ok && !mk.key_ok[c]))
          z.s[i][e] = z.t[i][e] = kFwdHidden;
      }
    }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx_t = st.m_t[r], mx_s = st.m_s[r];
#pragma unroll
    for (int i = 0; i < NT; ++i) {
      mx_t = fmaxf(mx_t, fmaxf(z.t[i][2 * r], z.t[i][2 * r + 1]));
      mx_s = fmaxf(mx_s, fmaxf(z.s[i][2 * r], z.s[i][2 * r + 1]));
    }
    quad_max(mx_t, mx_s);
    float use_t = mx_t, use_s = mx_s;
    if constexpr (kMasked) {
      use_t = mx_t <= kFwdHidden ? 0.f : mx_t;
      use_s = mx_s <= kFwdHidden ? 0.f : mx_s;
    }
    const float alpha_t = ex2(st.m_t[r] - use_t), alpha_s = ex2(st.m_s[r] - use_s);
    st.m_t[r] = mx_t;
    st.m_s[r] = mx_s;
    float sum_t = 0.f, sum_s = 0.f, sum_a = 0.f;
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        const float pt = ex2(z.t[i][e] - use_t);
        sum_t += pt;
        sum_s += ex2(z.s[i][e] - use_s);
        sum_a = fmaf(pt, z.t[i][e] - z.s[i][e], sum_a);
      }
    st.l_t[r] = fmaf(st.l_t[r], alpha_t, sum_t);
    st.l_s[r] = fmaf(st.l_s[r], alpha_s, sum_s);
    st.a[r] = fmaf(st.a[r], alpha_t, sum_a);
  }
}

// fwd_pipe_update<false> (an unmasked tile) with the scales folded into the exponent arguments, for
// cs, ct > 0 (forward version 9, the library's): z holds the raw logits (not overwritten). A positive
// scale keeps the order of the logits and rounding keeps it weakly, so the new maxima are those of
// the raw logits times the scale, bit for bit fwd_pipe_update's (fmaxf skips NaN alike);
// exp2(c z - m) is one FFMA into ex2 instead of FMUL, FADD; and A's term
// ct z_t - cs z_s = ct (z_t - rho z_s), rho = cs / ct, is one FFMA a logit, summed unscaled over the
// tile and scaled by ct once a row. What changes is fp32 rounding only (c z - m rounded once; the
// row's largest logit gives exp2 of its product's rounding error instead of exactly 1), except that
// raw logits beyond ~FLT_MAX / 2 of opposite sign overflow z_t - rho z_s (the row turns NaN) where
// the scaled ones did not. NaN in, NaN out as before: a NaN logit makes its exp2 (and A's term) NaN,
// a +inf maximum gives fmaf(inf, c, -inf) = NaN, a seen -inf gives 0 x inf = NaN in A.
template <int NT>
__device__ __forceinline__ void fwd_pipe_update_folded(FwdRowStats& st, const FwdLogits<NT>& z, float cs, float ct,
                                                       float rho) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx_t = fmaxf(z.t[0][2 * r], z.t[0][2 * r + 1]), mx_s = fmaxf(z.s[0][2 * r], z.s[0][2 * r + 1]);
#pragma unroll
    for (int i = 1; i < NT; ++i) {
      mx_t = fmaxf(mx_t, fmaxf(z.t[i][2 * r], z.t[i][2 * r + 1]));
      mx_s = fmaxf(mx_s, fmaxf(z.s[i][2 * r], z.s[i][2 * r + 1]));
    }
    quad_max(mx_t, mx_s);
    mx_t = fmaxf(st.m_t[r], mx_t * ct);
    mx_s = fmaxf(st.m_s[r], mx_s * cs);
    const float alpha_t = ex2(st.m_t[r] - mx_t), alpha_s = ex2(st.m_s[r] - mx_s);
    st.m_t[r] = mx_t;
    st.m_s[r] = mx_s;
    float sum_t = 0.f, sum_s = 0.f, sum_a = 0.f;
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        const float pt = ex2(fmaf(z.t[i][e], ct, -mx_t));
        sum_t += pt;
        sum_s += ex2(fmaf(z.s[i][e], cs, -mx_s));
        sum_a = fmaf(pt, fmaf(z.s[i][e], -rho, z.t[i][e]), sum_a);
      }
    st.l_t[r] = fmaf(st.l_t[r], alpha_t, sum_t);
    st.l_s[r] = fmaf(st.l_s[r], alpha_s, sum_s);
    st.a[r] = fmaf(st.a[r], alpha_t, sum_a * ct);
  }
}

// Version 2's epilogue: quad-reduce the statistics and write KL and both LSEs of rows row_lo,
// row_lo + 8 (NaN for all three when one is not finite; KL 0 and LSE -inf for a row with no key).
__device__ __forceinline__ void fwd_pipe_store(const RelationKLParams& p, FwdRowStats& st, int64_t b, int h,
                                               int64_t row_lo) {
  const int64_t n = p.seq_len;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      st.l_t[r] += __shfl_xor_sync(0xffffffffu, st.l_t[r], o);
      st.l_s[r] += __shfl_xor_sync(0xffffffffu, st.l_s[r], o);
      st.a[r] += __shfl_xor_sync(0xffffffffu, st.a[r], o);
    }
    const int64_t row = row_lo + r * 8;
    if (threadIdx.x % 4 == 0 && row < n) {
      const int64_t o = (b * p.heads + h) * n + row;
      if (st.l_t[r] != 0.f) {
        const float lse2_t = st.m_t[r] + __log2f(st.l_t[r]), lse2_s = st.m_s[r] + __log2f(st.l_s[r]);
        const float kl = kLn2 * (st.a[r] / st.l_t[r] - (lse2_t - lse2_s));
        const bool finite = isfinite(kl) && isfinite(lse2_t) && isfinite(lse2_s);
        p.kl[o] = finite ? kl : NAN;
        p.lse_teacher[o] = finite ? kLn2 * lse2_t : NAN;
        p.lse_student[o] = finite ? kLn2 * lse2_s : NAN;
      } else {
        p.kl[o] = 0.f;
        p.lse_teacher[o] = p.lse_student[o] = -INFINITY;
      }
    }
  }
}

// Pins the row statistics after a tile's update: every instruction of the update feeds them, so none
// can sink past this point (past the next wait or the next issue into the accumulators it read).
__device__ __forceinline__ void fwd_wgmma_pin(FwdRowStats& st) {
#pragma unroll
  for (int r = 0; r < 2; ++r)
    asm volatile("" : "+f"(st.m_t[r]), "+f"(st.m_s[r]), "+f"(st.l_t[r]), "+f"(st.l_s[r]), "+f"(st.a[r])::"memory");
}

}  // namespace cuda
}  // namespace linear_ard

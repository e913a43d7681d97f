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

// Forward version 11 (the library's for self-relations): the stabilizers fixed before the loop at
// each row's own logit, so that no tile looks for maxima or rescales. In a self-relation without a
// key mask every row sees its own key (causal or not), so its largest logit is at least its
// diagonal c |x|^2: with m = c |x|^2 no sum underflows (the diagonal's term is 1), and a sum that
// overflows (some logit more than ~2^7 above the diagonal, in log2 units) turns non-finite, which
// fwd_diag_store reports so that the row's CTA is run again by the online forward. What changes
// otherwise is fp32 rounding only: the terms are those of the online update scaled by
// exp2(m_online - m), exactly representable as long as nothing overflows.

// The squared norms of this thread's rows row_lo, row_lo + 8 of one side's X (0 for rows >= n),
// summed over the row's quad: lane tq reads the 16-byte chunks tq, tq + 4, ... of the row's first d
// elements (rows 16-byte aligned and d a multiple of 8: the TMA forward's conditions).
template <typename T, int D>
__device__ __forceinline__ void fwd_row_sqnorms(const T* x, int64_t row_stride, int d, int64_t row_lo, int64_t n,
                                                float out[2]) {
  const int tq = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float acc = 0.f;
    const int64_t row = row_lo + r * 8;
    if (row < n) {
      const T* xr = x + row * row_stride;
#pragma unroll
      for (int c = tq; c < D / 8; c += 4) {
        if (c * 8 >= d) break;
        const uint4 v = *reinterpret_cast<const uint4*>(xr + c * 8);
        const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc = fmaf(to_float(e[k]), to_float(e[k]), acc);
      }
    }
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    out[r] = acc + __shfl_xor_sync(0xffffffffu, acc, 2);
  }
}

// Version 11's update by one key tile of raw logits z, st.m_* holding the fixed stabilizers (log2
// units): l += sum exp2(c z - m), a += sum exp2(c_t z_t - m_t)(z_t - rho z_s) (unscaled: times c_t
// once, in fwd_diag_store). On masked tiles (causal or past n; never a key mask here) the hidden
// elements add nothing, whatever their values.
template <bool kMasked, int NT>
__device__ __forceinline__ void fwd_diag_update(FwdRowStats& st, const FwdLogits<NT>& z, float cs, float ct, float rho,
                                                const FwdTileMask& mk) {
  const int tq = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum_t = 0.f, sum_s = 0.f, sum_a = 0.f;
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        float pt = ex2(fmaf(z.t[i][e], ct, -st.m_t[r]));
        float ps = ex2(fmaf(z.s[i][e], cs, -st.m_s[r]));
        float at = fmaf(z.s[i][e], -rho, z.t[i][e]);
        if constexpr (kMasked) {
          const int c = i * 8 + 2 * tq + (e & 1);
          if (c >= mk.kend || (mk.causal && c > mk.diag + r * 8)) pt = ps = at = 0.f;
        }
        sum_t += pt;
        sum_s += ps;
        sum_a = fmaf(pt, at, sum_a);
      }
    st.l_t[r] += sum_t;
    st.l_s[r] += sum_s;
    st.a[r] += sum_a;
  }
}

// f(r, row) for this thread's rows r = 0, 1 (row = row_lo + 8r) below n, on the first lane of each
// quad, after the row's partial sums (l_t, l_s, A) are added over the quad.
template <typename F>
__device__ __forceinline__ void fwd_stats_rows(FwdRowStats& st, int64_t row_lo, int64_t n, F&& f) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      st.l_t[r] += __shfl_xor_sync(0xffffffffu, st.l_t[r], o);
      st.l_s[r] += __shfl_xor_sync(0xffffffffu, st.l_s[r], o);
      st.a[r] += __shfl_xor_sync(0xffffffffu, st.a[r], o);
    }
    const int64_t row = row_lo + r * 8;
    if (threadIdx.x % 4 == 0 && row < n) f(r, row);
  }
}

// Version 11's epilogue: fwd_pipe_store's for rows whose sums and A are finite and positive; any
// other row of the CTA sets *redo (the CTA's flag) and writes nothing, and the online forward
// rewrites all of the CTA's rows.
__device__ __forceinline__ void fwd_diag_store(const RelationKLParams& p, FwdRowStats& st, int64_t b, int h,
                                               int64_t row_lo, float ct, int* redo) {
  fwd_stats_rows(st, row_lo, p.seq_len, [&](int r, int64_t row) {
    const float a = st.a[r] * ct;
    const float lse2_t = st.m_t[r] + __log2f(st.l_t[r]), lse2_s = st.m_s[r] + __log2f(st.l_s[r]);
    const float kl = kLn2 * (a / st.l_t[r] - (lse2_t - lse2_s));
    if (!(st.l_t[r] > 0.f && st.l_s[r] > 0.f && isfinite(kl) && isfinite(lse2_t) && isfinite(lse2_s))) {
      *redo = 1;
      return;
    }
    const int64_t o = (b * p.heads + h) * p.seq_len + row;
    p.kl[o] = kl;
    p.lse_teacher[o] = kLn2 * lse2_t;
    p.lse_student[o] = kLn2 * lse2_s;
  });
}

// Version 2's epilogue: quad-reduce the statistics and write KL and both LSEs of rows row_lo,
// row_lo + 8 (NaN for all three when one is not finite; KL 0 and LSE -inf for a row with no key).
__device__ __forceinline__ void fwd_pipe_store(const RelationKLParams& p, FwdRowStats& st, int64_t b, int h,
                                               int64_t row_lo) {
  fwd_stats_rows(st, row_lo, p.seq_len, [&](int r, int64_t row) {
    const int64_t o = (b * p.heads + h) * p.seq_len + row;
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
  });
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

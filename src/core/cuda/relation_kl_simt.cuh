// Relation-KL on plain fp32 CUDA cores: the path for fp32 inputs and the fallback for any shape.
#pragma once

#include "relation_kl_common.cuh"  // defines: to_float, side_ptrs, cuda_check, single_key_rows
#include "relation_kl_launch.h"  // defines: kSimtMaxHeadDim

namespace linear_ard {
namespace cuda {

// Each lane holds d / 32 elements of a row.
constexpr int kSimtPerLane = kSimtMaxHeadDim / 32;
constexpr int kSimtWarps = 4;

// ------------------------------------------------------------------------------------------------
// CUDA kernels

template <typename T>
__device__ __forceinline__ void simt_load_row(float (&v)[kSimtPerLane], const T* row, int d, int lane) {
#pragma unroll
  for (int k = 0; k < kSimtPerLane; ++k) {
    const int c = lane + 32 * k;
    v[k] = c < d ? to_float(row[c]) : 0.f;
  }
}

__device__ __forceinline__ float simt_dot(const float (&a)[kSimtPerLane], const float (&b)[kSimtPerLane]) {
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < kSimtPerLane; ++k) s = fmaf(a[k], b[k], s);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

// scale * x.y, rounded once: never contracted with what follows, so forward and backward see
// the same logit.
__device__ __forceinline__ float simt_logit(const float (&x)[kSimtPerLane], const float (&y)[kSimtPerLane],
                                            float scale) {
  return __fmul_rn(simt_dot(x, y), scale);
}

__device__ __forceinline__ bool simt_visible(const RelationKLParams& p, const uint8_t* kmask, int64_t row,
                                             int64_t key) {
  return !(p.causal && key > row) && (kmask == nullptr || kmask[key]);
}

// Kahan-compensated running sum: (s, c) with s + c the sum so far. The SIMT forward adds up to n
// terms per row one by one; a plain fp32 sum would lose ~sqrt(n) ulps of l and B, which the small
// KL (a difference of first-order quantities) turns into a large relative error.
struct KahanSum {
  float s = 0.f, c = 0.f;
  __device__ __forceinline__ void add(float v) {
    const float y = v - c, t = s + y;
    c = (t - s) - y;
    s = t;
  }
  __device__ __forceinline__ void scale(float a) { s *= a, c *= a; }
  __device__ __forceinline__ float value() const { return s - c; }
};

// One model's online softmax state: running max m, how many seen logits equal it (c) and the sum of
// exp(z - m) over the others (s), so l = c + s. Keeping the 1s of the max apart from the small terms
// keeps l exact to the small terms' own rounding, like the CPU's.
struct SimtSoftmax {
  float m = -INFINITY, c = 0.f;
  KahanSum s;
  __device__ __forceinline__ float l() const { return c + s.value(); }
  // Moves to a new max m2 >= m: old terms scale by exp(m - m2), the old 1s become terms too.
  __device__ __forceinline__ void rebase(float m2) {
    if (m2 > m) {
      const float alpha = expf(m - m2);
      s.scale(alpha);
      s.add(alpha * c);
      c = 0.f;
      m = m2;
    }
  }
  // Adds logit z <= m; returns exp(z - m).
  __device__ __forceinline__ float add(float z) {
    const float d = z - m, e = expf(d);
    if (d == 0.f) {
      c += 1.f;
    } else {
      s.add(e);
    }
    return e;
  }
};

// Grid (ceil(n / 4), H, B); one warp per row, which walks every visible key with online
// statistics for both models (SimtSoftmax) and B = sum exp(z_t - m_t)((z_t - m_t) - (z_s - m_s))
// (natural log). Each lane holds d/32 elements of the row's X_s and X_t. This is the fp32 path, so
// accurate expf/logf and compensated sums, and every term relative to the running maxima as in a
// dense log-softmax: KL = B/l_t + log1p((l_s - l_t)/l_t) subtracts nothing of the size of the
// logits (KL = A/l_t - (m_t - m_s) - log(l_t/l_s), the previous form, lost ~u|z| to that).
// Non-finite rule: a seen logit that is not finite makes the row's KL and LSEs NaN.
template <typename T>
__global__ void relation_kl_simt_fwd_kernel(const RelationKLParams p) {
  const int lane = threadIdx.x % 32, h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len, row = int64_t(blockIdx.x) * kSimtWarps + threadIdx.x / 32;
  if (row >= n) return;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h), Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;
  float xs[kSimtPerLane], xt[kSimtPerLane], ys[kSimtPerLane], yt[kSimtPerLane];
  simt_load_row(xs, S.x + row * p.student.x_row_stride, ds, lane);
  simt_load_row(xt, Tt.x + row * p.teacher.x_row_stride, dt, lane);
  SimtSoftmax st, ss;
  KahanSum bsum;
  bool seen = false, finite = true;
  const int64_t kv_end = p.causal ? row + 1 : n;
  for (int64_t key = 0; key < kv_end; ++key) {
    if (!simt_visible(p, kmask, row, key)) continue;
    simt_load_row(ys, S.y + key * p.student.y_row_stride, ds, lane);
    simt_load_row(yt, Tt.y + key * p.teacher.y_row_stride, dt, lane);
    const float zs = simt_logit(xs, ys, p.student.scale), zt = simt_logit(xt, yt, p.teacher.scale);
    if (!isfinite(zs) || !isfinite(zt)) {
      finite = false;
      continue;
    }
    if (seen && (zt > st.m || zs > ss.m)) {
      // B's brackets shift by (m_s' - m_s) - (m_t' - m_t) and its terms scale like l_t's.
      const float m_t = fmaxf(st.m, zt), m_s = fmaxf(ss.m, zs);
      bsum.add(st.l() * ((m_s - ss.m) - (m_t - st.m)));
      bsum.scale(expf(st.m - m_t));
    }
    st.rebase(fmaxf(st.m, zt));
    ss.rebase(fmaxf(ss.m, zs));
    seen = true;
    const float pt = st.add(zt);
    ss.add(zs);
    bsum.add(pt * ((zt - st.m) - (zs - ss.m)));
  }
  if (lane == 0) {
    const int64_t o = (b * p.heads + h) * n + row;
    if (!seen && finite) {
      p.kl[o] = 0.f;
      p.lse_teacher[o] = p.lse_student[o] = -INFINITY;
      return;
    }
    const float lt = st.l(), ls = ss.l();
    const float kl = bsum.value() / lt + log1pf(((ss.c - st.c) + (ss.s.value() - st.s.value())) / lt);
    const float lse_t = st.m + logf(lt), lse_s = ss.m + logf(ls);
    const bool ok = finite && isfinite(kl) && isfinite(lse_t) && isfinite(lse_s);
    p.kl[o] = ok ? kl : NAN;
    p.lse_teacher[o] = ok ? lse_t : NAN;
    p.lse_student[o] = ok ? lse_s : NAN;
  }
}

// dZ(row, key) = g * scale_s * (P_s - P_t) for one visible pair; 0 where g = 0 (also for a NaN row,
// as on the CPU) or the row has no visible key. g is 0 for rows that see a single key
// (SingleKeyRows).
template <typename T>
__device__ __forceinline__ float simt_dz(const RelationKLParams& p, int64_t o, float g,
                                         const float (&xs)[kSimtPerLane], const float (&xt)[kSimtPerLane],
                                         const float (&ys)[kSimtPerLane], const float (&yt)[kSimtPerLane]) {
  const float lse_s = p.lse_student[o];
  if (g == 0.f || lse_s == -INFINITY) return 0.f;
  const float zs = simt_logit(xs, ys, p.student.scale), zt = simt_logit(xt, yt, p.teacher.scale);
  return g * p.student.scale * (expf(zs - lse_s) - expf(zt - p.lse_teacher[o]));
}

// Grid (ceil(n / 4), H, B); one warp per row: dX[row] = sum over visible keys of dZ Y_s (plain
// store: the row is this warp's alone). Lanes hold d/32 elements of X_s, X_t and the dX row.
template <typename T>
__global__ void relation_kl_simt_dx_kernel(const RelationKLParams p) {
  const int lane = threadIdx.x % 32, h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len, row = int64_t(blockIdx.x) * kSimtWarps + threadIdx.x / 32;
  if (row >= n) return;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h), Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;
  const int64_t o = (b * p.heads + h) * n + row;
  const float g = single_key_rows(kmask, n).contains(p.causal, row, n) ? 0.f : p.grad_kl[o];
  float xs[kSimtPerLane], xt[kSimtPerLane], ys[kSimtPerLane], yt[kSimtPerLane], dx[kSimtPerLane] = {};
  simt_load_row(xs, S.x + row * p.student.x_row_stride, ds, lane);
  simt_load_row(xt, Tt.x + row * p.teacher.x_row_stride, dt, lane);
  const int64_t kv_end = p.causal ? row + 1 : n;
  for (int64_t key = 0; key < kv_end; ++key) {
    if (!simt_visible(p, kmask, row, key)) continue;
    simt_load_row(ys, S.y + key * p.student.y_row_stride, ds, lane);
    simt_load_row(yt, Tt.y + key * p.teacher.y_row_stride, dt, lane);
    const float dz = simt_dz<T>(p, o, g, xs, xt, ys, yt);
#pragma unroll
    for (int k = 0; k < kSimtPerLane; ++k) dx[k] = fmaf(dz, ys[k], dx[k]);
  }
  float* dst = p.dx + o * ds;
#pragma unroll
  for (int k = 0; k < kSimtPerLane; ++k)
    if (lane + 32 * k < ds) dst[lane + 32 * k] = dx[k];
}

// Grid (ceil(n / 4), heads_y_s, B); one warp per key of a student Y head: dY[key] = sum over the
// X heads of its GQA group and the rows that see it of dZ X_s. Runs after the dX kernel; for the
// self-relation it adds into dx (this warp is the only writer of that row now).
template <typename T>
__global__ void relation_kl_simt_dy_kernel(const RelationKLParams p) {
  const int lane = threadIdx.x % 32, hy = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len, key = int64_t(blockIdx.x) * kSimtWarps + threadIdx.x / 32;
  if (key >= n) return;
  const int group = p.heads / p.student.heads_y, ds = p.student.head_dim, dt = p.teacher.head_dim;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;
  const SingleKeyRows single = single_key_rows(kmask, n);
  float xs[kSimtPerLane], xt[kSimtPerLane], ys[kSimtPerLane], yt[kSimtPerLane], dy[kSimtPerLane] = {};
  if (kmask == nullptr || kmask[key]) {
    for (int h = hy * group; h < (hy + 1) * group; ++h) {
      const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h), Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
      simt_load_row(ys, S.y + key * p.student.y_row_stride, ds, lane);
      simt_load_row(yt, Tt.y + key * p.teacher.y_row_stride, dt, lane);
      for (int64_t row = p.causal ? key : 0; row < n; ++row) {
        simt_load_row(xs, S.x + row * p.student.x_row_stride, ds, lane);
        simt_load_row(xt, Tt.x + row * p.teacher.x_row_stride, dt, lane);
        const int64_t o = (b * p.heads + h) * n + row;
        const float g = single.contains(p.causal, row, n) ? 0.f : p.grad_kl[o];
        const float dz = simt_dz<T>(p, o, g, xs, xt, ys, yt);
#pragma unroll
        for (int k = 0; k < kSimtPerLane; ++k) dy[k] = fmaf(dz, xs[k], dy[k]);
      }
    }
  }
  float* dst = p.dy ? p.dy + ((b * p.student.heads_y + hy) * n + key) * ds : p.dx + ((b * p.heads + hy) * n + key) * ds;
#pragma unroll
  for (int k = 0; k < kSimtPerLane; ++k) {
    const int c = lane + 32 * k;
    if (c < ds) dst[c] = p.dy ? dy[k] : dst[c] + dy[k];
  }
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T>
void relation_kl_simt_fwd_launch(const RelationKLParams& p) {
  const dim3 grid(static_cast<unsigned>((p.seq_len + kSimtWarps - 1) / kSimtWarps), p.heads,
                  static_cast<unsigned>(p.batch));
  relation_kl_simt_fwd_kernel<T><<<grid, kSimtWarps * 32, 0, static_cast<cudaStream_t>(p.stream)>>>(p);
  cuda_check(cudaGetLastError(), "relation_kl_simt_fwd launch");
}

template <typename T>
void relation_kl_simt_bwd_launch(const RelationKLParams& p) {
  const auto stream = static_cast<cudaStream_t>(p.stream);
  const unsigned row_blocks = static_cast<unsigned>((p.seq_len + kSimtWarps - 1) / kSimtWarps);
  relation_kl_simt_dx_kernel<T>
      <<<dim3(row_blocks, p.heads, static_cast<unsigned>(p.batch)), kSimtWarps * 32, 0, stream>>>(p);
  cuda_check(cudaGetLastError(), "relation_kl_simt_dx launch");
  relation_kl_simt_dy_kernel<T>
      <<<dim3(row_blocks, p.student.heads_y, static_cast<unsigned>(p.batch)), kSimtWarps * 32, 0, stream>>>(p);
  cuda_check(cudaGetLastError(), "relation_kl_simt_dy launch");
}

}  // namespace cuda
}  // namespace linear_ard

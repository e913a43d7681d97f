// CPU forward and backward of the relation-KL operator: tiled, fused, OpenMP over row blocks.
//
// Tiling. A task is one (batch, head, block of kRows query rows). It converts its rows of X for both
// models to the working type T (fp32; fp64 for kF64 inputs) once, then walks key tiles of kKeys
// columns up to the causal limit. Each key tile of Y is converted and transposed to [d][kKeys], so a
// logit row is d broadcast-multiply-adds over contiguous kKeys-wide vectors (GCC vectorises them;
// hot functions are cloned for x86-64-v3 = AVX2+FMA with a baseline fallback).
//
// Forward, one pass. Per row the task keeps the online-softmax state of both models, (m_t, l_t) and
// (m_s, l_s), and B = sum_j exp(z_t - m_t) ((z_t - m_t) - (z_s - m_s)), all relative to the running
// maxima and moved along when one grows. Then
//   lse = m + log l,   KL = B / l_t + log(l_s / l_t)
// since log R_t - log R_s = (z_t - m_t - log l_t) - (z_s - m_s - log l_s). As in a dense log-softmax
// every term is relative to the row's maxima (the bracket of a peaked row's leading key is exactly 0),
// so nothing of the size of the logits cancels at the end: KL = A / l_t - (lse_t - lse_s) with
// A = sum exp(z_t - m_t)(z_t - z_s) lost about u |z| to that cancellation, up to 60x the error of a
// dense fp32 computation on peaked self-relations (docs/operator-cpu.md, "Accuracy").
//
// Non-finite rule. A row whose seen logits are not all finite gets KL and both LSEs NaN. It needs no
// pass of its own: hidden keys get a finite stand-in logit (kHidden), so the NaN of a seen NaN, of
// inf - inf at a +inf maximum, or of 0 x inf at a seen -inf reaches the sums; where every seen logit
// of the tile is NaN the maxima (which skip NaN) stay at or below kHidden and the row is marked. The
// end checks KL and the LSEs for finiteness once per row. Rows with no visible key keep KL 0, LSE -inf.
//
// Backward. Each task recomputes its logit tiles, rebuilds R = exp(z - lse) from the stored LSEs and
// forms dZ = g (R_s - R_t) for kRows x kKeys, then dX rows += scale dZ Y (kept in the task) and
// dY keys += scale dZᵀ X (into a per-thread [n, d_s] partial). Tasks of one (batch, Y head) run on a
// static cyclic schedule; the partials are then summed in thread order, so results are the same run to
// run for a given thread count. Extra memory: per thread O(kRows * d + kKeys * d) tiles and one
// [n, d_s] partial; nothing n x n.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "linear_ard/core/dtype_load.h"  // defines: dtype_load_row
#include "linear_ard/core/float16.h"     // defines: bits_to_float
#include "linear_ard/core/relation_kl.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LINEAR_ARD_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LINEAR_ARD_HOT
#endif
// Helpers are forced inline so that each target clone of a hot function gets its own vector code.
#define LINEAR_ARD_INLINE inline __attribute__((always_inline))

namespace linear_ard {
namespace {

constexpr int kRows = 32;  // query rows per task
constexpr int kKeys = 64;  // keys per tile: 8 AVX2 fp32 vectors per logit row
constexpr int kDotBlock = 64;  // logit dot products are summed in blocks of this many terms

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();
// The logit of a key a row does not see: finite, so that its exp is 0 and (z_t - m_t) - (z_s - m_s)
// stays finite (0 x finite = 0, no select needed), while a seen logit that overflowed to -inf still
// gives 0 x inf = NaN. A quarter of the lowest value: minus a row max of up to 2.5e38 it stays finite.
template <typename T>
constexpr T kHidden = std::numeric_limits<T>::lowest() / 4;

// e^x for x in [-inf, 88]: Cody-Waite reduction to |r| <= ln2/2 and a degree-7 Taylor polynomial
// (truncation < 6e-9 relative, so the result is within ~2 ulp). Branch-free so loops vectorise; below
// -87 it returns 0, which only drops terms < 2e-38 relative to a row's largest.
LINEAR_ARD_INLINE float exp_fast(float x) {
  const float xc = x < -87.f ? -87.f : x;
  const float k = (xc * 1.44269504f + 12582912.f) - 12582912.f;  // round to nearest integer
  const float r = (xc - k * 0.693359375f) + k * 2.12194440e-4f;   // ln2 split in hi + lo parts
  float poly = 1.f / 5040.f;
  poly = poly * r + 1.f / 720.f;
  poly = poly * r + 1.f / 120.f;
  poly = poly * r + 1.f / 24.f;
  poly = poly * r + 1.f / 6.f;
  poly = poly * r + 0.5f;
  poly = poly * r + 1.f;
  poly = poly * r + 1.f;
  const float two_k = bits_to_float(uint32_t(int32_t(k) + 127) << 23);
  return x < -87.f ? 0.f : poly * two_k;
}

LINEAR_ARD_INLINE double exp_fast(double x) { return std::exp(x); }

// One model's X and Y for one (batch, head); offsets and strides in elements.
struct HeadView {
  const void* x;
  int64_t x_offset;
  int64_t x_row_stride;
  const void* y;
  int64_t y_offset;
  int64_t y_row_stride;
  int d;
  float scale;
};

HeadView make_head_view(const RelationSide& s, int64_t b, int64_t h, int32_t heads) {
  const int64_t hy = h / (heads / s.heads_y);
  return HeadView{s.x, b * s.x_batch_stride + h * s.x_head_stride, s.x_row_stride,
                  s.y, b * s.y_batch_stride + hy * s.y_head_stride, s.y_row_stride,
                  s.head_dim, s.scale};
}

// Per-thread tiles. The key tiles are zero beyond the last key so that partial tiles need no special
// case in the vector loops (their logits are masked to -inf).
template <typename T>
struct Workspace {
  std::vector<T> x_s, x_t;    // [kRows][d]: this task's X rows
  std::vector<T> y_s, y_t;    // [kKeys][d]: key tile, row-major
  std::vector<T> yt_s, yt_t;  // [d][kKeys]: key tile, transposed
  std::vector<T> z_s, z_t;    // [kRows][kKeys]: logits, then dZ in z_s during backward
  std::vector<T> visible;     // [kKeys]: 1 for a visible key, 0 for padding or past the end
  std::vector<T> dx;          // [kRows][d_s]: backward only
  std::vector<T> dy_row;      // [d_s]: backward only

  Workspace(const RelationKLParams& p, bool backward)
      : x_s(size_t(kRows) * p.student.head_dim), x_t(size_t(kRows) * p.teacher.head_dim),
        y_s(size_t(kKeys) * p.student.head_dim), y_t(size_t(kKeys) * p.teacher.head_dim),
        yt_s(y_s.size()), yt_t(y_t.size()), z_s(size_t(kRows) * kKeys), z_t(z_s.size()), visible(kKeys),
        dx(backward ? x_s.size() : 0), dy_row(backward ? p.student.head_dim : 0) {}
};

// The output and gradient buffers in the working type: fp32, or fp64 for kF64 (the header's rule).
template <typename T>
struct Buffers {
  T* kl;
  T* lse_student;
  T* lse_teacher;
  const T* grad_kl;
  T* dx;
  T* dy;
};

template <typename T>
Buffers<T> buffers(const RelationKLParams& p) {
  return Buffers<T>{reinterpret_cast<T*>(p.kl), reinterpret_cast<T*>(p.lse_student),
                    reinterpret_cast<T*>(p.lse_teacher), reinterpret_cast<const T*>(p.grad_kl),
                    reinterpret_cast<T*>(p.dx), reinterpret_cast<T*>(p.dy)};
}

// Everything a task needs besides its workspace.
struct Task {
  const RelationKLParams* p;
  HeadView student, teacher;
  const uint8_t* key_mask;  // this batch item's mask, or nullptr
  int64_t out_offset;       // of row 0 of this (batch, head) in the [B, H, n] outputs
  int64_t row0;
  int rows;
};

template <typename T>
LINEAR_ARD_INLINE void load_rows(DType dtype, const HeadView& v, int64_t row0, int rows, T* dst) {
  for (int r = 0; r < rows; ++r) {
    dtype_load_row(dtype, v.x, v.x_offset + (row0 + r) * v.x_row_stride, v.d, dst + int64_t(r) * v.d);
  }
}

// Loads keys [key0, key0 + keys) row-major into y and transposed into yt; missing keys become zeros.
template <typename T>
LINEAR_ARD_INLINE void load_keys(DType dtype, const HeadView& v, int64_t key0, int keys, T* y, T* yt) {
  const int d = v.d;
  for (int j = 0; j < keys; ++j) {
    dtype_load_row(dtype, v.y, v.y_offset + (key0 + j) * v.y_row_stride, d, y + int64_t(j) * d);
  }
  std::fill(y + int64_t(keys) * d, y + int64_t(kKeys) * d, T(0));
  for (int j = 0; j < kKeys; ++j) {
    for (int k = 0; k < d; ++k) yt[k * kKeys + j] = y[j * d + k];
  }
}

// visible[j] for keys [key0, key0 + kKeys); returns the first visible one (kKeys when none is).
template <typename T>
LINEAR_ARD_INLINE int key_visibility(const Task& t, int64_t key0, T* visible) {
  const int64_t n = t.p->seq_len;
  int first = kKeys;
  for (int j = kKeys - 1; j >= 0; --j) {
    const int64_t key = key0 + j;
    const bool v = key < n && (t.key_mask == nullptr || t.key_mask[key] != 0);
    visible[j] = v ? T(1) : T(0);
    first = v ? j : first;
  }
  return first;
}

// dot[j] = sum over k in [k0, k1) of x[k] yt[k][j], k1 > k0. The first term initialises dot (a
// zeroing loop becomes a memset, which keeps the accumulators in memory instead of registers).
template <typename T>
LINEAR_ARD_INLINE void dot_block(const T* x, const T* yt, int k0, int k1, T* dot) {
  {
    const T a = x[k0];
    const T* ytk = yt + k0 * kKeys;
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) dot[j] = a * ytk[j];
  }
  for (int k = k0 + 1; k < k1; ++k) {
    const T a = x[k];
    const T* ytk = yt + k * kKeys;
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) dot[j] += a * ytk[j];
  }
}

// Keys [0, causal_limit(...)) of a tile are not past the causal limit of row row0 + i.
LINEAR_ARD_INLINE int64_t causal_limit(bool causal, int64_t row0, int i, int64_t key0) {
  return causal ? row0 + i - key0 + 1 : kKeys;
}

// z[i][j] = scale * x_i . yt[:, j] where row row0 + i sees key j (visible, within its causal limit),
// else kHidden: a hidden key's values are never used, padding may hold anything. The dot products
// are summed in blocks of kDotBlock terms, then the blocks: summed straight through, a d = 256 dot
// product rounds each partial sum at its full size, ~4x the error of a BLAS one.
template <typename T>
LINEAR_ARD_INLINE void logits_tile(const T* x, int rows, int d, const T* yt, T scale, const T* visible,
                                   bool causal, int64_t row0, int64_t key0, T* z) {
  for (int i = 0; i < rows; ++i) {
    const T* xi = x + int64_t(i) * d;
    T acc[kKeys];
    dot_block(xi, yt, 0, std::min(d, kDotBlock), acc);
    for (int k0 = kDotBlock; k0 < d; k0 += kDotBlock) {
      T part[kKeys];
      dot_block(xi, yt, k0, std::min(d, k0 + kDotBlock), part);
#pragma omp simd
      for (int j = 0; j < kKeys; ++j) acc[j] += part[j];
    }
    const int64_t limit = causal_limit(causal, row0, i, key0);
    T* zi = z + i * kKeys;
#pragma omp simd
    for (int j = 0; j < kKeys; ++j) zi[j] = j < limit && visible[j] != T(0) ? acc[j] * scale : kHidden<T>;
  }
}

// Number of keys the rows [row0, row0 + rows) can see, before padding.
LINEAR_ARD_INLINE int64_t key_end(const Task& t) {
  return t.p->causal ? std::min(t.p->seq_len, t.row0 + t.rows) : t.p->seq_len;
}

// The forward's per-row state for kRows rows and both models (see the top of the file): running
// maxima m, c = how many seen logits equal m, s = sum of exp(z - m) over the others (so l = c + s),
// and B.
template <typename T>
struct RowStates {
  T m_t[kRows], c_t[kRows], s_t[kRows], m_s[kRows], c_s[kRows], s_s[kRows], b[kRows];
};

// Folds one key tile's logits of row i (zt, zs: kKeys each, unseen keys at kHidden) into its state.
template <typename T>
LINEAR_ARD_INLINE void row_tile_fold(const T* zt, const T* zs, int i, RowStates<T>& r) {
  T max_t = kNegInf<T>, max_s = kNegInf<T>;
#pragma omp simd reduction(max : max_t, max_s)
  for (int j = 0; j < kKeys; ++j) {
    max_t = std::max(max_t, zt[j]);
    max_s = std::max(max_s, zs[j]);
  }
  // The maxima skip NaN: at or below kHidden here, every logit the row sees in this tile is NaN
  // (or -inf).
  if (max_t <= kHidden<T> || max_s <= kHidden<T>) {
    r.s_t[i] = std::numeric_limits<T>::quiet_NaN();
    return;
  }
  const T new_m_t = std::max(r.m_t[i], max_t), new_m_s = std::max(r.m_s[i], max_s);
  // Terms equal to 1 (at the max) are counted apart, in the tiles that hold a running max: added
  // onto a 1 in a vector lane, the small terms would each be rounded to the 1's ulp.
  T top_t = 0, sum_t = 0, top_s = 0, sum_s = 0, sum_b = 0;
  if (max_t == new_m_t || max_s == new_m_s) {
#pragma omp simd reduction(+ : top_t, sum_t, top_s, sum_s, sum_b)
    for (int j = 0; j < kKeys; ++j) {
      const T dt = zt[j] - new_m_t, ds = zs[j] - new_m_s;
      const T pt = exp_fast(dt);
      top_t += dt == T(0) ? T(1) : T(0);
      sum_t += dt == T(0) ? T(0) : pt;
      top_s += ds == T(0) ? T(1) : T(0);
      sum_s += ds == T(0) ? T(0) : exp_fast(ds);
      sum_b += pt * (dt - ds);
    }
  } else {
#pragma omp simd reduction(+ : sum_t, sum_s, sum_b)
    for (int j = 0; j < kKeys; ++j) {
      const T dt = zt[j] - new_m_t, ds = zs[j] - new_m_s;
      const T pt = exp_fast(dt);
      sum_t += pt;
      sum_s += exp_fast(ds);
      sum_b += pt * (dt - ds);
    }
  }
  // Moving to the new maxima scales the old terms by alpha and shifts each of B's brackets by
  // (new_m_s - m_s) - (new_m_t - m_t); a row's first visible tile starts the sums afresh.
  const T alpha_t = exp_fast(r.m_t[i] - new_m_t), alpha_s = exp_fast(r.m_s[i] - new_m_s);
  const T l_t = r.c_t[i] + r.s_t[i];
  r.b[i] = r.m_t[i] == kNegInf<T> ? sum_b
                                  : alpha_t * (r.b[i] + l_t * ((new_m_s - r.m_s[i]) - (new_m_t - r.m_t[i]))) + sum_b;
  if (new_m_t > r.m_t[i]) {
    r.s_t[i] = alpha_t * l_t + sum_t;
    r.c_t[i] = top_t;
  } else {
    r.s_t[i] += sum_t;
    r.c_t[i] += top_t;
  }
  if (new_m_s > r.m_s[i]) {
    r.s_s[i] = alpha_s * (r.c_s[i] + r.s_s[i]) + sum_s;
    r.c_s[i] = top_s;
  } else {
    r.s_s[i] += sum_s;
    r.c_s[i] += top_s;
  }
  r.m_t[i] = new_m_t;
  r.m_s[i] = new_m_s;
}

// Row i's KL and both LSEs from its final state, written at index o of the outputs.
template <typename T>
LINEAR_ARD_INLINE void row_finish(const RowStates<T>& r, int i, const Buffers<T>& out, int64_t o) {
  const T l_t = r.c_t[i] + r.s_t[i], l_s = r.c_s[i] + r.s_s[i];
  if (l_t == T(0)) {  // no visible key (a seen finite logit makes c >= 1, a NaN makes s NaN)
    out.kl[o] = T(0);
    out.lse_teacher[o] = out.lse_student[o] = kNegInf<T>;
    return;
  }
  const T lse_t = r.m_t[i] + std::log(l_t), lse_s = r.m_s[i] + std::log(l_s);
  // log(l_s / l_t) as log1p of the exact-ish difference: l_s and l_t are both near c when peaked.
  const T kl = r.b[i] / l_t + std::log1p(((r.c_s[i] - r.c_t[i]) + (r.s_s[i] - r.s_t[i])) / l_t);
  const bool finite = std::isfinite(kl) && std::isfinite(lse_t) && std::isfinite(lse_s);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  out.kl[o] = finite ? kl : nan;
  out.lse_teacher[o] = finite ? lse_t : nan;
  out.lse_student[o] = finite ? lse_s : nan;
}

template <typename T>
LINEAR_ARD_INLINE void forward_block(const Task& t, Workspace<T>& ws) {
  const RelationKLParams& p = *t.p;
  const Buffers<T> out = buffers<T>(p);
  const T scale_s = T(t.student.scale), scale_t = T(t.teacher.scale);
  load_rows(p.dtype, t.student, t.row0, t.rows, ws.x_s.data());
  load_rows(p.dtype, t.teacher, t.row0, t.rows, ws.x_t.data());
  RowStates<T> r;
  for (int i = 0; i < kRows; ++i) {
    r.m_t[i] = r.m_s[i] = kNegInf<T>;
    r.c_t[i] = r.s_t[i] = r.c_s[i] = r.s_s[i] = r.b[i] = T(0);
  }
  const int64_t end = key_end(t);
  for (int64_t key0 = 0; key0 < end; key0 += kKeys) {
    const int first_visible = key_visibility(t, key0, ws.visible.data());
    if (first_visible == kKeys) continue;
    const int keys = int(std::min<int64_t>(kKeys, p.seq_len - key0));
    load_keys(p.dtype, t.student, key0, keys, ws.y_s.data(), ws.yt_s.data());
    load_keys(p.dtype, t.teacher, key0, keys, ws.y_t.data(), ws.yt_t.data());
    logits_tile(ws.x_s.data(), t.rows, t.student.d, ws.yt_s.data(), scale_s, ws.visible.data(), p.causal,
                t.row0, key0, ws.z_s.data());
    logits_tile(ws.x_t.data(), t.rows, t.teacher.d, ws.yt_t.data(), scale_t, ws.visible.data(), p.causal,
                t.row0, key0, ws.z_t.data());
    for (int i = 0; i < t.rows; ++i) {
      if (first_visible >= causal_limit(p.causal, t.row0, i, key0)) continue;  // sees no key here
      row_tile_fold(ws.z_t.data() + i * kKeys, ws.z_s.data() + i * kKeys, i, r);
    }
  }
  for (int i = 0; i < t.rows; ++i) row_finish(r, i, out, t.out_offset + t.row0 + i);
}

template <typename T>
LINEAR_ARD_INLINE void backward_block(const Task& t, Workspace<T>& ws, T* dy_partial) {
  const RelationKLParams& p = *t.p;
  const Buffers<T> out = buffers<T>(p);
  const int ds = t.student.d;
  const T scale_s = T(t.student.scale), scale_t = T(t.teacher.scale);
  load_rows(p.dtype, t.student, t.row0, t.rows, ws.x_s.data());
  load_rows(p.dtype, t.teacher, t.row0, t.rows, ws.x_t.data());
  std::fill(ws.dx.begin(), ws.dx.end(), T(0));
  // dZ = g scale_s (R_s - R_t) for rows with something visible and a nonzero upstream gradient.
  T g[kRows], lse_s[kRows], lse_t[kRows];
  bool any_row = false;
  for (int i = 0; i < t.rows; ++i) {
    const int64_t o = t.out_offset + t.row0 + i;
    lse_s[i] = out.lse_student[o];
    lse_t[i] = out.lse_teacher[o];
    const bool active = lse_s[i] != kNegInf<T> && lse_t[i] != kNegInf<T> && out.grad_kl[o] != T(0);
    g[i] = active ? out.grad_kl[o] * scale_s : T(0);
    any_row = any_row || active;
  }
  const int64_t end = any_row ? key_end(t) : 0;
  for (int64_t key0 = 0; key0 < end; key0 += kKeys) {
    if (key_visibility(t, key0, ws.visible.data()) == kKeys) continue;
    const int keys = int(std::min<int64_t>(kKeys, p.seq_len - key0));
    load_keys(p.dtype, t.student, key0, keys, ws.y_s.data(), ws.yt_s.data());
    load_keys(p.dtype, t.teacher, key0, keys, ws.y_t.data(), ws.yt_t.data());
    logits_tile(ws.x_s.data(), t.rows, ds, ws.yt_s.data(), scale_s, ws.visible.data(), p.causal, t.row0,
                key0, ws.z_s.data());
    logits_tile(ws.x_t.data(), t.rows, t.teacher.d, ws.yt_t.data(), scale_t, ws.visible.data(), p.causal,
                t.row0, key0, ws.z_t.data());
    T* dz = ws.z_s.data();
    for (int i = 0; i < t.rows; ++i) {
      T* dzi = dz + i * kKeys;
      const T* zt = ws.z_t.data() + i * kKeys;
      const T gi = g[i], ls = lse_s[i], lt = lse_t[i];
      if (gi == T(0)) {
        std::fill(dzi, dzi + kKeys, T(0));
        continue;
      }
      // Hidden entries get exactly 0, also in a NaN row: its NaN reaches only the keys it sees.
#pragma omp simd
      for (int j = 0; j < kKeys; ++j) {
        dzi[j] = dzi[j] == kHidden<T> ? T(0) : gi * (exp_fast(dzi[j] - ls) - exp_fast(zt[j] - lt));
      }
      T* dxi = ws.dx.data() + int64_t(i) * ds;
      for (int j = 0; j < keys; ++j) {
        const T w = dzi[j];
        const T* yj = ws.y_s.data() + int64_t(j) * ds;
#pragma omp simd
        for (int k = 0; k < ds; ++k) dxi[k] += w * yj[k];
      }
    }
    for (int j = 0; j < keys; ++j) {
      T* acc = ws.dy_row.data();
      std::fill(acc, acc + ds, T(0));
      for (int i = 0; i < t.rows; ++i) {
        const T w = dz[i * kKeys + j];
        const T* xi = ws.x_s.data() + int64_t(i) * ds;
#pragma omp simd
        for (int k = 0; k < ds; ++k) acc[k] += w * xi[k];
      }
      T* out = dy_partial + (key0 + j) * ds;
#pragma omp simd
      for (int k = 0; k < ds; ++k) out[k] += acc[k];
    }
  }
  std::copy(ws.dx.begin(), ws.dx.begin() + int64_t(t.rows) * ds, out.dx + (t.out_offset + t.row0) * ds);
}

LINEAR_ARD_HOT void forward_block_dispatch(const Task& t, Workspace<float>& ws) { forward_block(t, ws); }
void forward_block_dispatch(const Task& t, Workspace<double>& ws) { forward_block(t, ws); }

LINEAR_ARD_HOT void backward_block_dispatch(const Task& t, Workspace<float>& ws, float* dy_partial) {
  backward_block(t, ws, dy_partial);
}
void backward_block_dispatch(const Task& t, Workspace<double>& ws, double* dy_partial) {
  backward_block(t, ws, dy_partial);
}

int64_t row_blocks(const RelationKLParams& p) { return (p.seq_len + kRows - 1) / kRows; }

Task make_task(const RelationKLParams& p, int64_t b, int64_t h, int64_t block) {
  Task t;
  t.p = &p;
  t.student = make_head_view(p.student, b, h, p.heads);
  t.teacher = make_head_view(p.teacher, b, h, p.heads);
  t.key_mask = p.key_mask == nullptr ? nullptr : p.key_mask + b * p.key_mask_batch_stride;
  t.out_offset = (b * p.heads + h) * p.seq_len;
  t.row0 = block * kRows;
  t.rows = int(std::min<int64_t>(kRows, p.seq_len - t.row0));
  return t;
}

template <typename T>
void forward(const RelationKLParams& p) {
  const int64_t blocks = row_blocks(p);
  const int64_t tasks = p.batch * p.heads * blocks;
#pragma omp parallel
  {
    Workspace<T> ws(p, false);
    // Later row blocks first: under a causal mask they see the most keys.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / blocks, block = blocks - 1 - task % blocks;
      forward_block_dispatch(make_task(p, bh / p.heads, bh % p.heads, block), ws);
    }
  }
}

template <typename T>
void backward(const RelationKLParams& p) {
  const int64_t n = p.seq_len, ds = p.student.head_dim;
  const int64_t blocks = row_blocks(p);
  const int32_t group = p.heads / p.student.heads_y;
  std::vector<std::vector<T>> partials(static_cast<size_t>(omp_get_max_threads()));
#pragma omp parallel
  {
    const int thread = omp_get_thread_num(), threads = omp_get_num_threads();
    Workspace<T> ws(p, true);
    std::vector<T>& partial = partials[size_t(thread)];
    partial.assign(size_t(n * ds), T(0));
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int32_t hy = 0; hy < p.student.heads_y; ++hy) {
        // Static cyclic schedule: which thread's partial a task lands in is fixed, so the sums are too.
#pragma omp for schedule(static, 1)
        for (int64_t task = 0; task < group * blocks; ++task) {
          const int64_t h = int64_t(hy) * group + task % group, block = blocks - 1 - task / group;
          backward_block_dispatch(make_task(p, b, h, block), ws, partial.data());
        }
        // Sum the partials in thread order; dy == nullptr means Y is X, so the sum goes into dx.
        const Buffers<T> buf = buffers<T>(p);
        T* out = buf.dy != nullptr ? buf.dy + (b * p.student.heads_y + hy) * n * ds
                                   : buf.dx + (b * p.heads + hy) * n * ds;
        const bool add = buf.dy == nullptr;
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t k = 0; k < ds; ++k) {
            T sum = 0;
            for (int th = 0; th < threads; ++th) {
              T& v = partials[size_t(th)][size_t(j * ds + k)];
              sum += v;
              v = T(0);
            }
            out[j * ds + k] = add ? out[j * ds + k] + sum : sum;
          }
        }
      }
    }
  }
}

}  // namespace

void relation_kl_forward_cpu(const RelationKLParams& p) {
  relation_kl_check(p, false);
  if (p.dtype == DType::kF64) {
    forward<double>(p);
  } else {
    forward<float>(p);
  }
}

void relation_kl_backward_cpu(const RelationKLParams& p) {
  relation_kl_check(p, true);
  if (p.dtype == DType::kF64) {
    backward<double>(p);
  } else {
    backward<float>(p);
  }
}

}  // namespace linear_ard

// Fused relation-KL forward on tensor cores: both models' online LSEs and the row KL in one launch.
#pragma once

#include <type_traits>

#include "relation_kl_common.cuh"  // defines: mma16816, ldmatrix_x4, TileLoader, ex2, side_ptrs

namespace linear_ard {
namespace cuda {

// The log2-domain logit of a key a row does not see, on masked tiles (a quarter of the lowest float:
// minus a row max of up to 2.5e38 it stays finite).
constexpr float kFwdHidden = -8.507059e37f;

// Tile shape of the forward for a padded head-dim bucket D (16-bit inputs).
template <int D>
struct FwdTile {
  static constexpr int kRows = 64;                  // rows (queries) per CTA: 4 warps x 16
  // Keys per pipeline stage. 32 keeps both S accumulators at 32 registers, so with both X fragment
  // sets in registers a thread fits in 168 registers and 3 CTAs (12 warps) share an SM: the
  // softmax of one warp then hides behind the mma chains of others.
  static constexpr int kKeys = 32;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kPitch = D + 8;
  static constexpr bool kXInRegs = D <= 128;  // d = 256 would need 128 registers for X alone
  static constexpr int kMinBlocks = D <= 128 ? 3 : 1;
  static constexpr size_t kSmemBytes = (2 * kRows + 2 * 2 * kKeys) * kPitch * 2;
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 64), H, B); CTA = 64 rows of one (batch, head), 4 warps x 16 rows.
// Shared memory: X_s, X_t [64 x D] (loaded once), Y_s, Y_t [kKeys x D] x 2 stages (cp.async
// double buffering: tile t+1 is in flight while tile t is multiplied, one barrier per tile).
// Each thread holds, for its two rows (g, g+8 of its warp's 16): the log2-domain running maxima
// m_t, m_s, its partial sums l_t, l_s and A = sum exp2(z_t - m_t)(z_t - z_s) over its columns
// (quad-reduced at the end), both S accumulators of the current key tile (16 x kKeys per warp),
// and, for D <= 128, both models' X fragments for the whole loop.
// Logits are kept in log2 units: z = acc * scale * log2(e), so every exponential is one ex2.
template <typename T, int D>
__global__ void __launch_bounds__(FwdTile<D>::kThreads, FwdTile<D>::kMinBlocks)
    relation_kl_fwd_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
  using Tile = FwdTile<D>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, P = Tile::kPitch, NT = BN / 8, KS = D / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sXs = reinterpret_cast<T*>(smem_raw);
  T* sXt = sXs + BM * P;
  T* sY = sXt + BM * P;  // [stage][model][BN][P]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const CtaPlace cta = cta_place(p.cta_head_group);  // heaviest causal row tiles first
  const int h = cta.head;
  const int64_t b = cta.batch, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - cta.rank) * BM;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
  const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;

  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);
  // Key tiles [0, nfull) need no mask: they end before the sequence end and, when causal, at or
  // before the block's first row. The rest (at most the diagonal tiles and the last) take the
  // per-element mask; with a key mask every tile does.
  const int64_t last_free = min(n - 1, p.causal ? r0 : n - 1);  // highest key visible to every row
  const int nfull = kmask ? 0 : static_cast<int>(min(int64_t(ntiles), (last_free + 1) / BN));

  using YLoader = TileLoader<T, BN, D, Tile::kThreads, false>;
  const YLoader ys_loader(S.y, p.student.y_row_stride, n, ds, vec_s);
  const YLoader yt_loader(Tt.y, p.teacher.y_row_stride, n, dt, vec_t);
  auto load_keys = [&](int t, int stage) {
    T* dst = sY + stage * 2 * BN * P;
    ys_loader.load(dst, int64_t(t) * BN);
    yt_loader.load(dst + BN * P, int64_t(t) * BN);
  };
  TileLoader<T, BM, D, Tile::kThreads, false>(S.x, p.student.x_row_stride, n, ds, vec_s).load(sXs, r0);
  TileLoader<T, BM, D, Tile::kThreads, false>(Tt.x, p.teacher.x_row_stride, n, dt, vec_t).load(sXt, r0);
  if (ntiles > 0) load_keys(0, 0);
  cp_async_commit();

  // A-fragment address of this lane in a 16-row tile: rows l%16, k-chunk l/16.
  const int a_off = (warp * 16 + lane % 16) * P + (lane / 16) * 8;
  // B-fragment (x4 = two 8-key n-tiles) address: keys (l/16)*8 + l%8, k-chunk (l/8)%2.
  const int b_off = ((lane / 16) * 8 + lane % 8) * P + ((lane / 8) % 2) * 8;

  uint32_t xs_frag[Tile::kXInRegs ? KS : 1][4], xt_frag[Tile::kXInRegs ? KS : 1][4];
  if constexpr (Tile::kXInRegs) {
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      ldmatrix_x4(xs_frag[kk], sXs + a_off + kk * 16);
      ldmatrix_x4(xt_frag[kk], sXt + a_off + kk * 16);
    }
  }

  float m_t[2] = {-INFINITY, -INFINITY}, m_s[2] = {-INFINITY, -INFINITY};
  float l_t[2] = {0.f, 0.f}, l_s[2] = {0.f, 0.f}, acc_a[2] = {0.f, 0.f};
  const int64_t row_lo = r0 + warp * 16 + g;  // this thread's rows: row_lo, row_lo + 8

  // One key tile; kMasked: the tile needs the per-element mask (the unmasked instantiation has no
  // mask code and no guards for rows that have seen no key: its logits are all finite).
  auto tile_step = [&](int t, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    // Tile t (issued one iteration ago) becomes visible; past the barrier every warp is done with
    // tile t - 1, so its stage can take tile t + 1 (one barrier per tile).
    cp_async_wait<0>();
    __syncthreads();
    if (t + 1 < ntiles) {
      load_keys(t + 1, (t + 1) & 1);
      cp_async_commit();
    }
    const T* sYs = sY + (t & 1) * 2 * BN * P;
    const T* sYt = sYs + BN * P;

    float zs[NT][4], zt[NT][4];
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) zs[i][e] = zt[i][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t as[4], at[4];
      if constexpr (Tile::kXInRegs) {
#pragma unroll
        for (int e = 0; e < 4; ++e) as[e] = xs_frag[kk][e], at[e] = xt_frag[kk][e];
      } else {
        ldmatrix_x4(as, sXs + a_off + kk * 16);
        ldmatrix_x4(at, sXt + a_off + kk * 16);
      }
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        // No branches around padded k-steps: they would stop the compiler from hoisting the
        // ldmatrix loads ahead of the mma chain.
        uint32_t bs[4], bt[4];
        ldmatrix_x4(bs, sYs + b_off + np * 16 * P + kk * 16);
        ldmatrix_x4(bt, sYt + b_off + np * 16 * P + kk * 16);
        mma16816<T>(zs[2 * np], as, bs[0], bs[1]);
        mma16816<T>(zs[2 * np + 1], as, bs[2], bs[3]);
        mma16816<T>(zt[2 * np], at, bt[0], bt[1]);
        mma16816<T>(zt[2 * np + 1], at, bt[2], bt[3]);
      }
    }

    // Scale into log2 units; on masked tiles hidden logits become kFwdHidden (both models share the
    // mask): finite, so that exp2 of it is 0 and z_t - z_s = 0 there, while a seen logit that
    // overflowed to -inf still makes 0 x inf = NaN in A (the non-finite rule).
    // Key offsets relative to this thread's first row, in 32 bits (the tile is 32 keys wide).
    const int64_t k0 = int64_t(t) * BN;
    const int diag = static_cast<int>(min(row_lo - k0, int64_t(BN)));  // keys k0 + c with c > diag + 8r are causal-hidden
    const int kend = static_cast<int>(min(n - k0, int64_t(BN)));       // keys k0 + c with c >= kend are past n
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        zs[i][e] *= cs;
        zt[i][e] *= ct;
        if constexpr (kMasked) {
          const int c = i * 8 + 2 * tq + (e & 1);
          if (c >= kend || (p.causal && c > diag + (e >> 1) * 8) || (kmask && !kmask[k0 + c]))
            zs[i][e] = zt[i][e] = kFwdHidden;
        }
      }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx_t = m_t[r], mx_s = m_s[r];
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        mx_t = fmaxf(mx_t, fmaxf(zt[i][2 * r], zt[i][2 * r + 1]));
        mx_s = fmaxf(mx_s, fmaxf(zs[i][2 * r], zs[i][2 * r + 1]));
      }
      mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 1));
      mx_t = fmaxf(mx_t, __shfl_xor_sync(0xffffffffu, mx_t, 2));
      mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 1));
      mx_s = fmaxf(mx_s, __shfl_xor_sync(0xffffffffu, mx_s, 2));
      // A row that has seen no visible key yet has its max at or below kFwdHidden (-inf before any
      // masked tile); subtract 0 instead, so that hidden terms are exp2(kFwdHidden) = 0 and no
      // inf - inf arises. (A row whose seen logits are all NaN gets here too: fmaxf skips NaN.)
      float use_t = mx_t, use_s = mx_s;
      if constexpr (kMasked) {
        use_t = mx_t <= kFwdHidden ? 0.f : mx_t;
        use_s = mx_s <= kFwdHidden ? 0.f : mx_s;
      }
      const float alpha_t = ex2(m_t[r] - use_t), alpha_s = ex2(m_s[r] - use_s);
      m_t[r] = mx_t;
      m_s[r] = mx_s;
      float sum_t = 0.f, sum_s = 0.f, sum_a = 0.f;
#pragma unroll
      for (int i = 0; i < NT; ++i)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          const float pt = ex2(zt[i][e] - use_t);
          sum_t += pt;
          sum_s += ex2(zs[i][e] - use_s);
          sum_a = fmaf(pt, zt[i][e] - zs[i][e], sum_a);  // hidden entries: 0 x 0
        }
      l_t[r] = fmaf(l_t[r], alpha_t, sum_t);
      l_s[r] = fmaf(l_s[r], alpha_s, sum_s);
      acc_a[r] = fmaf(acc_a[r], alpha_t, sum_a);
    }
  };
  for (int t = 0; t < nfull; ++t) tile_step(t, std::false_type{});
  for (int t = nfull; t < ntiles; ++t) tile_step(t, std::true_type{});

#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      l_t[r] += __shfl_xor_sync(0xffffffffu, l_t[r], o);
      l_s[r] += __shfl_xor_sync(0xffffffffu, l_s[r], o);
      acc_a[r] += __shfl_xor_sync(0xffffffffu, acc_a[r], o);
    }
    const int64_t row = row_lo + r * 8;
    if (tq == 0 && row < n) {
      const int64_t o = (b * p.heads + h) * n + row;
      // l_t = 0: the row saw no key. A non-finite logit it saw has made l, A or the max NaN or
      // infinite (NaN itself, inf - inf at a +inf max, 0 x inf at a -inf logit): then KL and both
      // LSEs are NaN, never finite.
      if (l_t[r] != 0.f) {
        const float lse2_t = m_t[r] + __log2f(l_t[r]), lse2_s = m_s[r] + __log2f(l_s[r]);
        const float kl = kLn2 * (acc_a[r] / l_t[r] - (lse2_t - lse2_s));
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

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D>
void relation_kl_fwd_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  using Tile = FwdTile<D>;
  auto kernel = relation_kl_fwd_kernel<T, D>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd launch");
}

}  // namespace cuda
}  // namespace linear_ard

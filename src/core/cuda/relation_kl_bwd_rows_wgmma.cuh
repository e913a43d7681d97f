// Relation-KL deterministic backward, row-parallel dX pass on warpgroup MMA (sm_90a, D <= 128):
// relation_kl_bwd_rows.cuh's algorithm with its GEMMs as wgmma, laid out as the column-parallel
// wgmma kernel (relation_kl_bwd_wgmma.cuh) with rows and keys in each other's place: two
// warpgroups of 64 owned rows, 64-key tiles streamed, tiles in the core-matrix layout.
// * S = X Y^T of both models: wgmma.m64n64k16, both operands from shared memory (K-major);
// * dX += dZ Y_s: wgmma with A = the dZ registers, B = the Y_s key tile read MN-major.
// Runs after the dY-only pass of the column-parallel kernel (BwdDxNone), which for the
// self-relation has already stored dY into dx.
#pragma once

#include "relation_kl_bwd_common.cuh"  // defines: bwd_rows_launch, zero_frags
#include "relation_kl_bwd_rows.cuh"    // defines: BwdRowsCta (begin, next_tile), BwdRowsStats, bwd_rows_dz, bwd_rows_store
#include "relation_kl_sm90.cuh"        // defines: cm_desc, cm_desc_mn, wgmma_*, fence_proxy_async

namespace linear_ard {
namespace cuda {

// Tiles of 128 rows x 64 keys; shared memory (BwdRowsCta, core-matrix layout): X_s, X_t [128][D]
// (loaded once), two stages of Y_s, Y_t [64][D] and of the keys' visibility.
template <int D>
struct BwdRowsWgmmaTile {
  static_assert(D <= 128, "two warpgroups, dX accumulator of 64 x D");
  static constexpr int kRows = 128;
  static constexpr int kKeys = 64;  // wgmma n = 64
  static constexpr int kThreads = 256;
  template <typename T>
  using Cta = BwdRowsCta<T, kRows, kKeys, D, kThreads, true>;
  static constexpr size_t kSmemBytes = Cta<__half>::kSmemBytes;  // any 16-bit T
  static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM must fit");
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 128), H, B), heaviest causal row tiles first; CTA = 128 rows of one X head, warpgroup
// wg owns rows 64 wg.., each warp 16 of them as in the column-parallel kernel's key layout. Per key
// tile (Y_s, Y_t, visibility by cp.async, double-buffered, one barrier per tile: BwdRowsCta): S of
// both models by wgmma, dZ = g * scale_s * (P_s - P_t) (bwd_rows_dz), then dX += dZ Y_s by wgmma
// with the dZ accumulators as A; the 64 x D fp32 accumulator of each warpgroup stays in registers
// for the whole CTA and is stored once (bwd_rows_store). No atomics: every result is the same on
// every run.
template <typename T, int D>
__global__ void __launch_bounds__(BwdRowsWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_rows_wgmma_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Cta = typename BwdRowsWgmmaTile<D>::template Cta<T>;
  constexpr int BN = BwdRowsWgmmaTile<D>::kKeys, KS = D / 16, RT = BN / 8, DT = D / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const Cta c(p, smem_raw);
  c.begin(p, vec_s, vec_t);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tq = lane % 4, wg = warp / 4;
  const int64_t warp_row0 = c.i0 + warp * 16;        // = i0 + 64 wg + 16 (warp % 4)
  const int64_t row_lo = warp_row0 + lane / 4;       // this thread's rows: row_lo, row_lo + 8
  const BwdRowsStats st(p, c.cta.batch, c.cta.head, row_lo, c.kmask);
  const T* sXs = c.sXs + wg * 64 * D;  // this warpgroup's 64 rows (core-matrix layout: 8 D a row group)
  const T* sXt = c.sXt + wg * 64 * D;

  float dx[DT][4];
  zero_frags(dx);
  for (int kt = 0; kt < c.ntiles; ++kt) {
    const int stage = kt & 1;
    // Tile kt's loads (and, at kt = 0, the X tiles) become visible to this thread's wgmma; every
    // warp's wgmma of tile kt - 1 was waited for, so its stage can take tile kt + 1.
    c.next_tile(p, kt, vec_s, vec_t, [] { fence_proxy_async(); });
    const T* sYs = c.sY + stage * 2 * BN * D;
    const T* sYt = sYs + BN * D;
    const uint8_t* vis = c.sVis + stage * BN;
    const int64_t key0 = int64_t(kt) * BN;

    // S for both models: 64 rows x 64 keys per warpgroup (A = X, B = the key tile, both K-major);
    // the first k-step overwrites (scale-d = 0).
    float zs[RT][4], zt[RT][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zt, cm_desc<D>(sXt + kk * 128), cm_desc<D>(sYt + kk * 128), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zs, cm_desc<D>(sXs + kk * 128), cm_desc<D>(sYs + kk * 128), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);

    if (c.masked(p.causal, kt, warp_row0)) {
      bwd_rows_dz<true>(zs, zt, st, c.cs, c.ct, vis, p.causal, key0, row_lo, tq);
    } else {
      bwd_rows_dz<false>(zs, zt, st, c.cs, c.ct, vis, p.causal, key0, row_lo, tq);
    }

    // dX[rows] += dZ Y_s: A = dZ straight from the accumulators (two 8-key n-tiles make one
    // 16-wide k-step), B = Y_s read MN-major (k = the tile's keys, 16 per step = 16 D elements).
    uint32_t za[BN / 16][4];
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      za[kk][0] = pack2<T>(zs[2 * kk][0], zs[2 * kk][1]);
      za[kk][1] = pack2<T>(zs[2 * kk][2], zs[2 * kk][3]);
      za[kk][2] = pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]);
      za[kk][3] = pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3]);
    }
    fence_regs(dx);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dx, za[kk], cm_desc_mn<D>(sYs + kk * 16 * D), true);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dx);
  }

  bwd_rows_store(p, dx, c.cta.batch, c.cta.head, row_lo, tq);
#endif  // LINEAR_ARD_SM90A
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The deterministic backward's dX pass on sm_90a (D = 64, 96, 128), after the column-parallel
// dY-only pass on the same stream.
template <typename T, int D>
void relation_kl_bwd_rows_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  bwd_rows_launch<BwdRowsWgmmaTile<D>>(relation_kl_bwd_rows_wgmma_kernel<T, D>, p, vec_s, vec_t,
                                       "relation_kl_bwd_rows_wgmma");
}

}  // namespace cuda
}  // namespace linear_ard

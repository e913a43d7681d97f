// Relation-KL backward on tensor cores: column-parallel, dY in registers, dX through fp32 atomics
// (or dY alone, for the deterministic backward whose dX comes from relation_kl_bwd_rows.cuh).
#pragma once

#include "relation_kl_bwd_common.cuh"  // defines: LINEAR_ARD_BWD_PROLOGUE, bwd_stage_dz, bwd_store_dy, bwd_launch
#include "relation_kl_common.cuh"       // defines: mma16816, ldmatrix_x4(_trans), load_tile, ex2, pack2

namespace linear_ard {
namespace cuda {

// Tile shape of the backward for a padded head-dim bucket D (16-bit inputs).
template <int D>
struct BwdTile {
  static constexpr int kKeys = D <= 128 ? 128 : 64;  // keys per CTA: one warp per 16 keys
  static constexpr int kRows = D <= 128 ? 64 : 32;   // rows (queries) per pipeline stage
  static constexpr int kWarps = kKeys / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kPitch = D + 8;
  static constexpr int kZPitch = kRows + 8;
  // dX = dZ Y_s of a row tile is split over the warps as kDxWarpsM row groups x kDxWarpsD columns.
  static constexpr int kDxWarpsM = kRows / 16;
  static constexpr int kDxWarpsD = kWarps / kDxWarpsM;
  static constexpr int kDxCols = D / kDxWarpsD;
  static constexpr size_t kSmemBytes = (2 * kKeys + 2 * 2 * kRows) * kPitch * 2  // Y_s, Y_t, X stages
                                       + 2 * kKeys * kZPitch * 2                 // dZ^T, 2 buffers
                                       + 2 * 3 * kRows * 4;                      // row stats stages
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / kKeys), heads_y_s, B); CTA = kKeys keys of one student Y head; warp w owns keys
// 16w..16w+15. The CTA walks the X heads of its GQA group and, for each, the row tiles that see
// its keys (i >= j0 when causal), kRows rows at a time with X_s, X_t, LSEs and g double-buffered.
// Per row tile, warp w computes S^T = Y[its keys] X[rows]^T for both models (Y fragments read from
// shared memory at every k-step: in registers they would push the kernel past 255 registers into
// spills, next to the 16 x D dY accumulator and both 16 x kRows S accumulators),
// dZ^T = g * scale_s * (P_s - P_t) with P = exp2(z - lse2) from the forward's LSEs, then
//   dY[its keys] += dZ^T X_s            (16 x D fp32 accumulator in registers for the whole CTA)
//   dX[rows]     += dZ Y_s              (dZ^T staged in shared memory as 16-bit; each warp owns a
//                                        16-row x kDxCols block and adds it to dx with atomics,
//                                        16-byte vector atomics on sm_90)
// One barrier per row tile: dZ^T is double-buffered and the dX of row tile it - 1 is computed in
// iteration it, after that iteration's barrier has made every warp's dZ^T visible. Between two
// barriers the warps drift apart, so one warp's exponentials and atomics overlap another's mma.
// dx must be zero on entry; dy (or, for the self-relation, dx again) receives dY at the end.
// kDx = false (the deterministic backward): no dX pass, no dZ^T staging, and for the self-relation
// dY is stored into dx with plain stores (dx need not be zeroed; the row-parallel pass adds dX).
// Rows that see a single key get g = 0 (bwd_single_key_rows): their exact gradient is 0.
template <typename T, int D, bool kDx = true>
__global__ void __launch_bounds__(BwdTile<D>::kThreads, 1) relation_kl_bwd_kernel(const RelationKLParams p,
                                                                                   bool vec_s, bool vec_t) {
  using Tile = BwdTile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = Tile::kPitch, ZP = Tile::kZPitch;
  constexpr int RT = BM / 8, DT = D / 8, XC = Tile::kDxCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t per_head = rt_end - rt_begin;
  const int64_t iters = per_head * group;
  const SingleKeyRows& single = bwd_single_key_rows<(BM + 31) / 32 * 32>(kmask, n);

  // Iteration it = (head in group, row tile); loads that iteration's X tiles and row stats.
  auto load_rows = [&](int64_t it, int stage) {
    const int h = hy * group + static_cast<int>(it / per_head);
    const int64_t i0 = (rt_begin + it % per_head) * BM;
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    T* dst = sX + stage * 2 * BM * P;
    load_tile<T, BM, D, Tile::kThreads>(dst, S.x, p.student.x_row_stride, i0, n, ds, vec_s);
    load_tile<T, BM, D, Tile::kThreads>(dst + BM * P, Tt.x, p.teacher.x_row_stride, i0, n, dt, vec_t);
    // Rows past n or with no visible key get lse2 = +inf and g = 0: their P_s, P_t and dZ are 0.
    float* st = sStat + stage * 3 * BM;
    for (int r = threadIdx.x; r < BM; r += Tile::kThreads) {
      const int64_t row = i0 + r, o = (b * p.heads + h) * n + row;
      const float lse_s = row < n ? p.lse_student[o] : -INFINITY;
      const bool live = lse_s != -INFINITY;
      st[r] = live ? lse_s * kLog2e : INFINITY;
      st[BM + r] = live ? p.lse_teacher[o] * kLog2e : INFINITY;
      st[2 * BM + r] = live && !single.contains(p.causal, row, n) ? p.grad_kl[o] * p.student.scale : 0.f;
    }
  };
  auto load_teacher_keys = [&](int h) {
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    load_tile<T, BN, D, Tile::kThreads>(sYt, Tt.y, p.teacher.y_row_stride, j0, n, dt, vec_t);
  };

  {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, hy * group);
    load_tile<T, BN, D, Tile::kThreads>(sYs, S.y, p.student.y_row_stride, j0, n, ds, vec_s);
  }
  int hy_t = (hy * group) / (p.heads / p.teacher.heads_y);
  load_teacher_keys(hy * group);
  if (iters > 0) load_rows(0, 0);
  cp_async_commit();

  // ldmatrix addresses: A = this warp's 16 keys of Y, B = the stage's X rows (S^T), B transposed
  // (dY += dZ^T X_s, dX = dZ Y_s).
  const BwdMmaOffsets<P> off(warp, lane);
  const int bt_off = off.bt;
  // A-fragment of dZ (rows x keys) read transposed out of dZ^T [key][row]: keys l%8 + (l/16)*8,
  // row-chunk (l/8)%2.
  const int zt_off = (lane % 8 + (lane / 16) * 8) * ZP + ((lane / 8) % 2) * 8;

  // dx rows (and, for the self-relation, dY) go out as float4 atomics when rows are 16-byte aligned.
  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  // dX[rows wm*16.., cols wd*XC..] of iteration it = dZ Y_s over this CTA's BN keys (dZ^T from
  // buffer it % 2), added to dx.
  const int wm = warp % Tile::kDxWarpsM, wd = warp / Tile::kDxWarpsM;
  auto dx_pass = [&](int64_t it) {
    const int h = hy * group + static_cast<int>(it / per_head);
    const int64_t i0 = (rt_begin + it % per_head) * BM;
    const T* z = sZ + (it & 1) * BN * ZP;
    float dx[XC / 8][4];
#pragma unroll
    for (int i = 0; i < XC / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) dx[i][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4_trans(a, z + zt_off + kk * 16 * ZP + wm * 16);
#pragma unroll
      for (int np = 0; np < XC / 16; ++np) {
        uint32_t bf[4];
        ldmatrix_x4_trans(bf, sYs + bt_off + kk * 16 * P + wd * XC + np * 16);
        mma16816<T>(dx[2 * np], a, bf[0], bf[1]);
        mma16816<T>(dx[2 * np + 1], a, bf[2], bf[3]);
      }
    }
    float* dx_head = p.dx + (b * p.heads + h) * n * ds;
#pragma unroll
    for (int i = 0; i < XC / 8; ++i) {
      atomic_add_frag(dx_head, ds, i0 + wm * 16 + g, n, wd * XC + i * 8, ds, dx[i], dx_vec4);
    }
  };

  for (int64_t it = 0; it < iters; ++it) {
    const int stage = static_cast<int>(it & 1);
    const int h = hy * group + static_cast<int>(it / per_head);
    const int64_t i0 = (rt_begin + it % per_head) * BM;
    // This iteration's X tiles and stats (issued one iteration ago) become visible; past this
    // barrier every warp is done with iteration it - 1, so its X stage and the dZ^T buffer of
    // it - 2 may be rewritten, and every warp's dZ^T of it - 1 can be read.
    cp_async_wait<0>();
    __syncthreads();
    // A new X head of the group: its teacher Y head may differ (teacher GQA grouping).
    if (const int want = h / (p.heads / p.teacher.heads_y); want != hy_t) {
      load_teacher_keys(h);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      hy_t = want;
    }
    if (it + 1 < iters) {
      load_rows(it + 1, stage ^ 1);
      cp_async_commit();
    }
    if (kDx && it > 0) dx_pass(it - 1);
    const T* sXs = sX + stage * 2 * BM * P;
    const T* sXt = sXs + BM * P;
    const float* st = sStat + stage * 3 * BM;

    // S^T for both models: 16 keys x BM rows per warp.
    float zs[RT][4], zt[RT][4];
    bwd_mma_logits<T, D, P>(zs, zt, sYs, sYt, sXs, sXt, off);

    // dZ^T in place of zs. Masking is needed only where a key is hidden or the tile crosses the
    // causal diagonal; elsewhere rows without a visible key are already zeroed through lse/g.
    const bool masked = any_hidden_key || (p.causal && i0 < j0 + BN - 1);
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int rl = i * 8 + 2 * tq + (e & 1);
        const float ps = ex2(fmaf(zs[i][e], cs, -st[rl]));
        const float pt = ex2(fmaf(zt[i][e], ct, -st[BM + rl]));
        float dz = st[2 * BM + rl] * (ps - pt);
        if (masked) {
          const int r = e >> 1;
          if (!key_ok[r] || (p.causal && key_lo + 8 * r > i0 + rl)) dz = 0.f;
        }
        zs[i][e] = dz;
      }

    // dY[keys] += dZ^T X_s (bwd_mma_grad: A = dZ^T from the accumulators, B = X_s transposed),
    // staging each k-step's dZ^T (key rows g, g+8; row columns 2tq, 2tq+1 of both n-tiles) for dX.
    bwd_mma_grad<T, P>(dy, zs, sXs, off, [&](int kk, const uint32_t(&a)[4]) {
      if constexpr (kDx) bwd_stage_dz<ZP>(sZ + stage * BN * ZP + (warp * 16 + g) * ZP + kk * 16 + 2 * tq, a);
    });
  }
  if (kDx && iters > 0) {
    __syncthreads();
    dx_pass(iters - 1);
  }

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4, !kDx);
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The column-parallel kernel; with p.deterministic its dY-only instantiation (the caller then runs
// the row-parallel dX pass, relation_kl_bwd_rows_launch).
template <typename T, int D>
void relation_kl_bwd_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  if (p.deterministic) {
    bwd_launch<BwdTile<D>>(relation_kl_bwd_kernel<T, D, false>, p, vec_s, vec_t, "relation_kl_bwd (dY)");
  } else {
    bwd_launch<BwdTile<D>>(relation_kl_bwd_kernel<T, D, true>, p, vec_s, vec_t, "relation_kl_bwd");
  }
}

}  // namespace cuda
}  // namespace linear_ard

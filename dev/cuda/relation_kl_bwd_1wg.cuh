// Backward versions 7 and 8 of dev/cuda: version 6 (the library's sm_90a backward,
// src/core/cuda/relation_kl_bwd_wgmma.cuh) cut down to ONE warpgroup a CTA owning 64 keys, with
// 32-row tiles, so that two CTAs fit an SM (shared memory <= 113 KB at D = 128; registers <= 255 with
// 128 threads): the two CTAs of an SM are independent (no CTA barrier between them), so one's
// exponentials can run while the other's wgmmas do, where version 6's two warpgroups meet at a CTA
// barrier every row tile and do the same thing at the same time (docs/kernel.md, "Backward version 7").
// Per 32-row tile, all three GEMMs on wgmma:
// * S^T = Y X^T of both models: wgmma.m64n32k16, both operands from shared memory (K-major).
// * dY += dZ^T X_s: wgmma.m64n{D}k16, A = the dZ^T registers, B = X_s read MN-major (as version 6).
// * dX^T = Y_s^T dZ^T over the CTA's 64 keys (wgmma needs M = 64: the D columns of dX are the M
//   side, ceil(D / 64) m64 tiles, the 32 rows the N side): wgmma.m64n32k16 with A = Y_s read
//   MN-major (trans-a) and B = dZ^T read MN-major (trans-b), version 6's wrapper wgmma_m64nNk16_ss_tt.
//   At D = 96 the second m tile covers d = 32..95 and only its d >= 64 part is kept.
// dX goes out through an fp32 staging tile in dx's row-major layout (pitch D + 4: conflict-free
// scalar stores of the transposed accumulator), one TMA bulk reduce-add (cp.reduce.async.bulk
// .add.f32) of a whole row (D floats) per request, issued after the next CTA barrier; fallback to
// scalar RED atomics from the registers when d_s != D or dx is not 16-byte aligned. Everything else
// is version 6's: masks, non-finite rule, GQA walk and teacher-key reloads, causal skip, the
// self-relation's dY into dx.
// Version 8 (relation_kl_bwd_1wg_kernel, written first): every GEMM issued and waited for in its
// row tile's iteration, two X stages, two staging tiles, one __syncthreads a row tile; the teacher's
// exponentials run behind the student's S^T wgmma.
// Version 7 (relation_kl_bwd_1wg_pipe_kernel): S^T of tile t+1 is issued before the exponentials of
// tile t (three X stages, one staging tile, two barriers a row tile).
#pragma once

#include <type_traits>

#include "relation_kl_bwd_wgmma.cuh"  // defines: BwdPos, BwdRowStats (and, through it, LINEAR_ARD_BWD_PROLOGUE,
                                      // bwd_store_dy, bwd_launch, cm_desc*, wgmma_*, bulk_*, fence_proxy_async)

namespace linear_ard {
namespace cuda {

// Tiles of 64 keys x 32 rows; shared memory: Y_s, Y_t [64][D], two X stages (X_s, X_t [32][D]), all in
// the core-matrix layout, no padding; dZ^T [64 keys][32 rows] in two buffers, core-matrix layout; two
// stages of row stats; behind them (128-byte aligned) two fp32 dX staging tiles [32 rows][D + 4].
template <int D>
struct Bwd1wgTile {
  static_assert(D % 32 == 0 && D >= 64 && D <= 128, "D = 64, 96 or 128");
  static constexpr int kKeys = 64;   // one warpgroup: wgmma m = 64
  static constexpr int kRows = 32;   // wgmma n = 32
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 128;
  static constexpr int kZPitch = kRows;           // dZ^T: core-matrix layout, no padding
  static constexpr int kDxMTiles = (D + 63) / 64; // m64 tiles of dX^T
  static constexpr int kDxPitch = D + 4;          // staging pitch in floats: 4 mod 32
  static constexpr size_t kDxStageOffset = ((2 * kKeys + 2 * 2 * kRows) * D * 2  // Y_s, Y_t, X stages
                                            + 2 * kKeys * kZPitch * 2              // dZ^T, 2 buffers
                                            + 2 * 3 * kRows * 4                    // row stats stages
                                            + 127) / 128 * 128;
  static constexpr size_t kDxStageBytes = size_t(kRows) * kDxPitch * 4;
  static constexpr size_t kSmemBytes = kDxStageOffset + 2 * kDxStageBytes;
  static_assert(kDxPitch % 32 == 4, "conflict-free staging stores");
  static_assert(kDxStageBytes % 16 == 0 && (kDxPitch * 4) % 16 == 0 && (D * 4) % 16 == 0, "bulk copy alignment");
  // Two CTAs an SM: 228 KB of shared memory an SM, 1 KB of it reserved per CTA.
  static_assert(2 * (kSmemBytes + 1024) <= 228 * 1024, "two CTAs per SM must fit");
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 64), heads_y_s, B): a CTA (one warpgroup, 4 warps of 16 keys) owns 64 keys of a
// student Y head; the key tiles that see the most causal rows come first (blockIdx.x = 0 first).
// Version 8. Iteration it (X head h of the GQA group, 32-row tile i0):
//   barrier (X(it), stats(it), every warp's dZ^T(it - 1) and staged dX(it - 2) visible);
//   bulk reduce-add of the staged dX(it - 2); loads of X(it + 1);
//   wgmma group 1: dX^T(it - 1) = Y_s^T dZ^T(it - 1) (empty at it = 0); group 2: S^T(it), both models;
//   wait 1 -> stage dX(it - 1) (or atomics); wait 0 -> exponentials, dZ^T(it) to shared memory and
//   as A fragments; dY += dZ^T(it) X_s(it) (wgmma, waited for in the iteration).
// Every wgmma group is issued and waited for inside one iteration (nothing in flight across the
// loop's back edge: ptxas serialises otherwise; docs/kernel.md, "Forward version 5").
template <typename T, int D>
__global__ void __launch_bounds__(Bwd1wgTile<D>::kThreads, 2)
    relation_kl_bwd_1wg_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = Bwd1wgTile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = Tile::kZPitch;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, MT = Tile::kDxMTiles, XP = Tile::kDxPitch;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);
  float* sDx = reinterpret_cast<float*>(smem_raw + Tile::kDxStageOffset);

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;

  // Iteration it = (X head h of the group, row tile starting at i0), walked without divisions:
  // row tiles first, then the next head.
  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };

  // Loads iteration q's X tiles (cp.async) and returns its row stats for rows threadIdx.x < BM
  // (stored to shared memory by stats_store at the end of the iteration). Rows past n or with no
  // visible key get lse2 = +inf and g = 0: their P_s, P_t and dZ are 0.
  auto load_rows = [&](BwdPos q, int stage) {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, q.h);
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, q.h);
    T* dst = sX + stage * 2 * BM * P;
    TileLoader<T, BM, D, Tile::kThreads, true>(S.x, p.student.x_row_stride, n, ds, vec_s).load(dst, q.i0);
    TileLoader<T, BM, D, Tile::kThreads, true>(Tt.x, p.teacher.x_row_stride, n, dt, vec_t).load(dst + BM * P, q.i0);
    BwdRowStats st{INFINITY, INFINITY, 0.f};
    const int64_t row = q.i0 + threadIdx.x;
    if (threadIdx.x < BM && row < n) {
      const int64_t o = (b * p.heads + q.h) * n + row;
      const float lse_s = p.lse_student[o];
      if (lse_s != -INFINITY) st = {lse_s * kLog2e, p.lse_teacher[o] * kLog2e, p.grad_kl[o] * p.student.scale};
    }
    return st;
  };
  auto stats_store = [&](const BwdRowStats& st, int stage) {
    if (threadIdx.x < BM) {
      float* dst = sStat + stage * 3 * BM + threadIdx.x;
      dst[0] = st.lse2_s;
      dst[BM] = st.lse2_t;
      dst[2 * BM] = st.g;
    }
  };
  auto load_teacher_keys = [&](int h) {
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    TileLoader<T, BN, D, Tile::kThreads, true>(Tt.y, p.teacher.y_row_stride, n, dt, vec_t).load(sYt, j0);
  };

  {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, hy * group);
    TileLoader<T, BN, D, Tile::kThreads, true>(S.y, p.student.y_row_stride, n, ds, vec_s).load(sYs, j0);
  }
  int hy_t = (hy * group) / (p.heads / p.teacher.heads_y);
  load_teacher_keys(hy * group);
  BwdPos cur{hy * group, rt_begin * BM}, prev = cur, prev2 = cur;
  if (iters > 0) stats_store(load_rows(cur, 0), 0);
  cp_async_commit();

  // dx rows (and, for the self-relation, dY) go out as float4 atomics when rows are 16-byte aligned.
  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;
  // dX through the bulk reduce-add: dx rows 16-byte aligned, ds = D (whole rows of D floats).
  const bool dx_bulk = dx_vec4 && ds == D;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  // First d of m tile mt of dX^T (the last tile ends at D: at D = 96 tile 1 covers 32..95).
  auto m_first = [](int mt) { return 64 * mt < D - 64 ? 64 * mt : D - 64; };

  // Issues dX^T[d][32 rows] = Y_s^T dZ^T(buffer `buf`) over this CTA's 64 keys into c (MT m64n32
  // tiles), as the caller's open wgmma group (the caller fences and commits). A = Y_s [key][d] read
  // MN-major (m = d contiguous), B = dZ^T [key][row] read MN-major (n = row contiguous); k-step kk is
  // k-step 0 plus the byte offset >> 4 in the address field (no carry: shared memory < 2^18 bytes).
  auto dx_issue = [&](float(&c)[MT][RT][4], int buf) {
    const uint64_t db = cm_desc_mn<BM>(sZ + buf * BN * ZP);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint64_t da = cm_desc_mn<D>(sYs + m_first(mt) / 8 * 64);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        wgmma_m64nNk16_ss_tt<T, BM>(c[mt], da + ((kk * 16 * D * sizeof(T)) >> 4),
                                    db + ((kk * 16 * BM * sizeof(T)) >> 4), kk > 0);
      }
    }
  };
  // The finished dX^T accumulators c of iteration q: this thread holds d = m_first(mt) + 16 warp + g
  // (+ 8 for e >= 2) of rows 8i + 2tq (+ 1 for odd e). To the staging tile `sbuf` (bulk path; the
  // rows go out after the next barrier) or to dx by scalar atomics (fallback).
  auto dx_out = [&](BwdPos q, const float(&c)[MT][RT][4], int sbuf) {
    if (dx_bulk) {
      float* s = sDx + sbuf * BM * XP + 2 * tq * XP + warp * 16 + g;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        // D = 96: the second tile's d < 64 are the first tile's.
        if (m_first(mt) + warp * 16 < 64 * mt) continue;
#pragma unroll
        for (int i = 0; i < RT; ++i) {
          float* si = s + i * 8 * XP + m_first(mt);
          si[0] = c[mt][i][0];
          si[XP] = c[mt][i][1];
          si[8] = c[mt][i][2];
          si[XP + 8] = c[mt][i][3];
        }
      }
    } else {
      float* dx_head = p.dx + (b * p.heads + q.h) * n * ds;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (m_first(mt) + warp * 16 < 64 * mt) continue;
#pragma unroll
        for (int i = 0; i < RT; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t row = q.i0 + i * 8 + 2 * tq + (e & 1);
            const int d = m_first(mt) + warp * 16 + g + 8 * (e >> 1);
            if (row < n && d < ds) atomicAdd(dx_head + row * ds + d, c[mt][i][e]);
          }
      }
    }
  };
  // Adds the staged dX tile `sbuf` of iteration q to dx: one bulk reduce-add of D floats per row,
  // rows 8 warp + lane issued by lanes 0-7 of each warp (rows past n skipped). The staging tile was
  // published by a CTA barrier after its writers' proxy fences.
  auto dx_bulk_issue = [&](BwdPos q, int sbuf) {
    const int r = warp * 8 + lane;
    const int64_t row = q.i0 + r;
    if (lane < 8 && row < n) {
      bulk_reduce_add_f32(p.dx + ((b * p.heads + q.h) * n + row) * D, sDx + sbuf * BM * XP + r * XP, D * 4);
      bulk_commit();
    }
  };

  // P_t of a row tile in place of zt (run while the student's S^T wgmma is still in flight).
  auto pt_compute = [&](auto& zt, const float* st) {
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) zt[i][e] = ex2(fmaf(zt[i][e], ct, -st[BM + i * 8 + 2 * tq + (e & 1)]));
  };
  // dZ^T of a row tile in place of zs, from S_s^T in zs and P_t in pt (version 6's; kMasked: a key is
  // hidden or the tile crosses the causal diagonal; elsewhere rows without a visible key are already
  // zeroed through lse2 = inf, g = 0).
  auto dz_compute = [&](auto& zs, const auto& pt, const float* st, int64_t i0, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    // Causal: key key_lo + 8r is hidden from row i0 + rl when rl < key_lo + 8r - i0.
    const int first_row = static_cast<int>(max(int64_t(-8), min(key_lo - i0, int64_t(BM))));
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int rl = i * 8 + 2 * tq + (e & 1);
        const float ps = ex2(fmaf(zs[i][e], cs, -st[rl]));
        float dz = st[2 * BM + rl] * (ps - pt[i][e]);
        if constexpr (kMasked) {
          const int r = e >> 1;
          if (!key_ok[r] || (p.causal && rl < first_row + 8 * r)) dz = 0.f;
        }
        zs[i][e] = dz;
      }
  };

  for (int64_t it = 0; it < iters; ++it) {
    const int stage = static_cast<int>(it & 1);
    // This iteration's X tiles and stats (issued one iteration ago) become visible; past this
    // barrier every warp is done with iteration it - 1, so its X stage, the dZ^T buffer of it - 2
    // and the staging tile of dX(it - 3) may be rewritten (the bulk copies of dX(it - 3), issued
    // in iteration it - 1, have read it: waited for here, next to the cp.async wait, as in
    // version 6), and every warp's dZ^T(it - 1) and staged dX(it - 2) can be read.
    cp_async_wait<0>();
    bulk_wait_all<true>();
    fence_proxy_async();
    __syncthreads();
    if (dx_bulk && it >= 2) dx_bulk_issue(prev2, stage);  // dX(it - 2), staged in buffer (it - 2) & 1
    const int h = cur.h;
    const int64_t i0 = cur.i0;
    // A new X head of the group: its teacher Y head may differ (teacher GQA grouping).
    if (const int want = h / (p.heads / p.teacher.heads_y); want != hy_t) {
      load_teacher_keys(h);
      cp_async_commit();
      cp_async_wait<0>();
      fence_proxy_async();
      __syncthreads();
      hy_t = want;
    }
    const BwdPos next = advance(cur);
    BwdRowStats next_stats{};
    if (it + 1 < iters) {
      next_stats = load_rows(next, stage ^ 1);
      cp_async_commit();
    }
    const T* sXs = sX + stage * 2 * BM * P;
    const T* sXt = sXs + BM * P;
    const float* st = sStat + stage * 3 * BM;

    // Three wgmma groups: dX^T of the previous tile (empty at it = 0), then S^T of this tile for
    // the teacher, then for the student: 64 keys x 32 rows (A = Y, B = X, K-major from shared
    // memory); each warp's accumulator rows are its 16 keys. No zeroing: the first k-step
    // overwrites (scale-d = 0). The dX output runs behind both S^T GEMMs, the teacher's
    // exponentials behind the student's.
    float zs[RT][4], zt[RT][4], dxa[MT][RT][4];
    if (it > 0) {
      wgmma_fence();
      dx_issue(dxa, stage ^ 1);
    }
    wgmma_commit();
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_ss<T>(zt, cm_desc<D>(sYt + kk * 128), cm_desc<D>(sXt + kk * 128), kk > 0);
    }
    wgmma_commit();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_ss<T>(zs, cm_desc<D>(sYs + kk * 128), cm_desc<D>(sXs + kk * 128), kk > 0);
    }
    wgmma_commit();
    wgmma_wait<2>();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) fence_regs(dxa[mt]);
    if (it > 0) dx_out(prev, dxa, stage ^ 1);  // dX(it - 1) -> staging buffer (it - 1) & 1
    wgmma_wait<1>();
    fence_regs(zt);
    pt_compute(zt, st);
    wgmma_wait<0>();
    fence_regs(zs);

    if (any_hidden_key || (p.causal && i0 < j0 + BN - 1)) {
      dz_compute(zs, zt, st, i0, std::true_type{});
    } else {
      dz_compute(zs, zt, st, i0, std::false_type{});
    }

    // dY[keys] += dZ^T X_s: A = dZ^T straight from the accumulators (two 8-row n-tiles make one
    // 16-wide k-step), B = X_s read MN-major.
    uint32_t za[BM / 16][4];
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      uint32_t(&a)[4] = za[kk];
      a[0] = pack2<T>(zs[2 * kk][0], zs[2 * kk][1]);
      a[1] = pack2<T>(zs[2 * kk][2], zs[2 * kk][3]);
      a[2] = pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]);
      a[3] = pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3]);
      // Stage dZ^T (key rows g, g+8; row columns 2tq, 2tq+1 of both n-tiles) for dX, in the
      // core-matrix layout [BN keys][BM rows] (cm_off<BM>: +8 key rows = +8 BM elements, +8 row
      // columns = +64); each of the four stores of a warp covers 128 contiguous bytes.
      T* zrow = sZ + stage * BN * ZP + cm_off<BM>(warp * 16 + g, kk * 16 + 2 * tq);
      *reinterpret_cast<uint32_t*>(zrow) = a[0];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM) = a[1];
      *reinterpret_cast<uint32_t*>(zrow + 64) = a[2];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM + 64) = a[3];
    }
    // The CTA's 64 keys x D: k = the tile's 32 rows, 16 per step (16 D elements apart).
    fence_regs(dy);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dy, za[kk], cm_desc_mn<D>(sXs + kk * 16 * D), true);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dy);
    if (it + 1 < iters) stats_store(next_stats, stage ^ 1);
    prev2 = prev;
    prev = cur;
    cur = next;
  }
  if (iters > 0) {
    // The last row tile's dZ^T and the staged dX(iters - 2) are published (fences, barrier); the
    // bulk copies of dX(iters - 3) have read staging buffer (iters - 1) & 1.
    const int last = static_cast<int>((iters - 1) & 1);
    bulk_wait_all<true>();
    fence_proxy_async();
    __syncthreads();
    if (dx_bulk && iters >= 2) dx_bulk_issue(prev2, last ^ 1);
    float dxa[MT][RT][4];
    wgmma_fence();
    dx_issue(dxa, last);
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) fence_regs(dxa[mt]);
    dx_out(prev, dxa, last);
    if (dx_bulk) {
      fence_proxy_async();
      __syncthreads();
      dx_bulk_issue(prev, last);
    }
  }
  // Shared memory must outlive the bulk copies' reads; wait for their completion.
  bulk_wait_all<false>();

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4);
#endif  // LINEAR_ARD_SM90A
}

// Version 7, the pipelined variant of the kernel above (version 8): S^T of row
// tile it + 1 is issued before the exponentials of tile it, so they run while the tensor cores work
// through it (and through dX^T(it - 1)). That needs X(it + 1) resident one iteration earlier: three X
// stages (loads two tiles ahead) and three row-stats stages; to stay within two CTAs an SM the dX
// staging tile is single (16.5 KB at D = 128), written after a second CTA barrier per row tile.
// Shared memory: Y_s, Y_t, X stages 0 and 1, dZ^T x 2 (LINEAR_ARD_BWD_PROLOGUE's layout), then three
// stats stages, X stage 2, and (128-byte aligned) the fp32 dX staging tile [32 rows][D + 4].
template <int D>
struct Bwd1wgPipeTile : Bwd1wgTile<D> {
  using Base = Bwd1wgTile<D>;
  static constexpr size_t kStatOffset = (2 * Base::kKeys + 2 * 2 * Base::kRows) * D * 2 +
                                        2 * Base::kKeys * Base::kZPitch * 2;
  static constexpr size_t kX2Offset = (kStatOffset + 3 * 3 * Base::kRows * 4 + 127) / 128 * 128;
  static constexpr size_t kDxStageOffset = kX2Offset + 2 * Base::kRows * D * 2;
  static constexpr size_t kSmemBytes = kDxStageOffset + Base::kDxStageBytes;
  static_assert(kDxStageOffset % 128 == 0, "bulk copy alignment");
  static_assert(2 * (kSmemBytes + 1024) <= 228 * 1024, "two CTAs per SM must fit");
};

// Iteration it (X head h of the GQA group, 32-row tile i0); S_s^T(it), S_t^T(it) arrive finished in
// registers (zs, zt) from iteration it - 1 (or the prologue):
//   barrier (X(it + 1), stats(it + 1), every warp's dZ^T(it - 1) and staged dX(it - 2) visible);
//   bulk reduce-add of the staged dX(it - 2); teacher keys of tile it + 1's head if they change;
//   loads of X(it + 2), stats(it + 2) into registers;
//   wgmma group 1: S^T(it + 1), both models, into zs_n, zt_n (empty on the last tile);
//   wgmma group 2: dX^T(it - 1) (empty at it = 0);
//   exponentials of tile it, dZ^T(it) to shared memory and as A fragments (behind groups 1 and 2);
//   group 3: dY += dZ^T(it) X_s(it); wait for all three (nothing in flight across the back edge);
//   dX(it - 1): bulk path: its staging tile's previous bulk reads waited for, barrier, staged (the
//   next iteration's barrier publishes it); fallback: scalar atomics; stats(it + 2) stored;
//   zs, zt = zs_n, zt_n.
template <typename T, int D>
__global__ void __launch_bounds__(Bwd1wgPipeTile<D>::kThreads, 2)
    relation_kl_bwd_1wg_pipe_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = Bwd1wgPipeTile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = Tile::kZPitch;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, MT = Tile::kDxMTiles, XP = Tile::kDxPitch;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);
  (void)sStat;  // three stages here, at kStatOffset (the same place)
  float* const sSt = reinterpret_cast<float*>(smem_raw + Tile::kStatOffset);
  T* const sX2 = reinterpret_cast<T*>(smem_raw + Tile::kX2Offset);
  float* const sDx = reinterpret_cast<float*>(smem_raw + Tile::kDxStageOffset);
  auto x_stage = [&](int s) { return s == 2 ? sX2 : sX + s * 2 * BM * P; };

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;

  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };
  // Loads iteration q's X tiles (cp.async) into X stage `stage` and returns its row stats for rows
  // threadIdx.x < BM (version 6's rule: rows past n or with no visible key get lse2 = +inf, g = 0).
  auto load_rows = [&](BwdPos q, int stage) {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, q.h);
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, q.h);
    T* dst = x_stage(stage);
    TileLoader<T, BM, D, Tile::kThreads, true>(S.x, p.student.x_row_stride, n, ds, vec_s).load(dst, q.i0);
    TileLoader<T, BM, D, Tile::kThreads, true>(Tt.x, p.teacher.x_row_stride, n, dt, vec_t).load(dst + BM * P, q.i0);
    BwdRowStats st{INFINITY, INFINITY, 0.f};
    const int64_t row = q.i0 + threadIdx.x;
    if (threadIdx.x < BM && row < n) {
      const int64_t o = (b * p.heads + q.h) * n + row;
      const float lse_s = p.lse_student[o];
      if (lse_s != -INFINITY) st = {lse_s * kLog2e, p.lse_teacher[o] * kLog2e, p.grad_kl[o] * p.student.scale};
    }
    return st;
  };
  auto stats_store = [&](const BwdRowStats& st, int stage) {
    if (threadIdx.x < BM) {
      float* dst = sSt + stage * 3 * BM + threadIdx.x;
      dst[0] = st.lse2_s;
      dst[BM] = st.lse2_t;
      dst[2 * BM] = st.g;
    }
  };
  auto load_teacher_keys = [&](int h) {
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    TileLoader<T, BN, D, Tile::kThreads, true>(Tt.y, p.teacher.y_row_stride, n, dt, vec_t).load(sYt, j0);
  };

  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;
  const bool dx_bulk = dx_vec4 && ds == D;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  auto m_first = [](int mt) { return 64 * mt < D - 64 ? 64 * mt : D - 64; };
  // S^T of the row tile in X stage `stage` for both models (teacher, then student), one group's
  // worth of wgmma (the caller fences and commits).
  auto st_issue = [&](float(&zs)[RT][4], float(&zt)[RT][4], int stage) {
    const T* xs = x_stage(stage);
    const T* xt = xs + BM * P;
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_ss<T>(zt, cm_desc<D>(sYt + kk * 128), cm_desc<D>(xt + kk * 128), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n32k16_ss<T>(zs, cm_desc<D>(sYs + kk * 128), cm_desc<D>(xs + kk * 128), kk > 0);
    }
  };
  // dX^T = Y_s^T dZ^T(buffer `buf`), as version 8's dx_issue.
  auto dx_issue = [&](float(&c)[MT][RT][4], int buf) {
    const uint64_t db = cm_desc_mn<BM>(sZ + buf * BN * ZP);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint64_t da = cm_desc_mn<D>(sYs + m_first(mt) / 8 * 64);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        wgmma_m64nNk16_ss_tt<T, BM>(c[mt], da + ((kk * 16 * D * sizeof(T)) >> 4),
                                    db + ((kk * 16 * BM * sizeof(T)) >> 4), kk > 0);
      }
    }
  };
  // The finished dX^T accumulators of iteration q, as version 8's dx_out: to the staging tile (bulk
  // path; the caller has made it free) or to dx by scalar atomics.
  auto dx_out = [&](BwdPos q, const float(&c)[MT][RT][4]) {
    if (dx_bulk) {
      float* s = sDx + 2 * tq * XP + warp * 16 + g;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (m_first(mt) + warp * 16 < 64 * mt) continue;
#pragma unroll
        for (int i = 0; i < RT; ++i) {
          float* si = s + i * 8 * XP + m_first(mt);
          si[0] = c[mt][i][0];
          si[XP] = c[mt][i][1];
          si[8] = c[mt][i][2];
          si[XP + 8] = c[mt][i][3];
        }
      }
    } else {
      float* dx_head = p.dx + (b * p.heads + q.h) * n * ds;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (m_first(mt) + warp * 16 < 64 * mt) continue;
#pragma unroll
        for (int i = 0; i < RT; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t row = q.i0 + i * 8 + 2 * tq + (e & 1);
            const int d = m_first(mt) + warp * 16 + g + 8 * (e >> 1);
            if (row < n && d < ds) atomicAdd(dx_head + row * ds + d, c[mt][i][e]);
          }
      }
    }
  };
  auto dx_bulk_issue = [&](BwdPos q) {
    const int r = warp * 8 + lane;
    const int64_t row = q.i0 + r;
    if (lane < 8 && row < n) {
      bulk_reduce_add_f32(p.dx + ((b * p.heads + q.h) * n + row) * D, sDx + r * XP, D * 4);
      bulk_commit();
    }
  };
  auto dz_compute = [&](auto& zs, const auto& zt, const float* st, int64_t i0, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    const int first_row = static_cast<int>(max(int64_t(-8), min(key_lo - i0, int64_t(BM))));
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int rl = i * 8 + 2 * tq + (e & 1);
        const float ps = ex2(fmaf(zs[i][e], cs, -st[rl]));
        const float pt = ex2(fmaf(zt[i][e], ct, -st[BM + rl]));
        float dz = st[2 * BM + rl] * (ps - pt);
        if constexpr (kMasked) {
          const int r = e >> 1;
          if (!key_ok[r] || (p.causal && rl < first_row + 8 * r)) dz = 0.f;
        }
        zs[i][e] = dz;
      }
  };

  float zs[RT][4], zt[RT][4];
  BwdPos cur{hy * group, rt_begin * BM}, next = cur, prev = cur, prev2 = cur;
  int hy_t = (hy * group) / (p.heads / p.teacher.heads_y);
  // Prologue: keys, X(0) and X(1) with their stats; S^T(0).
  {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, hy * group);
    TileLoader<T, BN, D, Tile::kThreads, true>(S.y, p.student.y_row_stride, n, ds, vec_s).load(sYs, j0);
  }
  load_teacher_keys(hy * group);
  if (iters > 0) {
    stats_store(load_rows(cur, 0), 0);
    cp_async_commit();
    next = advance(cur);
    if (iters > 1) stats_store(load_rows(next, 1), 1);
    cp_async_commit();
    cp_async_wait<1>();
    fence_proxy_async();
    __syncthreads();
    wgmma_fence();
    st_issue(zs, zt, 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);
  }

  int s_cur = 0;  // X and stats stage of tile it (it % 3)
  for (int64_t it = 0; it < iters; ++it) {
    const int s_next = s_cur == 2 ? 0 : s_cur + 1, s_next2 = s_next == 2 ? 0 : s_next + 1;
    // X(it + 1), stats(it + 1), dZ^T(it - 1) and the staged dX(it - 2) become visible; past this
    // barrier every warp is done with iteration it - 1 (so X stage s_next2, last read by tile
    // it - 1, may be rewritten).
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (dx_bulk && it >= 2) dx_bulk_issue(prev2);
    // Tile it + 1 of a new X head: its teacher Y head may differ (no wgmma reads Y_t now).
    if (it + 1 < iters) {
      if (const int want = next.h / (p.heads / p.teacher.heads_y); want != hy_t) {
        load_teacher_keys(next.h);
        cp_async_commit();
        cp_async_wait<0>();
        fence_proxy_async();
        __syncthreads();
        hy_t = want;
      }
    }
    const BwdPos next2 = advance(next);
    BwdRowStats next2_stats{};
    if (it + 2 < iters) {
      next2_stats = load_rows(next2, s_next2);
      cp_async_commit();
    }
    const float* st = sSt + s_cur * 3 * BM;
    const T* sXs = x_stage(s_cur);
    const int64_t i0 = cur.i0;

    // Group 1: S^T(it + 1); group 2: dX^T(it - 1). Both run behind this tile's exponentials.
    float zs_n[RT][4], zt_n[RT][4], dxa[MT][RT][4];
    if (it + 1 < iters) {
      wgmma_fence();
      st_issue(zs_n, zt_n, s_next);
    }
    wgmma_commit();
    if (it > 0) {
      wgmma_fence();
      dx_issue(dxa, static_cast<int>((it - 1) & 1));
    }
    wgmma_commit();

    if (any_hidden_key || (p.causal && i0 < j0 + BN - 1)) {
      dz_compute(zs, zt, st, i0, std::true_type{});
    } else {
      dz_compute(zs, zt, st, i0, std::false_type{});
    }
    uint32_t za[BM / 16][4];
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      uint32_t(&a)[4] = za[kk];
      a[0] = pack2<T>(zs[2 * kk][0], zs[2 * kk][1]);
      a[1] = pack2<T>(zs[2 * kk][2], zs[2 * kk][3]);
      a[2] = pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]);
      a[3] = pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3]);
      T* zrow = sZ + (it & 1) * BN * ZP + cm_off<BM>(warp * 16 + g, kk * 16 + 2 * tq);
      *reinterpret_cast<uint32_t*>(zrow) = a[0];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM) = a[1];
      *reinterpret_cast<uint32_t*>(zrow + 64) = a[2];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM + 64) = a[3];
    }
    // Group 3: dY += dZ^T(it) X_s(it).
    fence_regs(dy);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dy, za[kk], cm_desc_mn<D>(sXs + kk * 16 * D), true);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dy);
    fence_regs(zs_n);
    fence_regs(zt_n);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) fence_regs(dxa[mt]);

    if (it > 0) {
      if (dx_bulk) {
        // The staging tile's bulk reads of dX(it - 2) (issued after this iteration's first barrier)
        // are done before anyone rewrites it. (In SASS this wait is the cp.async one too: X(it + 2)
        // lands by here rather than by the next barrier.)
        bulk_wait_all<true>();
        __syncthreads();
      }
      dx_out(prev, dxa);
    }
    if (it + 2 < iters) stats_store(next2_stats, s_next2);
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) zs[i][e] = zs_n[i][e], zt[i][e] = zt_n[i][e];
    prev2 = prev;
    prev = cur;
    cur = next;
    next = next2;
    s_cur = s_next;
  }
  if (iters > 0) {
    // dZ^T of the last tile and the staged dX(iters - 2) are published.
    fence_proxy_async();
    __syncthreads();
    if (dx_bulk && iters >= 2) dx_bulk_issue(prev2);
    float dxa[MT][RT][4];
    wgmma_fence();
    dx_issue(dxa, static_cast<int>((iters - 1) & 1));
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) fence_regs(dxa[mt]);
    if (dx_bulk) {
      bulk_wait_all<true>();
      __syncthreads();
    }
    dx_out(prev, dxa);
    if (dx_bulk) {
      fence_proxy_async();
      __syncthreads();
      dx_bulk_issue(prev);
    }
  }
  bulk_wait_all<false>();

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4);
#endif  // LINEAR_ARD_SM90A
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D>
void relation_kl_bwd_1wg_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  // Two CTAs of ~106 KB an SM need the largest shared-memory carveout (a hint the driver follows).
  cuda_check(cudaFuncSetAttribute(relation_kl_bwd_1wg_kernel<T, D>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  static_cast<int>(cudaSharedmemCarveoutMaxShared)),
             "relation_kl_bwd_1wg: set carveout");
  bwd_launch<Bwd1wgTile<D>>(relation_kl_bwd_1wg_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_1wg");
}

template <typename T, int D>
void relation_kl_bwd_1wg_pipe_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  cuda_check(cudaFuncSetAttribute(relation_kl_bwd_1wg_pipe_kernel<T, D>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  static_cast<int>(cudaSharedmemCarveoutMaxShared)),
             "relation_kl_bwd_1wg_pipe: set carveout");
  bwd_launch<Bwd1wgPipeTile<D>>(relation_kl_bwd_1wg_pipe_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_1wg_pipe");
}

}  // namespace cuda
}  // namespace linear_ard

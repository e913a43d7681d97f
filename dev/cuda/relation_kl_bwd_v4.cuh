// Backward version 4 of dev/cuda, frozen: the library's sm_90a backward until backward version 6
// replaced it (CHANGELOG.md, 2026-11-28), kept here unchanged but for its names
// (BwdWgmmaV4Tile, relation_kl_bwd_v4_kernel/_launch) so the harness times it beside 6.
// relation_kl_bwd.cuh's algorithm with S^T = Y X^T of both models and dY += dZ^T X_s as wgmma. The
// CTA's 8 warps are two warpgroups of 64 keys; Y and X tiles are kept in the core-matrix layout
// (relation_kl_sm90.cuh), which wgmma reads by descriptor and the ldmatrix(.trans) of the dX GEMM
// reads as before (each 8 x 8 block is 128 contiguous bytes). Against the mma.sync kernel this
// removes the S^T GEMM's 80 ldmatrix.x4 per warp and row tile and the dY GEMM's 32 ldmatrix.x4 and
// 64 mma.sync. Everything else (exponentials, dZ^T staging, dX atomics, one barrier per row tile)
// is the mma.sync kernel's. Versions 3 (relation_kl.cu) and 5 (relation_kl_bwd_inflight.cuh) are
// variants of this one and use its tile.
#pragma once

#include <type_traits>

#include "relation_kl_bwd_wgmma.cuh"  // defines: BwdPos (and, through it, LINEAR_ARD_BWD_PROLOGUE,
                                      // bwd_stage_dz, bwd_store_dy, bwd_launch, cm_desc*, wgmma_*)

namespace linear_ard {
namespace cuda {

// One row's statistics for versions 3-5: log2-domain LSEs and g * scale_s (the library's
// BwdRowStats until its bwd_wgmma_cta took the raw values, BwdRowRaw, 2026-11-29).
struct BwdRowStats {
  float lse2_s, lse2_t, g;
};

template <int D>
struct BwdWgmmaV4Tile {
  static_assert(D <= 128, "two warpgroups of 64 keys");
  static constexpr int kKeys = 128;
  static constexpr int kRows = 64;  // wgmma n = 64
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 256;
  static constexpr int kZPitch = kRows + 8;
  static constexpr int kDxWarpsM = kRows / 16;
  static constexpr int kDxWarpsD = kWarps / kDxWarpsM;
  static constexpr int kDxCols = D / kDxWarpsD;
  static constexpr size_t kSmemBytes = (2 * kKeys + 2 * 2 * kRows) * D * 2  // Y_s, Y_t, X stages (no pad)
                                       + 2 * kKeys * kZPitch * 2           // dZ^T, 2 buffers
                                       + 2 * 3 * kRows * 4;                // row stats stages
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 128), heads_y_s, B) as relation_kl_bwd_kernel (see there for the algorithm).
// dY += dZ^T X_s by wgmma: A = the dZ^T registers, B = the X_s tile read MN-major through a
// descriptor.
template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaV4Tile<D>::kThreads, 1)
    relation_kl_bwd_v4_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = BwdWgmmaV4Tile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = Tile::kZPitch;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, XC = Tile::kDxCols;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;

  // Iteration it = (X head h of the group, row tile starting at i0), walked without divisions:
  // row tiles first, then the next head.
  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };

  // Loads iteration q's X tiles (cp.async) and returns its row stats for rows threadIdx.x < BM,
  // read from global memory into registers now and stored to shared memory by stats_store at the
  // end of the iteration, so their latency hides behind the whole iteration. Rows past n or with
  // no visible key get lse2 = +inf and g = 0: their P_s, P_t and dZ are 0.
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
  BwdPos cur{hy * group, rt_begin * BM}, prev_pos = cur;
  if (iters > 0) stats_store(load_rows(cur, 0), 0);
  cp_async_commit();

  // B-fragment address, transposed (k = rows of a [k][d] tile, n = d): rows l%8 + ((l/8)%2)*8,
  // chunk l/16, in the core-matrix layout (+16 rows = 16 D elements, +16 columns = 128).
  const int bt_off = cm_off<D>(lane % 8 + ((lane / 8) % 2) * 8, (lane / 16) * 8);
  // A-fragment of dZ (rows x keys) read transposed out of dZ^T [key][row]: keys l%8 + (l/16)*8,
  // row-chunk (l/8)%2.
  const int zt_off = (lane % 8 + (lane / 16) * 8) * ZP + ((lane / 8) % 2) * 8;
  // S^T of warpgroup wg: its 64 keys (A, rows 64 wg.. of Y) against the row tile (B).
  const int wg = warp / 4;

  // dx rows (and, for the self-relation, dY) go out as float4 atomics when rows are 16-byte aligned;
  // with ds = D and a whole row tile inside the sequence no bound checks are needed.
  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;
  const bool dx_unchecked = dx_vec4 && ds == D;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  // dX[rows wm*16.., cols wd*XC..] of iteration q = dZ Y_s over this CTA's BN keys (dZ^T from
  // buffer `buf`), added to dx.
  const int wm = warp % Tile::kDxWarpsM, wd = warp / Tile::kDxWarpsM;
  auto dx_pass = [&](BwdPos q, int buf) {
    const T* z = sZ + buf * BN * ZP;
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
        ldmatrix_x4_trans(bf, sYs + bt_off + kk * 16 * D + (wd * XC + np * 16) / 8 * 64);
        mma16816<T>(dx[2 * np], a, bf[0], bf[1]);
        mma16816<T>(dx[2 * np + 1], a, bf[2], bf[3]);
      }
    }
    float* dx_head = p.dx + (b * p.heads + q.h) * n * ds;
    const int64_t row = q.i0 + wm * 16 + g;
    if (dx_unchecked && q.i0 + BM <= n) {
      float* dst = dx_head + (row + (tq & 1) * 8) * D + wd * XC + 2 * (tq & ~1);
#pragma unroll
      for (int i = 0; i < XC / 8; ++i) atomicAdd(reinterpret_cast<float4*>(dst + i * 8), frag_row4(dx[i]));
    } else {
#pragma unroll
      for (int i = 0; i < XC / 8; ++i) atomic_add_frag(dx_head, ds, row, n, wd * XC + i * 8, ds, dx[i], dx_vec4);
    }
  };

  // dZ^T of a row tile in place of zs (kMasked: a key is hidden or the tile crosses the causal
  // diagonal; elsewhere rows without a visible key are already zeroed through lse2 = inf, g = 0).
  auto dz_compute = [&](auto& zs, const auto& zt, const float* st, int64_t i0, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    // Causal: key key_lo + 8r is hidden from row i0 + rl when rl < key_lo + 8r - i0.
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

  for (int64_t it = 0; it < iters; ++it) {
    const int stage = static_cast<int>(it & 1);
    // This iteration's X tiles and stats (issued one iteration ago) become visible; past this
    // barrier every warp is done with iteration it - 1, so its X stage and the dZ^T buffer of
    // it - 2 may be rewritten, and every warp's dZ^T of it - 1 can be read.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
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

    // S^T for both models: 64 keys x BM rows per warpgroup by wgmma (A = Y, B = X, both from
    // shared memory); each warp's accumulator rows are its 16 keys, as in the mma.sync kernel.
    // No zeroing: the first k-step overwrites (scale-d = 0). Issued before the dX pass of the
    // previous row tile, so that pass's ldmatrix, mma.sync and atomics run while the tensor cores
    // work through these.
    float zs[RT][4], zt[RT][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zt, cm_desc<D>(sYt + wg * 64 * D + kk * 128), cm_desc<D>(sXt + kk * 128), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zs, cm_desc<D>(sYs + wg * 64 * D + kk * 128), cm_desc<D>(sXs + kk * 128), kk > 0);
    }
    wgmma_commit();
    if (it > 0) dx_pass(prev_pos, stage ^ 1);
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);

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
      // Stage dZ^T (key rows g, g+8; row columns 2tq, 2tq+1 of both n-tiles) for dX.
      T* zrow = sZ + stage * BN * ZP + (warp * 16 + g) * ZP + kk * 16 + 2 * tq;
      bwd_stage_dz<ZP>(zrow, a);
    }
    // Warpgroup wg's 64 keys x D: k = the tile's 64 rows, 16 per step (16 D elements apart).
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
    prev_pos = cur;
    cur = next;
  }
  if (iters > 0) {
    __syncthreads();
    dx_pass(prev_pos, static_cast<int>((iters - 1) & 1));
  }

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4);
#endif  // LINEAR_ARD_SM90A
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D>
void relation_kl_bwd_v4_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  bwd_launch<BwdWgmmaV4Tile<D>>(relation_kl_bwd_v4_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_v4");
}

}  // namespace cuda
}  // namespace linear_ard

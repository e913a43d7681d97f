// Backward version 5 of dev/cuda: the library's wgmma backward (version 4) with the dY wgmma of row
// tile t left in flight across the next barrier, so no warp waits for it right after issuing it.
#pragma once

#include <type_traits>

#include "relation_kl_bwd_v4.cuh"  // defines: BwdWgmmaV4Tile (and, through it, BwdPos, BwdRowStats, wgmma_*)

namespace linear_ard {
namespace cuda {

// Version 4's tile with a third X stage: the dY wgmma of iteration t still reads X_s of stage t % 3
// while iteration t + 1 loads the X tiles of t + 2 into stage (t + 2) % 3; with two stages those
// loads would overwrite it. dZ^T and the row stats keep their two buffers (dY reads dZ^T from
// registers, and both are consumed before the dY wgmma is issued). The prologue macro lays out two X
// stages, so the kernel moves sZ and sStat behind the third.
template <int D>
struct BwdInflightTile : BwdWgmmaV4Tile<D> {
  static constexpr int kXStages = 3;
  static constexpr size_t kXStageBytes = 2 * BwdWgmmaV4Tile<D>::kRows * D * 2;  // X_s, X_t (16-bit)
  static constexpr size_t kSmemBytes = BwdWgmmaV4Tile<D>::kSmemBytes + kXStageBytes;
  static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM must still fit");
};

// Keeps the compiler from moving reads or writes of a wgmma's A-fragment registers across its issue
// and wait (fence_regs for the 32-bit packed fragments): those registers belong to the MMA until
// its group is waited for.
template <int KT>
__device__ __forceinline__ void fence_frags(uint32_t (&a)[KT][4]) {
#pragma unroll
  for (int i = 0; i < KT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[i][e])::"memory");
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 128), heads_y_s, B) as relation_kl_bwd_v4_kernel: 8 warps = two warpgroups of
// 64 keys, each warp 16 keys with its 16 x D fp32 dY in registers. What changes: the dY wgmma of
// iteration t (A = the packed dZ^T registers za, B = X_s of stage t % 3) is committed and not
// waited for; the warp goes on to the barrier, the loads of t + 2, the S^T wgmma of t + 1 and the
// dX pass of t, and waits once, after that pass, for both groups (wgmma groups retire in order, so
// the wait for S^T(t + 1) also covers dY(t)). Until that wait neither dy nor za may be touched;
// za therefore lives outside the loop. Arithmetic, masking, GQA walk and causal skip are version
// 4's, in the same order.
template <typename T, int D>
__global__ void __launch_bounds__(BwdInflightTile<D>::kThreads, 1)
    relation_kl_bwd_inflight_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = BwdInflightTile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = Tile::kZPitch;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, XC = Tile::kDxCols;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);
  sZ = sX + Tile::kXStages * 2 * BM * P;
  sStat = reinterpret_cast<float*>(sZ + 2 * BN * ZP);

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;

  // Iteration it = (X head h of the group, row tile starting at i0), walked without divisions:
  // row tiles first, then the next head.
  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };

  // Loads iteration q's X tiles (cp.async) into X stage xstage and returns its row stats for rows
  // threadIdx.x < BM, read from global memory into registers now and stored to shared memory by
  // stats_store at the end of the iteration, so their latency hides behind the whole iteration.
  // Rows past n or with no visible key get lse2 = +inf and g = 0: their P_s, P_t and dZ are 0.
  auto load_rows = [&](BwdPos q, int xstage) {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, q.h);
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, q.h);
    T* dst = sX + xstage * 2 * BM * P;
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
  // dZ^T of the last row tile packed as the dY wgmma's A operand; read by that wgmma until the next
  // iteration's wait, so it outlives the iteration.
  uint32_t za[BM / 16][4];

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

  // X stages cycle 0, 1, 2 (xstage: this iteration's); stats and dZ^T buffers alternate by it & 1.
  int xstage = 0;
  for (int64_t it = 0; it < iters; ++it) {
    const int stage = static_cast<int>(it & 1);
    const int xnext = xstage == Tile::kXStages - 1 ? 0 : xstage + 1;
    // This iteration's X tiles and stats (issued one iteration ago) become visible; past this
    // barrier every warp has waited for the dY wgmma of it - 2 and is done with iteration it - 1's
    // S^T and dX reads, so X stage (it + 1) % 3 (last read by dY of it - 2) and the dZ^T buffer of
    // it - 2 may be rewritten, and every warp's dZ^T of it - 1 can be read. The dY wgmma of it - 1
    // may still be reading X stage (it - 1) % 3 and za.
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    const int h = cur.h;
    const int64_t i0 = cur.i0;
    // A new X head of the group: its teacher Y head may differ (teacher GQA grouping). The dY
    // wgmma in flight reads neither Y_t nor anything this rewrites.
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
      next_stats = load_rows(next, xnext);
      cp_async_commit();
    }
    const T* sXs = sX + xstage * 2 * BM * P;
    const T* sXt = sXs + BM * P;
    const float* st = sStat + stage * 3 * BM;

    // S^T for both models: 64 keys x BM rows per warpgroup by wgmma (A = Y, B = X, both from
    // shared memory); each warp's accumulator rows are its 16 keys. No zeroing: the first k-step
    // overwrites (scale-d = 0). Queued behind the dY wgmma of it - 1; the dX pass of it - 1 runs
    // while the tensor cores work through both.
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
    // Both groups: dY of it - 1 (committed first, so retired first) and S^T of it.
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);
    fence_regs(dy);
    fence_frags(za);

    if (any_hidden_key || (p.causal && i0 < j0 + BN - 1)) {
      dz_compute(zs, zt, st, i0, std::true_type{});
    } else {
      dz_compute(zs, zt, st, i0, std::false_type{});
    }

    // dY[keys] += dZ^T X_s: A = dZ^T straight from the accumulators (two 8-row n-tiles make one
    // 16-wide k-step), B = X_s read MN-major.
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
    // Committed and left in flight: waited for in the next iteration, after its dX pass.
    fence_regs(dy);
    fence_frags(za);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dy, za[kk], cm_desc_mn<D>(sXs + kk * 16 * D), true);
    }
    wgmma_commit();
    if (it + 1 < iters) stats_store(next_stats, stage ^ 1);
    prev_pos = cur;
    cur = next;
    xstage = xnext;
  }
  // The last dY wgmma.
  wgmma_wait<0>();
  fence_regs(dy);
  fence_frags(za);
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
void relation_kl_bwd_inflight_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  bwd_launch<BwdInflightTile<D>>(relation_kl_bwd_inflight_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_inflight");
}

}  // namespace cuda
}  // namespace linear_ard

// dev/cuda/relation_kl.cu: the relation-KL kernels' versions side by side, as llm.c's dev/cuda:
// each version is checked against the dense fp64 reference (tests/core/relation_kl_harness.h's
// errors and tolerances) on the quick reference cases and a few longer ones, then timed on the
// benchmark's shape (B = 1, H = 32, d = 128, causal bf16 self-relation; CUDA events, median of 10).
// Only the winners live in the library (src/core/cuda); the others stay here, runnable.
//   forward   1  SIMT: a warp per row, fp32 (the library's fp32 path and fallback)
//             2  mma.sync, 64 rows x 32-key tiles, both LSEs and the KL in one pass (the library's
//                without sm_90a and for D = 256: its kMmaSync kernels)
//             3  2 software-pipelined: S of key tile t+1 issued before the softmax of tile t; X in
//                registers, 2 CTAs/SM (D <= 128; relation_kl_fwd_pipelined.cuh)
//             4  3 with X read from shared memory per k-step, 3 CTAs/SM (D <= 128)
//             5  wgmma, 2 warpgroups x 64 rows, 64-key tiles in 3 cp.async stages, S of tile t+1
//                in flight during the softmax of tile t (sm_90a, D <= 128; relation_kl_fwd_v5.cuh)
//             6  5's tiles with a producer warp (mbarrier ring of 4 stages) and the two consumer
//                warpgroups ping-ponged on named barriers (the library's on sm_90a, D <= 128, where
//                8 does not apply: src/core/cuda/relation_kl_fwd_wgmma.cuh)
//             7  6 with two key tiles a turn (S(t+1) in flight during the update of S(t), as 5) and
//                a producer warpgroup giving its registers to the consumers (setmaxnreg; the
//                library's template with kPairs = true)
//             8  6 with the key tiles (Y_s, Y_t) by TMA tensor copies into 128B-swizzled boxes, X by
//                the producer's cp.async behind its own mbarrier (18 % faster than 6; the library's
//                kernel with 9's switches off: relation_kl_fwd_v8.cuh)
//             9  8 with the wgmma descriptors in uniform registers (one UIADD3 a wgmma) and, for
//                positive scales, the scales folded into the exponent arguments of unmasked tiles
//                (the library's on sm_90a for D = 64, 128 with 16-byte aligned rows:
//                src/core/cuda/relation_kl_fwd_tma.cuh; 9 % faster than 8)
//            10  9 with three consumer warpgroups (192 rows a CTA, the turn passed round the three;
//                the library's for n >= 8K: relation_kl_fwd_tma.cuh's kWarpgroups = 3)
//            11  10 with the stabilizers fixed at each row's diagonal c |x|^2 (no maxima, no
//                rescaling) for self-relations without a key mask; CTAs whose rows overflowed are
//                rerun by 10 in a second launch (16-17 % faster than 10; the library's on sm_90a
//                from n = 8192 where it applies, at D = 128: relation_kl_fwd_tma.cuh's
//                fwd_diag_launch_groups; relation_kl_fwd_x_regs.cuh's kernel without kXRegs here)
//            12  11 with two consumer warpgroups (9's CTA; the library's below n = 8192)
//            15  12 with the logit GEMMs' A operand (both models' X rows) from registers, loaded once
//                a CTA, instead of from shared memory (relation_kl_fwd_x_regs.cuh)
//            16  11 with the same, D = 64 only (the library's there from n = 8192, 12-16 % faster
//                than 11)
//            19  11 with a producer warpgroup that gives the consumers 160 registers a thread by
//                setmaxnreg, the student's X rows from registers at D = 128 (both at D = 64)
//   backward  1  SIMT: a warp per row (dX) and per key (dY) (the library's fp32 path and fallback)
//             2  mma.sync, column-parallel, dY in registers, dX by atomics (the library's without sm_90a)
//             3  2 with S^T = Y X^T on warpgroup MMA (sm_90a; in this file)
//             4  3 with dY += dZ^T X_s on warpgroup MMA too (D <= 128; relation_kl_bwd_v4.cuh, the
//                library's on sm_90a until 6 replaced it)
//             5  4 with the dY wgmma left in flight across the next barrier, three X stages
//                (D <= 128; relation_kl_bwd_inflight.cuh)
//             6  4 with the dX GEMM on warpgroup MMA too, reduced to global memory by TMA bulk
//                reduce-add through shared memory (the library's on sm_90a, D <= 128, where 11
//                does not apply: src/core/cuda/relation_kl_bwd_wgmma.cuh)
//            11  6 with the X row tiles (X_s, X_t) by TMA tensor copies into 128B-swizzled boxes, an
//                mbarrier a stage (28 % faster than 6; src/core/cuda/relation_kl_bwd_tma.cuh's
//                relation_kl_bwd_tma_rows_launch)
//            12  11 with each warp's dX rows added by one TMA tensor reduce-add (128B-swizzled staging
//                box) instead of 16 row bulk reduce-adds, and no empty dX wgmma group at iteration 0
//                (12 % faster than 11; the library's until 25; relation_kl_bwd_y_regs.cuh's DxOut)
//            24  12 with the S^T wgmma's A operand (the student's key tile) from registers, loaded
//                once a CTA, instead of from shared memory (relation_kl_bwd_y_regs.cuh)
//            25  24 with both models' key tiles from registers (5-9 % faster than 12; the library's
//                on sm_90a for D = 64, 128 with 16-byte aligned rows:
//                src/core/cuda/relation_kl_bwd_tma_dx.cuh)
// (A forward with its logit GEMMs on wgmma was measured 13-16 % slower than version 2 and removed;
// so were backward versions 7 and 8, one warpgroup a CTA and two CTAs an SM, 62-65 % slower than 6,
// 9 and 10, 6 with the teacher's exponentials behind its GEMMs, -0.4 to +1.5 %, and 13, 12 with
// the two warpgroups ping-ponged and no CTA barrier in the loop, 17-36 % slower, 14, 12 with S^T,
// dZ and dY in 32-row halves, 10-12 % slower, and 15, 12 with dZ and dY in halves after the whole
// S^T, equal to 12 within 1 %, 16-19, 12 with dX by 8- or 16-byte atomics from the accumulators
// and the row statistics read as pairs, 1-35 % slower, 20, 12 with the next tile's statistics
// loaded after the dX output, and 21, 12 with 1/8 of the exponentials on the FMA pipes, equal to 12
// within 2 and 3 %, 22, with 1/4 of them, 0-5 % slower, and 23, 20 and 21 together, not timed; and
// forward versions 13 and 14, 11 with 1/8 or 1/4 of the exponentials as a degree-5 polynomial on
// the FMA pipes, 3-7 % and 12-15 % slower than 11; docs/kernel.md.)
//   relation_kl forward|backward [VERSION]     all versions when VERSION is left out
//   relation_kl forward|backward VERSION --time-only   no reference checks (for profilers: the
//                                              timed launches at 4K, then 8K, 12 each)
//   LINEAR_ARD_CTA_HEAD_GROUP=G relation_kl ...  the launch order's group of (batch, head) pairs
//                                              (RelationKLParams::cta_head_group; 1 = pair by pair)
//   LINEAR_ARD_TIME_LENGTHS=8192,32768 relation_kl ...  the timed lengths (default 4096,8192)
//   LINEAR_ARD_TIME_DIM=64 relation_kl ...              the timed head dim (default 128)
// Built with -DLINEAR_ARD_BUILD_DEV=ON (for sm_90a alone: version 3 is sm_90a code).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_cases.h"      // defines: relation_kl_reference_cases, relation_kl_describe
#include "linear_ard/core/relation_kl_reference.h"  // defines: relation_kl_reference
#include "relation_kl_bwd_inflight.cuh"             // defines: relation_kl_bwd_inflight_launch
#include "relation_kl_bwd_dx_variant.cuh"           // defines: relation_kl_bwd_dx_variant_launch (versions 12, 24)
#include "relation_kl_bwd_tma.cuh"                  // defines: relation_kl_bwd_tma_rows_launch (version 11)
#include "relation_kl_bwd_y_regs.cuh"               // defines: BwdDxKeysShared, BwdDxYRegsStudent (versions 12, 24)
#include "relation_kl_bwd_v4.cuh"                   // defines: BwdWgmmaV4Tile, relation_kl_bwd_v4_launch
#include "relation_kl_cuda_kernels.h"               // defines: relation_kl_*_cuda_kernels
#include "relation_kl_fwd_pipelined.cuh"            // defines: relation_kl_fwd_pipe_launch
#include "relation_kl_fwd_tma.cuh"                  // defines: fwd_tma_launch_groups (versions 9, 10), fwd_diag_launch_groups (11, 12)
#include "relation_kl_fwd_v5.cuh"                   // defines: relation_kl_fwd_v5_launch
#include "relation_kl_fwd_x_regs.cuh"               // defines: relation_kl_fwd_x_regs_kernel (versions 11, 12, 15, 16, 19)
#include "relation_kl_fwd_v8.cuh"                   // defines: relation_kl_fwd_v8_launch
#include "relation_kl_fwd_wgmma.cuh"                // defines: relation_kl_fwd_wgmma_run (the library's, with version 7's kPairs)
#include "relation_kl_harness.h"                    // defines: DeviceProblem, reference_errors, time_ms
#include "relation_kl_launch.h"                     // defines: relation_kl_sm90a_available

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels

template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaV4Tile<D>::kThreads, 1)
    relation_kl_bwd_wgmma_st_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
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

    // dY[keys] += dZ^T X_s on mma.sync: A = dZ^T straight from the accumulators (two 8-row n-tiles
    // make one 16-wide k-step), B = X_s read transposed by ldmatrix.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const uint32_t a[4] = {pack2<T>(zs[2 * kk][0], zs[2 * kk][1]), pack2<T>(zs[2 * kk][2], zs[2 * kk][3]),
                             pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]),
                             pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < DT / 2; ++np) {
        uint32_t bf[4];
        ldmatrix_x4_trans(bf, sXs + bt_off + kk * 16 * D + np * 128);
        mma16816<T>(dy[2 * np], a, bf[0], bf[1]);
        mma16816<T>(dy[2 * np + 1], a, bf[2], bf[3]);
      }
      // Stage dZ^T (key rows g, g+8; row columns 2tq, 2tq+1 of both n-tiles) for dX.
      T* zrow = sZ + stage * BN * ZP + (warp * 16 + g) * ZP + kk * 16 + 2 * tq;
      bwd_stage_dz<ZP>(zrow, a);
    }
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
void relation_kl_bwd_wgmma_st_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  bwd_launch<BwdWgmmaV4Tile<D>>(relation_kl_bwd_wgmma_st_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_wgmma_st");
}

}  // namespace cuda
}  // namespace linear_ard

using namespace linear_ard;

namespace {

// Versions 3, 4, 5 and 6 (kVersion) on the params: 16-bit inputs, max(d_s, d_t) <= 128. Returns
// false where they cannot run. (Version 6 is the library's default where version 11's TMA cannot
// read the inputs.)
template <int kVersion>
bool backward_sm90a_dev(const RelationKLParams& p) {
  const int d = std::max(p.student.head_dim, p.teacher.head_dim);
  if ((p.dtype != DType::kBF16 && p.dtype != DType::kF16) || d > 128) return false;
  const size_t dx_bytes = sizeof(float) * p.batch * p.heads * p.seq_len * p.student.head_dim;
  cuda::cuda_check(cudaMemsetAsync(p.dx, 0, dx_bytes, static_cast<cudaStream_t>(p.stream)), "zero dx");
  const size_t e = dtype_size(p.dtype);
  const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
  auto launch = [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    if constexpr (kVersion == 4) {
      cuda::relation_kl_bwd_v4_launch<T, D>(p, vs, vt);
    } else if constexpr (kVersion == 5) {
      cuda::relation_kl_bwd_inflight_launch<T, D>(p, vs, vt);
    } else if constexpr (kVersion == 6) {
      cuda::relation_kl_bwd_wgmma_launch<T, D>(p, vs, vt);
    } else {
      cuda::relation_kl_bwd_wgmma_st_launch<T, D>(p, vs, vt);
    }
  };
  auto by_type = [&](auto t) {
    if (d <= 64) return launch(t, std::integral_constant<int, 64>{});
    if (d <= 96) return launch(t, std::integral_constant<int, 96>{});
    launch(t, std::integral_constant<int, 128>{});
  };
  if (p.dtype == DType::kBF16) {
    by_type(__nv_bfloat16{});
  } else {
    by_type(__half{});
  }
  return true;
}

// Versions 3 (kXRegs) and 4 on the params: 16-bit inputs, max(d_s, d_t) <= 128. Returns false where
// they cannot run.
template <bool kXRegs>
bool forward_pipelined(const RelationKLParams& p) {
  const int d = std::max(p.student.head_dim, p.teacher.head_dim);
  if ((p.dtype != DType::kBF16 && p.dtype != DType::kF16) || d > 128) return false;
  relation_kl_check(p, false);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return true;
  const size_t e = dtype_size(p.dtype);
  const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
  auto by_type = [&](auto t) {
    using T = decltype(t);
    if (d <= 64) return cuda::relation_kl_fwd_pipe_launch<T, 64, kXRegs>(p, vs, vt);
    if (d <= 96) return cuda::relation_kl_fwd_pipe_launch<T, 96, kXRegs>(p, vs, vt);
    cuda::relation_kl_fwd_pipe_launch<T, 128, kXRegs>(p, vs, vt);
  };
  if (p.dtype == DType::kBF16) {
    by_type(__nv_bfloat16{});
  } else {
    by_type(__half{});
  }
  return true;
}

// Versions 5, 6 and 7 (kVersion) on the params: sm_90a image, 16-bit inputs, max(d_s, d_t) <= 128.
// Returns false where they cannot run. (Version 6 is the library's default where version 8's TMA
// cannot read the inputs.)
template <int kVersion>
bool forward_wgmma(const RelationKLParams& p) {
  const int d = std::max(p.student.head_dim, p.teacher.head_dim);
  if ((p.dtype != DType::kBF16 && p.dtype != DType::kF16) || d > 128 || !cuda::relation_kl_sm90a_available()) {
    return false;
  }
  relation_kl_check(p, false);
  if (p.batch == 0 || p.seq_len == 0 || p.heads == 0) return true;
  const size_t e = dtype_size(p.dtype);
  const bool vs = cuda::side_is_vec(p.student, e), vt = cuda::side_is_vec(p.teacher, e);
  auto launch = [&](auto t, auto dim) {
    using T = decltype(t);
    constexpr int D = decltype(dim)::value;
    if constexpr (kVersion == 6 || kVersion == 7) {
      cuda::relation_kl_fwd_wgmma_run<T, D, kVersion == 7>(p, vs, vt);
    } else {
      cuda::relation_kl_fwd_v5_launch<T, D>(p, vs, vt);
    }
  };
  auto by_type = [&](auto t) {
    if (d <= 64) return launch(t, std::integral_constant<int, 64>{});
    if (d <= 96) return launch(t, std::integral_constant<int, 96>{});
    launch(t, std::integral_constant<int, 128>{});
  };
  if (p.dtype == DType::kBF16) {
    by_type(__nv_bfloat16{});
  } else {
    by_type(__half{});
  }
  return true;
}

// A TMA kernel version (forward 8, 9, 10, backward 11) on the params: where the library runs its
// TMA kernel (kernel name "wgmma+tma": 16-bit inputs, D = 64 or 128, both sides readable by TMA), with
// the library's launch order and, for the backward, dx zeroed first; launch(T{}, D constant, p) runs
// it. Returns false elsewhere.
template <bool kBackward, typename Launch>
bool run_tma_version(const RelationKLParams& params, Launch&& launch) {
  const char* name = kBackward ? relation_kl_backward_cuda_kernel_name(params, RelationKLCudaKernels::kDefault)
                               : relation_kl_forward_cuda_kernel_name(params, RelationKLCudaKernels::kDefault);
  if (name != std::string("wgmma+tma")) return false;
  relation_kl_check(params, kBackward);
  if (params.batch == 0 || params.seq_len == 0 || params.heads == 0) return true;
  const RelationKLParams p = relation_kl_cuda_launch_order(params);
  if (kBackward) {
    const size_t dx_bytes = sizeof(float) * p.batch * p.heads * p.seq_len * p.student.head_dim;
    cuda::cuda_check(cudaMemsetAsync(p.dx, 0, dx_bytes, static_cast<cudaStream_t>(p.stream)), "zero dx");
  }
  auto by_type = [&](auto t) {
    if (std::max(p.student.head_dim, p.teacher.head_dim) <= 64) return launch(t, std::integral_constant<int, 64>{}, p);
    launch(t, std::integral_constant<int, 128>{}, p);
  };
  if (p.dtype == DType::kBF16) {
    by_type(__nv_bfloat16{});
  } else {
    by_type(__half{});
  }
  return true;
}

bool forward_v8(const RelationKLParams& params) {
  return run_tma_version<false>(params, [](auto t, auto d, const RelationKLParams& p) {
    cuda::relation_kl_fwd_v8_launch<decltype(t), decltype(d)::value>(p);
  });
}

// Forward version 9 (kWarpgroups = 2) or 10 (3) at every length (the library runs 10 from
// cuda::kFwdThreeGroupsFrom keys on, 9 below).
template <int kWarpgroups>
bool forward_tma_groups(const RelationKLParams& params) {
  return run_tma_version<false>(params, [](auto t, auto d, const RelationKLParams& p) {
    cuda::fwd_tma_launch_groups<decltype(t), decltype(d)::value, kWarpgroups>(p);
  });
}

// Forward versions 11 (kWarpgroups = 3, beside 10), 12 (2, beside 9) and, with kXRegs, 16 (3) and
// 15 (2) at every length (the library runs 16 at D = 64 and 11 at D = 128 from
// cuda::kFwdThreeGroupsFrom keys on, 12 below); 16 at D = 64 only (at D = 128 its 416 threads leave
// 128 registers a thread, and ptxas spills and serializes the wgmmas).
template <int kWarpgroups, bool kXRegs>
bool forward_diag(const RelationKLParams& params) {
  if (kWarpgroups == 3 && kXRegs && std::max(params.student.head_dim, params.teacher.head_dim) > 64) return false;
  return run_tma_version<false>(params, [](auto t, auto d, const RelationKLParams& p) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    if constexpr (kWarpgroups == 2 || !kXRegs || D == 64) {
      cuda::fwd_diag_launch_groups<T, D, kWarpgroups>(
          p, cuda::relation_kl_fwd_x_regs_kernel<T, D, kWarpgroups, kXRegs ? 2 : 0>);
    }
  });
}

// Forward version 19: 11 with a producer warpgroup whose setmaxnreg gives the consumers 160
// registers a thread (128 without), and the student's X rows from registers at D = 128 (both
// models' at D = 64, 16's operands).
bool forward_producer_group(const RelationKLParams& params) {
  return run_tma_version<false>(params, [](auto t, auto d, const RelationKLParams& p) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value;
    cuda::fwd_diag_launch_groups<T, D, 3, true>(p, cuda::relation_kl_fwd_x_regs_kernel<T, D, 3, D == 64 ? 2 : 1, true>);
  });
}

bool backward_v11(const RelationKLParams& params) {
  return run_tma_version<true>(params, [](auto t, auto d, const RelationKLParams& p) {
    cuda::relation_kl_bwd_tma_rows_launch<decltype(t), decltype(d)::value>(p);
  });
}

// Backward versions 12 and 24: 25 (the library's kernel body) with DxOut = Out<D>.
template <template <int> class Out>
bool backward_dx_variant(const RelationKLParams& params) {
  return run_tma_version<true>(params, [](auto t, auto d, const RelationKLParams& p) {
    constexpr int D = decltype(d)::value;
    cuda::relation_kl_bwd_dx_variant_launch<decltype(t), D, Out<D>>(p, "relation_kl_bwd_dx_variant");
  });
}

// A version: runs its pass on the params and returns false where it does not apply (then skipped).
struct Version {
  int number;
  const char* what;
  bool (*run)(const RelationKLParams&);
};

bool tensor_core_inputs(const RelationKLParams& p) {
  return (p.dtype == DType::kBF16 || p.dtype == DType::kF16) && std::max(p.student.head_dim, p.teacher.head_dim) <= 256;
}

const std::vector<Version>& forward_versions() {
  static const std::vector<Version> v = {
      {1, "SIMT", [](const RelationKLParams& p) {
         relation_kl_forward_cuda_kernels(p, RelationKLCudaKernels::kSimt);
         return true;
       }},
      {2, "mma.sync", [](const RelationKLParams& p) {
         if (!tensor_core_inputs(p)) return false;
         relation_kl_forward_cuda_kernels(p, RelationKLCudaKernels::kMmaSync);
         return true;
       }},
      {3, "mma.sync pipelined, X in registers", forward_pipelined<true>},
      {4, "mma.sync pipelined, X in shared memory", forward_pipelined<false>},
      {5, "wgmma pipelined, 2 warpgroups", forward_wgmma<5>},
      {6, "wgmma, producer warp, 2 warpgroups ping-pong", forward_wgmma<6>},
      {7, "wgmma, producer warpgroup, 2 warpgroups ping-pong, tile pairs", forward_wgmma<7>},
      {8, "wgmma, producer warp, ping-pong, key tiles by TMA (128B swizzle)", forward_v8},
      {9, "8 with uniform wgmma descriptors and the scales folded into exp2's arguments", forward_tma_groups<2>},
      {10, "9 with three consumer warpgroups (192 rows a CTA)", forward_tma_groups<3>},
      {11, "10 with the stabilizers fixed at each row's diagonal, overflowed CTAs rerun by 10", forward_diag<3, false>},
      {12, "9 with the stabilizers fixed at each row's diagonal, overflowed CTAs rerun by 9", forward_diag<2, false>},
      {15, "12 with the logit GEMMs' A (both models' X rows) from registers", forward_diag<2, true>},
      {16, "11 with the logit GEMMs' A (both models' X rows) from registers (D = 64)", forward_diag<3, true>},
      {19, "11 with a producer warpgroup (setmaxnreg: 160 registers a consumer), the student's X rows from registers",
       forward_producer_group},
  };
  return v;
}

const std::vector<Version>& backward_versions() {
  static const std::vector<Version> v = {
      {1, "SIMT", [](const RelationKLParams& p) {
         relation_kl_backward_cuda_kernels(p, RelationKLCudaKernels::kSimt);
         return true;
       }},
      {2, "mma.sync", [](const RelationKLParams& p) {
         if (!tensor_core_inputs(p)) return false;
         relation_kl_backward_cuda_kernels(p, RelationKLCudaKernels::kMmaSync);
         return true;
       }},
      {3, "wgmma S^T", [](const RelationKLParams& p) {
         return cuda::relation_kl_sm90a_available() && backward_sm90a_dev<3>(p);
       }},
      {4, "wgmma S^T + dY", [](const RelationKLParams& p) {
         return cuda::relation_kl_sm90a_available() && backward_sm90a_dev<4>(p);
       }},
      {5, "wgmma S^T + dY, dY in flight", [](const RelationKLParams& p) {
         return cuda::relation_kl_sm90a_available() && backward_sm90a_dev<5>(p);
       }},
      {6, "wgmma S^T + dY + dX, dX by bulk reduce-add", [](const RelationKLParams& p) {
         return cuda::relation_kl_sm90a_available() && backward_sm90a_dev<6>(p);
       }},
      {11, "6 with the X row tiles by TMA (128B swizzle, mbarriers)", backward_v11},
      {12, "11 with dX by TMA tensor reduce-add, one box a warp", backward_dx_variant<cuda::BwdDxKeysShared>},
      {24, "12 with S^T's A (the student's keys) from registers", backward_dx_variant<cuda::BwdDxYRegsStudent>},
      {25, "12 with S^T's A (both models' keys) from registers", [](const RelationKLParams& p) {
         if (relation_kl_backward_cuda_kernel_name(p, RelationKLCudaKernels::kDefault) != std::string("wgmma+tma")) {
           return false;
         }
         relation_kl_backward_cuda_kernels(p, RelationKLCudaKernels::kDefault);
         return true;
       }},
  };
  return v;
}

// The checked cases: the quick reference cases, three longer bf16 ones (many tiles per CTA; the
// last at D = 64, which the quick ones leave out) and one of 3 batch items x 3 heads.
std::vector<RelationKLProblemSpec> check_cases() {
  std::vector<RelationKLProblemSpec> cases = relation_kl_reference_cases(true);
  RelationKLProblemSpec s;
  s.dtype = DType::kBF16, s.seq_len = 1000, s.causal = true, s.dim_student = s.dim_teacher = 128;
  s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2, s.student_noise = 0.3, s.logit_std = 4.0, s.seed = 3;
  cases.push_back(s);
  s.self_relation = false, s.heads_y_student = 1, s.causal = false, s.mask = KeyMaskKind::kRandom, s.dim_student = 64;
  cases.push_back(s);
  s.self_relation = true, s.heads_y_student = 2, s.causal = true, s.mask = KeyMaskKind::kNone, s.dim_teacher = 64;
  cases.push_back(s);
  // More than one batch item and 9 (batch, head) pairs: the launch order's groups (cta_place).
  s = RelationKLProblemSpec{};
  s.dtype = DType::kBF16, s.seq_len = 333, s.causal = true, s.dim_student = s.dim_teacher = 128;
  s.batch = 3, s.heads = 3, s.heads_y_student = s.heads_y_teacher = 3, s.student_noise = 0.3;
  cases.push_back(s);
  return cases;
}

// A causal bf16 self-relation whose key kPlantedRow is planted at kPlantedValue in every element
// of both models: the other rows' logits with it are about N(0, kPlantedValue^2) in natural units
// (entries N(0, 1), scale 1/sqrt(d)), so the sums of the rows after it that lean its way overflow
// forward version 11's fixed stabilizers (their diagonals are about sqrt(d)) and its rerun runs.
constexpr int64_t kPlantedRow = 300;
constexpr double kPlantedValue = 64.0;

RelationKLProblemSpec planted_case() {
  RelationKLProblemSpec s;
  s.dtype = DType::kBF16, s.seq_len = 700, s.causal = true, s.dim_student = s.dim_teacher = 128;
  s.heads = 2, s.heads_y_student = s.heads_y_teacher = 2, s.student_noise = 0.3, s.seed = 21;
  return s;
}

void plant_outlier_key(RelationKLProblem& prob) {
  const RelationKLProblemSpec& s = prob.spec();
  for (int32_t h = 0; h < s.heads; ++h)
    for (int32_t k = 0; k < s.dim_student; ++k)
      for (bool teacher : {false, true}) prob.set_input(teacher, false, 0, h, kPlantedRow, k, kPlantedValue);
}

// RelationKLParams::cta_head_group from LINEAR_ARD_CTA_HEAD_GROUP (unset: 0, the library's choice),
// for comparing launch orders in separate processes.
int cta_head_group_from_env() {
  const char* v = std::getenv("LINEAR_ARD_CTA_HEAD_GROUP");
  return v ? std::atoi(v) : 0;
}

// The timed head dim from LINEAR_ARD_TIME_DIM (unset: the benchmark's, 128).
int time_dim_from_env() {
  const char* v = std::getenv("LINEAR_ARD_TIME_DIM");
  if (v == nullptr) return 128;
  char* end = nullptr;
  const long d = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || d <= 0 || d > 256) {
    throw std::invalid_argument(std::string("LINEAR_ARD_TIME_DIM: not a head dim in 1..256: ") + v);
  }
  return static_cast<int>(d);
}

// The timed sequence lengths from LINEAR_ARD_TIME_LENGTHS (comma-separated; unset: 4096, 8192).
std::vector<int64_t> time_lengths_from_env() {
  const char* v = std::getenv("LINEAR_ARD_TIME_LENGTHS");
  std::vector<int64_t> lengths;
  for (const char* c = v; c && *c;) {
    char* end = nullptr;
    const long long n = std::strtoll(c, &end, 10);
    if (end == c || n <= 0) throw std::invalid_argument(std::string("LINEAR_ARD_TIME_LENGTHS: not a length list: ") + v);
    lengths.push_back(n);
    c = *end == ',' ? end + 1 : end;
  }
  return lengths.empty() ? std::vector<int64_t>{4096, 8192} : lengths;
}

// Checks (unless time_only) and times one version; the other pass runs the library's default
// kernels. Returns failures.
int run_version(const Version& v, bool backward, bool time_only) {
  int failures = 0;
  std::printf("\n%s version %d (%s)\n", backward ? "backward" : "forward", v.number, v.what);
  std::vector<RelationKLProblemSpec> specs = time_only ? std::vector<RelationKLProblemSpec>{} : check_cases();
  if (!time_only) specs.push_back(planted_case());
  for (const RelationKLProblemSpec& spec : specs) {
    RelationKLProblem prob(spec);
    if (&spec == &specs.back() && !time_only) plant_outlier_key(prob);
    harness::DeviceProblem dev(prob);
    dev.poison();
    RelationKLParams& p = dev.params();
    p.cta_head_group = cta_head_group_from_env();
    const bool ran = backward ? (relation_kl_forward_cuda(p), v.run(p)) : v.run(p);
    if (!ran) {
      std::printf("skip %s\n", relation_kl_describe(spec).c_str());
      continue;
    }
    if (!backward) relation_kl_backward_cuda(p);
    dev.download(prob);
    const harness::Errors e = harness::reference_errors(prob, relation_kl_reference(prob.params(), true));
    const bool ok = e.within_tolerance(spec.dtype);
    failures += !ok;
    std::printf("%-4s %-86s kl %.2e lse %.2e dx %.2e dy %.2e\n", ok ? "ok" : "FAIL", relation_kl_describe(spec).c_str(),
                e.kl, e.lse, e.dx, e.dy);
    std::fflush(stdout);  // what ran so far survives a version that hangs or faults
  }
  for (const int64_t len : time_lengths_from_env()) {
    RelationKLProblemSpec spec = relation_kl_perf_cases(true).front();  // the benchmark's shape
    spec.seq_len = len;
    spec.dim_student = spec.dim_teacher = time_dim_from_env();
    RelationKLProblem prob(spec);
    harness::DeviceProblem dev(prob);
    RelationKLParams& p = dev.params();
    p.cta_head_group = cta_head_group_from_env();
    relation_kl_forward_cuda(p);
    bool ran = true;
    const double ms = harness::time_ms([&] { ran = v.run(p); }, 10, 2, true);
    if (!ran) continue;
    const double n = double(spec.seq_len), logits = spec.heads * n * (n + 1) / 2;
    const double flops = (backward ? 8.0 : 4.0) * spec.dim_student * logits;
    std::printf("time %-62s %8.3f ms %6.0f TFLOP/s (%gd FLOPs per visible logit)\n", relation_kl_describe(spec).c_str(),
                ms, flops / (ms * 1e-3) * 1e-12, backward ? 8.0 : 4.0);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const bool backward = argc > 1 && std::strcmp(argv[1], "backward") == 0;
  const bool time_only = argc > 3 && std::strcmp(argv[3], "--time-only") == 0;
  if (argc < 2 || (!backward && std::strcmp(argv[1], "forward") != 0) || (argc > 3 && !time_only)) {
    std::fprintf(stderr, "usage: relation_kl forward|backward [VERSION [--time-only]]\n");
    return 1;
  }
  const int only = argc > 2 ? std::atoi(argv[2]) : 0;
  int failures = 0, ran = 0;
  try {
    for (const Version& v : backward ? backward_versions() : forward_versions()) {
      if (only != 0 && v.number != only) continue;
      failures += run_version(v, backward, time_only);
      ++ran;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "relation_kl: %s\n", e.what());
    return 1;
  }
  if (ran == 0) {
    std::fprintf(stderr, "relation_kl: no %s version %d\n", argv[1], only);
    return 1;
  }
  std::printf("\n%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}

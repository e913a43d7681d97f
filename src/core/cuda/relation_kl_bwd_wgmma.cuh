// Relation-KL backward on warpgroup MMA (sm_90a, D <= 128; the default there; backward version 6 of
// dev/cuda): relation_kl_bwd.cuh's algorithm with all three GEMMs as wgmma. The CTA's 8 warps are
// two warpgroups of 64 keys; Y and X tiles and dZ^T are kept in the core-matrix layout
// (relation_kl_sm90.cuh), which wgmma reads by descriptor.
// * S^T = Y X^T of both models: wgmma.m64n64k16, both operands from shared memory.
// * dY += dZ^T X_s: wgmma with A = the dZ^T registers, B = X_s read MN-major.
// * dX = dZ Y_s: each warpgroup computes D / 2 columns of the 64-row tile as one wgmma chain
//   (m64n(D/2)k16, 8 k-steps over the CTA's 128 keys), A = dZ read MN-major out of dZ^T, B = the
//   Y_s key tile read MN-major. The fp32 result goes to a padded shared-memory staging area and
//   then to global memory by TMA bulk reduce-add (cp.reduce.async.bulk .add.f32), one half-row per
//   request from 16 lanes of each warp (in SASS one UBLKRED in an ELECT loop of 16 passes): each
//   warp owns 16 whole half-rows of the accumulator, so only the warp itself synchronises around
//   its staging rows (FlashAttention-3's dQ path). Where that path does not apply (d_s != D or dx
//   not 16-byte aligned) the accumulators go out by float4 / scalar atomics, as before.
// One barrier per row tile. dev/cuda keeps the previous version (dX by ldmatrix + mma.sync and
// float4 atomics, backward version 4) and its variants 3 and 5 as frozen copies.
#pragma once

#include <type_traits>

#include "relation_kl_bwd_common.cuh"  // defines: LINEAR_ARD_BWD_PROLOGUE, bwd_store_dy, bwd_launch
#include "relation_kl_sm90.cuh"        // defines: cm_desc, cm_desc_mn, wgmma_*, bulk_*, fence_proxy_async

namespace linear_ard {
namespace cuda {

// Tiles of 128 keys x 64 rows; shared memory: Y_s, Y_t [128][D], two X stages (X_s, X_t [64][D]), all
// in the core-matrix layout, no padding; dZ^T [128 keys][64 rows] in two buffers, core-matrix layout
// (wgmma reads it by descriptor); two stages of row stats; behind them the fp32 dX staging area: per
// warpgroup 64 rows x D/2 columns with a pitch of D/2 + 8 floats (conflict-free 8-byte stores; rows
// 16-byte aligned for the bulk copies).
template <int D>
struct BwdWgmmaTile {
  static_assert(D <= 128, "two warpgroups of 64 keys");
  static constexpr int kKeys = 128;
  static constexpr int kRows = 64;  // wgmma n = 64
  static constexpr int kWarps = 8;
  static constexpr int kThreads = 256;
  static constexpr int kZPitch = kRows;         // dZ^T: core-matrix layout, no padding
  static constexpr int kDxCols = D / 2;         // dX columns per warpgroup (wgmma n)
  static constexpr int kDxPitch = kDxCols + 8;  // staging pitch in floats
  static constexpr size_t kDxStageOffset = (2 * kKeys + 2 * 2 * kRows) * D * 2  // Y_s, Y_t, X stages
                                           + 2 * kKeys * kZPitch * 2            // dZ^T, 2 buffers
                                           + 2 * 3 * kRows * 4;                 // row stats stages
  static constexpr size_t kSmemBytes = kDxStageOffset + 2 * kRows * kDxPitch * 4;
  static_assert(kDxCols % 16 == 0 || kDxCols == 48, "wgmma n = 32, 48 or 64");
  static_assert(kDxPitch % 32 == 8 || kDxPitch % 32 == 24, "conflict-free staging stores");
  static_assert(kDxStageOffset % 16 == 0 && (kDxPitch * 4) % 16 == 0 && (kDxCols * 4) % 16 == 0, "bulk copy alignment");
  static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM must fit");
};

// A backward iteration's place: X head h of the GQA group, row tile starting at i0.
struct BwdPos {
  int h;
  int64_t i0;
};
// One row's statistics for the backward as read from global memory: the LSEs and the upstream
// gradient (lse_s = -inf: a row past n or without a visible key); bwd_wgmma_cta stores them to
// shared memory as log2-domain LSEs and g * scale_s.
struct BwdRowRaw {
  float lse_s, lse_t, grad;
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// wgmma B descriptors of an X tile [64 rows][D] in the core-matrix layout (cp.async by TileLoader),
// k-step kk: k(...) read K-major (S^T = Y X^T: k = D, a k-step is two core matrices = 128 elements
// further), mn(...) read MN-major (dY += dZ^T X_s: k = rows, 16 rows = 16 D elements further).
template <int D>
struct BwdXCoreMatrixDesc {
  template <typename T>
  static __device__ __forceinline__ uint64_t k(const T* tile, int kk) {
    return cm_desc<D>(tile + kk * 128);
  }
  template <typename T>
  static __device__ __forceinline__ uint64_t mn(const T* tile, int kk) {
    return cm_desc_mn<D>(tile + kk * 16 * D);
  }
};

// dX output of version 6 (the DxOut of bwd_wgmma_cta, default): each warp stages its 16 finished
// half-rows in BwdWgmmaTile's staging area at pitch kDxPitch (8-byte stores, conflict-free: rows
// kDxPitch % 32 = 8 banks apart), then 16 of its lanes add one half-row each to global dX by bulk
// reduce-add (in SASS an ELECT loop of 16 UBLKRED passes).
//   kStageOffset, kPitch: the staging area's place in the dynamic shared memory and its row pitch
//     in floats (warp wl of warpgroup wg stages rows 64 wg + 16 wl ..);
//   store(s, c, g, tq): the warp's accumulator fragments c (rows g, g + 8, columns 8i + 2tq, + 1)
//     into its staging rows s;
//   add(dx_head, bh, row0, n, wg, s, lane): after the warp's proxy fence and __syncwarp, adds the
//     staged rows [row0, row0 + 16) below n, columns [wg D/2, (wg + 1) D/2) of dx head bh (at
//     dx_head) from the warp's lanes, each committing its own bulk group;
//   kCommitDxOnlyIssued: whether the dX wgmma group is committed only where it was issued (false
//     here: after the branch, every iteration, an empty group at iteration 0; see the loop);
//   kEnabled: whether the CTA computes dX at all (BwdDxNone: no);
//   kYRegs: how many models' key tiles the S^T wgmma reads as its A operand from registers (loaded
//     once by cm_a_frags) instead of from shared memory (0 here; 1, the student's: dev/cuda's
//     backward 24; 2, both: 25, the library's wgmma+tma backward, BwdDxTensorOut).
template <int D>
struct BwdDxBulkRows {
  using Tile = BwdWgmmaTile<D>;
  static constexpr int XC = Tile::kDxCols, XP = Tile::kDxPitch;
  static constexpr size_t kStageOffset = Tile::kDxStageOffset;
  static constexpr int kPitch = XP;
  static constexpr bool kCommitDxOnlyIssued = false;
  static constexpr bool kEnabled = true;
  static constexpr int kYRegs = 0;
  __device__ __forceinline__ void store(float* stage, const float (&c)[XC / 8][4], int g, int tq) const {
    float* s = stage + g * XP + 2 * tq;
#pragma unroll
    for (int i = 0; i < XC / 8; ++i) {
      *reinterpret_cast<float2*>(s + i * 8) = make_float2(c[i][0], c[i][1]);
      *reinterpret_cast<float2*>(s + 8 * XP + i * 8) = make_float2(c[i][2], c[i][3]);
    }
  }
  __device__ __forceinline__ void add(float* dx_head, int64_t, int64_t row0, int64_t n, int wg, const float* stage,
                                      int lane) const {
    const int64_t row = row0 + lane;
    if (lane < 16 && row < n) {
      bulk_reduce_add_f32(dx_head + row * D + wg * XC, stage + lane * XP, XC * 4);
      bulk_commit();
    }
  }
};

// The DxOut of bwd_wgmma_cta for the deterministic backward's dY-only pass: no dX wgmma, no dZ^T
// staging, no reduce-adds; for the self-relation dY goes into dx by plain stores (bwd_store_dy's
// dx_owned), and the row-parallel pass (relation_kl_bwd_rows_wgmma.cuh) adds dX after it.
template <int D>
struct BwdDxNone : BwdDxBulkRows<D> {
  static constexpr bool kEnabled = false;
};

// The whole CTA of the kernel below (its comment says what it does), on the dynamic shared memory
// at smem_raw (BwdWgmmaTile<D>'s carve), with the X tiles' loads and layout left to the caller:
//   load_x(b, h, i0, stage, sX): issues the loads of batch item b, X head h, rows [i0, i0 + 64) of both
//     models into X stage `stage` of the stages at sX ([stage][X_s, X_t][64 x D elements]), rows >= n and
//     columns >= d as zeros; called by every thread, once per iteration, after the barrier that
//     frees the stage;
//   wait_x(stage, it): makes iteration it's X stage visible to this thread's wgmma (called before
//     the S^T wgmma; the cp.async loads are waited for at the iteration's barrier instead);
//   XDesc::k(tile, kk), XDesc::mn(tile, kk): the tile's wgmma B descriptors (BwdXCoreMatrixDesc);
//   dx_tile (type DxOut): the dX staging and bulk reduce-add where d_s = D and dx is 16-byte aligned
//     (BwdDxBulkRows says what it provides; the default).
// Shared with dev/cuda backward version 11 (X tiles by TMA into 128B-swizzled boxes, an mbarrier a
// stage) and 12 (11 with dX by TMA tensor reduce-add, relation_kl_bwd_tma_dx.cuh: the library's).
template <typename T, int D, typename XDesc, typename DxOut = BwdDxBulkRows<D>, typename LoadX, typename WaitX>
__device__ __forceinline__ void bwd_wgmma_cta(const RelationKLParams& p, bool vec_s, bool vec_t,
                                              unsigned char* smem_raw, LoadX&& load_x, WaitX&& wait_x,
                                              const DxOut& dx_tile = DxOut{}) {
  using Tile = BwdWgmmaTile<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = Tile::kZPitch;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, XC = Tile::kDxCols;
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);
  float* sDx = reinterpret_cast<float*>(smem_raw + DxOut::kStageOffset);

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;

  // Iteration it = (X head h of the group, row tile starting at i0), walked without divisions:
  // row tiles first, then the next head.
  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };

  // load_stats returns iteration q's row stats for rows threadIdx.x < BM, read from global memory
  // into registers now, as they are, and converted and stored to shared memory by stats_store at
  // the end of the iteration, so their latency hides behind the iteration (nothing reads the
  // loaded values before then); load_rows also loads q's X tiles (load_x) first. Rows past n or
  // with no visible key get lse2 = +inf and g = 0: their P_s, P_t and dZ are 0.
  // Rows that see a single key get g = 0: their exact gradient is 0. Every thread finds them itself
  // (a warp's search, held in registers): the shared-memory copy of the mma.sync kernel
  // (bwd_single_key_rows) cost this kernel 28 registers (227 -> 255 at D = 128, ptxas), this 4.
  const SingleKeyRows single = single_key_rows(kmask, n);
  auto load_stats = [&](BwdPos q) {
    BwdRowRaw st{-INFINITY, 0.f, 0.f};
    const int64_t row = q.i0 + threadIdx.x;
    if (threadIdx.x < BM && row < n) {
      const int64_t o = (b * p.heads + q.h) * n + row;
      st = {p.lse_student[o], p.lse_teacher[o], single.contains(p.causal, row, n) ? 0.f : p.grad_kl[o]};
    }
    return st;
  };
  auto load_rows = [&](BwdPos q, int stage) {
    load_x(b, q.h, q.i0, stage, sX);
    return load_stats(q);
  };
  auto stats_store = [&](const BwdRowRaw& st, int stage) {
    if (threadIdx.x < BM) {
      const bool live = st.lse_s != -INFINITY;
      float* dst = sStat + stage * 3 * BM + threadIdx.x;
      dst[0] = live ? st.lse_s * kLog2e : INFINITY;
      dst[BM] = live ? st.lse_t * kLog2e : INFINITY;
      dst[2 * BM] = live ? st.grad * p.student.scale : 0.f;
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
  const int t_group = p.heads / p.teacher.heads_y;  // X heads a teacher Y head
  int hy_t = (hy * group) / t_group;
  load_teacher_keys(hy * group);
  BwdPos cur{hy * group, rt_begin * BM}, prev_pos = cur;
  if (iters > 0) stats_store(load_rows(cur, 0), 0);
  cp_async_commit();
  // S^T's A operand from registers (DxOut::kYRegs): the student's key tile (1), the teacher's too (2),
  // read once its cp.async copies are complete.
  uint32_t ya_s[DxOut::kYRegs >= 1 ? KS : 1][4], ya_t[DxOut::kYRegs >= 2 ? KS : 1][4];
  if constexpr (DxOut::kYRegs >= 1) {
    cp_async_wait<0>();
    __syncthreads();
    cm_a_frags<T, D>(ya_s, sYs, warp * 16 + g, tq);
    if constexpr (DxOut::kYRegs >= 2) cm_a_frags<T, D>(ya_t, sYt, warp * 16 + g, tq);
  }

  // S^T of warpgroup wg: its 64 keys (A, rows 64 wg.. of Y) against the row tile (B).
  const int wg = warp / 4;

  // dx rows (and, for the self-relation, dY) go out as float4 atomics when rows are 16-byte aligned;
  // with ds = D and a whole row tile inside the sequence no bound checks are needed.
  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  // dX through the bulk reduce-add: dx rows 16-byte aligned, ds = D (whole half-rows in range).
  const bool dx_bulk = dx_vec4 && ds == D;
  // This warp's accumulator rows (wl * 16 + g, + 8) and its staging rows.
  const int wl = warp % 4;
  float* const dx_stage = sDx + (wg * BM + wl * 16) * DxOut::kPitch;

  // Issues dX[64 rows][cols wg*XC..] of the dZ^T in buffer `buf` (dZ Y_s over this CTA's BN keys)
  // into c, as the caller's open wgmma group (the caller fences and commits).
  // The descriptors of k-step kk are those of k-step 0 plus the byte offset >> 4 in the address
  // field (bits 0-13): shared memory ends below 2^18 bytes, so the sum never carries out of it.
  auto dx_issue = [&](float(&c)[XC / 8][4], int buf) {
    const uint64_t da = cm_desc_mn<BM>(sZ + buf * BN * ZP);
    const uint64_t db = cm_desc_mn<D>(sYs + wg * XC / 8 * 64);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      wgmma_m64nNk16_ss_tt<T, XC>(c, da + ((kk * 16 * BM * sizeof(T)) >> 4), db + ((kk * 16 * D * sizeof(T)) >> 4),
                                  kk > 0);
    }
  };
  // Adds the finished dX accumulators c of iteration q to dx.
  auto dx_out = [&](BwdPos q, const float(&c)[XC / 8][4]) {
    float* dx_head = p.dx + (b * p.heads + q.h) * n * ds;
    if (dx_bulk) {
      // The staging rows are free: the bulk copies of this warp's previous tile were waited for
      // (read side) before the barrier that opened this iteration.
      dx_tile.store(dx_stage, c, g, tq);
      // Generic-proxy stores read next by the async proxy: fence, then the warp's barrier.
      fence_proxy_async();
      __syncwarp();
      dx_tile.add(dx_head, b * p.heads + q.h, q.i0 + wl * 16, n, wg, dx_stage, lane);
    } else {
      const int64_t row = q.i0 + wl * 16 + g;
#pragma unroll
      for (int i = 0; i < XC / 8; ++i) atomic_add_frag(dx_head, ds, row, n, wg * XC + i * 8, ds, c[i], dx_vec4);
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
    // This iteration's X tiles (when load_x used cp.async; otherwise wait_x waits for them) and
    // stats (issued one iteration ago) become visible; past this barrier every warp is done with
    // iteration it - 1, so its X stage and the dZ^T buffer of it - 2 may be rewritten, and every
    // warp's dZ^T of it - 1 can be read.
    // The bulk reduce-adds of the previous dX tile have also read their staging rows (waited for
    // here, next to the cp.async wait, because on sm_90a both waits become the same scoreboard wait
    // (DEPBAR.LE SB0, 0): a wait inside the iteration would also wait for the next X tile's loads).
    cp_async_wait<0>();
    bulk_wait_all<true>();
    fence_proxy_async();
    __syncthreads();
    const int h = cur.h;
    const int64_t i0 = cur.i0;
    // A new X head of the group past the teacher's current Y head (teacher GQA grouping; the
    // iterations walk the heads upwards, so no division an iteration).
    if (h >= (hy_t + 1) * t_group) {
      load_teacher_keys(h);
      cp_async_commit();
      cp_async_wait<0>();
      fence_proxy_async();
      __syncthreads();
      hy_t = h / t_group;
      if constexpr (DxOut::kYRegs >= 2) cm_a_frags<T, D>(ya_t, sYt, warp * 16 + g, tq);
    }
    const BwdPos next = advance(cur);
    BwdRowRaw next_stats{};
    if (it + 1 < iters) {
      next_stats = load_rows(next, stage ^ 1);
      cp_async_commit();
    }
    const T* sXs = sX + stage * 2 * BM * P;
    const T* sXt = sXs + BM * P;
    const float* st = sStat + stage * 3 * BM;

    // S^T for both models: 64 keys x BM rows per warpgroup by wgmma (A = Y, B = X, both from
    // shared memory); each warp's accumulator rows are its 16 keys, as in the mma.sync kernel.
    // No zeroing: the first k-step overwrites (scale-d = 0). Queued behind the dX wgmma of the
    // previous row tile (its own group, empty at it = 0), which is waited for first: its staging
    // and bulk reduce-add run while the tensor cores work through these.
    // The dX group's commit: after the branch, iteration 0's group is empty, and ptxas gives every
    // iteration's commit a dummy HGMMA (it cannot tell the branch taken). With
    // DxOut::kCommitDxOnlyIssued it is committed inside the branch: iteration 0's only group is then
    // S^T, which wgmma_wait<1> may leave pending (nothing reads dxa there) and wgmma_wait<0> waits
    // for; from iteration 1 on the groups are dX, S^T either way.
    float zs[RT][4], zt[RT][4], dxa[XC / 8][4];
    if (DxOut::kEnabled && it > 0) {
      wgmma_fence();
      dx_issue(dxa, stage ^ 1);
      if constexpr (DxOut::kCommitDxOnlyIssued) wgmma_commit();
    }
    if constexpr (DxOut::kEnabled && !DxOut::kCommitDxOnlyIssued) wgmma_commit();
    wait_x(stage, it);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      if constexpr (DxOut::kYRegs >= 2) {
        wgmma_m64n64k16_rs<T>(zt, ya_t[kk], XDesc::k(sXt, kk), kk > 0);
      } else {
        wgmma_m64n64k16_ss<T>(zt, cm_desc<D>(sYt + wg * 64 * D + kk * 128), XDesc::k(sXt, kk), kk > 0);
      }
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      if constexpr (DxOut::kYRegs >= 1) {
        wgmma_m64n64k16_rs<T>(zs, ya_s[kk], XDesc::k(sXs, kk), kk > 0);
      } else {
        wgmma_m64n64k16_ss<T>(zs, cm_desc<D>(sYs + wg * 64 * D + kk * 128), XDesc::k(sXs, kk), kk > 0);
      }
    }
    wgmma_commit();
    if constexpr (DxOut::kEnabled) {
      wgmma_wait<1>();
      fence_regs(dxa);
      if (it > 0) dx_out(prev_pos, dxa);
    }
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
      // Stage dZ^T (key rows g, g+8; row columns 2tq, 2tq+1 of both n-tiles) for dX, in the
      // core-matrix layout [BN keys][BM rows] (cm_off<BM>: +8 key rows = +8 BM elements, +8 row
      // columns = +64); each of the four stores of a warp covers 128 contiguous bytes.
      if constexpr (DxOut::kEnabled) {
        T* zrow = sZ + stage * BN * ZP + cm_off<BM>(warp * 16 + g, kk * 16 + 2 * tq);
        *reinterpret_cast<uint32_t*>(zrow) = a[0];
        *reinterpret_cast<uint32_t*>(zrow + 8 * BM) = a[1];
        *reinterpret_cast<uint32_t*>(zrow + 64) = a[2];
        *reinterpret_cast<uint32_t*>(zrow + 8 * BM + 64) = a[3];
      }
    }
    // Warpgroup wg's 64 keys x D: k = the tile's 64 rows, 16 per step (16 D elements apart).
    fence_regs(dy);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dy, za[kk], XDesc::mn(sXs, kk), true);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dy);
    if (it + 1 < iters) stats_store(next_stats, stage ^ 1);
    prev_pos = cur;
    cur = next;
  }
  if (DxOut::kEnabled && iters > 0) {
    // The last row tile's dZ^T (generic stores) is read by wgmma: fence, then the barrier (which
    // also orders the staging rows' reuse after the read-side wait).
    bulk_wait_all<true>();
    fence_proxy_async();
    __syncthreads();
    float dxa[XC / 8][4];
    wgmma_fence();
    dx_issue(dxa, static_cast<int>((iters - 1) & 1));
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dxa);
    dx_out(prev_pos, dxa);
  }
  // Shared memory must outlive the bulk copies' reads; wait for their completion.
  bulk_wait_all<false>();

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4, !DxOut::kEnabled);
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 128), heads_y_s, B) as relation_kl_bwd_kernel (see there for the algorithm): 8 warps
// = two warpgroups of 64 keys for S^T and dY. The dX pass of row tile t - 1: warpgroup wg computes
// dX[64 rows][wg * D/2 ..] = dZ Y_s by wgmma (A = dZ^T buffer, B = Y_s, both MN-major
// descriptors), issued as its own group ahead of the S^T wgmma of tile t and waited for first;
// then each warp stages its 16 half-rows in shared memory and 16 of its lanes add one row each to
// global dX by TMA bulk reduce-add. The bulk reduce-adds and the RED atomics (other CTAs' dX, the
// self-relation's dY, the fallback) all add into dx, in an order that varies from run to run.
// X tiles: every thread's cp.async (TileLoader) into the core-matrix layout, waited for at the
// iteration's barrier (bwd_wgmma_cta). DxOut = BwdDxNone: the deterministic backward's dY-only pass.
template <typename T, int D, typename DxOut = BwdDxBulkRows<D>>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_wgmma_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  constexpr int BM = BwdWgmmaTile<D>::kRows, NT = BwdWgmmaTile<D>::kThreads;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bwd_wgmma_cta<T, D, BwdXCoreMatrixDesc<D>, DxOut>(
      p, vec_s, vec_t, smem_raw,
      [&](int64_t b, int h, int64_t i0, int stage, T* sX) {
        const int64_t n = p.seq_len;
        const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
        const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
        T* dst = sX + stage * 2 * BM * D;
        TileLoader<T, BM, D, NT, true>(S.x, p.student.x_row_stride, n, p.student.head_dim, vec_s).load(dst, i0);
        TileLoader<T, BM, D, NT, true>(Tt.x, p.teacher.x_row_stride, n, p.teacher.head_dim, vec_t)
            .load(dst + BM * D, i0);
      },
      [](int, int64_t) {});
#endif  // LINEAR_ARD_SM90A
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The column-parallel kernel; with p.deterministic its dY-only instantiation (the caller then runs
// the row-parallel dX pass, relation_kl_bwd_rows_wgmma_launch).
template <typename T, int D>
void relation_kl_bwd_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  if (p.deterministic) {
    bwd_launch<BwdWgmmaTile<D>>(relation_kl_bwd_wgmma_kernel<T, D, BwdDxNone<D>>, p, vec_s, vec_t,
                                "relation_kl_bwd_wgmma (dY)");
  } else {
    bwd_launch<BwdWgmmaTile<D>>(relation_kl_bwd_wgmma_kernel<T, D>, p, vec_s, vec_t, "relation_kl_bwd_wgmma");
  }
}

}  // namespace cuda
}  // namespace linear_ard

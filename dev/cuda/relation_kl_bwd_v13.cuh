// Backward version 13 of dev/cuda: version 12 (the library's sm_90a backward for D = 64, 128:
// relation_kl_bwd_tma_dx.cuh around bwd_wgmma_cta) without the CTA barrier in the loop, its two
// consumer warpgroups ping-ponged (FlashAttention-3's scheme, as forward version 6): every
// dependency between the warpgroups is stated by an mbarrier or a named barrier, so that one
// warpgroup's GEMMs can run on the tensor cores while the other computes its exponentials.
// Version 12 holds both warpgroups in step at one __syncthreads a row tile, so their GEMMs and
// their exponentials meet (Nsight Compute at 8K: 36 % issue slots, stalls wait 30 %, barrier 10 %).
// Measured (H200, 2026-11-29): slower than 12 in every configuration, 0.83-0.91 ms at 4K against
// 0.71 (docs/kernel.md, "Backward version 13"); kept runnable for the record.
//
// Per warpgroup wg (64 keys) and row tile t (X stage s = t % S, S = 2 or 3; dZ^T buffer t % 2):
//   wait x_full[s] (X tiles by TMA, row stats by warps 4-5) -> [turn] S^T(t) of both models ->
//   [other's turn] wait -> exponentials, dZ(t) -> wait for the other warpgroup's signal of t - 1 ->
//   stage its half of dZ^T(t) -> [turn] dX(t - 1) (both halves of dZ^T(t - 1)) and dY(t) as two
//   groups -> [other's turn] wait for dX -> signal "dZ^T(t) staged and dX(t - 1) done" to the other
//   warpgroup -> stage and reduce-add dX(t - 1) (version 12's TMA box) -> wait for dY -> arrive on
//   x_empty[s] (lane 0 of every warp) -> warps 4-5 only: wait for x_empty[s], refill stage s with
//   tile t + S (one lane's TMA copies, the 64 rows' stats).
// The signal of t ("zready": named barriers, two a direction alternating with t; 128 threads
// arrive, the other 128 sync) says that the sender's half of dZ^T(t) is staged (for dX(t), issued
// at t + 1) and that its dX(t - 1) has read buffer (t - 1) % 2 to the end: the receiver syncs on it
// before staging dZ^T(t + 1) into that buffer. With the turns the sender signals it about when
// the receiver's S^T(t + 1) completes, before the receiver's exponentials end. The first build
// (2026-11-29, measured) staged first and synced after, with three dZ^T buffers (216 KB); two
// buffers leave room for a third X stage: S = 3 (227 KB, the limit) loads tile t + 3 about two
// iterations ahead, S = 2 one. The optional turn barriers
// (ids 1, 2; the forward's scheme: sync on one's own, issue, arrive on the other's) order the tensor
// cores' work as
// S_0(t), S_1(t), D_0(t), D_1(t), S_0(t + 1), ... (D = dX(t - 1) + dY(t)); correctness does not
// depend on them. The kernel parameter `turns` (dev harness: LINEAR_ARD_BWD13_TURNS, default 3) says
// which issues take turns: bit 0 S^T, bit 1 D (0: none; 1 or 2: only those issues alternate).
// The teacher's GQA key reload (a new X head of the group whose teacher Y head differs) keeps a CTA
// barrier before and after, as version 12.
#pragma once

#include <cstdint>
#include <string>

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdTmaTile, BwdXSwizzledDesc, BwdDxTensorOut (tma_map, tma_dx_map)

namespace linear_ard {
namespace cuda {

// Shared memory from a 1024-byte aligned base: Y_s, Y_t [128][D] (core-matrix layout, cp.async),
// kXStages X stages (X_s, X_t in 128B-swizzled TMA boxes: version 11's), two dZ^T buffers [128
// keys][64 rows] (core-matrix), kXStages stages of row stats, the mbarriers x_full[kXStages],
// x_empty[kXStages], then the dX staging boxes (version 12's: a warp 16 rows x D/2 floats,
// 1024-byte aligned). Allocated: 199,680 / 232,448 bytes at D = 128 (2 / 3 stages). Slack for
// rounding the base up to 1024 bytes: up to 1024 bytes where the 227 KB limit leaves them (none for
// 3 stages at D = 128: the kernel traps if the base is not 1024-byte aligned there).
template <int D, int kXStages>
struct BwdPingPongTile {
  static_assert(D == 64 || D == 128, "TMA boxes are 64 elements wide");
  static_assert(kXStages == 2 || kXStages == 3, "X stages");
  static constexpr int kKeys = 128, kRows = 64, kThreads = 256;
  static constexpr int kStages = kXStages, kZBufs = 2;
  static constexpr size_t kStageBytes = BwdTmaTile<D>::kStageBytes;  // X_s, X_t of one row tile
  static constexpr size_t kXOffset = BwdTmaTile<D>::kXOffset;        // behind Y_s, Y_t
  static constexpr size_t kZOffset = kXOffset + kStages * kStageBytes;
  static constexpr size_t kStatOffset = kZOffset + size_t(kZBufs) * kKeys * kRows * 2;
  static constexpr size_t kBarOffset = kStatOffset + size_t(kStages) * 3 * kRows * 4;
  static constexpr size_t kDxStageOffset = (kBarOffset + 2 * kStages * sizeof(uint64_t) + 1023) / 1024 * 1024;
  static constexpr size_t kCarve = kDxStageOffset + size_t(2) * kRows * (D / 2) * 4;
  static constexpr size_t kMaxSmem = 227 * 1024;
  static_assert(kCarve <= kMaxSmem, "one CTA per SM must fit");
  static constexpr size_t kSlack = kMaxSmem - kCarve < 1024 ? kMaxSmem - kCarve : 1024;
  static constexpr size_t kSmemBytes = kCarve + kSlack;
};

// Named barriers (ids; 0 is __syncthreads), each with 256 threads: warpgroup w's 128 sync, the
// other's 128 arrive. Warpgroup w's turn to issue at kBwdPpTurn + w; the signal of iteration t to
// warpgroup w at kBwdPpZReady + 2 (t % 2) + w. A hardware barrier counts arrivals, not phases: had
// the signals one id a direction, the sender's signal of t + 1 could arrive before the receiver's
// sync on that of t and complete the barrier without it (both halves of the 256 from the sender;
// the first build hung so). With ids alternating by t, the sender's next signal on the same id (t + 2)
// follows its sync on the receiver's signal of t + 1, which the receiver sends after its sync on t.
// The turns alternate strictly (each side syncs between two arrivals), so one id each suffices.
constexpr int kBwdPpTurn = 1;
constexpr int kBwdPpZReady = 3;  // ids 3..6

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// The kernel's CTA (the file's comment says what it does) on the X maps of both sides and version
// 12's dX output; turns: which issues take turns at the tensor cores (bit 0 S^T, bit 1 D).
template <typename T, int D, int kXStages>
__device__ __forceinline__ void bwd_pingpong_cta(const RelationKLParams& p, const CUtensorMap* map_s,
                                                 const CUtensorMap* map_t, const BwdDxTensorOut<D>& dx_tile,
                                                 int turns) {
  const bool turn_s = (turns & 1) != 0, turn_d = (turns & 2) != 0;
  using Tile = BwdPingPongTile<D, kXStages>;
  using XTile = BwdTmaTile<D>;
  constexpr int NS = kXStages;
  using XDesc = BwdXSwizzledDesc<D>;
  constexpr int BN = Tile::kKeys, BM = Tile::kRows, P = D, ZP = BM;
  constexpr int KS = D / 16, RT = BM / 8, DT = D / 8, XC = D / 2;
  // Declared 128-byte aligned only, so that the compiler keeps the rounding up to 1024 (see
  // relation_kl_fwd_tma_kernel).
  extern __shared__ __align__(128) unsigned char bwd_pp_smem[];
  const uint32_t base_pad = (1024 - (smem_u32(bwd_pp_smem) & 1023)) & 1023;
  if (base_pad > Tile::kSlack) __trap();  // the carve would pass the allocation (kSlack's comment)
  unsigned char* smem_raw = bwd_pp_smem + base_pad;
  LINEAR_ARD_BWD_PROLOGUE(T, BN, BM, P, ZP);
  (void)sZ;  // the prologue's dZ^T and stats places assume two X stages: this carve's are sZb, sSt
  (void)sStat;
  T* const sZb = reinterpret_cast<T*>(smem_raw + Tile::kZOffset);
  float* const sSt = reinterpret_cast<float*>(smem_raw + Tile::kStatOffset);
  float* const sDx = reinterpret_cast<float*>(smem_raw + Tile::kDxStageOffset);
  uint64_t* const x_full = reinterpret_cast<uint64_t*>(smem_raw + Tile::kBarOffset);
  uint64_t* const x_empty = x_full + NS;
  const int wg = warp / 4, wl = warp % 4;
  // Warps 4-5 (threads 128..191) refill the stages: stats row srow each, thread 128 the TMA copies.
  const int srow = static_cast<int>(threadIdx.x) - 128;
  const bool filler = srow >= 0 && srow < BM;

  if (threadIdx.x == 0) {
    for (int s = 0; s < NS; ++s) {
      mbar_init(&x_full[s], BM);                    // the 64 fillers (one of them with the stage's bytes)
      mbar_init(&x_empty[s], Tile::kThreads / 32);  // lane 0 of every warp
    }
    fence_mbarrier_init();
    tma_prefetch_map(map_s);
    tma_prefetch_map(map_t);
  }
  __syncthreads();  // the barriers initialised before any thread arrives, waits or a copy lands

  const int64_t rt_begin = p.causal ? j0 / BM : 0, rt_end = (n + BM - 1) / BM;
  const int64_t iters = (rt_end - rt_begin) * group;
  // Iteration it = (X head h of the group, row tile starting at i0): row tiles first, then the next head.
  auto advance = [&](BwdPos q) {
    q.i0 += BM;
    if (q.i0 >= rt_end * BM) q.i0 = rt_begin * BM, ++q.h;
    return q;
  };
  // Row stats of iteration q for row srow (fillers): log2-domain LSEs and g * scale_s; rows past n
  // or without a visible key get lse2 = +inf and g = 0 (their P_s, P_t and dZ are 0).
  auto load_stats = [&](BwdPos q) {
    BwdRowStats st{INFINITY, INFINITY, 0.f};
    const int64_t row = q.i0 + srow;
    if (row < n) {
      const int64_t o = (b * p.heads + q.h) * n + row;
      const float lse_s = p.lse_student[o];
      if (lse_s != -INFINITY) st = {lse_s * kLog2e, p.lse_teacher[o] * kLog2e, p.grad_kl[o] * p.student.scale};
    }
    return st;
  };
  // Fills stage `stage` with iteration q's X tiles and the stats st (fillers; the stage is free):
  // each filler stores its row's stats and arrives on x_full[stage], thread 128 with the stage's
  // bytes as expected transactions before it issues the 2 x D/64 box copies onto the barrier.
  auto fill_stage = [&](BwdPos q, int stage, const BwdRowStats& st) {
    float* dst = sSt + stage * 3 * BM + srow;
    dst[0] = st.lse2_s;
    dst[BM] = st.lse2_t;
    dst[2 * BM] = st.g;
    if (srow == 0) {
      const uint32_t xdst = smem_u32(sX) + stage * XTile::kStageBytes;
      mbar_arrive_expect_tx(&x_full[stage], XTile::kStageBytes);
#pragma unroll
      for (int c = 0; c < XTile::kBoxes; ++c) {
        const int col = c * XTile::kBoxCols, row = static_cast<int>(q.i0);
        tma_load_4d(xdst + c * XTile::kBoxBytes, map_s, col, row, q.h, static_cast<int>(b), &x_full[stage]);
        tma_load_4d(xdst + XTile::kTileBytes + c * XTile::kBoxBytes, map_t, col, row, q.h, static_cast<int>(b),
                    &x_full[stage]);
      }
    } else {
      mbar_arrive(&x_full[stage]);
    }
  };
  auto load_teacher_keys = [&](int h) {
    const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    TileLoader<T, BN, D, Tile::kThreads, true>(Tt.y, p.teacher.y_row_stride, n, dt, true).load(sYt, j0);
  };

  {
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, hy * group);
    TileLoader<T, BN, D, Tile::kThreads, true>(S.y, p.student.y_row_stride, n, ds, true).load(sYs, j0);
  }
  int hy_t = (hy * group) / (p.heads / p.teacher.heads_y);
  load_teacher_keys(hy * group);
  cp_async_commit();
  BwdPos cur{hy * group, rt_begin * BM}, prev = cur;
  BwdPos ahead = cur;  // iteration it + NS's place at the top of iteration it (used by the fillers)
  if (filler) {
    for (int k = 0; k < NS && k < iters; ++k) {
      fill_stage(ahead, k, load_stats(ahead));
      ahead = advance(ahead);
    }
  }
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();  // the Y tiles visible to both warpgroups' wgmma
  // Warpgroup 0 takes the first turn.
  if ((turn_s || turn_d) && wg == 1 && iters > 0) named_bar_arrive(kBwdPpTurn, 256);

  // dx rows (and, for the self-relation, dY) go out as float4 atomics when rows are 16-byte aligned;
  // dX through the TMA reduce-add where moreover ds = D (the map covers dx).
  const bool dx_vec4 = ds % 4 == 0 && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0;
  const bool dx_bulk = dx_vec4 && ds == D;
  float* const dx_stage = sDx + (wg * BM + wl * 16) * XC;

  float dy[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) dy[i][e] = 0.f;

  // Issues dX[64 rows][cols wg*XC..] = dZ Y_s over the CTA's 128 keys from dZ^T buffer `buf` into
  // c (the caller fences and commits); version 12's descriptors.
  auto dx_issue = [&](float(&c)[XC / 8][4], int buf) {
    const uint64_t da = cm_desc_mn<BM>(sZb + buf * BN * ZP);
    const uint64_t db = cm_desc_mn<D>(sYs + wg * XC / 8 * 64);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      wgmma_m64nNk16_ss_tt<T, XC>(c, da + ((kk * 16 * BM * sizeof(T)) >> 4), db + ((kk * 16 * D * sizeof(T)) >> 4),
                                  kk > 0);
    }
  };
  // Adds the finished dX accumulators c of iteration q to dx: version 12's box a warp, whose
  // staging rows are free once this warp's previous reduce-add has read them (only lane 0 has
  // bulk groups; the others' wait is empty).
  auto dx_out = [&](BwdPos q, const float(&c)[XC / 8][4]) {
    float* dx_head = p.dx + (b * p.heads + q.h) * n * ds;
    if (dx_bulk) {
      bulk_wait_all<true>();
      __syncwarp();
      dx_tile.store(dx_stage, c, g, tq);
      fence_proxy_async();  // generic stores read next by the async proxy
      __syncwarp();
      dx_tile.add(dx_head, b * p.heads + q.h, q.i0 + wl * 16, n, wg, dx_stage, lane);
    } else {
      const int64_t row = q.i0 + wl * 16 + g;
#pragma unroll
      for (int i = 0; i < XC / 8; ++i) atomic_add_frag(dx_head, ds, row, n, wg * XC + i * 8, ds, c[i], dx_vec4);
    }
  };
  // dZ^T of a row tile in place of zs (version 12's).
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

  const int my_turn = kBwdPpTurn + wg, other_turn = kBwdPpTurn + (wg ^ 1);
  // The signal of iteration t to warpgroup w (kBwdPpZReady's comment says why two ids a direction).
  auto zready = [](int64_t t, int w) { return kBwdPpZReady + 2 * static_cast<int>(t & 1) + w; };
  int stage = 0;      // it % NS
  uint32_t xpar = 0;  // (it / NS) % 2: the parity of stage's phase for it
  for (int64_t it = 0; it < iters; ++it) {
    const int zb = static_cast<int>(it & 1);  // dZ^T buffer of it (it - 1: zb ^ 1)
    const int h = cur.h;
    const int64_t i0 = cur.i0;
    // A new X head of the group whose teacher Y head differs: both warpgroups done with S^T(it - 1)
    // (the only reader of sYt), reload, visible to both.
    if (const int want = h / (p.heads / p.teacher.heads_y); want != hy_t) {
      __syncthreads();
      load_teacher_keys(h);
      cp_async_commit();
      cp_async_wait<0>();
      fence_proxy_async();
      __syncthreads();
      hy_t = want;
    }
    const bool refill = filler && it + NS < iters;
    BwdRowStats st_ahead{};
    if (refill) st_ahead = load_stats(ahead);  // latency hidden behind the iteration
    const T* sXs = sX + stage * 2 * BM * P;
    const T* sXt = sXs + BM * P;
    const float* st = sSt + stage * 3 * BM;

    // S^T(it) for both models (version 12's), on this stage's X tiles and stats.
    float zs[RT][4], zt[RT][4];
    mbar_wait(&x_full[stage], xpar);
    if (turn_s) named_bar_sync(my_turn, 256);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zt, cm_desc<D>(sYt + wg * 64 * D + kk * 128), XDesc::k(sXt, kk), kk > 0);
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      wgmma_m64n64k16_ss<T>(zs, cm_desc<D>(sYs + wg * 64 * D + kk * 128), XDesc::k(sXs, kk), kk > 0);
    }
    wgmma_commit();
    if (turn_s) named_bar_arrive(other_turn, 256);
    wgmma_wait<0>();
    fence_regs(zs);
    fence_regs(zt);

    if (any_hidden_key || (p.causal && i0 < j0 + BN - 1)) {
      dz_compute(zs, zt, st, i0, std::true_type{});
    } else {
      dz_compute(zs, zt, st, i0, std::false_type{});
    }

    // dZ^T(it) packed as dY's A fragments and staged (this warpgroup's 64 keys) in buffer zb, which
    // both warpgroups' dX(it - 2) read: this one's was waited for at it - 1, the other's is done by
    // its signal of it - 1, which also brings its half of dZ^T(it - 1) for dX(it - 1) below (the
    // sync orders this warpgroup's own staging of it - 1 as well: all 128 threads take part).
    if (it > 0) named_bar_sync(zready(it - 1, wg), 256);
    uint32_t za[BM / 16][4];
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      uint32_t(&a)[4] = za[kk];
      a[0] = pack2<T>(zs[2 * kk][0], zs[2 * kk][1]);
      a[1] = pack2<T>(zs[2 * kk][2], zs[2 * kk][3]);
      a[2] = pack2<T>(zs[2 * kk + 1][0], zs[2 * kk + 1][1]);
      a[3] = pack2<T>(zs[2 * kk + 1][2], zs[2 * kk + 1][3]);
      T* zrow = sZb + zb * BN * ZP + cm_off<BM>(warp * 16 + g, kk * 16 + 2 * tq);
      *reinterpret_cast<uint32_t*>(zrow) = a[0];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM) = a[1];
      *reinterpret_cast<uint32_t*>(zrow + 64) = a[2];
      *reinterpret_cast<uint32_t*>(zrow + 8 * BM + 64) = a[3];
    }
    fence_proxy_async();  // read next by wgmma (this and the other warpgroup's dX)

    float dxa[XC / 8][4];
    if (turn_d) named_bar_sync(my_turn, 256);
    if (it > 0) {
      wgmma_fence();
      dx_issue(dxa, zb ^ 1);
      wgmma_commit();
    }
    fence_regs(dy);
    wgmma_fence();
    // dY[keys] += dZ^T X_s (version 12's), its own group behind dX.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      wgmma_m64nNk16_rs_tb<T, D>(dy, za[kk], XDesc::mn(sXs, kk), true);
    }
    wgmma_commit();
    if (turn_d) named_bar_arrive(other_turn, 256);
    wgmma_wait<1>();  // dX(it - 1) done (iteration 0: nothing to wait for)
    fence_regs(dxa);
    named_bar_arrive(zready(it, wg ^ 1), 256);  // dZ^T(it) staged, buffer zb ^ 1 read by this warpgroup
    if (it > 0) dx_out(prev, dxa);
    wgmma_wait<0>();
    fence_regs(dy);
    if (lane == 0) mbar_arrive(&x_empty[stage]);  // this warp's wgmma done with the stage
    if (refill) {
      mbar_wait(&x_empty[stage], xpar);
      fill_stage(ahead, stage, st_ahead);
    }
    ahead = advance(ahead);
    prev = cur;
    cur = advance(cur);
    if (++stage == NS) stage = 0, xpar ^= 1;
  }
  if (iters > 0) {
    // The last dX: both halves of dZ^T(iters - 1), after the other warpgroup's last signal.
    named_bar_sync(zready(iters - 1, wg), 256);
    float dxa[XC / 8][4];
    wgmma_fence();
    dx_issue(dxa, static_cast<int>((iters - 1) & 1));
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dxa);
    dx_out(prev, dxa);
    // Warpgroup 0's turn barrier: warpgroup 1 arrived once more than warpgroup 0 synced.
    if ((turn_s || turn_d) && wg == 0) named_bar_sync(my_turn, 256);
  }
  // Shared memory must outlive the reduce-adds' reads; wait for their completion.
  bulk_wait_all<false>();

  bwd_store_dy(p, dy, b, hy, n, ds, key_lo, tq, dx_vec4);
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Version 13: grid (ceil(n / 128), heads_y_s, B) as version 12, 256 threads, one CTA an SM; map_dx
// zeros where d_s != D or dx is not 16-byte aligned (then the float4 / scalar atomics run).
template <typename T, int D, int kXStages>
__global__ void __launch_bounds__(256, 1)
    relation_kl_bwd_v13_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                               const __grid_constant__ CUtensorMap map_t, const __grid_constant__ CUtensorMap map_dx,
                               int turns) {
#ifdef LINEAR_ARD_SM90A
  bwd_pingpong_cta<T, D, kXStages>(p, &map_s, &map_t, BwdDxTensorOut<D>{&map_dx}, turns);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Version 12's launch (relation_kl_bwd_tma_launch) with this tile's shared memory; the caller has
// checked tma_side_ok for both sides and zeroed dx.
template <typename T, int D, int kXStages>
void relation_kl_bwd_v13_launch(const RelationKLParams& p, int turns) {
  using Tile = BwdPingPongTile<D, kXStages>;
  auto x_map = [&](const RelationSide& s) {
    return tma_map<T>(tma_x_operand(s, p.heads, p.seq_len, p.batch), Tile::kRows);
  };
  const CUtensorMap map_s = x_map(p.student), map_t = x_map(p.teacher);
  CUtensorMap map_dx{};
  if (p.student.head_dim == D && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0) {
    map_dx = tma_dx_map(p.dx, D, p.seq_len, p.batch * p.heads, 16, BwdDxTensorOut<D>::XC);
  }
  auto kernel = relation_kl_bwd_v13_kernel<T, D, kXStages>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_bwd_v13: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kKeys - 1) / Tile::kKeys), p.student.heads_y,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, map_s, map_t, map_dx,
                                                                                          turns);
  cuda_check(cudaGetLastError(), "relation_kl_bwd_v13 launch");
}

}  // namespace cuda
}  // namespace linear_ard

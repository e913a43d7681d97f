// The forward on warpgroup MMA (sm_90a only; the default forward there for bf16/fp16, D <= 128:
// dev/cuda forward version 6, promoted 2026-11-28; dev/cuda/README.md has versions 6 and 7).
// FlashAttention-3's forward scheme on 64-key wgmma tiles: a producer warp streams the key tiles
// into a ring of shared-memory stages (mbarriers "full" and "empty" per stage, no CTA barrier in the
// loop); two consumer warpgroups of 64 rows each take turns at the tensor cores (named barriers,
// "ping-pong"), so that one warpgroup's exponentials run while the other's logit GEMMs do. The
// library runs kPairs = false (relation_kl_fwd_wgmma_launch). kPairs = true is dev/cuda forward
// version 7 (measured slower, not promoted), kept as a branch of this template so that the two
// versions stay one kernel: two key tiles a turn, with the update of S(t) while S(t+1) runs, which
// takes a second accumulator set and so a whole producer warpgroup whose registers go to the
// consumers (setmaxnreg).
#pragma once

#include <stdexcept>
#include <string>

#include "relation_kl_fwd_stats.cuh"  // defines: FwdLogits, FwdRowStats, FwdTileMask, fwd_pipe_update, fwd_pipe_store, fwd_wgmma_pin
#include "relation_kl_launch.h"      // defines: relation_kl_fwd_wgmma_launch
#include "relation_kl_sm90.cuh"      // defines: cm_desc, wgmma_*, fence_*, mbar_*, named_bar_*, setmaxnreg_*

namespace linear_ard {
namespace cuda {

// CTA = 2 consumer warpgroups x 64 query rows (warps 0-7) + the producer: warp 8 (version 6, 288
// threads) or warpgroup 2 (version 7, 384 threads, of which warp 8 loads and warps 9-11 only give
// their registers back). Shared memory (core-matrix layout of load_tile_cm, version 5's): X_s, X_t
// [128 x D] (loaded once, with key tile 0), Y [stage][s, t][64 x D] in a ring of kStages stages,
// then the mbarriers full[kStages], empty[kStages]: 196,672 bytes at D = 128, version 5's plus 64.
// kWarpgroups: consumer warpgroups of 64 rows a CTA (2; 3 is forward version 10, the library's TMA
// forward from kFwdThreeGroupsFrom keys on, through relation_kl_fwd_tma.cuh only).
template <int D, bool kPairs, int kWarpgroups = 2>
struct FwdWgmmaTile {
  static_assert(D == 64 || D == 96 || D == 128, "the wgmma forward covers the buckets up to 128");
  static_assert(kWarpgroups == 2 || (kWarpgroups == 3 && !kPairs), "2 consumer warpgroups, or 3 one tile a turn");
  static constexpr int kRows = 64 * kWarpgroups;
  static constexpr int kKeys = 64;
  static constexpr int kStages = 4;
  // cp.async groups the producer keeps in flight before it signals a stage full (< kStages).
  static constexpr int kLag = 2;
  static constexpr int kConsumers = 128 * kWarpgroups;
  static constexpr int kThreads = kConsumers + (kPairs ? 128 : 32);
  // Version 7's register split (setmaxnreg): 128 x 72 + 256 x 216 = 64,512 of the SM's 65,536, i.e.
  // 3 x 168 a thread, the count ptxas gives the 384-thread kernel (the sum must match it).
  static constexpr int kProducerRegs = 72;
  static constexpr int kConsumerRegs = 216;
  static constexpr size_t kTileBytes = size_t(2 * kRows + kStages * 2 * kKeys) * D * 2;
  static constexpr size_t kSmemBytes = kTileBytes + 2 * kStages * sizeof(uint64_t);
  static_assert(kLag < kStages, "the producer would wait for a stage it has not yet signalled");
};

// Named barriers of the ping-pong: warpgroup w waits at kFwdTurnBarrier + w for its turn to issue,
// which the warpgroup before it (w - 1, cyclically) gives by an arrive after its own issue: 256
// threads a barrier.
constexpr int kFwdTurnBarrier = 1;
constexpr int kFwdTurnThreads = 256;

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// load_tile_cm for one warp (lane 0..31) instead of a CTA: rows [row0, row0 + ROWS) x columns
// [0, D) into the core-matrix layout, zeros past n and d. Chunk c = lane + 32 i (32 divides D, so a
// lane keeps its row within each 8-row group, lane % 8, and the columns 8 (lane / 8) + 32 j): the
// same global coalescing and contiguous shared-memory stores as the CTA loader's. `vec`: cp.async
// (16-byte aligned rows, d % 8 == 0); otherwise element by element with plain stores.
template <typename T, int ROWS, int D>
__device__ __forceinline__ void fwd_warp_load_cm(T* smem, const T* g, int64_t stride, int64_t row0, int64_t n, int d,
                                                 bool vec, int lane) {
  static_assert(D % 32 == 0 && ROWS % 8 == 0, "chunk mapping");
  if (vec) {
    // Row groups one at a time (not unrolled): the producer warp keeps few registers.
    const T* src = g + (row0 + (lane & 7)) * stride + (lane >> 3) * 8;
    T* dst = smem + 8 * lane;
    const int left = static_cast<int>(max(int64_t(0), min(n - row0 - (lane & 7), int64_t(ROWS))));
#pragma unroll 1
    for (int r = 0; r < ROWS; r += 8, src += 8 * stride, dst += 8 * D) {
      const bool row_ok = r < left;
#pragma unroll
      for (int j = 0; j < D / 32; ++j) {
        const bool ok = row_ok && (lane >> 3) * 8 + 32 * j < d;
        cp_async16(dst + 256 * j, ok ? src + 32 * j : g, ok ? 16 : 0);
      }
    }
  } else {
    for (int e = lane; e < ROWS * D; e += 32) {
      const int r = e / D, col = e % D;
      const bool ok = row0 + r < n && col < d;
      smem[cm_off<D>(r, col)] = ok ? g[(row0 + r) * stride + col] : T(0.f);
    }
  }
}

// The producer's loop (lane 0..31 of the producer warp): for key tile t = 0, 1, ..., wait until
// stage t mod K is empty (the consumers' release of tile t - K), issue the cp.async of Y_s(t),
// Y_t(t) (and of X_s, X_t with tile 0) as one group, then wait for the group of tile t - kLag
// (cp.async.wait_group kLag), fence it to the async proxy and arrive on full[(t - kLag) mod K]; the
// last kLag tiles are signalled after the loop. Non-aligned inputs take the plain-store path of
// fwd_warp_load_cm, behind the same fence and arrive.
template <typename T, int D, typename Tile>
__device__ __forceinline__ void fwd_pingpong_produce(const RelationKLParams& p, T* sXs, T* sXt, T* sY, uint64_t* full,
                                                     uint64_t* empty, int64_t b, int h, int64_t r0, int ntiles,
                                                     bool vec_s, bool vec_t) {
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, K = Tile::kStages, kLag = Tile::kLag;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
  const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int64_t n = p.seq_len;
  const int ds = p.student.head_dim, dt = p.teacher.head_dim, lane = threadIdx.x % 32;
  fwd_warp_load_cm<T, BM, D>(sXs, S.x, p.student.x_row_stride, r0, n, ds, vec_s, lane);  // in tile 0's group
  fwd_warp_load_cm<T, BM, D>(sXt, Tt.x, p.teacher.x_row_stride, r0, n, dt, vec_t, lane);
  for (int t = 0; t < ntiles; ++t) {
    const int s = t % K;
    if (t >= K) mbar_wait(&empty[s], ((t / K) & 1) ^ 1);
    T* dst = sY + s * 2 * BN * D;
    fwd_warp_load_cm<T, BN, D>(dst, S.y, p.student.y_row_stride, int64_t(t) * BN, n, ds, vec_s, lane);
    fwd_warp_load_cm<T, BN, D>(dst + BN * D, Tt.y, p.teacher.y_row_stride, int64_t(t) * BN, n, dt, vec_t, lane);
    cp_async_commit();
    if (t >= kLag) {
      cp_async_wait<kLag>();  // this lane's copies of tile t - kLag have landed
      fence_proxy_async();
      mbar_arrive(&full[(t - kLag) % K]);
    }
  }
  cp_async_wait<0>();
  fence_proxy_async();
  for (int t = max(0, ntiles - kLag); t < ntiles; ++t) mbar_arrive(&full[t % K]);
}

// The consumer warpgroups' part of the kernel below (threads 0..255; its comment says what they
// do), with the key tiles' wgmma B descriptors from `b_desc(stage, model (0 = student, 1 = teacher),
// k-step)` and `before_loop()` run once before the first tile's wait; n = p.seq_len. Shared with dev/cuda forward
// version 8 (key tiles by TMA: 128B-swizzled boxes, and a wait for the X tiles' own barrier).
// Forward version 9, the library's TMA forward (kPairs = false only; both off: versions 6-8):
// kUniformIssue: the warpgroup index comes from a shuffle of lane 0's, so the compiler knows it is
// warp-uniform and keeps the A descriptors in uniform registers: two 32-bit words built once
// (desc_join), the k-step offsets (kk x 256 bytes >> 4) compile-time constants added to the low
// word; b_desc should build its descriptors the same way. kFoldScale (both scales > 0, the caller's
// check): unmasked tiles take fwd_pipe_update_folded (maxima of the raw logits, the scales inside
// the exponent arguments); masked tiles keep fwd_pipe_update<true>. kWarpgroups: FwdWgmmaTile's
// (3: forward version 10, the turn passed round three warpgroups).
// kDiag (forward version 11; with kUniformIssue and kFoldScale, for a self-relation
// without a key mask): the stabilizers fixed at each row's diagonal (fwd_diag_update, fwd_diag_store),
// a row that overflowed setting *diag_redo.
// kXRegs (forward version 16, the library's first pass with three warpgroups at D = 64; and 15, 19):
// the warpgroup's X rows of kXRegs models (2: both, 1: the student's) read once, after
// before_loop(), into registers as wgmma A fragments (cm_a_frags), so that those logit GEMMs read
// only the key tiles from shared memory (wgmma_m64n64k16_rs).
template <typename T, int D, bool kPairs, bool kUniformIssue = false, bool kFoldScale = false, int kWarpgroups = 2,
          bool kDiag = false, int kXRegs = 0, typename BDesc, typename BeforeLoop>
__device__ __forceinline__ void fwd_pingpong_consume(const RelationKLParams& p, const T* sXs, const T* sXt,
                                                     uint64_t* full, uint64_t* empty, int64_t b, int h, int64_t n,
                                                     int64_t r0, int ntiles, BDesc&& b_desc, BeforeLoop&& before_loop,
                                                     int* diag_redo = nullptr) {
  using Tile = FwdWgmmaTile<D, kPairs, kWarpgroups>;
  constexpr int BN = Tile::kKeys, K = Tile::kStages, KS = D / 16, NT = BN / 8, W = kWarpgroups;
  static_assert(!(kPairs && (kUniformIssue || kFoldScale)), "version 9 is version 8's one tile a turn");
  static_assert(!kDiag || (kUniformIssue && kFoldScale && !kPairs), "version 11 is version 9 or 10's");
  const int wg = kUniformIssue ? __shfl_sync(0xffffffffu, threadIdx.x / 128, 0) : threadIdx.x / 128;
  const int warp = (threadIdx.x / 32) % 4, g = (threadIdx.x % 32) / 4;
  const bool lane0 = threadIdx.x % 32 == 0;
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;
  // Tiles [0, nfull) need no mask (version 2's split, for the CTA's first row).
  const int64_t last_free = min(n - 1, p.causal ? r0 : n - 1);
  const int nfull = kmask ? 0 : static_cast<int>(min(int64_t(ntiles), (last_free + 1) / BN));

  // This warpgroup's A operands (rows 64wg.. of the core-matrix tiles; a k-step is 2 core matrices
  // = 128 elements further).
  const T* xs = sXs + wg * 64 * D;
  const T* xt = sXt + wg * 64 * D;
  const int my_turn = kFwdTurnBarrier + wg, next_turn = kFwdTurnBarrier + (W == 2 ? wg ^ 1 : (wg + 1) % W);
  const int64_t row_lo = r0 + wg * 64 + warp * 16 + g;  // this thread's rows: row_lo, row_lo + 8

  // Version 9's A descriptors: the words of k-step 0 (a k-step is 128 elements = 256 bytes further).
  const uint64_t a_s = cm_desc<D>(xs), a_t = cm_desc<D>(xt);
  const uint32_t a_s_lo = static_cast<uint32_t>(a_s), a_t_lo = static_cast<uint32_t>(a_t);
  const uint32_t a_hi = static_cast<uint32_t>(a_s >> 32);
  auto a_desc = [&](int model, int kk) {
    if constexpr (kUniformIssue) {
      return desc_join((model == 0 ? a_s_lo : a_t_lo) + ((kk * 128 * sizeof(T)) >> 4), a_hi);
    } else {
      return cm_desc<D>((model == 0 ? xs : xt) + kk * 128);
    }
  };

  static_assert(kXRegs >= 0 && kXRegs <= 2, "kXRegs: how many models' X rows in registers");
  uint32_t xa_s[kXRegs > 0 ? KS : 1][4], xa_t[kXRegs > 1 ? KS : 1][4];  // kXRegs: A from registers
  // Both logit tiles of key tile t (stage t mod K) into z, one commit group.
  auto issue = [&](FwdLogits<NT>& z, int t) {
    // Version 9: the stage from lane 0 as well (the compiler does not see the loop counter as warp-uniform).
    const int stage = kUniformIssue ? __shfl_sync(0xffffffffu, t % K, 0) : t % K;
    wgmma_fence();  // the previous update wrote z (in-place scaling) before this issue
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      if constexpr (kXRegs > 0) {
        wgmma_m64n64k16_rs<T>(z.s, xa_s[kk], b_desc(stage, 0, kk), kk > 0);
      } else {
        wgmma_m64n64k16_ss<T>(z.s, a_desc(0, kk), b_desc(stage, 0, kk), kk > 0);
      }
    }
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      if constexpr (kXRegs > 1) {
        wgmma_m64n64k16_rs<T>(z.t, xa_t[kk], b_desc(stage, 1, kk), kk > 0);
      } else {
        wgmma_m64n64k16_ss<T>(z.t, a_desc(1, kk), b_desc(stage, 1, kk), kk > 0);
      }
    }
    wgmma_commit();
  };
  FwdRowStats st;
  const float rho = kFoldScale ? cs / ct : 0.f;  // fwd_pipe_update_folded's ratio of the scales
  auto update = [&](int t, FwdLogits<NT>& z) {
    if constexpr (kDiag) {
      if (t < nfull) {
        fwd_diag_update<false>(st, z, cs, ct, rho, FwdTileMask{});
      } else {
        const int64_t k0 = int64_t(t) * BN;
        fwd_diag_update<true>(st, z, cs, ct, rho,
                              FwdTileMask{static_cast<int>(min(row_lo - k0, int64_t(BN))),
                                          static_cast<int>(min(n - k0, int64_t(BN))), p.causal, nullptr});
      }
      fwd_wgmma_pin(st);
      return;
    }
    if (t < nfull) {
      if constexpr (kFoldScale) {
        fwd_pipe_update_folded(st, z, cs, ct, rho);
      } else {
        fwd_pipe_update<false>(st, z, cs, ct, FwdTileMask{});
      }
    } else {
      const int64_t k0 = int64_t(t) * BN;
      const FwdTileMask mk{static_cast<int>(min(row_lo - k0, int64_t(BN))), static_cast<int>(min(n - k0, int64_t(BN))),
                           p.causal, kmask ? kmask + k0 : nullptr};
      fwd_pipe_update<true>(st, z, cs, ct, mk);
    }
    fwd_wgmma_pin(st);  // the update stays ahead of the next wait or issue
  };

  if (wg == W - 1) named_bar_arrive(next_turn, kFwdTurnThreads);  // warpgroup 0 issues first
  before_loop();
  if constexpr (kXRegs > 0) cm_a_frags<T, D>(xa_s, xs, warp * 16 + g, threadIdx.x % 4);
  if constexpr (kXRegs > 1) cm_a_frags<T, D>(xa_t, xt, warp * 16 + g, threadIdx.x % 4);
  if constexpr (kDiag) {
    // Version 11's stabilizers: each row's own logit, c |x|^2 in log2 units.
    const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h), Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
    float ns[2], nt[2];
    fwd_row_sqnorms<T, D>(S.x, p.student.x_row_stride, p.student.head_dim, row_lo, n, ns);
    fwd_row_sqnorms<T, D>(Tt.x, p.teacher.x_row_stride, p.teacher.head_dim, row_lo, n, nt);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      st.m_s[r] = ns[r] * cs;
      st.m_t[r] = nt[r] * ct;
    }
  }
  if constexpr (!kPairs) {
    FwdLogits<NT> z;
    for (int t = 0; t < ntiles; ++t) {
      mbar_wait(&full[t % K], (t / K) & 1);
      named_bar_sync(my_turn, kFwdTurnThreads);
      issue(z, t);
      named_bar_arrive(next_turn, kFwdTurnThreads);
      wgmma_wait<0>();
      fence_regs(z.s);
      fence_regs(z.t);
      if (lane0) mbar_arrive(&empty[t % K]);  // this warp's wgmmas no longer read the stage
      update(t, z);
    }
  } else {
    FwdLogits<NT> za, zb;
    for (int t = 0; t < ntiles; t += 2) {
      const bool second = t + 1 < ntiles;
      mbar_wait(&full[t % K], (t / K) & 1);
      if (second) mbar_wait(&full[(t + 1) % K], ((t + 1) / K) & 1);
      named_bar_sync(my_turn, kFwdTurnThreads);
      issue(za, t);
      issue(zb, t + 1);
      named_bar_arrive(next_turn, kFwdTurnThreads);
      wgmma_wait<1>();
      fence_regs(za.s);
      fence_regs(za.t);
      if (lane0) mbar_arrive(&empty[t % K]);
      update(t, za);
      wgmma_wait<0>();
      fence_regs(zb.s);
      fence_regs(zb.t);
      if (second) {
        if (lane0) mbar_arrive(&empty[(t + 1) % K]);
        update(t + 1, zb);
      }
    }
  }
  if (wg == 0) named_bar_sync(my_turn, kFwdTurnThreads);  // the last warpgroup's arrival after its last issue

  if constexpr (kDiag) {
    fwd_diag_store(p, st, b, h, row_lo, ct, diag_redo);
  } else {
    fwd_pipe_store(p, st, b, h, row_lo);
  }
}

// Grid (ceil(n / 128), H, B), heaviest causal row blocks first; one CTA per SM. The producer runs
// fwd_pingpong_produce, the consumers fwd_pingpong_consume; a full barrier takes 32 arrivals (each producer lane's own copies), an
// empty one 8 (lane 0 of each consumer warp, once its wgmmas reading the stage have completed).
//
// Consumer warpgroup w (rows 64w..64w+63 of the CTA's 128), version 6 (one tile a turn), per key
// tile t:
//   wait full[t mod K] (Y(t) visible to wgmma);
//   bar.sync (turn barrier of w): the other warpgroup has issued its GEMMs of its previous turn;
//   issue S(t) = both models' X Y(t)^T (2 x D/16 wgmma.m64n64k16, one commit group);
//   bar.arrive (turn barrier of the other warpgroup): it may issue now;
//   wgmma.wait_group 0; lane 0 of each warp arrives on empty[t mod K];
//   update by S(t) (version 2's online softmax/KL, masked on the tiles that need it), while the
//   tensor cores run the other warpgroup's GEMMs.
// So the issue order on the tensor cores alternates S_0(t), S_1(t), S_0(t+1), ... and each
// warpgroup's update overlaps the other's GEMMs.
// Version 7 (kPairs) takes key tiles two a turn, as version 5 took them per barrier: wait full for
// t and t+1, bar.sync, issue S(t) into za and S(t+1) into zb (two commit groups), bar.arrive,
// wgmma.wait_group 1, release stage t, update by S(t) while the tensor cores run S(t+1) (and then
// the other warpgroup's pair), wgmma.wait_group 0, release stage t+1, update by S(t+1). An odd
// last tile's S(t+1) is issued anyway, on a stage no one writes any more (its result is dropped):
// the issue stays unconditional, as in version 5.
// Warpgroup 1 arrives once on warpgroup 0's turn barrier before the loop (warpgroup 0 goes first)
// and warpgroup 0 takes that extra arrival back after its loop, so both barriers end balanced. Both
// warpgroups run the CTA's ntiles tiles (as in version 5, warpgroup 0's last causal tile is all
// hidden); every issue is waited for in its own iteration, so no accumulator is in flight across
// the loop's back edge (version 5's C7514 note).
template <typename T, int D, bool kPairs>
__global__ void __launch_bounds__(FwdWgmmaTile<D, kPairs>::kThreads, 1)
    relation_kl_fwd_wgmma_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = FwdWgmmaTile<D, kPairs>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, K = Tile::kStages;
  extern __shared__ __align__(128) unsigned char fwd_wgmma_smem[];
  T* sXs = reinterpret_cast<T*>(fwd_wgmma_smem);
  T* sXt = sXs + BM * D;
  T* sY = sXt + BM * D;  // [stage][model s, t][BN x D]
  uint64_t* full = reinterpret_cast<uint64_t*>(fwd_wgmma_smem + Tile::kTileBytes);
  uint64_t* empty = full + K;

  const CtaPlace cta = cta_place(p.cta_head_group);  // heaviest causal row tiles first
  const int h = cta.head;
  const int64_t b = cta.batch, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - cta.rank) * BM;
  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < K; ++s) {
      mbar_init(&full[s], 32);
      mbar_init(&empty[s], Tile::kConsumers / 32);
    }
    fence_mbarrier_init();
  }
  __syncthreads();  // the only CTA-wide barrier

  if (threadIdx.x >= Tile::kConsumers) {
    if constexpr (kPairs) setmaxnreg_dec<Tile::kProducerRegs>();
    if (threadIdx.x < Tile::kConsumers + 32) {
      fwd_pingpong_produce<T, D, Tile>(p, sXs, sXt, sY, full, empty, b, h, r0, ntiles, vec_s, vec_t);
    }
    return;
  }
  if constexpr (kPairs) setmaxnreg_inc<Tile::kConsumerRegs>();
  fwd_pingpong_consume<T, D, kPairs>(
      p, sXs, sXt, full, empty, b, h, n, r0, ntiles,
      [&](int stage, int model, int kk) { return cm_desc<D>(sY + (stage * 2 + model) * BN * D + kk * 128); }, [] {});
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// kPairs = false: the library's sm_90a forward; true: dev/cuda forward version 7.
template <typename T, int D, bool kPairs>
void relation_kl_fwd_wgmma_run(const RelationKLParams& p, bool vec_s, bool vec_t) {
  using Tile = FwdWgmmaTile<D, kPairs>;
  auto kernel = relation_kl_fwd_wgmma_kernel<T, D, kPairs>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_wgmma: set shared memory");
  if constexpr (kPairs) {
    // The consumers' setmaxnreg.inc waits for registers the producer's dec frees: with a kernel
    // register count below (producer + 2 consumers) / 3 it would wait forever (ptxas gives 168).
    static const int regs = [&] {
      cudaFuncAttributes attr{};
      cuda_check(cudaFuncGetAttributes(&attr, kernel), "relation_kl_fwd_wgmma: attributes");
      return attr.numRegs;
    }();
    if (3 * regs < Tile::kProducerRegs + 2 * Tile::kConsumerRegs) {
      throw std::runtime_error("relation_kl_fwd_wgmma: " + std::to_string(regs) +
                               " registers a thread at entry, too few for the setmaxnreg split");
    }
  }
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_wgmma launch");
}

template <typename T, int D>
void relation_kl_fwd_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  relation_kl_fwd_wgmma_run<T, D, false>(p, vec_s, vec_t);
}

}  // namespace cuda
}  // namespace linear_ard

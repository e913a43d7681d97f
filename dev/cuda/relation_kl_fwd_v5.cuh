// Forward version 5 of dev/cuda (frozen; its row-statistics update, epilogue and fwd_wgmma_pin are
// the library's, relation_kl_fwd_stats.cuh): both logit GEMMs on warpgroup MMA (sm_90a), software-pipelined in
// the manner of FlashAttention-3's consumers: each warpgroup issues the wgmmas of key tiles t and
// t+1 (two commit groups), waits for the first only, and does the online-softmax/KL update of tile
// t while the tensor cores run tile t+1.
#pragma once

#include <type_traits>

#include "relation_kl_fwd_stats.cuh"  // defines: FwdLogits, FwdRowStats, FwdTileMask, fwd_pipe_update, fwd_pipe_store, fwd_wgmma_pin
#include "relation_kl_sm90.cuh"       // defines: cm_desc, wgmma_m64n64k16_ss, wgmma_*, fence_proxy_async, fence_regs

namespace linear_ard {
namespace cuda {

// CTA = 2 warpgroups x 64 query rows; key tiles of 64 keys of Y_s and Y_t, taken two at a time
// (a pair), in four cp.async stages (two pairs: one multiplied while the next loads).
// Shared memory (core-matrix layout of load_tile_cm, the wgmma operands' no-swizzle layout):
// X_s, X_t [128 x D] (loaded once; warpgroup w's A operand is rows 64w..64w+63), then
// Y [stage][s, t][64 x D]: (2 * 128 + 4 * 2 * 64) * D * 2 bytes, 192 KiB at D = 128.
template <int D>
struct FwdWgmmaV5Tile {
  static_assert(D == 64 || D == 96 || D == 128, "the wgmma forward covers the buckets up to 128");
  static constexpr int kRows = 128;
  static constexpr int kKeys = 64;
  static constexpr int kStages = 4;
  static constexpr int kThreads = 256;
  static constexpr size_t kSmemBytes = size_t(2 * kRows + kStages * 2 * kKeys) * D * 2;
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Grid (ceil(n / 128), H, B), heaviest causal row blocks first. Per warpgroup, S(t) = the two
// 64 x 64 logit tiles of key tile t (fp32, 2 x 32 registers a thread, laid out as eight mma.sync C
// fragments per warp, so version 2's update and epilogue apply unchanged). Iteration over the pair
// (t, t + 1):
//   cp.async wait + proxy fence + barrier: Y(t), Y(t+1) visible to wgmma; both warpgroups are done
//     with the previous pair, whose two stages take Y(t+2), Y(t+3);
//   issue S(t) into za (one commit group), then S(t+1) into zb (a second group);
//   wgmma.wait_group 1: S(t) complete, S(t+1) still in flight; update by S(t) (version 2's online
//     softmax/KL, masked on the tiles that need it) while the tensor cores run S(t+1);
//   wgmma.wait_group 0; update by S(t+1), while the other warpgroup's wgmmas may run.
// Nothing is in flight across the loop's back edge: with S(t+1) issued in one iteration and
// waited for in the next (the plain one-tile software pipeline), ptxas serializes every wgmma
// (C7514: it does not follow a group in flight around the loop once the update reads the other
// accumulator set; CHANGELOG.md, 2026-11-28).
template <typename T, int D>
__global__ void __launch_bounds__(FwdWgmmaV5Tile<D>::kThreads, 1)
    relation_kl_fwd_v5_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
#ifdef LINEAR_ARD_SM90A
  using Tile = FwdWgmmaV5Tile<D>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, NST = Tile::kStages, KS = D / 16, NT = BN / 8;
  extern __shared__ __align__(128) unsigned char fwd_v5_smem[];
  T* sXs = reinterpret_cast<T*>(fwd_v5_smem);
  T* sXt = sXs + BM * D;
  T* sY = sXt + BM * D;  // [stage][model s, t][BN x D]

  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, g = (threadIdx.x % 32) / 4;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BM;
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
  const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;

  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);
  // Tiles [0, nfull) need no mask (version 2's split, for the CTA's first row).
  const int64_t last_free = min(n - 1, p.causal ? r0 : n - 1);
  const int nfull = kmask ? 0 : static_cast<int>(min(int64_t(ntiles), (last_free + 1) / BN));

  using YLoader = TileLoader<T, BN, D, Tile::kThreads, true>;
  const YLoader ys_loader(S.y, p.student.y_row_stride, n, ds, vec_s);
  const YLoader yt_loader(Tt.y, p.teacher.y_row_stride, n, dt, vec_t);
  auto load_keys = [&](int t) {  // tile t into stage t mod 4
    T* dst = sY + (t % NST) * 2 * BN * D;
    ys_loader.load(dst, int64_t(t) * BN);
    yt_loader.load(dst + BN * D, int64_t(t) * BN);
  };
  // X and the first pair in one group. Tiles are loaded in pairs even past ntiles (the loader
  // zero-fills rows past n; such a tile's S is never used).
  TileLoader<T, BM, D, Tile::kThreads, true>(S.x, p.student.x_row_stride, n, ds, vec_s).load(sXs, r0);
  TileLoader<T, BM, D, Tile::kThreads, true>(Tt.x, p.teacher.x_row_stride, n, dt, vec_t).load(sXt, r0);
  load_keys(0);
  load_keys(1);
  cp_async_commit();

  // This warpgroup's A operands (rows 64wg.. of the core-matrix tiles; a k-step is 2 core matrices
  // = 128 elements further).
  const T* xs = sXs + wg * 64 * D;
  const T* xt = sXt + wg * 64 * D;
  auto issue = [&](FwdLogits<NT>& z, int t) {
    const T* ys = sY + (t % NST) * 2 * BN * D;
    const T* yt = ys + BN * D;
    wgmma_fence();  // the update wrote these registers (in-place scaling) before this issue
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) wgmma_m64n64k16_ss<T>(z.s, cm_desc<D>(xs + kk * 128), cm_desc<D>(ys + kk * 128), kk > 0);
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) wgmma_m64n64k16_ss<T>(z.t, cm_desc<D>(xt + kk * 128), cm_desc<D>(yt + kk * 128), kk > 0);
    wgmma_commit();
  };

  FwdLogits<NT> za, zb;
  FwdRowStats st;
  const int64_t row_lo = r0 + wg * 64 + warp * 16 + g;  // this thread's rows: row_lo, row_lo + 8

  auto update = [&](int t, FwdLogits<NT>& z) {
    if (t >= ntiles) {
      // the odd pair's second tile: past the end
    } else if (t < nfull) {
      fwd_pipe_update<false>(st, z, cs, ct, FwdTileMask{});
    } else {
      const int64_t k0 = int64_t(t) * BN;
      const FwdTileMask mk{static_cast<int>(min(row_lo - k0, int64_t(BN))), static_cast<int>(min(n - k0, int64_t(BN))),
                           p.causal, kmask ? kmask + k0 : nullptr};
      fwd_pipe_update<true>(st, z, cs, ct, mk);
    }
  };
  for (int t = 0; t < ntiles; t += 2) {
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    load_keys(t + 2);
    load_keys(t + 3);
    cp_async_commit();
    issue(za, t);
    issue(zb, t + 1);
    wgmma_wait<1>();
    fence_regs(za.s);
    fence_regs(za.t);
    update(t, za);
    fwd_wgmma_pin(st);  // the update of S(t) stays ahead of the wait for S(t+1)
    wgmma_wait<0>();
    fence_regs(zb.s);
    fence_regs(zb.t);
    update(t + 1, zb);
    fwd_wgmma_pin(st);
  }
  cp_async_wait<0>();  // the unused last pair of key tiles

  fwd_pipe_store(p, st, b, h, row_lo);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D>
void relation_kl_fwd_v5_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  using Tile = FwdWgmmaV5Tile<D>;
  auto kernel = relation_kl_fwd_v5_kernel<T, D>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_v5: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_v5 launch");
}

}  // namespace cuda
}  // namespace linear_ard

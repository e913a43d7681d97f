// Forward versions 3 and 4 of dev/cuda: the library's mma.sync forward (version 2) with software
// pipelining, so the logit GEMMs of key tile t+1 overlap the online-softmax/KL update of tile t.
#pragma once

#include <type_traits>

#include "relation_kl_fwd.cuh"        // defines: FwdTile (and, through it, mma16816, ldmatrix_x4, TileLoader)
#include "relation_kl_fwd_stats.cuh"  // defines: FwdLogits, FwdRowStats, FwdTileMask, fwd_pipe_update, fwd_pipe_store

namespace linear_ard {
namespace cuda {

// Version 2's tile (64 rows x 32 keys, 4 warps, two cp.async stages of Y_s, Y_t) for D <= 128, with
// two S tiles live per warp instead of one (32 more registers). kXRegs: both models' X fragments
// stay in registers as in version 2 (64 registers at D = 128, so only 2 CTAs fit an SM: version 3);
// otherwise they are re-read from shared memory by ldmatrix at every k-step, 50 % more ldmatrix
// traffic for 3 CTAs per SM, as version 2 (version 4).
template <int D, bool kXRegs>
struct FwdPipeTile : FwdTile<D> {
  static_assert(D <= 128, "the pipelined forward covers the buckets up to 128");
  static constexpr int kMinBlocks = kXRegs ? 2 : 3;
};

// Both models' A fragments of the warp's 16 rows: in registers for the whole loop (kXRegs), or
// nothing (read from shared memory per k-step).
template <int KS, bool kXRegs>
struct FwdXFrags {
  uint32_t s[kXRegs ? KS : 1][4];
  uint32_t t[kXRegs ? KS : 1][4];
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Both logit tiles of one key tile: z = X Y^T for the warp's 16 rows against the 32 keys of sYs, sYt
// (version 2's GEMM, same order of accumulation, so the same values).
template <typename T, int D, bool kXRegs>
__device__ __forceinline__ void fwd_pipe_logits(FwdLogits<FwdTile<D>::kKeys / 8>& z, const FwdXFrags<D / 16, kXRegs>& x,
                                                const T* sXs, const T* sXt, const T* sYs, const T* sYt, int a_off,
                                                int b_off) {
  constexpr int NT = FwdTile<D>::kKeys / 8, KS = D / 16, P = FwdTile<D>::kPitch;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) z.s[i][e] = z.t[i][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    uint32_t as[4], at[4];
    if constexpr (kXRegs) {
#pragma unroll
      for (int e = 0; e < 4; ++e) as[e] = x.s[kk][e], at[e] = x.t[kk][e];
    } else {
      ldmatrix_x4(as, sXs + a_off + kk * 16);
      ldmatrix_x4(at, sXt + a_off + kk * 16);
    }
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t bs[4], bt[4];
      ldmatrix_x4(bs, sYs + b_off + np * 16 * P + kk * 16);
      ldmatrix_x4(bt, sYt + b_off + np * 16 * P + kk * 16);
      mma16816<T>(z.s[2 * np], as, bs[0], bs[1]);
      mma16816<T>(z.s[2 * np + 1], as, bs[2], bs[3]);
      mma16816<T>(z.t[2 * np], at, bt[0], bt[1]);
      mma16816<T>(z.t[2 * np + 1], at, bt[2], bt[3]);
    }
  }
}

// Grid, CTA, shared memory and per-thread state as version 2 (relation_kl_fwd.cuh), plus a second
// pair of S accumulators. Iteration t holds S(t) in registers (computed one iteration earlier):
//   barrier (Y(t+1) visible; every warp is done with the GEMM of S(t), so its stage takes Y(t+2)),
//   S(t+1) = X Y(t+1)^T on the tensor cores, then the softmax/KL update of S(t).
// On unmasked tiles both halves sit in one basic block and do not depend on each other, so ptxas
// interleaves the HMMAs of t+1 with the FMNMX/MUFU/FFMA of t: mma.sync issues in order, and without
// the interleave a warp stalls on its 64 HMMAs before reaching the exponentials. (On masked tiles
// the key-mask reads branch, so the GEMM stays ahead of the update, as in version 2.) The two
// accumulator sets trade roles every iteration; the loop is unrolled by two so that no copy is
// needed. The GEMM after the last tile reads a stage holding an earlier tile, or the zero rows past
// n that the prologue's unconditional load of tile 1 wrote (never uninitialised memory); its result
// is never used: one wasted GEMM per CTA instead of a branch that would split the basic block.
template <typename T, int D, bool kXRegs>
__global__ void __launch_bounds__(FwdTile<D>::kThreads, FwdPipeTile<D, kXRegs>::kMinBlocks)
    relation_kl_fwd_pipe_kernel(const RelationKLParams p, bool vec_s, bool vec_t) {
  using Tile = FwdPipeTile<D, kXRegs>;
  constexpr int BM = Tile::kRows, BN = Tile::kKeys, P = Tile::kPitch, NT = BN / 8, KS = D / 16;
  // Its own name: this program declares smem_raw with two alignments already (fwd 16, wgmma 128).
  extern __shared__ __align__(16) unsigned char fwd_pipe_smem[];
  T* sXs = reinterpret_cast<T*>(fwd_pipe_smem);
  T* sXt = sXs + BM * P;
  T* sY = sXt + BM * P;  // [stage][model][BN][P]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4;
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z, n = p.seq_len;
  const int64_t r0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * BM;  // heaviest causal blocks first
  const SidePtrs<T> S = side_ptrs<T>(p.student, p.heads, b, h);
  const SidePtrs<T> Tt = side_ptrs<T>(p.teacher, p.heads, b, h);
  const int ds = p.student.head_dim, dt = p.teacher.head_dim;
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  const uint8_t* kmask = p.key_mask ? p.key_mask + b * p.key_mask_batch_stride : nullptr;

  const int64_t kv_end = p.causal ? min(n, r0 + BM) : n;
  const int ntiles = static_cast<int>((kv_end + BN - 1) / BN);
  // Tiles [0, nfull) need no mask (version 2's split).
  const int64_t last_free = min(n - 1, p.causal ? r0 : n - 1);
  const int nfull = kmask ? 0 : static_cast<int>(min(int64_t(ntiles), (last_free + 1) / BN));

  using YLoader = TileLoader<T, BN, D, Tile::kThreads, false>;
  const YLoader ys_loader(S.y, p.student.y_row_stride, n, ds, vec_s);
  const YLoader yt_loader(Tt.y, p.teacher.y_row_stride, n, dt, vec_t);
  auto load_keys = [&](int t, int stage) {
    T* dst = sY + stage * 2 * BN * P;
    ys_loader.load(dst, int64_t(t) * BN);
    yt_loader.load(dst + BN * P, int64_t(t) * BN);
  };
  // X and Y(0) in one group, Y(1) in the next (loaded even past ntiles: the loader zero-fills rows
  // past n, and rows below n are readable).
  TileLoader<T, BM, D, Tile::kThreads, false>(S.x, p.student.x_row_stride, n, ds, vec_s).load(sXs, r0);
  TileLoader<T, BM, D, Tile::kThreads, false>(Tt.x, p.teacher.x_row_stride, n, dt, vec_t).load(sXt, r0);
  load_keys(0, 0);
  cp_async_commit();
  load_keys(1, 1);
  cp_async_commit();

  const int a_off = (warp * 16 + lane % 16) * P + (lane / 16) * 8;          // A fragment: rows l%16, k-chunk l/16
  const int b_off = ((lane / 16) * 8 + lane % 8) * P + ((lane / 8) % 2) * 8;  // B (x4): keys (l/16)*8 + l%8, k-chunk (l/8)%2

  cp_async_wait<1>();
  __syncthreads();
  FwdXFrags<KS, kXRegs> x;
  if constexpr (kXRegs) {
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      ldmatrix_x4(x.s[kk], sXs + a_off + kk * 16);
      ldmatrix_x4(x.t[kk], sXt + a_off + kk * 16);
    }
  }

  FwdLogits<NT> za, zb;
  fwd_pipe_logits<T, D, kXRegs>(za, x, sXs, sXt, sY, sY + BN * P, a_off, b_off);
  FwdRowStats st;
  const int64_t row_lo = r0 + warp * 16 + g;  // this thread's rows: row_lo, row_lo + 8

  // Key tile t: S(t) in cur; S(t+1) into next. kMasked as in version 2.
  auto tile_step = [&](int t, FwdLogits<NT>& cur, FwdLogits<NT>& next, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    cp_async_wait<0>();
    __syncthreads();
    if (t + 2 < ntiles) {
      load_keys(t + 2, t & 1);
      cp_async_commit();
    }
    const T* sYs = sY + ((t + 1) & 1) * 2 * BN * P;
    fwd_pipe_logits<T, D, kXRegs>(next, x, sXs, sXt, sYs, sYs + BN * P, a_off, b_off);
    FwdTileMask mk{};
    if constexpr (kMasked) {
      const int64_t k0 = int64_t(t) * BN;
      mk = {static_cast<int>(min(row_lo - k0, int64_t(BN))), static_cast<int>(min(n - k0, int64_t(BN))),
            p.causal, kmask ? kmask + k0 : nullptr};
    }
    fwd_pipe_update<kMasked>(st, cur, cs, ct, mk);
  };
  // Tiles [t, end) of one kind, two per trip (za, zb swap roles); an odd last tile leaves S(end) in
  // zb, moved to za once for the next phase.
  auto run_tiles = [&](int t, int end, auto masked_tag) {
    for (; t + 1 < end; t += 2) {
      tile_step(t, za, zb, masked_tag);
      tile_step(t + 1, zb, za, masked_tag);
    }
    if (t < end) {
      tile_step(t, za, zb, masked_tag);
      za = zb;
    }
  };
  run_tiles(0, nfull, std::false_type{});
  run_tiles(nfull, ntiles, std::true_type{});

  fwd_pipe_store(p, st, b, h, row_lo);
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

template <typename T, int D, bool kXRegs>
void relation_kl_fwd_pipe_launch(const RelationKLParams& p, bool vec_s, bool vec_t) {
  using Tile = FwdPipeTile<D, kXRegs>;
  auto kernel = relation_kl_fwd_pipe_kernel<T, D, kXRegs>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_fwd_pipe: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::kRows - 1) / Tile::kRows), p.heads,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, vec_s, vec_t);
  cuda_check(cudaGetLastError(), "relation_kl_fwd_pipe launch");
}

}  // namespace cuda
}  // namespace linear_ard

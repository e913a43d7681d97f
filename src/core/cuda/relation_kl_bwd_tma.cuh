// Backward version 11 of dev/cuda (the library's sm_90a backward for D = 64, 128 until version 12,
// relation_kl_bwd_tma_dx.cuh, replaced it; 28 % faster than version 6 on one H200, docs/kernel.md):
// version 6
// (relation_kl_bwd_wgmma.cuh) with the streamed X row tiles (X_s, X_t: [64 rows][D], two stages)
// loaded by TMA tensor copies (whole 128-byte lines, 128-byte swizzle) issued by one thread and
// signalled by an mbarrier a stage, instead of all 256 threads' 16-byte cp.async (TileLoader),
// which on sm_90a also shared one scoreboard wait with the dX bulk reduce-adds. Everything else
// (Y tiles once per CTA by cp.async, the teacher's GQA reload, dZ^T staging, dX by wgmma and bulk
// reduce-add, dY in registers, row stats) is version 6's: bwd_wgmma_cta with this file's load, wait
// and B-descriptor hooks. A kernel of its own: the tensor maps are kernel parameters. D = 96 and
// sides TMA cannot read (tma_side_ok) run version 6.
#pragma once

#include <stdexcept>
#include <string>

#include "relation_kl_bwd_wgmma.cuh"  // defines: BwdWgmmaTile, bwd_wgmma_cta
#include "relation_kl_tma_map.cuh"   // defines: tma_side_ok, tma_map, tma_x_operand (sm90: sw128_desc, tma_load_4d)

namespace linear_ard {
namespace cuda {

// Shared memory: version 6's carve (BwdWgmmaTile: Y_s, Y_t, X stages, dZ^T, row stats, dX staging)
// from a 1024-byte aligned base, so that the X stages (at 2 x 128 x D x 2 bytes, a multiple of 1024)
// hold 128B-swizzled boxes whose swizzle phase starts at 0 (the wgmma descriptors' base offset is
// left 0); an X tile [64 rows][D] is D / 64 boxes of [64 rows][64 elements] (8 KB) side by side in
// D, X_s then X_t, the same 16 D bytes a row as version 6's tile. Then the two stages' mbarriers.
// 1024 bytes of slack for aligning the base.
template <int D>
struct BwdTmaTile {
  static_assert(D == 64 || D == 128, "TMA boxes are 64 elements wide");
  using Base = BwdWgmmaTile<D>;
  static constexpr int kRows = Base::kRows;  // 64: a box's rows
  static constexpr int kBoxCols = 64;
  static constexpr int kBoxes = D / kBoxCols;                   // per X tile
  static constexpr uint32_t kBoxBytes = kRows * kBoxCols * 2;  // 8192
  static constexpr uint32_t kTileBytes = kBoxes * kBoxBytes;   // one model's X tile
  static constexpr uint32_t kStageBytes = 2 * kTileBytes;      // the expect_tx count of a stage
  static constexpr size_t kXOffset = size_t(2) * Base::kKeys * D * 2;  // behind Y_s, Y_t
  static constexpr size_t kBarOffset = (Base::kSmemBytes + 7) / 8 * 8;
  static constexpr size_t kSmemBytes = 1024 + kBarOffset + 2 * sizeof(uint64_t);
  static_assert(kXOffset % 1024 == 0 && kTileBytes == size_t(kRows) * D * 2, "X stages: version 6's, aligned");
  static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM must fit");
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// wgmma B descriptors of an X tile in 128B-swizzled boxes (the XDesc of bwd_wgmma_cta), k-step kk:
// k(...) K-major for S^T = Y X^T (k = D: box kk / 4, 32 bytes further per k16 inside the box's
// 128-byte rows, as forward version 8's key tiles); mn(...) MN-major for dY += dZ^T X_s (k = the
// tile's rows: 16 rows = 2 atoms = 2048 bytes further per k-step, n = D across the boxes).
template <int D>
struct BwdXSwizzledDesc {
  using Tile = BwdTmaTile<D>;
  template <typename T>
  static __device__ __forceinline__ uint64_t k(const T* tile, int kk) {
    return sw128_desc(smem_u32(tile)) + (((kk / 4) * Tile::kBoxBytes + (kk % 4) * 32) >> 4);
  }
  template <typename T>
  static __device__ __forceinline__ uint64_t mn(const T* tile, int kk) {
    return sw128_desc_mn<Tile::kRows>(smem_u32(tile) + kk * 16 * 128);
  }
};

// The kernel below's CTA (its comment says what it does) on the tensor maps of the student's and
// the teacher's X (kernel parameters: __grid_constant__), with dx_tile as bwd_wgmma_cta's DxOut
// (version 12, the library's, passes BwdDxTensorOut: relation_kl_bwd_tma_dx.cuh).
template <typename T, int D, typename DxOut = BwdDxBulkRows<D>>
__device__ __forceinline__ void bwd_tma_cta(const RelationKLParams& p, const CUtensorMap* map_s,
                                            const CUtensorMap* map_t, const DxOut& dx_tile = DxOut{}) {
  using Tile = BwdTmaTile<D>;
  // Declared 128-byte aligned only, so that the compiler keeps the rounding up to 1024 (see
  // relation_kl_fwd_tma_kernel).
  extern __shared__ __align__(128) unsigned char bwd_tma_smem[];
  unsigned char* base = bwd_tma_smem + ((1024 - (smem_u32(bwd_tma_smem) & 1023)) & 1023);
  uint64_t* x_full = reinterpret_cast<uint64_t*>(base + Tile::kBarOffset);
  if (threadIdx.x == 0) {
    mbar_init(&x_full[0], 1);
    mbar_init(&x_full[1], 1);
    fence_mbarrier_init();
    tma_prefetch_map(map_s);
    tma_prefetch_map(map_t);
  }
  __syncthreads();  // the barriers initialised before any thread waits or the first copy lands
  bwd_wgmma_cta<T, D, BwdXSwizzledDesc<D>>(
      p, true, true, base,
      [&](int64_t b, int h, int64_t i0, int stage, T* sX) {
        if (threadIdx.x != 0) return;
        const uint32_t dst = smem_u32(sX) + stage * Tile::kStageBytes;
        mbar_arrive_expect_tx(&x_full[stage], Tile::kStageBytes);
#pragma unroll
        for (int c = 0; c < Tile::kBoxes; ++c) {
          const int col = c * Tile::kBoxCols, row = static_cast<int>(i0);
          tma_load_4d(dst + c * Tile::kBoxBytes, map_s, col, row, h, static_cast<int>(b), &x_full[stage]);
          tma_load_4d(dst + Tile::kTileBytes + c * Tile::kBoxBytes, map_t, col, row, h, static_cast<int>(b),
                      &x_full[stage]);
        }
      },
      [&](int stage, int64_t it) { mbar_wait(&x_full[stage], static_cast<uint32_t>(it >> 1) & 1); }, dx_tile);
}

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// Version 6's kernel (relation_kl_bwd_wgmma_kernel<T, D>) with the X tiles by TMA. Thread 0 inits
// the stages' mbarriers x_full[2] (one arrival each) before the CTA's first barrier; bwd_wgmma_cta
// then runs version 6's loop with these hooks:
//   load_x (iteration it + 1's tiles into stage (it + 1) & 1, issued after iteration it's barrier,
//     past which no warp reads that stage any more): thread 0 arrives on x_full[stage] with the
//     stage's bytes as expected transactions and issues the 2 x D/64 box copies onto it; rows >= n
//     and columns >= d (a side narrower than the bucket) come as zeros from the TMA's out-of-bounds
//     fill, as TileLoader's zero fill;
//   wait_x: every thread waits for phase (it / 2) & 1 of x_full[it & 1] (stage s completes once per
//     use, uses alternate) before the S^T wgmma; the dY wgmma of the same iteration reads X_s after
//     it. The X loads no longer ride on the iteration barrier's cp.async wait, which stays for
//     the Y tiles (first iteration) and, as bulk_wait_all, for the dX staging rows.
template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_tma_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                               const __grid_constant__ CUtensorMap map_t) {
#ifdef LINEAR_ARD_SM90A
  bwd_tma_cta<T, D>(p, &map_s, &map_t);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Launches `kernel` (relation_kl_bwd_tma_kernel<T, D>, or a dev/cuda variant taking the further
// kernel parameters `more`) on the params (16-bit T, D = 64 or 128, the bucket of max(d_s, d_t); dx
// already zeroed) with the X maps of both sides; the caller has checked tma_side_ok for both sides.
template <typename T, int D, typename... More>
void bwd_tma_launch(void (*kernel)(RelationKLParams, CUtensorMap, CUtensorMap, More...), const RelationKLParams& p,
                    const char* what, const More&... more) {
  using Tile = BwdTmaTile<D>;
  auto x_map = [&](const RelationSide& s) {
    return tma_map<T>(tma_x_operand(s, p.heads, p.seq_len, p.batch), Tile::kRows);
  };
  const CUtensorMap map_s = x_map(p.student), map_t = x_map(p.teacher);
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             (std::string(what) + ": set shared memory").c_str());
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::Base::kKeys - 1) / Tile::Base::kKeys), p.student.heads_y,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::Base::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, map_s, map_t,
                                                                                                  more...);
  cuda_check(cudaGetLastError(), (std::string(what) + " launch").c_str());
}

// Version 11's kernel (the bulk row reduce-adds of bwd_wgmma_cta's default DxOut): dev/cuda's since
// version 12 (relation_kl_bwd_tma_dx.cuh) became the library's.
template <typename T, int D>
void relation_kl_bwd_tma_rows_launch(const RelationKLParams& p) {
  bwd_tma_launch<T, D>(relation_kl_bwd_tma_kernel<T, D>, p, "relation_kl_bwd_tma");
}

}  // namespace cuda
}  // namespace linear_ard

// dev/cuda backward version 11: the library's sm_90a backward (version 6,
// src/core/cuda/relation_kl_bwd_wgmma.cuh) with the streamed X row tiles (X_s, X_t: [64 rows][D],
// two stages) loaded by TMA tensor copies (cp.async.bulk.tensor, whole 128-byte lines, 128-byte
// swizzle) issued by one thread and signalled by an mbarrier a stage, instead of all 256 threads'
// 16-byte cp.async (TileLoader), which Nsight Compute shows with half of the global sectors
// "excessive" and, on sm_90a, sharing one scoreboard wait with the dX bulk reduce-adds
// (docs/kernel.md, "Where the time goes", "Backward version 11"). The same change made the forward
// 18 % faster (forward version 8, relation_kl_fwd_tma.cuh, whose TMA primitives this file uses).
// Everything else (Y tiles once per CTA by cp.async, the teacher's GQA reload, dZ^T staging, dX by
// wgmma and bulk reduce-add, dY in registers, row stats) is version 6's: the library's
// bwd_wgmma_cta with this file's load, wait and B-descriptor hooks. A separate kernel rather than
// a branch of the library's: the tensor maps are kernel parameters (see relation_kl_fwd_tma.cuh).
// Covers D = 64 and 128 (one or two 64-element boxes a row); D = 96, rows not 16-byte aligned
// (side_is_vec) and zero strides are left to the caller (relation_kl_bwd_tma_run returns false).
#pragma once

#include <stdexcept>
#include <string>

#include "relation_kl_bwd_wgmma.cuh"  // defines: BwdWgmmaTile, bwd_wgmma_cta
#include "relation_kl_fwd_tma.cuh"    // defines: sw128_desc, mbar_arrive_expect_tx, tma_load_4d, tensor_map_encoder

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

// MN-major wgmma descriptor (use with trans-b = 1) of 128B-swizzled boxes of kBoxRows rows x 64
// 16-bit elements, boxes side by side in N, read as B[k = box rows][n = box columns]: a swizzle atom
// is 8 k-rows x 64 n (1024 bytes), SBO = 1024 (next 8 k), LBO = one box (next 64 n), layout type 1
// (128-byte swizzle, bits 62-63), base offset 0 (atoms 1024-byte aligned). For the no-swizzle
// layout (cm_desc_mn) the two offsets play the other way round (PTX ISA, "Shared Memory Matrix
// Layout": MN-major canonical layouts).
template <int kBoxRows>
__device__ __forceinline__ uint64_t sw128_desc_mn(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t((kBoxRows * 128) >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

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
    tma_prefetch_map(&map_s);
    tma_prefetch_map(&map_t);
  }
  __syncthreads();  // the barriers initialised before any thread waits or the first copy lands
  const int b = static_cast<int>(blockIdx.z);
  bwd_wgmma_cta<T, D, BwdXSwizzledDesc<D>>(
      p, true, true, base,
      [&](int h, int64_t i0, int stage, T* sX) {
        if (threadIdx.x != 0) return;
        const uint32_t dst = smem_u32(sX) + stage * Tile::kStageBytes;
        mbar_arrive_expect_tx(&x_full[stage], Tile::kStageBytes);
#pragma unroll
        for (int c = 0; c < Tile::kBoxes; ++c) {
          const int col = c * Tile::kBoxCols, row = static_cast<int>(i0);
          tma_load_4d(dst + c * Tile::kBoxBytes, &map_s, col, row, h, b, &x_full[stage]);
          tma_load_4d(dst + Tile::kTileBytes + c * Tile::kBoxBytes, &map_t, col, row, h, b, &x_full[stage]);
        }
      },
      [&](int stage, int64_t it) { mbar_wait(&x_full[stage], static_cast<uint32_t>(it >> 1) & 1); });
#endif
}

// ------------------------------------------------------------------------------------------------
// host helpers

// Whether a side's X can be a TMA map (and its Y rows cp.async'd 16 bytes at a time): side_is_vec's
// alignment, and no zero stride over an axis of more than one element (TMA strides must be
// positive multiples of 16 bytes).
inline bool bwd_tma_side_ok(const RelationSide& s, int heads, int64_t batch, size_t elem) {
  return side_is_vec(s, elem) && s.x_row_stride > 0 && (heads <= 1 || s.x_head_stride > 0) &&
         (batch <= 1 || s.x_batch_stride > 0);
}

// 4-D tensor map over a [batch][heads][n][d] tensor of T at `ptr` with element strides (row, head,
// batch): dims (d, n, heads, batch), boxes of 64 elements x box_rows rows x 1 x 1, 128-byte
// swizzle, out-of-bounds elements read as zeros. fwd_tma_key_map's encoding for any tensor (here
// X, whose heads are RelationKLParams::heads, not heads_y); axes of extent 1 get a stride of the one
// below times its extent (any valid value: never stepped over).
template <typename T>
CUtensorMap tma_map_4d(const void* ptr, int64_t d, int64_t n, int64_t heads, int64_t batch, int64_t row_stride,
                       int64_t head_stride, int64_t batch_stride, int box_rows) {
  constexpr size_t e = sizeof(T);
  const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(n), cuuint64_t(heads), cuuint64_t(batch)};
  cuuint64_t strides[3] = {cuuint64_t(row_stride) * e, cuuint64_t(head_stride) * e, cuuint64_t(batch_stride) * e};
  if (heads <= 1) strides[1] = strides[0] * dims[1];
  if (batch <= 1) strides[2] = strides[1] * dims[2];
  const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type =
      WgmmaType<T>::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(&map, type, 4, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("tma_map_4d: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ", d " +
                             std::to_string(d) + ", n " + std::to_string(n) + ", row stride " +
                             std::to_string(row_stride) + ")");
  }
  return map;
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Version 11 on the params (16-bit T, D = 64 or 128, the bucket of max(d_s, d_t); dx already
// zeroed). Returns false where it does not apply (rows not 16-byte aligned on either side, zero
// strides, or indices past the TMA's 32-bit coordinates), launching nothing.
template <typename T, int D>
bool relation_kl_bwd_tma_run(const RelationKLParams& p) {
  using Tile = BwdTmaTile<D>;
  if (!bwd_tma_side_ok(p.student, p.heads, p.batch, sizeof(T)) ||
      !bwd_tma_side_ok(p.teacher, p.heads, p.batch, sizeof(T)) || p.seq_len >= (int64_t(1) << 31) ||
      p.batch >= (int64_t(1) << 31)) {
    return false;
  }
  auto x_map = [&](const RelationSide& s) {
    return tma_map_4d<T>(s.x, s.head_dim, p.seq_len, p.heads, p.batch, s.x_row_stride, s.x_head_stride,
                         s.x_batch_stride, Tile::kRows);
  };
  const CUtensorMap map_s = x_map(p.student), map_t = x_map(p.teacher);
  auto kernel = relation_kl_bwd_tma_kernel<T, D>;
  cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(Tile::kSmemBytes)),
             "relation_kl_bwd_tma: set shared memory");
  const dim3 grid(static_cast<unsigned>((p.seq_len + Tile::Base::kKeys - 1) / Tile::Base::kKeys), p.student.heads_y,
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, Tile::Base::kThreads, Tile::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, map_s, map_t);
  cuda_check(cudaGetLastError(), "relation_kl_bwd_tma launch");
  return true;
}

}  // namespace cuda
}  // namespace linear_ard

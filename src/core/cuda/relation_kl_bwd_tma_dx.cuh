// The sm_90a backward for D = 64 and 128 where both sides can be read by TMA (backward version 12 of
// dev/cuda, promoted 2026-11-29: 12 % faster than version 11 on one H200, docs/kernel.md): version 11
// (relation_kl_bwd_tma.cuh) with each warp's finished dX rows added to global memory by
// one TMA tensor reduce-add (cp.reduce.async.bulk.tensor) from one lane, instead of 16 lanes' row
// bulk reduce-adds (an ELECT loop of 16 UBLKRED passes in SASS), and without iteration 0's empty dX
// wgmma group (a dummy HGMMA every iteration). Since 2026-12-05 with backward version 25's S^T: its
// A operand, both models' keys, read once into registers (kYRegs = 2) instead of from shared memory
// every row tile (5-9 % faster than before at D = 128 and 64 on one H100, dev/cuda/README.md).
#pragma once

#include "relation_kl_bwd_tma.cuh"  // defines: BwdTmaTile, bwd_tma_cta, bwd_tma_launch
#include "relation_kl_tma_map.cuh"  // defines: tma_dx_map (sm90: tma_reduce_add_4d, bulk_commit)

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

__device__ __forceinline__ void st_shared_v2_f32(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// The DxOut of bwd_wgmma_cta (BwdDxBulkRows says what it provides) for version 12. Warp w's staging
// area is the box of its reduce-add: 16 rows x kLines lines of 32 floats (128 bytes; D/2 = 32 or 64
// columns), line l = row * kLines + column / 32, 16-byte unit (column % 32) / 4 of line l stored at
// unit ^ (l % 8) (CU_TENSOR_MAP_SWIZZLE_128B: address bits 4-6 ^= bits 7-9; the areas are 1024-byte
// aligned, so the phase is the line's). The fragment stores (lane g, tq; fragment i: rows g and
// g + 8, columns 8i + 2tq, + 1: 8 bytes) go to unit (2 (i % 4) + tq / 2) ^ (l % 8) of line
// l = g kLines + i / 4 (and that + 8 kLines, the same l % 8). Banks, per store instruction:
// * D = 128 (kLines = 2): l % 8 = 2 (g % 4) + i / 4, so the units of one half-warp (g 0..3 or 4..7,
//   tq 0..3) are 2 (i % 4) ^ i / 4 ^ tq / 2 ^ 2 (g % 4): 8 distinct units, each split by tq % 2
//   into two 8-byte halves: 32 distinct banks a half-warp, each bank twice a warp (2 wavefronts,
//   the minimum for 256 bytes: conflict-free, as version 11's pitch of D/2 + 8 floats).
// * D = 64 (kLines = 1): l % 8 = g, the units 2 (i % 4) ^ tq / 2 ^ g take 4 values in a half-warp
//   (g and g ^ 1 collide): 16 banks, 2-way; each bank still twice a warp. A 128-byte line a row
//   puts every row on the same banks before the XOR, and three XOR bits cannot separate 8 rows x
//   2 unit halves of a half-warp (dev/cuda/dx_stage_check.py counts both cases).
// One lane issues the warp's box: coordinates (0, wg kLines, row0, b heads + h) of tma_dx_map's
// axes (32 columns, chunks of 32, n, B heads); rows >= n lie outside the map's third axis and are
// skipped. The staging areas sit behind version 11's dZ^T and row stats, rounded up to 1024 bytes,
// inside its carve (no more shared memory).
template <int D>
struct BwdDxTensorOut {
  using Base = BwdWgmmaTile<D>;
  static constexpr int XC = Base::kDxCols;
  static constexpr int kLines = XC / 32;  // 128-byte lines a staged row
  static constexpr size_t kStageOffset = (Base::kDxStageOffset + 1023) / 1024 * 1024;
  static constexpr int kPitch = XC;  // unpadded: a warp's 16 rows are its box, 16 XC 4 bytes
  static constexpr bool kCommitDxOnlyIssued = true;
  static constexpr bool kEnabled = true;
  static constexpr int kYRegs = 2;  // backward version 25
  static_assert(kLines == 1 || kLines == 2, "D = 64 or 128");
  static_assert(kStageOffset % 1024 == 0 && (16 * kPitch * 4) % 1024 == 0, "boxes at swizzle phase 0");
  static_assert(kStageOffset + 2 * Base::kRows * kPitch * 4 <= BwdTmaTile<D>::kBarOffset, "inside version 11's carve");

  const CUtensorMap* map;  // tma_dx_map(dx, D, n, B heads, 16, XC)

  __device__ __forceinline__ void store(float* stage, const float (&c)[XC / 8][4], int g, int tq) const {
    // Line g kLines's address with this lane's part of the unit XOR (tq / 2 ^ (g kLines) % 8) in
    // bits 4-6 and its 8-byte half; the fragment's part (2 (i % 4) ^ i / 4) is XORed in per store
    // (one LOP3), the line offset i / 4 and the rows g + 8 are immediates.
    const uint32_t s0 = smem_u32(stage) + g * kLines * 128 + (tq & 1) * 8 + (((tq >> 1) ^ ((g * kLines) & 7)) << 4);
#pragma unroll
    for (int i = 0; i < XC / 8; ++i) {
      const uint32_t a = (s0 ^ ((((i % 4) * 2) ^ (i / 4)) << 4)) + (i / 4) * 128;
      st_shared_v2_f32(a, c[i][0], c[i][1]);
      st_shared_v2_f32(a + 8 * kLines * 128, c[i][2], c[i][3]);
    }
  }
  __device__ __forceinline__ void add(float*, int64_t bh, int64_t row0, int64_t n, int wg, const float* stage,
                                      int lane) const {
    if (lane == 0 && row0 < n) {
      tma_reduce_add_4d(map, smem_u32(stage), 0, wg * kLines, static_cast<int>(row0), static_cast<int>(bh));
      bulk_commit();
    }
  }
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// relation_kl_bwd_tma_kernel (version 11) with dX out through BwdDxTensorOut on map_dx (zeros where
// d_s != D or dx is not 16-byte aligned: then the float4 / scalar atomics of version 6 run, and the
// map is never read).
template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_tma_dx_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                  const __grid_constant__ CUtensorMap map_t,
                                  const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  bwd_tma_cta<T, D>(p, &map_s, &map_t, BwdDxTensorOut<D>{&map_dx});
#endif
}

// Version 11's kernel without dX (DxOut = BwdDxNone): the deterministic backward's dY-only pass.
template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_tma_dy_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                  const __grid_constant__ CUtensorMap map_t) {
#ifdef LINEAR_ARD_SM90A
  bwd_tma_cta<T, D, BwdDxNone<D>>(p, &map_s, &map_t);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Launches `kernel` (relation_kl_bwd_tma_dx_kernel or a dev/cuda variant of it) as version 11's
// launch plus the dx map where bwd_wgmma_cta takes the bulk path (d_s = D, dx 16-byte aligned: its
// dx_bulk; zeros elsewhere, where the CTA falls back to atomics).
template <typename T, int D>
void bwd_tma_dx_launch(void (*kernel)(RelationKLParams, CUtensorMap, CUtensorMap, CUtensorMap),
                       const RelationKLParams& p, const char* what) {
  CUtensorMap map_dx{};
  if (p.student.head_dim == D && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0) {
    map_dx = tma_dx_map(p.dx, D, p.seq_len, p.batch * p.heads, 16, BwdDxTensorOut<D>::XC);
  }
  bwd_tma_launch<T, D>(kernel, p, what, map_dx);
}

// The library's (the caller has checked tma_side_ok for both sides; dx already zeroed). With
// p.deterministic the dY-only kernel (dx need not be zeroed; the caller then runs the row-parallel
// dX pass, relation_kl_bwd_rows_wgmma_launch).
template <typename T, int D>
void relation_kl_bwd_tma_launch(const RelationKLParams& p) {
  if (p.deterministic) return bwd_tma_launch<T, D>(relation_kl_bwd_tma_dy_kernel<T, D>, p, "relation_kl_bwd_tma (dY)");
  bwd_tma_dx_launch<T, D>(relation_kl_bwd_tma_dx_kernel<T, D>, p, "relation_kl_bwd_tma_dx");
}

}  // namespace cuda
}  // namespace linear_ard

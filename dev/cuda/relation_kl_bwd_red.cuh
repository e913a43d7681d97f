// Backward versions 16 to 20 of dev/cuda: version 12 (the library's wgmma+tma backward) with its dX
// output or its row statistics changed, through the switches of bwd_wgmma_cta's DxOut
// (relation_kl_bwd_wgmma.cuh: kFromRegisters, kStatPairs, kLateStats).
//   16: each warp's finished dX rows added to global memory straight from the wgmma accumulators
//       by one 8-byte red.global.add.v2.f32 per fragment row (16 a thread and row tile at D = 128,
//       as many as version 12's staging stores), with no shared-memory staging and no TMA
//       reduce-add. In version 12 the staging stores and the TMA's read of the boxes are 64 KB of
//       shared-memory traffic a row tile and SM beside the GEMMs' operand reads (Nsight at 8K:
//       shared-memory wavefronts 61 % busy against the tensor pipe's 46 %, stores alone 26 %); the
//       adds reach L2 either way.
//   17: 16 with version 6's fallback, atomic_add_frag: the lanes tq, tq ^ 1 swap half their values
//       and each adds 4 columns by one 16-byte red.global.add.v4.f32 (8 a thread, 16 shuffles).
//   18: 12 with the row statistics read as float2 pairs (a thread's rows 2tq, 2tq + 1 are adjacent):
//       24 8-byte shared loads a row tile instead of 48 4-byte ones, off the MIO queue that the
//       exponentials (MUFU) share (Nsight at 8K: MIO throttle 0.68 of 5.80 cycles an instruction).
//   19: 16 and 18 together.
//   20: 12 with the next row tile's statistics loaded after the dX output instead of with the X
//       tiles: in 12 the dX output's proxy fence (MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S in SASS)
//       waits for those global loads in the two warps that issue them (Nsight's SASS table at 8K:
//       ~9 % of the warp samples at the fence, mostly long scoreboard, and ~5 % at the CTA barrier).
// 16, 17, 19 only where version 12 takes its TMA path (d_s = D, dx 16-byte aligned); elsewhere the
// float4 / scalar atomics of version 6, as in version 12.
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut, bwd_tma_cta, bwd_tma_launch, tma_dx_map

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// Version 12's DxOut with the row statistics as pairs (version 18).
template <int D>
struct BwdDxPairs : BwdDxTensorOut<D> {
  static constexpr bool kStatPairs = true;
};

// Version 12's DxOut with the statistics loaded after the dX output (version 20).
template <int D>
struct BwdDxLateStats : BwdDxTensorOut<D> {
  static constexpr bool kLateStats = true;
};

// The DxOut of versions 16 (kVec4 = false), 17 (true) and 19 (false, kPairs). The staging
// constants are version 12's (its area stays in the carve, unused).
template <int D, bool kVec4, bool kPairs>
struct BwdDxRed : BwdDxTensorOut<D> {
  using Base = BwdDxTensorOut<D>;
  static constexpr int XC = Base::XC;
  static constexpr bool kFromRegisters = true;
  static constexpr bool kStatPairs = kPairs;

  // Rows row (the warp's g) and row + 8 of the 16 of this warp, columns wg XC + 8i + 2tq, + 1 of
  // fragment i; dx rows are D floats (d_s = D).
  __device__ __forceinline__ void add_registers(float* dx_head, int64_t row, int64_t n, int wg,
                                                const float (&c)[XC / 8][4], int tq) const {
#pragma unroll
    for (int i = 0; i < XC / 8; ++i) {
      const int col = wg * XC + i * 8;
      if constexpr (kVec4) {
        atomic_add_frag(dx_head, D, row, n, col, D, c[i], true);
      } else {
        float* dst = dx_head + row * D + col + 2 * tq;
        if (row < n) atomicAdd(reinterpret_cast<float2*>(dst), make_float2(c[i][0], c[i][1]));
        if (row + 8 < n) atomicAdd(reinterpret_cast<float2*>(dst + 8 * D), make_float2(c[i][2], c[i][3]));
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// relation_kl_bwd_tma_dx_kernel with DxOut in place of BwdDxTensorOut (map_dx as there).
template <typename T, int D, typename DxOut>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_dxout_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                 const __grid_constant__ CUtensorMap map_t,
                                 const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  DxOut out{};
  out.map = &map_dx;
  bwd_tma_cta<T, D>(p, &map_s, &map_t, out);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// A version on the params where the library runs version 12 (the caller checked; dx zeroed), as
// relation_kl_bwd_tma_launch (non-deterministic).
template <typename T, int D, typename DxOut>
void relation_kl_bwd_dxout_launch(const RelationKLParams& p) {
  CUtensorMap map_dx{};
  if (p.student.head_dim == D && reinterpret_cast<uintptr_t>(p.dx) % 16 == 0) {
    map_dx = tma_dx_map(p.dx, D, p.seq_len, p.batch * p.heads, 16, BwdDxTensorOut<D>::XC);
  }
  bwd_tma_launch<T, D>(relation_kl_bwd_dxout_kernel<T, D, DxOut>, p, "relation_kl_bwd_dxout", map_dx);
}

}  // namespace cuda
}  // namespace linear_ard

// Backward version 20 of dev/cuda: version 12 (the library's wgmma+tma backward) with the next row
// tile's statistics (lse_s, lse_t, g of its 64 rows, loaded from global memory by warps 0-1) loaded
// after the dX output instead of with the X tiles at the top of the iteration (bwd_wgmma_cta's DxOut
// switch kLateStats, relation_kl_bwd_wgmma.cuh). In 12 the dX output's proxy fence
// (fence.proxy.async.shared::cta: MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S in SASS) waits for those loads
// in the two warps that issue them: Nsight's SASS table at 8K puts ~9 % of the warp samples at the
// fence, mostly long scoreboard, and ~5 % at the CTA barrier behind it. The statistics are read only
// at the end of the iteration either way. (Versions 16-19, dX by atomics from the accumulators and
// the statistics read as pairs, lost and were removed: dev/cuda/README.md.)
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut, bwd_tma_cta, bwd_tma_dx_launch

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// Version 12's DxOut with the statistics loaded after the dX output.
template <int D>
struct BwdDxLateStats : BwdDxTensorOut<D> {
  static constexpr bool kLateStats = true;
};

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// relation_kl_bwd_tma_dx_kernel with BwdDxLateStats (map_dx as there).
template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_late_stats_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                      const __grid_constant__ CUtensorMap map_t,
                                      const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  BwdDxLateStats<D> out{};
  out.map = &map_dx;
  bwd_tma_cta<T, D>(p, &map_s, &map_t, out);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Version 20 on the params where the library runs version 12 (the caller checked; dx zeroed), as
// relation_kl_bwd_tma_launch (non-deterministic).
template <typename T, int D>
void relation_kl_bwd_late_stats_launch(const RelationKLParams& p) {
  bwd_tma_dx_launch<T, D>(relation_kl_bwd_late_stats_kernel<T, D>, p, "relation_kl_bwd_late_stats");
}

}  // namespace cuda
}  // namespace linear_ard

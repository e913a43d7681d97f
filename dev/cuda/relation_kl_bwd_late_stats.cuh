// Backward version 20 of dev/cuda: version 12 (the library's wgmma+tma backward) with the next row
// tile's statistics (lse_s, lse_t, g of its 64 rows, loaded from global memory by warps 0-1) loaded
// after the dX output instead of with the X tiles at the top of the iteration (bwd_wgmma_cta's DxOut
// switch kLateStats, relation_kl_bwd_wgmma.cuh). In 12 the dX output's proxy fence
// (fence.proxy.async.shared::cta: MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S in SASS) waits for those loads
// in the two warps that issue them: Nsight's SASS table at 8K puts ~9 % of the warp samples at the
// fence, mostly long scoreboard, and ~5 % at the CTA barrier behind it. The statistics are read only
// at the end of the iteration either way. (Versions 16-19, dX by atomics from the accumulators and
// the statistics read as pairs, lost and were removed: dev/cuda/README.md.) The kernel:
// relation_kl_bwd_dx_variant.cuh.
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// Version 12's DxOut with the statistics loaded after the dX output.
template <int D>
struct BwdDxLateStats : BwdDxTensorOut<D> {
  static constexpr bool kLateStats = true;
};

}  // namespace cuda
}  // namespace linear_ard

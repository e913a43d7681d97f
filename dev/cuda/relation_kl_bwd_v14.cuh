// Backward version 14 of dev/cuda: the library's backward (version 12: X tiles by TMA, dX by TMA
// tensor reduce-add) with bwd_wgmma_cta's kSplitRows: each row tile's S^T in two 32-row halves
// (m64n32k16), each half its own wgmma group, so that the tensor cores compute the second half's
// S^T while the first half's dZ is made (two exponentials a logit) and the first half's dY while the
// second half's is. Version 12 waits for the whole S^T before any exponential and for dY before the
// next tile, and its two warpgroups run in step (one CTA barrier a tile), so neither overlaps the
// other's exponentials either. Same registers for the accumulators; D = 64 and 128 (TMA).
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut, bwd_tma_cta, bwd_tma_dx_launch

namespace linear_ard {
namespace cuda {

template <typename T, int D>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_v14_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                               const __grid_constant__ CUtensorMap map_t, const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  bwd_tma_cta<T, D, BwdDxTensorOut<D>, true>(p, &map_s, &map_t, BwdDxTensorOut<D>{&map_dx});
#endif
}

// As relation_kl_bwd_tma_launch without its deterministic pass (the caller has checked what it
// needs: both sides readable by TMA, D = 64 or 128).
template <typename T, int D>
void relation_kl_bwd_v14_launch(const RelationKLParams& p) {
  bwd_tma_dx_launch<T, D>(relation_kl_bwd_v14_kernel<T, D>, p, "relation_kl_bwd_v14");
}

}  // namespace cuda
}  // namespace linear_ard

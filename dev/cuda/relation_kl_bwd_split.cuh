// Backward versions 14 and 15 of dev/cuda: the library's backward (version 12: X tiles by TMA, dX by
// TMA tensor reduce-add) with a row tile's work split between wgmma groups (bwd_wgmma_cta's
// BwdSplit). 14 (kRows): each row tile's S^T in two 32-row halves (m64n32k16), each half its own
// group, so that the tensor cores compute the second half's S^T while the first half's dZ is made
// (two exponentials a logit) and the first half's dY while the second half's is. 15 (kDzDy): S^T
// of the whole tile as 12 (m64n64k16, whose operands both come from shared memory at half of
// m64n32's bytes per MAC), then dZ and dY in halves, the second half's dZ beside the first half's dY.
// Version 12 waits for the whole S^T before any exponential and for dY before the next tile, and its
// two warpgroups run in step (one CTA barrier a tile), so neither overlaps the other's exponentials
// either. Same registers for the accumulators; D = 64 and 128 (TMA).
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut, BwdSplit, bwd_tma_cta, bwd_tma_dx_launch

namespace linear_ard {
namespace cuda {

template <typename T, int D, BwdSplit kSplit>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_split_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                 const __grid_constant__ CUtensorMap map_t, const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  bwd_tma_cta<T, D, BwdDxTensorOut<D>, kSplit>(p, &map_s, &map_t, BwdDxTensorOut<D>{&map_dx});
#endif
}

// As relation_kl_bwd_tma_launch without its deterministic pass (the caller has checked what it
// needs: both sides readable by TMA, D = 64 or 128).
template <typename T, int D, BwdSplit kSplit>
void relation_kl_bwd_split_launch(const RelationKLParams& p) {
  bwd_tma_dx_launch<T, D>(relation_kl_bwd_split_kernel<T, D, kSplit>, p,
                          kSplit == BwdSplit::kRows ? "relation_kl_bwd_v14" : "relation_kl_bwd_v15");
}

}  // namespace cuda
}  // namespace linear_ard

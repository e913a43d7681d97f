// The kernel of dev/cuda's backward versions 12 and 24: the library's wgmma+tma backward (version 25,
// relation_kl_bwd_tma_dx.cuh) with another DxOut of bwd_wgmma_cta, differing from the library's only
// by its switch kYRegs (relation_kl_bwd_y_regs.cuh). A DxOut template parameter on the library's
// kernel would rename the library's kernels, so the six-line kernel is repeated here
// (dev/cuda/README.md, "Kept copies").
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut, bwd_tma_cta, bwd_tma_dx_launch

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// relation_kl_bwd_tma_dx_kernel with DxOut = Out (a BwdDxTensorOut<D> with other switches; map_dx as
// there).
template <typename T, int D, typename Out>
__global__ void __launch_bounds__(BwdWgmmaTile<D>::kThreads, 1)
    relation_kl_bwd_dx_variant_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                      const __grid_constant__ CUtensorMap map_t,
                                      const __grid_constant__ CUtensorMap map_dx) {
#ifdef LINEAR_ARD_SM90A
  Out out{};
  out.map = &map_dx;
  bwd_tma_cta<T, D>(p, &map_s, &map_t, out);
#endif
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// The variant with DxOut = Out on the params where the library runs version 25 (the caller checked;
// dx zeroed), as relation_kl_bwd_tma_launch (non-deterministic); `what` names it in launch errors.
template <typename T, int D, typename Out>
void relation_kl_bwd_dx_variant_launch(const RelationKLParams& p, const char* what) {
  bwd_tma_dx_launch<T, D>(relation_kl_bwd_dx_variant_kernel<T, D, Out>, p, what);
}

}  // namespace cuda
}  // namespace linear_ard

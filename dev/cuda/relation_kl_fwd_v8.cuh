// Forward version 8 of dev/cuda (the library's sm_90a forward for D = 64, 128 until version 9
// replaced it, 2026-11-29): the library's TMA kernel (src/core/cuda/relation_kl_fwd_tma.cuh) with
// both of version 9's switches off: wgmma descriptors rebuilt in ordinary registers for every wgmma,
// the scales applied to every logit before the update.
#pragma once

#include "relation_kl_fwd_tma.cuh"  // defines: relation_kl_fwd_tma_kernel, fwd_tma_run

namespace linear_ard {
namespace cuda {

// The caller has checked what relation_kl_fwd_tma_launch needs (tma_side_ok for both sides, D = 64
// or 128).
template <typename T, int D>
void relation_kl_fwd_v8_launch(const RelationKLParams& p) {
  fwd_tma_run<T, D>(p, relation_kl_fwd_tma_kernel<T, D, false, false>);
}

}  // namespace cuda
}  // namespace linear_ard

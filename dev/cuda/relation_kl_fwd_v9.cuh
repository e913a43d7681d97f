// Forward version 9: version 8 (src/core/cuda/relation_kl_fwd_tma.cuh, the library's sm_90a forward
// for D = 64, 128) with a tighter instruction stream in the consumers' loop: the wgmma descriptors
// from warp-uniform values (uniform registers, one UIADD3 per wgmma instead of a 64-bit add and four
// R2UR), and, for positive scales, the scales folded into the exponent arguments of unmasked tiles
// (fwd_pipe_update_folded). One kernel body with version 8: fwd_tma_cta's switches.
#pragma once

#include <cmath>

#include "relation_kl_fwd_tma.cuh"  // defines: fwd_tma_cta, fwd_tma_run, FwdTmaTile

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// fwd_tma_cta with uniform descriptors; kFoldScale: both scales > 0 (fwd_fold_ok).
template <typename T, int D, bool kFoldScale>
__global__ void __launch_bounds__(FwdTmaTile<D>::kThreads, 1)
    relation_kl_fwd_v9_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                              const __grid_constant__ CUtensorMap map_t) {
  fwd_tma_cta<T, D, true, kFoldScale>(p, map_s, map_t);
}

// ------------------------------------------------------------------------------------------------
// kernel launchers

// Whether the scales may be folded: both log2-unit scales (as the kernel computes them) positive
// and finite, and their ratio a normal float (fwd_pipe_update_folded's rho).
inline bool fwd_fold_ok(const RelationKLParams& p) {
  const float cs = p.student.scale * kLog2e, ct = p.teacher.scale * kLog2e;
  return cs > 0.f && ct > 0.f && std::isfinite(cs) && std::isfinite(ct) && std::isnormal(cs / ct);
}

// The caller has checked what relation_kl_fwd_tma_launch needs (tma_side_ok for both sides, D = 64
// or 128); a scale <= 0 runs the unfolded update.
template <typename T, int D>
void relation_kl_fwd_v9_launch(const RelationKLParams& p) {
  if (fwd_fold_ok(p)) {
    fwd_tma_run<T, D>(p, relation_kl_fwd_v9_kernel<T, D, true>);
  } else {
    fwd_tma_run<T, D>(p, relation_kl_fwd_v9_kernel<T, D, false>);
  }
}

}  // namespace cuda
}  // namespace linear_ard

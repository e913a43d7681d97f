// Declarations of the relation-KL kernel launchers; each (type, head-dim bucket) pair is
// instantiated in its own relation_kl_{fwd,bwd}_d<D>.cu so the build parallelises.
#pragma once

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams

namespace linear_ard {
namespace cuda {

// Tensor-core kernels for 16-bit inputs (T = __nv_bfloat16 or __half), D = padded head-dim bucket
// (64, 96, 128, 256); vec_*: that side's rows are 16-byte aligned (cp.async tile copies).
template <typename T, int D>
void relation_kl_fwd_launch(const RelationKLParams& p, bool vec_s, bool vec_t);
template <typename T, int D>
void relation_kl_bwd_launch(const RelationKLParams& p, bool vec_s, bool vec_t);
// The deterministic backward's row-parallel dX pass (RelationKLParams::deterministic), after the
// column-parallel launcher above (or the wgmma / TMA one), which then computes dY alone.
template <typename T, int D>
void relation_kl_bwd_rows_launch(const RelationKLParams& p, bool vec_s, bool vec_t);

// The warpgroup-MMA forward and backward for D <= 128 (relation_kl_cuda.cu picks them on sm_90a;
// real code only in their sm_90a image). relation_kl_sm90a_available(): the current device is
// compute capability 9.0 and can load that image (asked once per device, without a launch).
template <typename T, int D>
void relation_kl_fwd_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t);
template <typename T, int D>
void relation_kl_bwd_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t);
// The sm_90a forward (key tiles by TMA) and backward (X tiles by TMA) for D = 64 or 128, where
// tma_side_ok holds for both sides (relation_kl_tma_map.cuh); elsewhere the wgmma kernels above.
template <typename T, int D>
void relation_kl_fwd_tma_launch(const RelationKLParams& p);
template <typename T, int D>
void relation_kl_bwd_tma_launch(const RelationKLParams& p);
// The row-parallel dX pass on warpgroup MMA (D <= 128, sm_90a), after the wgmma or TMA dY-only pass.
template <typename T, int D>
void relation_kl_bwd_rows_wgmma_launch(const RelationKLParams& p, bool vec_s, bool vec_t);
bool relation_kl_sm90a_available();

// SIMT kernels for any element type T (float, __nv_bfloat16, __half) and head dims up to
// kSimtMaxHeadDim.
constexpr int kSimtMaxHeadDim = 256;
template <typename T>
void relation_kl_simt_fwd_launch(const RelationKLParams& p);
template <typename T>
void relation_kl_simt_bwd_launch(const RelationKLParams& p);

}  // namespace cuda
}  // namespace linear_ard

// Internal entry points of the CUDA relation-KL that name the kernels to run, for the checks that
// compare them (tests/core/relation_kl_ops.cpp) and the dev harness (dev/cuda/). The public
// relation_kl_{forward,backward}_cuda of linear_ard/core/relation_kl.h run kDefault.
#pragma once

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams

namespace linear_ard {

enum class RelationKLCudaKernels {
  // By dtype, head dim and device: bf16/fp16 with d <= 256 on tensor cores (forward and backward on
  // warpgroup MMA for D <= 128 on an sm_90a device, mma.sync otherwise), everything else SIMT.
  kDefault,
  // The mma.sync forward and backward (bf16/fp16, d <= 256): what devices without sm_90a run.
  kMmaSync,
  // The SIMT kernels (fp32, bf16, fp16; d <= 256): the fp32 path and the fallback.
  kSimt,
};

// Throws std::invalid_argument when the kernels cannot take the params (kMmaSync with fp32 inputs).
void relation_kl_forward_cuda_kernels(const RelationKLParams& p, RelationKLCudaKernels kernels);
void relation_kl_backward_cuda_kernels(const RelationKLParams& p, RelationKLCudaKernels kernels);

// The forward / backward kernel `kernels` runs for these params on the current device: "wgmma",
// "mma.sync" or "simt" (for logs and for the checks' choice of paths). Today both passes choose
// alike: wgmma for both or for neither.
const char* relation_kl_forward_cuda_kernel_name(const RelationKLParams& p, RelationKLCudaKernels kernels);
const char* relation_kl_backward_cuda_kernel_name(const RelationKLParams& p, RelationKLCudaKernels kernels);

// The params with the launch order resolved as the library's tensor-core kernels get them
// (RelationKLParams::cta_head_group 0 = the library's choice), for dev/cuda versions launched
// outside the library that are timed against it.
RelationKLParams relation_kl_cuda_launch_order(const RelationKLParams& p);

}  // namespace linear_ard

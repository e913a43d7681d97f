// relation_kl_sm90a_available: whether the current device runs the sm_90a image of the wgmma
// kernels (sm90a/CMakeLists.txt compiles this file, like them, for sm_90a alone).
#include <cuda_runtime.h>

#include "relation_kl_common.cuh"  // defines: cuda_check
#include "relation_kl_launch.h"    // defines: relation_kl_sm90a_available

namespace linear_ard {
namespace cuda {

namespace {
// Never launched: only asked whether the device can load its (sm_90a-only) image.
__global__ void relation_kl_sm90a_probe() {}
}  // namespace

bool relation_kl_sm90a_available() {
  static int cached[64];  // per device: 0 unknown, 1 yes, 2 no
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev < 0 || dev >= 64) return false;
  if (cached[dev] == 0) {
    int major = 0, minor = 0;
    cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "compute capability");
    cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "compute capability");
    int found = 0;
    if (major == 9 && minor == 0) {
      // The probe is compiled for sm_90a alone: an image the device can load means wgmma is there.
      // An attribute query launches nothing and synchronises nothing (safe inside graph capture).
      cudaFuncAttributes attr{};
      if (cudaFuncGetAttributes(&attr, relation_kl_sm90a_probe) == cudaSuccess) found = 1;
      (void)cudaGetLastError();  // a missing image is an answer, not an error to leave behind
    }
    cached[dev] = found == 1 ? 1 : 2;
  }
  return cached[dev] == 1;
}

}  // namespace cuda
}  // namespace linear_ard

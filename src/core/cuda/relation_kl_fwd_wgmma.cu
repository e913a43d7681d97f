// Instantiates the forward "wgmma" variant (sm_90a; D = 64, 96, 128; bf16 and fp16) and the probe
// that tells the host whether the device runs this file's sm_90a image (sm90a/CMakeLists.txt builds
// it for sm_90a alone; the probe also covers a build that adds other images).
#include "relation_kl_fwd_wgmma.cuh"  // defines: relation_kl_fwd_wgmma_launch

namespace linear_ard {
namespace cuda {

namespace {
// Writes 1 when the loaded image is the sm_90a one (wgmma compiled in), else 0.
__global__ void relation_kl_sm90a_probe(int* out) {
#ifdef LINEAR_ARD_SM90A
  *out = 1;
#else
  *out = 0;
#endif
}
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

template void relation_kl_fwd_wgmma_launch<__nv_bfloat16, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_wgmma_launch<__half, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_wgmma_launch<__nv_bfloat16, 96>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_wgmma_launch<__half, 96>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_wgmma_launch<__nv_bfloat16, 128>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_wgmma_launch<__half, 128>(const RelationKLParams&, bool, bool);

}  // namespace cuda
}  // namespace linear_ard

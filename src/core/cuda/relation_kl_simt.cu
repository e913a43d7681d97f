// Instantiates the SIMT relation-KL kernels for fp32, bf16 and fp16 inputs.
#include "relation_kl_simt.cuh"  // defines: relation_kl_simt_fwd_launch, relation_kl_simt_bwd_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_simt_fwd_launch<float>(const RelationKLParams&);
template void relation_kl_simt_fwd_launch<__nv_bfloat16>(const RelationKLParams&);
template void relation_kl_simt_fwd_launch<__half>(const RelationKLParams&);
template void relation_kl_simt_bwd_launch<float>(const RelationKLParams&);
template void relation_kl_simt_bwd_launch<__nv_bfloat16>(const RelationKLParams&);
template void relation_kl_simt_bwd_launch<__half>(const RelationKLParams&);
}  // namespace cuda
}  // namespace linear_ard

// Instantiates the sm_90a backward with TMA X tiles and dX by TMA reduce-add (D = 64, 128; bf16 and fp16).
#include "relation_kl_bwd_tma_dx.cuh"  // defines: relation_kl_bwd_tma_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_bwd_tma_launch<__nv_bfloat16, 64>(const RelationKLParams&);
template void relation_kl_bwd_tma_launch<__half, 64>(const RelationKLParams&);
template void relation_kl_bwd_tma_launch<__nv_bfloat16, 128>(const RelationKLParams&);
template void relation_kl_bwd_tma_launch<__half, 128>(const RelationKLParams&);
}  // namespace cuda
}  // namespace linear_ard

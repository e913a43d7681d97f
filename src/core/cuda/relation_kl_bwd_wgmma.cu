// Instantiates the backward "wgmma" and "wgmma2" variants (sm_90a; D = 64, 96, 128; bf16 and fp16).
#include "relation_kl_bwd_wgmma.cuh"  // defines: relation_kl_bwd_wgmma_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 64, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 64, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 96, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 96, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 128, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 128, false>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 64, true>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 64, true>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 96, true>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 96, true>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__nv_bfloat16, 128, true>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_wgmma_launch<__half, 128, true>(const RelationKLParams&, bool, bool);
}  // namespace cuda
}  // namespace linear_ard

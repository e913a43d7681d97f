// Instantiates the deterministic backward's row-parallel dX pass on warpgroup MMA (sm_90a; D = 64, 96,
// 128; bf16 and fp16).
#include "relation_kl_bwd_rows_wgmma.cuh"  // defines: relation_kl_bwd_rows_wgmma_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_bwd_rows_wgmma_launch<__nv_bfloat16, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_wgmma_launch<__half, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_wgmma_launch<__nv_bfloat16, 96>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_wgmma_launch<__half, 96>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_wgmma_launch<__nv_bfloat16, 128>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_wgmma_launch<__half, 128>(const RelationKLParams&, bool, bool);
}  // namespace cuda
}  // namespace linear_ard

// Instantiates the tensor-core relation-KL bwd for head-dim bucket 256 (bf16 and fp16): the
// column-parallel kernel and the deterministic backward's row-parallel dX pass.
#include "relation_kl_bwd.cuh"       // defines: relation_kl_bwd_launch
#include "relation_kl_bwd_rows.cuh"  // defines: relation_kl_bwd_rows_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_bwd_launch<__nv_bfloat16, 256>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_launch<__half, 256>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_launch<__nv_bfloat16, 256>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_launch<__half, 256>(const RelationKLParams&, bool, bool);
}  // namespace cuda
}  // namespace linear_ard

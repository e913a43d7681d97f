// Instantiates the tensor-core relation-KL bwd for head-dim bucket 64 (bf16 and fp16): the
// column-parallel kernel and the deterministic backward's row-parallel dX pass.
#include "relation_kl_bwd.cuh"       // defines: relation_kl_bwd_launch
#include "relation_kl_bwd_rows.cuh"  // defines: relation_kl_bwd_rows_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_bwd_launch<__nv_bfloat16, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_launch<__half, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_launch<__nv_bfloat16, 64>(const RelationKLParams&, bool, bool);
template void relation_kl_bwd_rows_launch<__half, 64>(const RelationKLParams&, bool, bool);
}  // namespace cuda
}  // namespace linear_ard

// Instantiates the tensor-core relation-KL fwd for head-dim bucket 256 (bf16 and fp16).
#include "relation_kl_fwd.cuh"  // defines: relation_kl_fwd_launch

namespace linear_ard {
namespace cuda {
template void relation_kl_fwd_launch<__nv_bfloat16, 256>(const RelationKLParams&, bool, bool);
template void relation_kl_fwd_launch<__half, 256>(const RelationKLParams&, bool, bool);
}  // namespace cuda
}  // namespace linear_ard

// Forward versions 11, 12 and 15, 16 of dev/cuda: the library's fixed-stabilizer forward with three
// or two consumer warpgroups, its first pass's logit GEMMs reading their A operand, the warpgroup's
// 64 rows of X of both models, from shared memory (11: three warpgroups, 12: two) or from registers
// (16: three, D = 64 only; 15: two), loaded once a CTA as wgmma A fragments after the X tiles'
// barrier (fwd_pingpong_consume's kXRegs, relation_kl_fwd_wgmma.cuh). The library runs 16 at D = 64
// and 11 at D = 128 from n = 8192, 12 below. The CTAs the first pass flags are rerun by the
// library's online kernel (fwd_diag_launch_groups's second launch).
// Why: a wgmma.m64n64k16 with both operands in shared memory reads 4 KB for 65,536 multiply-adds, 128
// bytes a clock at the tensor cores' 2,048 multiply-adds a clock an SM, all the shared memory gives;
// a 64-key tile step of version 11 reads 192 KB (three warpgroups x two models x (X 16 KB + Y 16 KB)
// at D = 128) and TMA writes 32 KB, 1,792 clocks at 128 bytes a clock against 1,536 for the tensor
// cores and 1,536 for the ex2 unit. X is the same for all of a CTA's key tiles; from registers a step
// reads 96 KB (version 16) or 64 KB (15, two warpgroups, for 2/3 of the rows). Registers: +32 a
// thread and model at D = 128, +16 at D = 64; three warpgroups leave 128 registers a thread, which
// at D = 128 makes ptxas spill and serialize the wgmmas, so 16 runs at D = 64 only. Version 19 (11
// with a producer warpgroup: fwd_tma_cta's kProducerGroup, setmaxnreg 24 / 160) has the room for the
// student's X rows at D = 128.
#pragma once

#include "relation_kl_fwd_tma.cuh"  // defines: fwd_tma_cta, FwdTmaTile, fwd_diag_launch_groups

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels

// relation_kl_fwd_diag_kernel's first pass (kPass = 0) with kXRegs given: the fixed stabilizers, a
// CTA whose rows overflowed setting its flag in redo.
// kXRegs: how many models' X rows from registers (fwd_pingpong_consume's); kProducerGroup:
// fwd_tma_cta's (version 19).
template <typename T, int D, int kWarpgroups, int kXRegs, bool kProducerGroup = false>
__global__ void __launch_bounds__(FwdTmaTile<D, kWarpgroups, kProducerGroup>::kThreads, 1)
    relation_kl_fwd_x_regs_kernel(const RelationKLParams p, const __grid_constant__ CUtensorMap map_s,
                                  const __grid_constant__ CUtensorMap map_t, int* redo) {
  const CtaPlace cta = cta_place(p.cta_head_group);
  int* flag = redo + (cta.batch * p.heads + cta.head) * int64_t(gridDim.x) + cta.rank;
  fwd_tma_cta<T, D, true, true, kWarpgroups, true, kXRegs, kProducerGroup>(p, map_s, map_t, flag);
}

}  // namespace cuda
}  // namespace linear_ard

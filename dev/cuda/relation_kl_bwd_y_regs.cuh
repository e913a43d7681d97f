// Backward versions 12 and 24 of dev/cuda, beside the library's wgmma+tma backward, version 25: the
// same kernel (relation_kl_bwd_dx_variant.cuh) with the S^T wgmma's A operand, the warpgroup's 64
// keys of Y, read from shared memory for both models (12, the library's until 2026-12-05) or from
// registers for the student's alone (24), where 25 reads both models' keys from registers
// (wgmma_m64n64k16_rs), loaded once a CTA as wgmma A fragments (bwd_wgmma_cta's DxOut switch
// kYRegs, relation_kl_bwd_wgmma.cuh).
// Why: a wgmma.m64n64k16 with both operands in shared memory reads 4 KB for 65,536 multiply-adds,
// which at the tensor cores' 2,048 a clock an SM is 128 bytes a clock, all the shared memory gives.
// Version 12's row tile moves 336 KB through shared memory at D = 128 (S^T 128 KB, dX 64 KB, dY 32 KB,
// the dX staging's stores and the TMA's reads of them 64 KB, dZ^T 16 KB, the X tiles by TMA 32 KB):
// 2,688 clocks at 128 bytes a clock, against Nsight's 2,740 shared-memory wavefronts an iteration at
// 8K (61 % of 4,480 cycles); its tensor cores need 2,048 (docs/kernel.md, "Where the time
// goes"). The keys' tiles are the same for all of a CTA's row tiles, so S^T's A reads (64 KB of the
// 128) repeat the same bytes every iteration: 24 saves 32 KB a row tile (+32 registers a thread at
// D = 128), 25 64 KB (+64).
#pragma once

#include "relation_kl_bwd_tma_dx.cuh"  // defines: BwdDxTensorOut

namespace linear_ard {
namespace cuda {

// ------------------------------------------------------------------------------------------------
// CUDA kernels' building blocks

// The library's DxOut with kModels key tiles (0: none, version 12; 1: the student's, 24) as S^T's A
// from registers.
template <int D, int kModels>
struct BwdDxYRegs : BwdDxTensorOut<D> {
  static constexpr int kYRegs = kModels;
};

// The DxOuts of versions 12 and 24 by head dim alone (relation_kl_bwd_dx_variant_launch's Out).
template <int D>
using BwdDxKeysShared = BwdDxYRegs<D, 0>;
template <int D>
using BwdDxYRegsStudent = BwdDxYRegs<D, 1>;

}  // namespace cuda
}  // namespace linear_ard

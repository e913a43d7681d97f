// Probe: what the packed half-precision exponentials compile to on sm_90a. Built only by
// dev/cuda/sass_dump.sh (not part of any target):
//   dev/cuda/sass_dump.sh dev/cuda/ex2_packed.cu | grep -E 'Function|MUFU'
// ex2.approx.f16x2 and ex2.approx.ftz.bf16x2 each become two MUFU.EX2.F16 / MUFU.EX2.BF16, one a
// half (plus the F2FP pack and the unpacking), against one MUFU.EX2 an fp32 exponential: on sm_90a
// the packed forms do not halve the ex2 unit's work, so they are no lever for the relation-KL
// kernels' exponentials (docs/kernel.md, "Where the time goes").
#include <cuda_fp16.h>

extern "C" __global__ void ex2_f32(const float* a, float* o) {
  const int i = threadIdx.x;
  float r0, r1;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r0) : "f"(a[i]));
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r1) : "f"(a[i + 256]));
  o[i] = r0 + r1;
}

extern "C" __global__ void ex2_f16x2(const float* a, float* o) {
  const int i = threadIdx.x;
  unsigned packed, r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(a[i + 256]), "f"(a[i]));
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(packed));
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&r));
  o[i] = f.x + f.y;
}

extern "C" __global__ void ex2_bf16x2(const float* a, float* o) {
  const int i = threadIdx.x;
  unsigned packed, r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(a[i + 256]), "f"(a[i]));
  asm("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(r) : "r"(packed));
  o[i] = __uint_as_float(r << 16) + __uint_as_float(r & 0xffff0000u);
}

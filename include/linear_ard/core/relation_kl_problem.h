// RelationKLProblem: random relation-KL inputs with owned storage, for tests and benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "linear_ard/core/relation_kl.h"  // defines: RelationKLParams, DType

namespace linear_ard {

enum class KeyMaskKind : int32_t {
  kNone = 0,     // no mask (key_mask == nullptr)
  kRandom = 1,   // each key visible with probability 0.8
  kLeading = 2,  // the first max(1, n / 8) keys are padding: with causal, early rows see nothing
};

struct RelationKLProblemSpec {
  int64_t batch = 1;
  int32_t heads = 1;
  int64_t seq_len = 1;
  int32_t heads_y_student = 1;
  int32_t heads_y_teacher = 1;
  int32_t dim_student = 64;
  int32_t dim_teacher = 64;
  DType dtype = DType::kF32;
  bool causal = false;
  bool self_relation = true;  // Y is X for both models (needs heads_y == heads); gradient folded into dx
  bool strided = false;       // store [B, n, H, d + 3] and view it as [B, H, n, d]
  KeyMaskKind mask = KeyMaskKind::kNone;
  bool last_batch_masked = false;  // every key of the last batch item is padding
  // Logits are about N(0, logit_std^2) (scale = 1/sqrt(d), entries N(0, logit_std)), so a few reach
  // 4 logit_std.
  double logit_std = 1.0;
  // When >= 0 and the dims agree, the student's X and Y are the teacher's plus N(0, (noise sigma)^2)
  // with sigma the entries' std, so KL is small as in distillation; < 0 draws them independently.
  double student_noise = -1.0;
  // The teacher's logit scale -1/sqrt(d) instead of 1/sqrt(d) (relation_kl_check takes any finite,
  // nonzero scale; the sm_90a forward folds only positive ones into its exponent arguments).
  bool negative_teacher_scale = false;
  uint64_t seed = 1;
};

// An output or gradient buffer of the operator: fp32, or fp64 for kF64 problems (the header's rule).
class OperatorBuffer {
 public:
  void assign(DType dtype, size_t count, double value);
  float* data() { return f64_.empty() ? f32_.data() : reinterpret_cast<float*>(f64_.data()); }
  size_t size() const { return f64_.empty() ? f32_.size() : f64_.size(); }
  double operator[](size_t i) const { return f64_.empty() ? double(f32_[i]) : f64_[i]; }
  void set(size_t i, double value);
  std::vector<double> values() const;
  bool operator==(const OperatorBuffer& other) const { return f32_ == other.f32_ && f64_ == other.f64_; }

 private:
  std::vector<float> f32_;
  std::vector<double> f64_;
};

// Owns inputs (stored in spec.dtype, values rounded to it), mask, upstream gradient and outputs.
class RelationKLProblem {
 public:
  explicit RelationKLProblem(const RelationKLProblemSpec& spec);
  RelationKLProblem(const RelationKLProblem&) = delete;
  RelationKLProblem& operator=(const RelationKLProblem&) = delete;

  const RelationKLProblemSpec& spec() const { return spec_; }
  // Params pointing into this problem's storage (outputs included).
  RelationKLParams& params() { return params_; }
  // Overwrites element [b, head, row, k] of one input (X, or Y when `y`, of the teacher or the
  // student), rounded to the problem's dtype: plants NaN, Inf or huge values. For a self-relation X
  // and Y are one tensor.
  void set_input(bool teacher, bool y, int64_t b, int32_t head, int64_t row, int32_t k, double value);

  OperatorBuffer kl, lse_student, lse_teacher, grad_kl, dx, dy;  // dy empty for a self-relation

 private:
  struct Tensor {
    std::vector<unsigned char> bytes;
    int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  };
  Tensor make_tensor(int32_t heads, int32_t dim, const std::vector<double>& values) const;
  void fill_side(RelationSide& side, Tensor& x, Tensor& y, int32_t heads_y, int32_t dim,
                 const std::vector<double>& x_values, const std::vector<double>& y_values);

  RelationKLProblemSpec spec_;
  Tensor x_s_, y_s_, x_t_, y_t_;
  std::vector<uint8_t> mask_;
  RelationKLParams params_;
};

}  // namespace linear_ard

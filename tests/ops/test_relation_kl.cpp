// relation_kl's forward (kl, LSEs) and autograd backward against relation_kl_dense on random
// inputs: odd n, grouped heads, causal and key masks with empty rows, self and cross relations,
// strided views, fp32/fp64/bf16/fp16.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <random>
#include <string>

#include "linear_ard/ops/relation_kl.h"  // defines: relation_kl, relation_kl_backward
#include "relation_kl_reference.h"       // defines: relation_kl_dense, max_abs_diff

namespace linear_ard::ops::testing {
namespace {

enum class Layout {
  kContiguous,     // [B, H, n, d]
  kSequenceMajor,  // a transposed view of [B, n, H, d], as attention projections come out
  kStridedLastDim  // a transposed view of [B, H, d, n]: the op copies it
};

enum class Mask {
  kNone,
  kPadded,  // random padding; one batch item fully padded, another with leading padding
};

struct Case {
  std::string name;
  int64_t batch, heads, heads_y_s, heads_y_t, n, d_s, d_t;
  bool cross;  // y_s and y_t given (else self-relation)
  bool causal;
  Mask mask;
  at::ScalarType dtype;
  Layout layout;
  std::optional<double> scale_s, scale_t;
};

// A differentiable leaf in its storage layout and the [B, H, n, d] view the op receives.
struct Operand {
  at::Tensor leaf;
  at::Tensor view;
  Layout layout;

  at::Tensor as_view(const at::Tensor& t) const {
    switch (layout) {
      case Layout::kSequenceMajor: return t.transpose(1, 2);
      case Layout::kStridedLastDim: return t.transpose(2, 3);
      case Layout::kContiguous: break;
    }
    return t;
  }
};

Operand operand_make(int64_t batch, int64_t heads, int64_t n, int64_t d, const Case& c,
                     bool requires_grad) {
  std::vector<int64_t> shape = {batch, heads, n, d};
  if (c.layout == Layout::kSequenceMajor) shape = {batch, n, heads, d};
  if (c.layout == Layout::kStridedLastDim) shape = {batch, heads, d, n};
  Operand op{at::randn(shape, at::kDouble).to(c.dtype), {}, c.layout};
  op.leaf.requires_grad_(requires_grad);
  op.view = op.as_view(op.leaf);
  return op;
}

at::Tensor key_mask_make(const Case& c) {
  at::Tensor mask = at::rand({c.batch, c.n}) > 0.3;
  if (c.batch > 1) {
    mask[0].fill_(false);
    mask[1].slice(0, 0, std::min<int64_t>(5, c.n)).fill_(false);
  }
  return mask;
}

// The rule of docs/architecture.md (from FlashAttention): the op's error against the fp64 oracle may not
// exceed twice the error of a dense PyTorch implementation in the inputs' dtype. The floor covers a
// baseline that happens to be exact (for fp64 inputs it is the oracle itself): fp32 accumulation
// over n <= 97 keys of O(10) logits stays within ~1e-5 of the largest value; fp64 accumulation
// (fp64 inputs) within ~1e-13, so 1e-10.
double tolerance(double baseline_error, const at::Tensor& reference, at::ScalarType dtype) {
  const double largest = reference.abs().max().item<double>();
  const double floor = dtype == at::kDouble ? 1e-10 : 1e-5;
  return 2.0 * baseline_error + floor * std::max(1.0, largest);
}

class RelationKLTest : public ::testing::TestWithParam<Case> {};

TEST_P(RelationKLTest, MatchesDenseAutograd) {
  const Case& c = GetParam();
  const uint64_t seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  at::manual_seed(seed);

  const Operand x_s = operand_make(c.batch, c.heads, c.n, c.d_s, c, true);
  const Operand x_t = operand_make(c.batch, c.heads, c.n, c.d_t, c, false);
  std::optional<Operand> y_s, y_t;
  if (c.cross) {
    y_s = operand_make(c.batch, c.heads_y_s, c.n, c.d_s, c, true);
    y_t = operand_make(c.batch, c.heads_y_t, c.n, c.d_t, c, false);
  }
  const std::optional<at::Tensor> y_s_view =
      y_s ? std::optional<at::Tensor>(y_s->view) : std::nullopt;
  const std::optional<at::Tensor> y_t_view =
      y_t ? std::optional<at::Tensor>(y_t->view) : std::nullopt;
  const std::optional<at::Tensor> key_mask =
      c.mask == Mask::kPadded ? std::optional<at::Tensor>(key_mask_make(c)) : std::nullopt;

  auto [kl, lse_s, lse_t] =
      relation_kl(x_s.view, y_s_view, x_t.view, y_t_view, key_mask, c.causal, c.scale_s, c.scale_t);
  ASSERT_EQ(kl.scalar_type(), c.dtype == at::kDouble ? at::kDouble : at::kFloat);
  ASSERT_EQ(kl.sizes(), at::IntArrayRef({c.batch, c.heads, c.n}));
  const at::Tensor grad_kl = at::randn({c.batch, c.heads, c.n});
  kl.backward(grad_kl);
  ASSERT_EQ(x_s.leaf.grad().scalar_type(), c.dtype);

  // The operator holds its scales in fp32 (RelationSide::scale), fp64 inputs included.
  const double scale_s = static_cast<float>(c.scale_s.value_or(1.0 / std::sqrt(double(c.d_s))));
  const double scale_t = static_cast<float>(c.scale_t.value_or(1.0 / std::sqrt(double(c.d_t))));
  const DenseRelationKL oracle = relation_kl_dense(x_s.view, y_s_view, x_t.view, y_t_view, key_mask,
                                                   c.causal, scale_s, scale_t, grad_kl, at::kDouble);
  const DenseRelationKL baseline = relation_kl_dense(
      x_s.view, y_s_view, x_t.view, y_t_view, key_mask, c.causal, scale_s, scale_t, grad_kl, c.dtype);

  auto expect_close = [&c](const char* what, const at::Tensor& got, const at::Tensor& oracle_value,
                         const at::Tensor& baseline_value) {
    const double error = max_abs_diff(got, oracle_value);
    const double allowed = tolerance(max_abs_diff(baseline_value, oracle_value), oracle_value, c.dtype);
    EXPECT_LE(error, allowed) << what;
  };
  expect_close("kl", kl, oracle.kl, baseline.kl);
  expect_close("lse_s", lse_s, oracle.lse_s, baseline.lse_s);
  expect_close("lse_t", lse_t, oracle.lse_t, baseline.lse_t);
  expect_close("dx_s", x_s.as_view(x_s.leaf.grad()), oracle.dx_s, baseline.dx_s);
  if (c.cross) expect_close("dy_s", y_s->as_view(y_s->leaf.grad()), oracle.dy_s, baseline.dy_s);
  EXPECT_FALSE(lse_s.requires_grad());
}

const Case kCases[] = {
    {"n1_self_f32", 1, 1, 1, 1, 1, 8, 8, false, false, Mask::kNone, at::kFloat,
     Layout::kContiguous, {}, {}},
    {"n2_cross_gqa_causal_f32", 2, 4, 2, 1, 2, 16, 16, true, true, Mask::kNone, at::kFloat,
     Layout::kContiguous, {}, {}},
    {"n97_self_causal_padded_f32", 3, 2, 2, 2, 97, 32, 32, false, true, Mask::kPadded, at::kFloat,
     Layout::kContiguous, {}, {}},
    {"n97_cross_gqa_padded_f64", 2, 4, 1, 2, 97, 16, 24, true, false, Mask::kPadded, at::kDouble,
     Layout::kContiguous, 0.3, 0.2},
    {"n61_self_causal_seqmajor_bf16", 2, 4, 4, 4, 61, 64, 64, false, true, Mask::kNone,
     at::kBFloat16, Layout::kSequenceMajor, {}, {}},
    {"n97_cross_gqa_causal_padded_seqmajor_bf16", 2, 4, 2, 4, 97, 32, 16, true, true, Mask::kPadded,
     at::kBFloat16, Layout::kSequenceMajor, {}, {}},
    {"n33_cross_stridedlast_f16", 2, 2, 1, 1, 33, 8, 8, true, false, Mask::kNone, at::kHalf,
     Layout::kStridedLastDim, {}, {}},
    {"n40_self_padded_seqmajor_f32", 2, 3, 3, 3, 40, 20, 12, false, false, Mask::kPadded, at::kFloat,
     Layout::kSequenceMajor, {}, 0.5},
};

INSTANTIATE_TEST_SUITE_P(Shapes, RelationKLTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// The backward op called directly: one gradient for a self-relation, two for a cross relation,
// in the student's dtype, equal to what autograd produced.
TEST(RelationKLBackwardOp, ReturnsStudentGradientsInInputDtype) {
  const at::Tensor x_s = at::randn({2, 2, 9, 8}).to(at::kBFloat16);
  const at::Tensor y_s = at::randn({2, 1, 9, 8}).to(at::kBFloat16);
  const at::Tensor x_t = at::randn({2, 2, 9, 8}).to(at::kBFloat16);
  auto [kl, lse_s, lse_t] = relation_kl(x_s, std::nullopt, x_t, std::nullopt);
  const at::Tensor grad_kl = at::ones_like(kl);
  const std::vector<at::Tensor> self_grads =
      relation_kl_backward(grad_kl, x_s, std::nullopt, x_t, std::nullopt, lse_s, lse_t);
  ASSERT_EQ(self_grads.size(), 1u);
  EXPECT_EQ(self_grads[0].scalar_type(), at::kBFloat16);
  EXPECT_EQ(self_grads[0].sizes(), x_s.sizes());

  auto [kl2, lse2_s, lse2_t] = relation_kl(x_s, y_s, x_t, std::nullopt);
  const std::vector<at::Tensor> cross_grads =
      relation_kl_backward(grad_kl, x_s, y_s, x_t, std::nullopt, lse2_s, lse2_t);
  ASSERT_EQ(cross_grads.size(), 2u);
  EXPECT_EQ(cross_grads[1].sizes(), y_s.sizes());

  const at::Tensor leaf = x_s.clone().requires_grad_();
  std::get<0>(relation_kl(leaf, std::nullopt, x_t, std::nullopt)).sum().backward();
  EXPECT_TRUE(at::equal(leaf.grad(), self_grads[0]));
}

// Meta tensors: shapes and dtypes only, with the same validation.
TEST(RelationKLMeta, InfersShapes) {
  const auto meta = at::TensorOptions().device(at::kMeta).dtype(at::kBFloat16);
  const at::Tensor x_s = at::empty({2, 8, 300, 64}, meta);
  const at::Tensor y_s = at::empty({2, 2, 300, 64}, meta);
  const at::Tensor x_t = at::empty({2, 8, 300, 32}, meta);
  auto [kl, lse_s, lse_t] = relation_kl(x_s, y_s, x_t, std::nullopt);
  EXPECT_TRUE(kl.is_meta());
  EXPECT_EQ(kl.sizes(), at::IntArrayRef({2, 8, 300}));
  EXPECT_EQ(kl.scalar_type(), at::kFloat);
  const std::vector<at::Tensor> grads =
      relation_kl_backward(kl, x_s, y_s, x_t, std::nullopt, lse_s, lse_t);
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[1].sizes(), y_s.sizes());
  EXPECT_EQ(grads[1].scalar_type(), at::kBFloat16);
  EXPECT_THROW(relation_kl(x_s, at::empty({2, 3, 300, 64}, meta), x_t, std::nullopt), c10::Error);
}

}  // namespace
}  // namespace linear_ard::ops::testing

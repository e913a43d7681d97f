// relation_kl_check: every inconsistent field is refused with std::invalid_argument naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "linear_ard/core/relation_kl.h"
#include "linear_ard/core/relation_kl_problem.h"  // defines: RelationKLProblem

namespace linear_ard {
namespace {

// Applies `corrupt` to a valid problem's params and expects both the check and the entry point to
// throw a message containing `field`.
void expect_refused(const std::function<void(RelationKLParams&)>& corrupt, const std::string& field,
                    bool backward) {
  RelationKLProblemSpec spec;
  spec.seq_len = 5;
  spec.dim_student = spec.dim_teacher = 8;
  spec.heads = 2;
  spec.heads_y_student = spec.heads_y_teacher = 1;
  spec.self_relation = false;
  RelationKLProblem problem(spec);
  RelationKLParams p = problem.params();
  EXPECT_NO_THROW(relation_kl_check(p, backward));
  corrupt(p);
  try {
    relation_kl_check(p, backward);
    ADD_FAILURE() << "accepted a bad " << field;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("relation_kl: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(backward ? relation_kl_backward_cpu(p) : relation_kl_forward_cpu(p), std::invalid_argument);
}

TEST(RelationKLCheck, NullInputs) {
  expect_refused([](RelationKLParams& p) { p.student.x = nullptr; }, "student.x", false);
  expect_refused([](RelationKLParams& p) { p.student.y = nullptr; }, "student.y", false);
  expect_refused([](RelationKLParams& p) { p.teacher.x = nullptr; }, "teacher.x", true);
  expect_refused([](RelationKLParams& p) { p.teacher.y = nullptr; }, "teacher.y", true);
}

TEST(RelationKLCheck, Sizes) {
  expect_refused([](RelationKLParams& p) { p.batch = 0; }, "batch (0)", false);
  expect_refused([](RelationKLParams& p) { p.heads = -1; }, "heads (-1)", false);
  expect_refused([](RelationKLParams& p) { p.seq_len = 0; }, "seq_len (0)", false);
  expect_refused([](RelationKLParams& p) { p.cta_head_group = -1; }, "cta_head_group (-1)", false);
  expect_refused([](RelationKLParams& p) { p.student.head_dim = 0; }, "student.head_dim (0)", false);
  expect_refused([](RelationKLParams& p) { p.teacher.head_dim = -4; }, "teacher.head_dim (-4)", false);
  expect_refused([](RelationKLParams& p) { p.dtype = DType(7); }, "dtype (7)", false);
}

TEST(RelationKLCheck, Heads) {
  expect_refused([](RelationKLParams& p) { p.heads = 8; p.student.heads_y = 3; },
                 "student.heads_y (3) must divide heads (8)", false);
  expect_refused([](RelationKLParams& p) { p.teacher.heads_y = 0; }, "teacher.heads_y (0)", false);
  expect_refused([](RelationKLParams& p) { p.dy = nullptr; }, "student.heads_y (1) must equal heads (2)", true);
}

TEST(RelationKLCheck, Scales) {
  expect_refused([](RelationKLParams& p) { p.student.scale = 0.f; }, "student.scale", false);
  expect_refused([](RelationKLParams& p) { p.teacher.scale = std::numeric_limits<float>::infinity(); },
                 "teacher.scale", false);
  expect_refused([](RelationKLParams& p) { p.student.scale = std::nanf(""); }, "student.scale", true);
}

TEST(RelationKLCheck, Strides) {
  expect_refused([](RelationKLParams& p) { p.student.x_row_stride = 4; }, "student.x_row_stride (4)", false);
  expect_refused([](RelationKLParams& p) { p.teacher.y_row_stride = 0; }, "teacher.y_row_stride (0)", false);
  expect_refused([](RelationKLParams& p) { p.student.x_head_stride = -1; }, "student.x_head_stride", false);
  expect_refused([](RelationKLParams& p) { p.teacher.y_batch_stride = -1; }, "teacher.y_batch_stride", false);
  static const uint8_t mask[5] = {1, 1, 1, 1, 1};
  expect_refused([](RelationKLParams& p) { p.key_mask = mask; p.key_mask_batch_stride = 3; },
                 "key_mask_batch_stride (3)", false);
  expect_refused([](RelationKLParams& p) { p.key_mask = mask; p.key_mask_batch_stride = -5; },
                 "key_mask_batch_stride (-5)", false);
}

TEST(RelationKLCheck, Outputs) {
  expect_refused([](RelationKLParams& p) { p.kl = nullptr; }, "kl", false);
  expect_refused([](RelationKLParams& p) { p.lse_student = nullptr; }, "lse_student", false);
  expect_refused([](RelationKLParams& p) { p.lse_teacher = nullptr; }, "lse_teacher", true);
  expect_refused([](RelationKLParams& p) { p.grad_kl = nullptr; }, "grad_kl", true);
  expect_refused([](RelationKLParams& p) { p.dx = nullptr; }, "dx", true);
}

}  // namespace
}  // namespace linear_ard

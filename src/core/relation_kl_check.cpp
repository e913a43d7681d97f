// relation_kl_check: validation of RelationKLParams with messages that name the offending field.
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "linear_ard/core/relation_kl.h"

namespace linear_ard {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw std::invalid_argument("relation_kl: " + message);
}

template <typename T>
std::string str(T value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void require_pointer(const void* pointer, const std::string& field, const char* why) {
  if (pointer == nullptr) fail(field + " must not be null (" + why + ")");
}

void require_non_negative(int64_t value, const std::string& field) {
  if (value < 0) fail(field + " (" + str(value) + ") must be >= 0");
}

void check_side(const RelationSide& s, const std::string& name, const RelationKLParams& p) {
  require_pointer(s.x, name + ".x", "input");
  require_pointer(s.y, name + ".y", "input");
  if (s.head_dim <= 0) fail(name + ".head_dim (" + str(s.head_dim) + ") must be > 0");
  if (s.heads_y <= 0) fail(name + ".heads_y (" + str(s.heads_y) + ") must be > 0");
  if (p.heads % s.heads_y != 0) {
    fail(name + ".heads_y (" + str(s.heads_y) + ") must divide heads (" + str(p.heads) + ")");
  }
  if (!std::isfinite(s.scale) || s.scale == 0.f) {
    fail(name + ".scale (" + str(s.scale) + ") must be finite and nonzero");
  }
  require_non_negative(s.x_batch_stride, name + ".x_batch_stride");
  require_non_negative(s.x_head_stride, name + ".x_head_stride");
  require_non_negative(s.y_batch_stride, name + ".y_batch_stride");
  require_non_negative(s.y_head_stride, name + ".y_head_stride");
  // Rows of one head may not overlap: the last axis is contiguous, so a row spans head_dim elements.
  if (p.seq_len > 1) {
    if (s.x_row_stride < s.head_dim) {
      fail(name + ".x_row_stride (" + str(s.x_row_stride) + ") must be >= head_dim (" +
           str(s.head_dim) + ")");
    }
    if (s.y_row_stride < s.head_dim) {
      fail(name + ".y_row_stride (" + str(s.y_row_stride) + ") must be >= head_dim (" +
           str(s.head_dim) + ")");
    }
  }
}

}  // namespace

void relation_kl_check(const RelationKLParams& p, bool backward) {
  const int dtype = int(p.dtype);
  if (dtype < int(DType::kF32) || dtype > int(DType::kF64)) fail("dtype (" + str(dtype) + ") is unknown");
  if (p.batch <= 0) fail("batch (" + str(p.batch) + ") must be > 0");
  if (p.heads <= 0) fail("heads (" + str(p.heads) + ") must be > 0");
  if (p.seq_len <= 0) fail("seq_len (" + str(p.seq_len) + ") must be > 0");
  if (p.cta_head_group < 0) fail("cta_head_group (" + str(p.cta_head_group) + ") must be >= 0 (0: the library's choice)");
  check_side(p.student, "student", p);
  check_side(p.teacher, "teacher", p);
  if (p.key_mask != nullptr && p.key_mask_batch_stride != 0 && p.key_mask_batch_stride < p.seq_len) {
    fail("key_mask_batch_stride (" + str(p.key_mask_batch_stride) +
         ") must be 0 (one mask for every batch item) or >= seq_len (" + str(p.seq_len) + ")");
  }
  require_pointer(p.lse_student, "lse_student", backward ? "backward input" : "forward output");
  require_pointer(p.lse_teacher, "lse_teacher", backward ? "backward input" : "forward output");
  if (!backward) {
    require_pointer(p.kl, "kl", "forward output");
    return;
  }
  require_pointer(p.grad_kl, "grad_kl", "backward input");
  require_pointer(p.dx, "dx", "backward output");
  if (p.dy == nullptr && p.student.heads_y != p.heads) {
    fail("dy is null (student X and Y are one tensor), so student.heads_y (" + str(p.student.heads_y) +
         ") must equal heads (" + str(p.heads) + ")");
  }
}

}  // namespace linear_ard

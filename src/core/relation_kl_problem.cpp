// Random relation-KL problems for tests and benchmarks.
#include "linear_ard/core/relation_kl_problem.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "linear_ard/core/float16.h"  // defines: float_to_bf16, float_to_fp16

namespace linear_ard {

namespace {

std::vector<double> normal_values(std::mt19937_64& rng, size_t count, double std) {
  std::normal_distribution<double> normal(0.0, std);
  std::vector<double> v(count);
  for (double& x : v) x = normal(rng);
  return v;
}

void store(DType dtype, double value, unsigned char* dst) {
  switch (dtype) {
    case DType::kF32: {
      const float f = float(value);
      std::memcpy(dst, &f, sizeof f);
      return;
    }
    case DType::kBF16: {
      const uint16_t h = float_to_bf16(float(value));
      std::memcpy(dst, &h, sizeof h);
      return;
    }
    case DType::kF16: {
      const uint16_t h = float_to_fp16(float(value));
      std::memcpy(dst, &h, sizeof h);
      return;
    }
    case DType::kF64:
      std::memcpy(dst, &value, sizeof value);
      return;
  }
}

}  // namespace

void OperatorBuffer::assign(DType dtype, size_t count, double value) {
  f32_.clear();
  f64_.clear();
  if (dtype == DType::kF64) {
    f64_.assign(count, value);
  } else {
    f32_.assign(count, float(value));
  }
}

void OperatorBuffer::set(size_t i, double value) {
  if (f64_.empty()) {
    f32_[i] = float(value);
  } else {
    f64_[i] = value;
  }
}

std::vector<double> OperatorBuffer::values() const {
  std::vector<double> v(size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = (*this)[i];
  return v;
}

RelationKLProblem::Tensor RelationKLProblem::make_tensor(int32_t heads, int32_t dim,
                                                         const std::vector<double>& values) const {
  const int64_t n = spec_.seq_len;
  Tensor t;
  if (spec_.strided) {
    t.head_stride = dim + 3;
    t.row_stride = heads * t.head_stride;
    t.batch_stride = n * t.row_stride;
  } else {
    t.row_stride = dim;
    t.head_stride = n * dim;
    t.batch_stride = heads * t.head_stride;
  }
  const size_t elem = dtype_size(spec_.dtype);
  t.bytes.assign(size_t(spec_.batch * t.batch_stride) * elem, 0);
  for (int64_t b = 0; b < spec_.batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < dim; ++k) {
          const size_t src = size_t(((b * heads + h) * n + i) * dim + k);
          const int64_t dst = b * t.batch_stride + h * t.head_stride + i * t.row_stride + k;
          store(spec_.dtype, values[src], t.bytes.data() + size_t(dst) * elem);
        }
      }
    }
  }
  return t;
}

void RelationKLProblem::fill_side(RelationSide& side, Tensor& x, Tensor& y, int32_t heads_y, int32_t dim,
                                  const std::vector<double>& x_values, const std::vector<double>& y_values) {
  x = make_tensor(spec_.heads, dim, x_values);
  side.x = x.bytes.data();
  side.x_batch_stride = x.batch_stride;
  side.x_head_stride = x.head_stride;
  side.x_row_stride = x.row_stride;
  if (spec_.self_relation) {
    side.y = side.x;
    side.y_batch_stride = x.batch_stride;
    side.y_head_stride = x.head_stride;
    side.y_row_stride = x.row_stride;
  } else {
    y = make_tensor(heads_y, dim, y_values);
    side.y = y.bytes.data();
    side.y_batch_stride = y.batch_stride;
    side.y_head_stride = y.head_stride;
    side.y_row_stride = y.row_stride;
  }
  side.heads_y = heads_y;
  side.head_dim = dim;
  side.scale = float(1.0 / std::sqrt(double(dim)));
}

void RelationKLProblem::set_input(bool teacher, bool y, int64_t b, int32_t head, int64_t row, int32_t k,
                                  double value) {
  Tensor& t = y && !spec_.self_relation ? (teacher ? y_t_ : y_s_) : (teacher ? x_t_ : x_s_);
  const int64_t at = b * t.batch_stride + head * t.head_stride + row * t.row_stride + k;
  store(spec_.dtype, value, t.bytes.data() + size_t(at) * dtype_size(spec_.dtype));
}

RelationKLProblem::RelationKLProblem(const RelationKLProblemSpec& spec) : spec_(spec) {
  if (spec.self_relation && (spec.heads_y_student != spec.heads || spec.heads_y_teacher != spec.heads)) {
    throw std::invalid_argument("RelationKLProblem: a self-relation needs heads_y == heads");
  }
  std::mt19937_64 rng(spec.seed);
  const int64_t n = spec.seq_len;
  const size_t rows_x = size_t(spec.batch * spec.heads * n);
  // scale * x.y with entries N(0, s) and scale = 1/sqrt(d) has std s^2.
  const double entry_std = std::sqrt(spec.logit_std);
  const std::vector<double> xt = normal_values(rng, rows_x * size_t(spec.dim_teacher), entry_std);
  const std::vector<double> yt =
      normal_values(rng, size_t(spec.batch * spec.heads_y_teacher * n * spec.dim_teacher), entry_std);
  const bool correlated = spec.student_noise >= 0 && spec.dim_student == spec.dim_teacher &&
                          spec.heads_y_student == spec.heads_y_teacher;
  std::vector<double> xs, ys;
  if (correlated) {
    xs = normal_values(rng, xt.size(), entry_std * spec.student_noise);
    ys = normal_values(rng, yt.size(), entry_std * spec.student_noise);
    for (size_t k = 0; k < xs.size(); ++k) xs[k] += xt[k];
    for (size_t k = 0; k < ys.size(); ++k) ys[k] += yt[k];
  } else {
    xs = normal_values(rng, rows_x * size_t(spec.dim_student), entry_std);
    ys = normal_values(rng, size_t(spec.batch * spec.heads_y_student * n * spec.dim_student), entry_std);
  }
  fill_side(params_.student, x_s_, y_s_, spec.heads_y_student, spec.dim_student, xs, ys);
  fill_side(params_.teacher, x_t_, y_t_, spec.heads_y_teacher, spec.dim_teacher, xt, yt);
  if (spec.negative_teacher_scale) params_.teacher.scale = -params_.teacher.scale;

  params_.dtype = spec.dtype;
  params_.batch = spec.batch;
  params_.heads = spec.heads;
  params_.seq_len = n;
  params_.causal = spec.causal;
  if (spec.mask != KeyMaskKind::kNone || spec.last_batch_masked) {
    mask_.assign(size_t(spec.batch * n), 1);
    std::bernoulli_distribution keep(0.8);
    for (int64_t b = 0; b < spec.batch; ++b) {
      for (int64_t j = 0; j < n; ++j) {
        uint8_t& m = mask_[size_t(b * n + j)];
        if (spec.mask == KeyMaskKind::kRandom) m = keep(rng) ? 1 : 0;
        if (spec.mask == KeyMaskKind::kLeading && j < std::max<int64_t>(1, n / 8)) m = 0;
        if (spec.last_batch_masked && b == spec.batch - 1) m = 0;
      }
    }
    params_.key_mask = mask_.data();
    params_.key_mask_batch_stride = n;
  }

  kl.assign(spec.dtype, rows_x, 0.0);
  lse_student.assign(spec.dtype, rows_x, 0.0);
  lse_teacher.assign(spec.dtype, rows_x, 0.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  grad_kl.assign(spec.dtype, rows_x, 0.0);
  for (size_t i = 0; i < rows_x; ++i) grad_kl.set(i, normal(rng));
  dx.assign(spec.dtype, rows_x * size_t(spec.dim_student), 0.0);
  if (!spec.self_relation) {
    dy.assign(spec.dtype, size_t(spec.batch * spec.heads_y_student * n * spec.dim_student), 0.0);
  }
  params_.kl = kl.data();
  params_.lse_student = lse_student.data();
  params_.lse_teacher = lse_teacher.data();
  params_.grad_kl = grad_kl.data();
  params_.dx = dx.data();
  params_.dy = spec.self_relation ? nullptr : dy.data();
}

}  // namespace linear_ard

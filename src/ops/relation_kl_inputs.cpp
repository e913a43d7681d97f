// Validation of the relation_kl ops' arguments and their translation into RelationKLParams.
#include "relation_kl_inputs.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <exception>
#include <limits>

namespace linear_ard::ops {
namespace {

constexpr const char* kOp = "linear_ard::relation_kl: ";

DType dtype_from_scalar_type(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::kF32;
    case at::kBFloat16: return DType::kBF16;
    case at::kHalf: return DType::kF16;
    case at::kDouble: return DType::kF64;
    default: break;
  }
  TORCH_CHECK(false, kOp, "x_s has dtype ", type,
              ", supported are float32, bfloat16, float16 and float64");
}

// A tensor of the relation: 4-D [B, heads, n, d], nothing empty, sizes that fit the core's int32.
void check_relation_tensor(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined(), kOp, name, " is an undefined tensor");
  TORCH_CHECK(t.dim() == 4, kOp, name, " must be 4-D [B, H, n, d], got shape ", t.sizes());
  static const char* const kAxes[] = {"batch size B", "head count H", "sequence length n",
                                      "head dim d"};
  for (int64_t axis = 0; axis < 4; ++axis) {
    TORCH_CHECK(t.size(axis) > 0, kOp, name, " is empty: its ", kAxes[axis], " is 0 (shape ",
                t.sizes(), ")");
  }
  TORCH_CHECK(t.size(1) <= std::numeric_limits<int32_t>::max() &&
                  t.size(3) <= std::numeric_limits<int32_t>::max(),
              kOp, name, " has too many heads or too large a head dim: ", t.sizes());
  TORCH_CHECK(!t.is_complex() && at::isFloatingType(t.scalar_type()), kOp, name, " has dtype ",
              t.scalar_type(), ", supported are float32, bfloat16, float16 and float64");
}

// The core addresses rows through strides and reads each row's d values contiguously; a view
// whose last dim is strided (rare: e.g. a transpose of the last two axes) is copied once.
at::Tensor with_contiguous_last_dim(const at::Tensor& t) {
  return (t.size(-1) == 1 || t.stride(-1) == 1) ? t : t.contiguous();
}

void check_same_device_and_dtype(const at::Tensor& t, const char* name, const at::Tensor& x_s) {
  TORCH_CHECK(t.device() == x_s.device(), kOp, name, " is on ", t.device(), " but x_s is on ",
              x_s.device(), ": every tensor must be on one device");
  TORCH_CHECK(t.scalar_type() == x_s.scalar_type(), kOp, name, " has dtype ", t.scalar_type(),
              " but x_s has ", x_s.scalar_type(),
              ": teacher and student tensors must share one dtype");
}

// Y of a model against its X: same B, n and d; its heads divide X's (GQA).
void check_y_against_x(const at::Tensor& y, const char* y_name, const at::Tensor& x,
                       const char* x_name) {
  TORCH_CHECK(y.size(0) == x.size(0), kOp, y_name, " has batch size ", y.size(0), " but ", x_name,
              " has ", x.size(0));
  TORCH_CHECK(y.size(2) == x.size(2), kOp, y_name, " has sequence length ", y.size(2), " but ",
              x_name, " has ", x.size(2));
  TORCH_CHECK(y.size(3) == x.size(3), kOp, y_name, " has head dim ", y.size(3), " but ", x_name,
              " has ", x.size(3), ": X and Y of one model share d");
  TORCH_CHECK(x.size(1) % y.size(1) == 0, kOp, y_name, " has ", y.size(1),
              " heads, which does not divide the ", x.size(1), " heads of ", x_name,
              " (grouped heads need H_x % H_y == 0)");
}

double resolve_scale(std::optional<double> scale, const char* name, int64_t head_dim) {
  if (!scale.has_value()) return 1.0 / std::sqrt(static_cast<double>(head_dim));
  TORCH_CHECK(std::isfinite(*scale) && *scale > 0.0, kOp, name,
              " must be finite and positive, got ", *scale);
  return *scale;
}

void check_teacher_no_grad(const at::Tensor& t, const char* name) {
  TORCH_CHECK(!t.requires_grad(), kOp, name,
              " requires grad, but the teacher gets no gradient: pass ", name, ".detach()");
}

RelationSide side_make(const at::Tensor& x, const at::Tensor& y, double scale) {
  RelationSide side;
  side.x = x.data_ptr();
  side.y = y.data_ptr();
  side.x_batch_stride = x.stride(0);
  side.x_head_stride = x.stride(1);
  side.x_row_stride = x.stride(2);
  side.y_batch_stride = y.stride(0);
  side.y_head_stride = y.stride(1);
  side.y_row_stride = y.stride(2);
  side.heads_y = static_cast<int32_t>(y.size(1));
  side.head_dim = static_cast<int32_t>(x.size(3));
  side.scale = static_cast<float>(scale);
  return side;
}

RelationKLParams params_make(const RelationKLInputs& in) {
  RelationKLParams p;
  p.student = side_make(in.x_s, in.y_s, in.scale_s);
  p.teacher = side_make(in.x_t, in.y_t, in.scale_t);
  p.dtype = dtype_from_scalar_type(in.x_s.scalar_type());
  p.batch = in.batch;
  p.heads = static_cast<int32_t>(in.heads);
  p.seq_len = in.seq_len;
  p.causal = in.causal;
  if (in.key_mask.defined()) {
    // bool is stored as one byte per element, which is the core's uint8 mask layout.
    p.key_mask = reinterpret_cast<const uint8_t*>(in.key_mask.data_ptr<bool>());
    p.key_mask_batch_stride = in.key_mask.stride(0);
  }
  return p;
}

// The params' output pointers are typed float* but address double buffers for kF64 inputs (the
// core header's fp64 rule), so they are taken untyped.
float* output_pointer(const at::Tensor& t) { return static_cast<float*>(t.data_ptr()); }

// grad_kl, lse_s and lse_t of the backward: [B, H, n] on the inputs' device.
void check_row_tensor(const at::Tensor& t, const char* name, const RelationKLInputs& in) {
  TORCH_CHECK(t.defined(), kOp, name, " is an undefined tensor");
  TORCH_CHECK(t.dim() == 3 && t.size(0) == in.batch && t.size(1) == in.heads &&
                  t.size(2) == in.seq_len,
              kOp, name, " must have shape [B, H, n] = [", in.batch, ", ", in.heads, ", ",
              in.seq_len, "], got ", t.sizes());
  TORCH_CHECK(t.device() == in.x_s.device(), kOp, name, " is on ", t.device(), " but x_s is on ",
              in.x_s.device(), ": every tensor must be on one device");
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), kOp, name, " has dtype ", t.scalar_type(),
              ", expected a floating type");
}

}  // namespace

RelationKLInputs relation_kl_inputs_make(const at::Tensor& x_s, const std::optional<at::Tensor>& y_s,
                                         const at::Tensor& x_t, const std::optional<at::Tensor>& y_t,
                                         const std::optional<at::Tensor>& key_mask, bool causal,
                                         std::optional<double> scale_s,
                                         std::optional<double> scale_t) {
  const bool has_y_s = y_s.has_value() && y_s->defined();
  const bool has_y_t = y_t.has_value() && y_t->defined();
  check_relation_tensor(x_s, "x_s");
  dtype_from_scalar_type(x_s.scalar_type());
  TORCH_CHECK(x_s.device().is_cpu() || x_s.device().is_cuda() || x_s.device().is_meta(), kOp,
              "x_s is on ", x_s.device(), ", supported are CPU and CUDA tensors");
  check_relation_tensor(x_t, "x_t");
  if (has_y_s) check_relation_tensor(*y_s, "y_s");
  if (has_y_t) check_relation_tensor(*y_t, "y_t");

  check_same_device_and_dtype(x_t, "x_t", x_s);
  if (has_y_s) check_same_device_and_dtype(*y_s, "y_s", x_s);
  if (has_y_t) check_same_device_and_dtype(*y_t, "y_t", x_s);

  TORCH_CHECK(x_t.size(0) == x_s.size(0), kOp, "x_t has batch size ", x_t.size(0),
              " but x_s has ", x_s.size(0));
  TORCH_CHECK(x_t.size(1) == x_s.size(1), kOp, "x_t has ", x_t.size(1), " heads but x_s has ",
              x_s.size(1), ": teacher and student X must have the same head count");
  TORCH_CHECK(x_t.size(2) == x_s.size(2), kOp, "x_t has sequence length ", x_t.size(2),
              " but x_s has ", x_s.size(2));
  if (has_y_s) check_y_against_x(*y_s, "y_s", x_s, "x_s");
  if (has_y_t) check_y_against_x(*y_t, "y_t", x_t, "x_t");

  check_teacher_no_grad(x_t, "x_t");
  if (has_y_t) check_teacher_no_grad(*y_t, "y_t");

  RelationKLInputs in;
  in.batch = x_s.size(0);
  in.heads = x_s.size(1);
  in.seq_len = x_s.size(2);

  if (key_mask.has_value() && key_mask->defined()) {
    const at::Tensor& mask = *key_mask;
    TORCH_CHECK(mask.scalar_type() == at::kBool, kOp, "key_mask must be bool (True = visible key), got ",
                mask.scalar_type());
    TORCH_CHECK(mask.dim() == 2 && mask.size(0) == in.batch && mask.size(1) == in.seq_len, kOp,
                "key_mask must have shape [B, n] = [", in.batch, ", ", in.seq_len, "], got ",
                mask.sizes());
    TORCH_CHECK(mask.device() == x_s.device(), kOp, "key_mask is on ", mask.device(),
                " but x_s is on ", x_s.device(), ": every tensor must be on one device");
    in.key_mask = with_contiguous_last_dim(mask);
  }

  in.scale_s = resolve_scale(scale_s, "scale_s", x_s.size(3));
  in.scale_t = resolve_scale(scale_t, "scale_t", x_t.size(3));
  in.causal = causal;
  in.student_self = !has_y_s;
  in.x_s = with_contiguous_last_dim(x_s);
  in.y_s = has_y_s ? with_contiguous_last_dim(*y_s) : in.x_s;
  in.x_t = with_contiguous_last_dim(x_t);
  in.y_t = has_y_t ? with_contiguous_last_dim(*y_t) : in.x_t;
  return in;
}

at::ScalarType relation_kl_output_dtype(const RelationKLInputs& in) {
  return in.x_s.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> relation_kl_forward_outputs(
    const RelationKLInputs& in) {
  const auto options = in.x_s.options().dtype(relation_kl_output_dtype(in));
  const std::vector<int64_t> shape = {in.batch, in.heads, in.seq_len};
  return {at::empty(shape, options), at::empty(shape, options), at::empty(shape, options)};
}

RelationKLForward relation_kl_forward_prepare(const RelationKLInputs& in) {
  RelationKLForward fwd;
  std::tie(fwd.kl, fwd.lse_s, fwd.lse_t) = relation_kl_forward_outputs(in);
  fwd.params = params_make(in);
  fwd.params.kl = output_pointer(fwd.kl);
  fwd.params.lse_student = output_pointer(fwd.lse_s);
  fwd.params.lse_teacher = output_pointer(fwd.lse_t);
  return fwd;
}

RelationKLBackward relation_kl_backward_prepare(const RelationKLInputs& in, const at::Tensor& grad_kl,
                                               const at::Tensor& lse_s, const at::Tensor& lse_t,
                                               bool deterministic) {
  check_row_tensor(grad_kl, "grad_kl", in);
  check_row_tensor(lse_s, "lse_s", in);
  check_row_tensor(lse_t, "lse_t", in);
  // The LSEs are the forward's own outputs; any other dtype would have lost precision.
  const at::ScalarType output_dtype = relation_kl_output_dtype(in);
  TORCH_CHECK(lse_s.scalar_type() == output_dtype, kOp, "lse_s must have the forward's dtype ",
              output_dtype, ", got ", lse_s.scalar_type());
  TORCH_CHECK(lse_t.scalar_type() == output_dtype, kOp, "lse_t must have the forward's dtype ",
              output_dtype, ", got ", lse_t.scalar_type());

  RelationKLBackward bwd;
  // Upstream gradients are often expanded views (e.g. of a sum); the core reads dense rows.
  bwd.grad_kl = grad_kl.to(output_dtype).contiguous();
  bwd.lse_s = lse_s.contiguous();
  bwd.lse_t = lse_t.contiguous();
  const auto options = in.x_s.options().dtype(output_dtype);
  bwd.dx = at::empty(in.x_s.sizes(), options);
  if (!in.student_self) bwd.dy = at::empty(in.y_s.sizes(), options);

  bwd.params = params_make(in);
  bwd.params.grad_kl = output_pointer(bwd.grad_kl);
  // The core only reads the LSEs back in the backward; its params type is shared with the forward.
  bwd.params.lse_student = output_pointer(bwd.lse_s);
  bwd.params.lse_teacher = output_pointer(bwd.lse_t);
  bwd.params.dx = output_pointer(bwd.dx);
  bwd.params.dy = in.student_self ? nullptr : output_pointer(bwd.dy);
  bwd.params.deterministic = deterministic;
  return bwd;
}

void relation_kl_core_run(void (*entry)(const RelationKLParams&), const RelationKLParams& params) {
  try {
    entry(params);
  } catch (const std::exception& error) {
    // The arguments were checked above; what remains are the core's own limits (e.g. a device
    // kernel's head-dim range). Re-raised as c10::Error so callers see one error type.
    TORCH_CHECK(false, kOp, error.what());
  }
}

std::vector<at::Tensor> relation_kl_backward_results(const RelationKLInputs& in,
                                                     const RelationKLBackward& bwd) {
  const at::ScalarType dtype = in.x_s.scalar_type();
  std::vector<at::Tensor> grads = {bwd.dx.to(dtype)};
  if (!in.student_self) grads.push_back(bwd.dy.to(dtype));
  return grads;
}

}  // namespace linear_ard::ops

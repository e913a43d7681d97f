// The operator harness's pieces (relation_kl_harness.h).
#include "relation_kl_harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#ifdef LINEAR_ARD_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "linear_ard/core/dtype_load.h"  // defines: dtype_load_row
#include "linear_ard/core/relation_kl.h"

namespace linear_ard::harness {

namespace {

#ifdef LINEAR_ARD_WITH_CUDA
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
#endif

// Relative L2 error ||a - ref|| / max(||ref||, floor_rms * sqrt(size)); NaN anywhere (an unwritten
// output) gives +inf. The floor matters where the exact gradient is ~0: rows that are one-hot on
// the self-relation's large diagonal logit, where P_s - P_t is fp32 rounding of exp(z - lse).
double rel_l2(const OperatorBuffer& a, const std::vector<double>& ref, double floor_rms = 0.0) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    const double r = std::isinf(ref[i]) ? 0.0 : ref[i], v = std::isinf(a[i]) ? 0.0 : a[i];
    if (std::isinf(ref[i]) != std::isinf(a[i])) return INFINITY;
    num += (v - r) * (v - r);
    den += r * r;
  }
  return std::sqrt(num) / std::max({std::sqrt(den), floor_rms * std::sqrt(double(ref.size())), 1e-30});
}

// Max over rows of |kl - ref| / (|ref| + 1e-4 (1 + |lse_t| + logit_abs_max)): KL = A/l - (lse_t -
// lse_s) is a difference of quantities of the size of the logits and LSEs, so its fp32 rounding
// scales with them, not with the (often small) KL.
double kl_err(const OperatorBuffer& a, const RelationKLReference& ref) {
  double worst = 0;
  for (size_t i = 0; i < ref.kl.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    const double lse = std::isinf(ref.lse_teacher[i]) ? 0.0 : std::fabs(ref.lse_teacher[i]);
    const double scale = std::fabs(ref.kl[i]) + 1e-4 * (1.0 + lse + ref.logit_abs_max[i]);
    worst = std::max(worst, std::fabs(a[i] - ref.kl[i]) / scale);
  }
  return worst;
}

// Rounding scale of one gradient element: (2^-16 of the largest logit, the error of an fp32
// exp(z - lse) through ex2.approx / __expf with |z| that large) x scale_s x max|g| x max|Y_s|.
double grad_floor(RelationKLProblem& prob, const RelationKLReference& ref) {
  const RelationKLParams& p = prob.params();
  const auto& s = prob.spec();
  double logit = 0, g = 0, y = 0;
  for (double v : ref.logit_abs_max) logit = std::max(logit, std::isfinite(v) ? v : 0.0);
  for (double v : prob.grad_kl.values()) g = std::max(g, std::fabs(v));
  std::vector<float> row(s.dim_student);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int hy = 0; hy < p.student.heads_y; ++hy)
      for (int64_t j = 0; j < s.seq_len; ++j) {
        dtype_load_row(p.dtype, p.student.y,
                       b * p.student.y_batch_stride + hy * p.student.y_head_stride + j * p.student.y_row_stride,
                       s.dim_student, row.data());
        for (float v : row) y = std::max(y, double(std::fabs(v)));
      }
  return std::ldexp(1.0, -16) * (1.0 + logit) * p.student.scale * g * y;
}

void fill_nan(OperatorBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i) b.set(i, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

std::vector<Runner> runners(const std::string& backend, const std::string& kernels) {
  if (backend == "cpu") return {Runner{"cpu"}};
  if (backend != "cuda") throw std::invalid_argument("--backend " + backend + ": expected cpu or cuda");
#ifdef LINEAR_ARD_WITH_CUDA
  std::vector<Runner> out;
  std::stringstream list(kernels);
  for (std::string name; std::getline(list, name, ',');) {
    Runner r{name, true};
    const std::string suffix = "-det";
    r.deterministic =
        name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    const std::string base = r.deterministic ? name.substr(0, name.size() - suffix.size()) : name;
    if (base == "default") {
      r.kernels = RelationKLCudaKernels::kDefault;
    } else if (base == "mma") {
      r.kernels = RelationKLCudaKernels::kMmaSync;
    } else if (base == "simt") {
      r.kernels = RelationKLCudaKernels::kSimt;
    } else {
      throw std::invalid_argument("--kernels: unknown kernels " + name +
                                  " (expected default, mma or simt, each optionally with -det)");
    }
    out.push_back(r);
  }
  return out;
#else
  (void)kernels;
  throw std::invalid_argument("--backend cuda: this build has no CUDA (LINEAR_ARD_WITH_CUDA is OFF)");
#endif
}

bool runner_takes(const Runner& r, RelationKLProblem& problem) {
  if (!r.cuda) return true;
#ifdef LINEAR_ARD_WITH_CUDA
  const bool fp32 = problem.spec().dtype == DType::kF32;
  switch (r.kernels) {
    case RelationKLCudaKernels::kDefault:
      return !fp32;
    case RelationKLCudaKernels::kMmaSync:
      return !fp32 &&
             (relation_kl_forward_cuda_kernel_name(problem.params(), RelationKLCudaKernels::kDefault) !=
                  std::string("mma.sync") ||
              relation_kl_backward_cuda_kernel_name(problem.params(), RelationKLCudaKernels::kDefault) !=
                  std::string("mma.sync"));
    case RelationKLCudaKernels::kSimt:
      return problem.spec().seq_len <= 400;
  }
#endif
  (void)problem;
  return true;
}

std::string backward_kernel(const Runner& r, RelationKLProblem& problem) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (r.cuda) {
    return std::string(relation_kl_backward_cuda_kernel_name(problem.params(), r.kernels)) +
           (r.deterministic ? "/det" : "");
  }
#endif
  (void)problem;
  return r.name;
}

bool run(const Runner& r, RelationKLProblem& problem, int backwards) {
  // The bits of dx and dy after each backward (fp32 values are exact as doubles).
  std::vector<double> first;
  bool same = true;
  auto record = [&](int k) {
    std::vector<double> bits = problem.dx.values(), dy = problem.dy.values();
    bits.insert(bits.end(), dy.begin(), dy.end());
    if (k == 0) {
      first = std::move(bits);
    } else {
      same = same && bits.size() == first.size() &&
             std::memcmp(bits.data(), first.data(), bits.size() * sizeof(double)) == 0;
    }
  };
  problem.params().deterministic = r.deterministic;
  if (!r.cuda) {
    for (OperatorBuffer* b : {&problem.kl, &problem.lse_student, &problem.lse_teacher}) fill_nan(*b);
    relation_kl_forward_cpu(problem.params());
    for (int k = 0; k < backwards; ++k) {
      fill_nan(problem.dx), fill_nan(problem.dy);
      relation_kl_backward_cpu(problem.params());
      record(k);
    }
    return same;
  }
#ifdef LINEAR_ARD_WITH_CUDA
  DeviceProblem dev(problem);
  dev.poison();
  relation_kl_forward_cuda_kernels(dev.params(), r.kernels);
  for (int k = 0; k < backwards; ++k) {
    dev.poison_grads();
    relation_kl_backward_cuda_kernels(dev.params(), r.kernels);
    dev.download(problem);
    record(k);
  }
#endif
  return same;
}

bool Errors::within_tolerance(DType dtype) const {
  // Inputs are already rounded to their dtype, so the reference sees the same values: what is
  // left is fp32 accumulation and, for 16-bit inputs, dZ rounded to 16 bits in the gradient
  // GEMMs (relative 2^-9 per element, far less in the norm).
  const bool fp32 = dtype == DType::kF32 || dtype == DType::kF64;
  const double tol_grad = fp32 ? 1e-3 : 1e-2, tol_kl = fp32 ? 1e-2 : 5e-2, tol_lse = 1e-5;
  return kl <= tol_kl && lse <= tol_lse && dx <= tol_grad && dy <= tol_grad;
}

Errors reference_errors(RelationKLProblem& problem, const RelationKLReference& ref) {
  const double floor_rms = grad_floor(problem, ref);
  Errors e;
  e.kl = kl_err(problem.kl, ref);
  e.lse = std::max(rel_l2(problem.lse_student, ref.lse_student), rel_l2(problem.lse_teacher, ref.lse_teacher));
  e.dx = rel_l2(problem.dx, ref.dx, floor_rms);
  e.dy = ref.dy.empty() ? 0.0 : rel_l2(problem.dy, ref.dy, floor_rms);
  return e;
}

double time_ms(const std::function<void()>& fn, int reps, int warmup, bool cuda) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
#ifdef LINEAR_ARD_WITH_CUDA
    if (cuda) {
      cudaEvent_t start, end;
      check_cuda(cudaEventCreate(&start), "cudaEventCreate");
      check_cuda(cudaEventCreate(&end), "cudaEventCreate");
      check_cuda(cudaEventRecord(start), "cudaEventRecord");
      fn();
      check_cuda(cudaEventRecord(end), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(end), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
      cudaEventDestroy(start), cudaEventDestroy(end);
      times.push_back(ms);
      continue;
    }
#endif
    (void)cuda;
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

#ifdef LINEAR_ARD_WITH_CUDA
DeviceProblem::DeviceProblem(RelationKLProblem& problem) {
  p_ = problem.params();
  const auto& s = problem.spec();
  const size_t e = dtype_size(p_.dtype);
  auto side = [&](RelationSide& d, const RelationSide& h) {
    d.x = copy(h.x, size_t(s.batch * h.x_batch_stride) * e);
    d.y = h.y == h.x ? d.x : copy(h.y, size_t(s.batch * h.y_batch_stride) * e);
  };
  side(p_.student, problem.params().student);
  side(p_.teacher, problem.params().teacher);
  if (p_.key_mask) p_.key_mask = static_cast<const uint8_t*>(copy(p_.key_mask, size_t(s.batch * s.seq_len)));
  const size_t rows = size_t(s.batch) * s.heads * s.seq_len;
  auto output = [&](size_t floats) { return std::pair<void*, size_t>{copy(nullptr, floats * 4), floats * 4}; };
  kl_ = output(rows), lse_s_ = output(rows), lse_t_ = output(rows), dx_ = output(rows * s.dim_student);
  p_.grad_kl = static_cast<const float*>(copy(problem.grad_kl.data(), rows * 4));
  p_.kl = static_cast<float*>(kl_.first);
  p_.lse_student = static_cast<float*>(lse_s_.first);
  p_.lse_teacher = static_cast<float*>(lse_t_.first);
  p_.dx = static_cast<float*>(dx_.first);
  if (problem.params().dy) {
    dy_ = output(size_t(s.batch) * s.heads_y_student * s.seq_len * s.dim_student);
    p_.dy = static_cast<float*>(dy_.first);
  }
  p_.stream = nullptr;
}

DeviceProblem::~DeviceProblem() {
  for (auto& b : buffers_) cudaFree(b.first);
}

void* DeviceProblem::copy(const void* host, size_t bytes) {
  void* ptr = nullptr;
  check_cuda(cudaMalloc(&ptr, std::max<size_t>(bytes, 16)), "cudaMalloc");
  buffers_.push_back({ptr, bytes});
  if (host) check_cuda(cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  return ptr;
}

void DeviceProblem::poison() {
  for (auto b : {kl_, lse_s_, lse_t_, dx_, dy_}) {
    if (b.first) check_cuda(cudaMemset(b.first, 0xff, b.second), "cudaMemset");
  }
}

void DeviceProblem::poison_grads() {
  for (auto b : {dx_, dy_}) {
    if (b.first) check_cuda(cudaMemset(b.first, 0xff, b.second), "cudaMemset");
  }
}

void DeviceProblem::download(RelationKLProblem& problem) const {
  check_cuda(cudaDeviceSynchronize(), "kernels");
  auto get = [](OperatorBuffer& dst, std::pair<void*, size_t> src) {
    if (src.first) check_cuda(cudaMemcpy(dst.data(), src.first, src.second, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  };
  get(problem.kl, kl_), get(problem.lse_student, lse_s_), get(problem.lse_teacher, lse_t_), get(problem.dx, dx_);
  get(problem.dy, dy_);
}
#endif

}  // namespace linear_ard::harness

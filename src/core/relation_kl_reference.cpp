// Dense fp64 reference of the relation-KL operator: Z, R and dZ materialised per (batch, head).
#include "linear_ard/core/relation_kl_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "linear_ard/core/dtype_load.h"  // defines: dtype_load_row

namespace linear_ard {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One model's X [n, d] and Y [n, d] for one (batch, head), in double.
struct DenseHead {
  std::vector<double> x, y;
  int d = 0;
  double scale = 0;
};

DenseHead load_head(const RelationKLParams& p, const RelationSide& s, int64_t b, int64_t h) {
  const int64_t n = p.seq_len, hy = h / (p.heads / s.heads_y);
  DenseHead out;
  out.d = s.head_dim;
  out.scale = double(s.scale);
  out.x.resize(size_t(n * s.head_dim));
  out.y.resize(out.x.size());
  for (int64_t i = 0; i < n; ++i) {
    dtype_load_row(p.dtype, s.x, b * s.x_batch_stride + h * s.x_head_stride + i * s.x_row_stride,
                   s.head_dim, out.x.data() + i * s.head_dim);
    dtype_load_row(p.dtype, s.y, b * s.y_batch_stride + hy * s.y_head_stride + i * s.y_row_stride,
                   s.head_dim, out.y.data() + i * s.head_dim);
  }
  return out;
}

// Z = scale X Yᵀ + M, [n, n].
std::vector<double> logits(const RelationKLParams& p, const DenseHead& m, const std::vector<bool>& visible) {
  const int64_t n = p.seq_len;
  std::vector<double> z(size_t(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (!visible[size_t(j)] || (p.causal && j > i)) {
        z[size_t(i * n + j)] = kNegInf;
        continue;
      }
      double dot = 0;
      for (int k = 0; k < m.d; ++k) dot += m.x[size_t(i * m.d + k)] * m.y[size_t(j * m.d + k)];
      z[size_t(i * n + j)] = m.scale * dot;
    }
  }
  return z;
}

// Row LSE of z, -inf for a row of -inf.
double row_lse(const double* z, int64_t n) {
  const double m = *std::max_element(z, z + n);
  if (m == kNegInf) return kNegInf;
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(z[j] - m);
  return m + std::log(sum);
}

// Whether every logit row i sees (visible key, not past it when causal) is finite in both models.
bool row_is_finite(const double* zs, const double* zt, const std::vector<bool>& visible, bool causal, int64_t i) {
  for (size_t j = 0; j < visible.size(); ++j) {
    if (!visible[j] || (causal && int64_t(j) > i)) continue;
    if (!std::isfinite(zs[j]) || !std::isfinite(zt[j])) return false;
  }
  return true;
}

// Upstream gradient of row o: fp32, or fp64 for kF64 (the operator's rule).
double grad_kl(const RelationKLParams& p, int64_t o) {
  return p.dtype == DType::kF64 ? reinterpret_cast<const double*>(p.grad_kl)[o] : double(p.grad_kl[o]);
}

}  // namespace

RelationKLReference relation_kl_reference(const RelationKLParams& p, bool backward) {
  relation_kl_check(p, backward);
  const int64_t n = p.seq_len, ds = p.student.head_dim, rows = p.batch * p.heads * n;
  RelationKLReference r;
  r.kl.assign(size_t(rows), 0.0);
  r.lse_student.assign(size_t(rows), kNegInf);
  r.lse_teacher.assign(size_t(rows), kNegInf);
  r.logit_abs_max.assign(size_t(rows), 0.0);
  if (backward) {
    r.dx.assign(size_t(rows * ds), 0.0);
    r.dx_abs = r.dx;
    if (p.dy != nullptr) r.dy.assign(size_t(p.batch * p.student.heads_y * n * ds), 0.0);
    r.dy_abs = r.dy;
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    std::vector<bool> visible(size_t(n), true);
    if (p.key_mask != nullptr) {
      for (int64_t j = 0; j < n; ++j) visible[size_t(j)] = p.key_mask[b * p.key_mask_batch_stride + j] != 0;
    }
    for (int64_t h = 0; h < p.heads; ++h) {
      const DenseHead s = load_head(p, p.student, b, h), t = load_head(p, p.teacher, b, h);
      const std::vector<double> zs = logits(p, s, visible), zt = logits(p, t, visible);
      std::vector<double> dz(backward ? size_t(n * n) : 0, 0.0), dz_abs(dz);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t o = (b * p.heads + h) * n + i;
        const double* zsi = zs.data() + i * n;
        const double* zti = zt.data() + i * n;
        const double g = backward ? grad_kl(p, o) : 0.0;
        if (!row_is_finite(zsi, zti, visible, p.causal, i)) {
          // The contract's non-finite rule: KL and both LSEs NaN; the gradient of every visible entry NaN.
          r.kl[size_t(o)] = r.lse_student[size_t(o)] = r.lse_teacher[size_t(o)] = kNaN;
          for (int64_t j = 0; backward && g != 0 && j < n; ++j) {
            if (!visible[size_t(j)] || (p.causal && j > i)) continue;
            dz[size_t(i * n + j)] = dz_abs[size_t(i * n + j)] = kNaN;
          }
          continue;
        }
        const double lse_s = row_lse(zsi, n), lse_t = row_lse(zti, n);
        r.lse_student[size_t(o)] = lse_s;
        r.lse_teacher[size_t(o)] = lse_t;
        if (lse_t == kNegInf) continue;  // nothing visible: KL 0, no gradient
        double kl = 0, zmax = 0;
        for (int64_t j = 0; j < n; ++j) {
          if (zti[j] == kNegInf) continue;
          const double log_rt = zti[j] - lse_t, log_rs = zsi[j] - lse_s;
          kl += std::exp(log_rt) * (log_rt - log_rs);
          zmax = std::max({zmax, std::fabs(zti[j]), std::fabs(zsi[j])});
          if (backward) {
            dz[size_t(i * n + j)] = g * (std::exp(log_rs) - std::exp(log_rt));
            dz_abs[size_t(i * n + j)] = std::fabs(g) * (std::exp(log_rs) + std::exp(log_rt));
          }
        }
        r.kl[size_t(o)] = kl;
        r.logit_abs_max[size_t(o)] = zmax;
      }
      if (!backward) continue;
      // dX = scale dZ Y into dx; dY = scale dZᵀ X into dy of the Y head, or into dx for X = Y.
      const int64_t hy = h / (p.heads / p.student.heads_y);
      double* dx = r.dx.data() + (b * p.heads + h) * n * ds;
      double* dy = p.dy != nullptr ? r.dy.data() + (b * p.student.heads_y + hy) * n * ds : dx;
      double* dx_abs = r.dx_abs.data() + (b * p.heads + h) * n * ds;
      double* dy_abs = p.dy != nullptr ? r.dy_abs.data() + (b * p.student.heads_y + hy) * n * ds : dx_abs;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const double w = s.scale * dz[size_t(i * n + j)];
          const double w_abs = std::fabs(s.scale) * dz_abs[size_t(i * n + j)];
          if (w_abs == 0) continue;
          for (int64_t k = 0; k < ds; ++k) {
            dx[i * ds + k] += w * s.y[size_t(j * ds + k)];
            dy[j * ds + k] += w * s.x[size_t(i * ds + k)];
            dx_abs[i * ds + k] += w_abs * std::fabs(s.y[size_t(j * ds + k)]);
            dy_abs[j * ds + k] += w_abs * std::fabs(s.x[size_t(i * ds + k)]);
          }
        }
      }
    }
  }
  return r;
}

}  // namespace linear_ard

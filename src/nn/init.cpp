// torch.nn.init equivalents on the Philox stream; the formulas are PyTorch's.
#include "ember/nn/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  EMBER_CHECK(t.dim() >= 2, ValueError, "init: fan in and fan out need a tensor with at least 2 "
              "dims, this one has shape ", shape_str(t.sizes()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "conv_transpose1d" ||
      nl == "conv_transpose2d" || nl == "conv_transpose3d" || nl == "sigmoid")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nl == "selu") return 3.0 / 4.0;
  throw ValueError("init: unsupported nonlinearity '" + nl + "' (linear, conv1d/2d/3d, conv_transpose1d/2d/3d, "
                   "sigmoid, tanh, relu, leaky_relu, selu)");
}

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard g;
  return ember::uniform_(t, low, high, gen);
}
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard g;
  return ember::normal_(t, mean, std, gen);
}
Tensor& constant_(Tensor& t, double value) { return t.fill_(value); }
Tensor& zeros_(Tensor& t) { return t.fill_(0.0); }
Tensor& ones_(Tensor& t) { return t.fill_(1.0); }

namespace {
int64_t pick_fan(const Tensor& t, const std::string& mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, "init: mode must be 'fan_in' or "
              "'fan_out', got '", mode, "'");
  return mode == "fan_in" ? fan_in : fan_out;
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nl,
                         Generator* gen) {
  if (t.numel() == 0) return t;
  double sd = calculate_gain(nl, a) / std::sqrt(double(pick_fan(t, mode)));
  double bound = std::sqrt(3.0) * sd;
  return init::uniform_(t, -bound, bound, gen);
}
Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nl,
                        Generator* gen) {
  if (t.numel() == 0) return t;
  double sd = calculate_gain(nl, a) / std::sqrt(double(pick_fan(t, mode)));
  return init::normal_(t, 0.0, sd, gen);
}
Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return init::uniform_(t, -bound, bound, gen);
}
Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (t.numel() == 0) return t;
  return init::normal_(t, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)), gen);
}

namespace {
// erf^-1 on (-1, 1): Giles' single-precision approximation ("Approximating the erfinv function",
// 2010) refined by two Newton steps on erf, which bring it to float64 accuracy.
double erfinv(double y) {
  if (y <= -1.0) return -INFINITY;
  if (y >= 1.0) return INFINITY;
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
    x = p * y;
  }
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}
double norm_cdf(double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; }

// A float64 CPU tensor of t's shape, filled by `fill`, then copied into t (its dtype and device).
template <class Fill>
Tensor& fill_through_host(Tensor& t, Fill fill) {
  NoGradGuard g;
  Tensor host = empty(t.sizes(), {.dtype = DType::Float64});
  fill(host);
  t.copy_(host);
  return t;
}
}  // namespace

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  EMBER_CHECK(std > 0.0, ValueError, "trunc_normal_: std must be > 0, got ", std);
  EMBER_CHECK(a < b, ValueError, "trunc_normal_: the bounds must satisfy a < b, got a = ", a, ", b = ", b);
  if (t.numel() == 0) return t;
  const double l = norm_cdf((a - mean) / std), u = norm_cdf((b - mean) / std);
  return fill_through_host(t, [&](Tensor& h) {
    ember::uniform_(h, 2.0 * l - 1.0, 2.0 * u - 1.0, gen);
    double* p = h.data_ptr<double>();
    for (int64_t i = 0; i < h.numel(); ++i) p[i] = std::clamp(erfinv(p[i]) * std * std::sqrt(2.0) + mean, a, b);
  });
}

Tensor& orthogonal_(Tensor& t, double gain, Generator* gen) {
  EMBER_CHECK(t.dim() >= 2, ValueError, "orthogonal_: only tensors with 2 or more dimensions are supported, got shape ",
              shape_str(t.sizes()));
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  return fill_through_host(t, [&](Tensor& h) {
    // QR of the (m, n) matrix a, m >= n (the transpose when rows < cols), by Householder reflections.
    Tensor draw = empty({rows, cols}, {.dtype = DType::Float64});
    ember::normal_(draw, 0.0, 1.0, gen);
    const bool wide = rows < cols;
    const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
    std::vector<double> a(static_cast<size_t>(m * n));
    const double* d = draw.data_ptr<double>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) (wide ? a[size_t(j * n + i)] : a[size_t(i * n + j)]) = d[i * cols + j];
    std::vector<std::vector<double>> reflectors;
    std::vector<double> rdiag(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      std::vector<double> v(static_cast<size_t>(m - k));
      double norm = 0;
      for (int64_t i = k; i < m; ++i) norm += a[size_t(i * n + k)] * a[size_t(i * n + k)];
      norm = std::sqrt(norm);
      const double x0 = a[size_t(k * n + k)];
      const double alpha = x0 >= 0 ? -norm : norm;  // R's diagonal entry
      for (int64_t i = k; i < m; ++i) v[size_t(i - k)] = a[size_t(i * n + k)];
      v[0] -= alpha;
      double vv = 0;
      for (double e : v) vv += e * e;
      if (vv > 0)
        for (int64_t j = k; j < n; ++j) {
          double s = 0;
          for (int64_t i = k; i < m; ++i) s += v[size_t(i - k)] * a[size_t(i * n + j)];
          s = 2.0 * s / vv;
          for (int64_t i = k; i < m; ++i) a[size_t(i * n + j)] -= s * v[size_t(i - k)];
        }
      rdiag[size_t(k)] = alpha;
      reflectors.push_back(vv > 0 ? v : std::vector<double>());
    }
    // Q's first n columns: the reflections applied, last first, to the identity's columns.
    std::vector<double> q(static_cast<size_t>(m * n), 0.0);
    for (int64_t j = 0; j < n; ++j) q[size_t(j * n + j)] = 1.0;
    for (int64_t k = n - 1; k >= 0; --k) {
      const std::vector<double>& v = reflectors[size_t(k)];
      if (v.empty()) continue;
      double vv = 0;
      for (double e : v) vv += e * e;
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t i = k; i < m; ++i) s += v[size_t(i - k)] * q[size_t(i * n + j)];
        s = 2.0 * s / vv;
        for (int64_t i = k; i < m; ++i) q[size_t(i * n + j)] -= s * v[size_t(i - k)];
      }
    }
    double* out = h.data_ptr<double>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t qi = wide ? j : i, qj = wide ? i : j;  // Q (m, n), transposed back when wide
        const double sign = rdiag[size_t(qj)] >= 0 ? 1.0 : -1.0;
        out[i * cols + j] = gain * sign * q[size_t(qi * n + qj)];
      }
  });
}

Tensor& eye_(Tensor& t) {
  EMBER_CHECK(t.dim() == 2, ValueError, "eye_: only 2-D tensors are supported, got shape ", shape_str(t.sizes()));
  return fill_through_host(t, [](Tensor& h) {
    h.fill_(0.0);
    double* p = h.data_ptr<double>();
    for (int64_t i = 0; i < std::min(h.size(0), h.size(1)); ++i) p[i * h.size(1) + i] = 1.0;
  });
}

void reset_weight_and_bias_(Tensor& weight, Tensor& bias, Generator* gen) {
  kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
  if (bias.defined()) {
    auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(weight);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound, gen);
  }
}

void reset_embedding_(Tensor& weight, std::optional<int64_t> padding_idx, Generator* gen) {
  init::normal_(weight, 0.0, 1.0, gen);
  if (!padding_idx) return;
  const int64_t rows = weight.dim() >= 1 ? weight.size(0) : 0;
  EMBER_CHECK(*padding_idx >= -rows && *padding_idx < rows, ValueError, "reset_embedding_: padding_idx ", *padding_idx,
              " must be within [-", rows, ", ", rows, ")");
  NoGradGuard g;
  weight.select(0, *padding_idx < 0 ? *padding_idx + rows : *padding_idx).fill_(0.0);
}

}  // namespace ember::nn::init

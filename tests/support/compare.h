// Tensor comparisons shared by the unit tests and the op harness: against a reference result with a
// tolerance relative to its largest magnitude (NaN meets NaN, infinities must match, an all-zero
// reference refused unless allowed), and element-wise relative (for PyTorch's golden values).
#pragma once

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace ember::test {

// |got - want| <= tol * max(1, max |want|) element-wise, after conversion to float64 on the CPU.
// tol = 0 asks for equality. Shapes and dtypes must match.
inline ::testing::AssertionResult close(const Tensor& want, const Tensor& got, double tol = 0.0, bool may_be_zero = false) {
  if (!got.defined() || !want.defined())
    return ::testing::AssertionFailure() << (want.defined() ? "no result" : "no reference result");
  if (want.sizes() != got.sizes())
    return ::testing::AssertionFailure() << "shape " << shape_str(got.sizes()) << ", reference " << shape_str(want.sizes());
  if (want.dtype() != got.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", reference " << dtype_name(want.dtype());
  const std::vector<double> w = want.to_vector<double>(), g = got.to_vector<double>();
  double scale = 1.0;
  bool nonzero = false;
  for (double v : w) {
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    nonzero = nonzero || v != 0.0;
  }
  if (!nonzero && !may_be_zero && !w.empty() && is_floating(want.dtype()))
    return ::testing::AssertionFailure() << "the reference result is all zero (a kernel writing zeros would pass)";
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (!std::isfinite(w[i]) || !std::isfinite(g[i])) {
      if (w[i] == g[i]) continue;
    } else if (std::abs(g[i] - w[i]) <= tol * scale) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << " of " << shape_str(want.sizes()) << ": " << g[i]
                                         << ", reference " << w[i] << " (tolerance " << tol * scale << ")";
  }
  return ::testing::AssertionSuccess();
}

// |got - want| <= rel * max(1, |want|) for every element.
inline ::testing::AssertionResult close_each(const Tensor& want, const Tensor& got, double rel) {
  if (!got.defined()) return ::testing::AssertionFailure() << "no tensor";
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << "shape " << shape_str(got.sizes()) << ", expected " << shape_str(want.sizes());
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= rel * std::max(1.0, std::abs(b[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << ", expected " << b[i];
  return ::testing::AssertionSuccess();
}

// A float32 result of sums of products against its float64 value `want`: |got - want| <= rel *
// terms for every element, `terms` the float64 sum of the products' magnitudes (the same sums on
// |a| and |b|), the scale float32 rounding errors grow with.
inline ::testing::AssertionResult close_to_terms(const std::vector<float>& got, const Tensor& want,
                                                 const Tensor& terms, double rel) {
  const std::vector<double> w = want.to_vector<double>(), s = terms.to_vector<double>();
  if (got.size() != w.size()) return ::testing::AssertionFailure() << got.size() << " values, expected " << w.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(double(got[i]) - w[i]) <= rel * s[i] + 1e-30))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << ", expected " << w[i]
                                           << " (sum of |terms| " << s[i] << ")";
  return ::testing::AssertionSuccess();
}

}  // namespace ember::test

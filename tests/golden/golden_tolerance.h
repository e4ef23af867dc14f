// The tolerance rule of the torchvision golden tests (test_golden_torchvision.cpp,
// test_golden_mobile.cpp): ember's float32 result against PyTorch's float64 one, within
// max(5 x PyTorch's own float32 error on that record, 1e-5), the error measured normwise
// (max |actual - expected| / max |expected|). The files store PyTorch's float32 error per record
// under "<model>/torch_f32_error/<what>".
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"

namespace ember::test {

inline constexpr double kGoldenFactor = 5.0, kGoldenFloor = 1e-5;

// max |actual - expected| / max |expected|, in double.
inline double normwise_error(const Tensor& actual, const Tensor& expected) {
  auto a = actual.to(DType::Float64).to_vector<double>();
  auto e = expected.to(DType::Float64).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - e[i]));
    scale = std::max(scale, std::abs(e[i]));
  }
  return std::isfinite(diff) ? diff / std::max(scale, 1e-30) : INFINITY;
}

// Checks `actual` against <model>/<what> of `file` within the rule above; prints the error and
// PyTorch float32's, to notice drift before it fails.
inline void expect_golden(const GoldenFile& file, const std::string& model, const std::string& what,
                          const Tensor& actual) {
  const Tensor expected = to_tensor(file.get(model + "/" + what));
  ASSERT_EQ(actual.sizes(), expected.sizes()) << model << " " << what;
  const double torch_err = file.get(model + "/torch_f32_error/" + what).as_double().at(0);
  const double tol = std::max(kGoldenFactor * torch_err, kGoldenFloor);
  const double err = normwise_error(actual, expected);
  std::printf("[golden] %-18s %-38s ember %.2e  torch f32 %.2e  tolerance %.1e\n", model.c_str(), what.c_str(), err,
              torch_err, tol);
  EXPECT_LE(err, tol) << model << " " << what << ": ember's float32 is " << err << " from PyTorch's float64 (PyTorch's "
                      << "float32: " << torch_err << ")";
}

// A text record (stored as bytes) split at its newlines.
inline std::vector<std::string> split_lines(const std::vector<int64_t>& bytes) {
  std::vector<std::string> out(1);
  for (int64_t b : bytes) {
    if (b == '\n') out.emplace_back();
    else out.back() += char(b);
  }
  return out;
}

}  // namespace ember::test

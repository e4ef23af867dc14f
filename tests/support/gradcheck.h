// Finite-difference gradient check in float64 (as torch.autograd.gradcheck): compares the
// analytic gradient of sum(f(inputs) * w) for a fixed random w with central differences.
// Inputs must be float64 leaves with requires_grad; keep them away from kinks.
#pragma once

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <functional>
#include <string>
#include <vector>

namespace ember::test {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

inline ::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                            std::vector<Tensor> inputs, GradcheckOptions opt = {}) {
  for (auto& x : inputs)
    if (x.defined() && x.dtype() != DType::Float64)
      return ::testing::AssertionFailure() << "gradcheck needs float64 inputs";
  Tensor out0;
  {
    NoGradGuard g;
    out0 = f(inputs);
  }
  Generator gen(1234);
  Tensor w = randn(out0.sizes(), {.dtype = DType::Float64}, &gen);
  auto scalar = [&](const std::vector<Tensor>& in) { return sum(mul(f(in), w)); };
  std::vector<Tensor> want;
  for (auto& x : inputs)
    if (x.defined() && x.requires_grad()) want.push_back(x);
  Tensor s = scalar(inputs);
  std::vector<Tensor> analytic = autograd::grad({s}, want);
  size_t k = 0;
  for (auto& x : inputs) {
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor a = analytic[k++].contiguous();
    EXPECT_EQ(a.sizes(), x.sizes());
    // Perturb each element through a contiguous flat view of the underlying storage positions.
    std::vector<double> num(x.numel());
    Tensor xd = x.detach();
    std::vector<double> base = xd.to_vector<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto set = [&](double v) {
        std::vector<double> vals = base;
        vals[i] = v;
        NoGradGuard g;
        xd.copy_(tensor(vals, x.sizes()));
      };
      double fp, fm;
      {
        set(base[i] + opt.eps);
        NoGradGuard g;
        fp = scalar(inputs).item<double>();
      }
      {
        set(base[i] - opt.eps);
        NoGradGuard g;
        fm = scalar(inputs).item<double>();
      }
      set(base[i]);
      num[i] = (fp - fm) / (2 * opt.eps);
    }
    std::vector<double> an = a.to_vector<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (std::abs(an[i] - num[i]) > opt.atol + opt.rtol * std::abs(num[i]))
        return ::testing::AssertionFailure()
               << "input " << (k - 1) << " element " << i << ": analytic " << an[i] << " vs numeric "
               << num[i] << " (shape " << shape_str(x.sizes()) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// A float64 leaf with values from N(0,1) (or U[lo,hi) when lo < hi), seeded.
inline Tensor rand_leaf(Shape shape, uint64_t seed, double lo = 0, double hi = 0) {
  Generator g(seed);
  Tensor t = lo < hi ? rand(shape, {.dtype = DType::Float64}, &g) : randn(shape, {.dtype = DType::Float64}, &g);
  if (lo < hi) t = add(mul(t, hi - lo), lo);
  return t.detach().requires_grad_(true);
}

}  // namespace ember::test

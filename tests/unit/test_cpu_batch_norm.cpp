// The CPU batch-norm kernels (src/cpu/nn_norm.cpp: float32 loops over channels, sums per block in
// float and across blocks in double) against the reference loops (src/cpu/reference/nn_norm.cpp,
// double accumulation) on the shapes a vectorised loop gets wrong: one channel, one element per
// plane, one image, planes longer than a summation block, and large means over a small spread,
// where E[x^2] - E[x]^2 in float would cancel to nothing. Every output starts as NaN, so a kernel
// that skips an element fails.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/nn_norm.h"
#include "cpu/reference/nn.h"
#include "support/compare.h"

using namespace ember;

namespace {

Tensor nan_filled(Shape s, DType t = DType::Float32) {
  return full(std::move(s), std::numeric_limits<double>::quiet_NaN(), {.dtype = t});
}

// x ~ offset + spread * N(0, 1), float32 (N, C, S).
Tensor input(int64_t N, int64_t C, int64_t S, double offset, double spread, uint64_t seed) {
  Generator g(seed);
  NoGradGuard ng;
  return add(mul(randn({N, C, S}, {}, &g), spread), offset);
}

// Largest |got - want| / |want| over the elements (want nonzero).
double max_rel_err(const Tensor& want, const Tensor& got) {
  const auto w = want.to_vector<double>(), g = got.to_vector<double>();
  double e = 0.0;
  for (size_t i = 0; i < w.size(); ++i) e = std::max(e, std::abs(g[i] - w[i]) / std::abs(w[i]));
  return e;
}

struct Case {
  int64_t N, C, S;
  double offset, spread;
};

void check_case(const Case& k) {
  SCOPED_TRACE("N=" + std::to_string(k.N) + " C=" + std::to_string(k.C) + " S=" + std::to_string(k.S) +
               " offset=" + std::to_string(k.offset));
  const int64_t N = k.N, C = k.C, S = k.S;
  const Tensor x = input(N, C, S, k.offset, k.spread, 7 + uint64_t(N * 131 + C * 17 + S));
  const Tensor g = input(N, C, S, 0.1, 1.0, 11 + uint64_t(S));
  const Tensor w = input(1, 1, C, 1.0, 0.5, 3).view({C}), b = input(1, 1, C, 0.0, 1.0, 5).view({C});

  // Statistics: the mean to float rounding, the variance relative to itself (it can be tiny).
  Tensor mean_ref = nan_filled({C}), var_ref = nan_filled({C});
  cpu::reference::batch_norm_stats(x, mean_ref, var_ref);
  Tensor mean = nan_filled({C}), var = nan_filled({C});
  cpu::batch_norm_stats_channels(x, mean, var);
  EXPECT_TRUE(test::close(mean_ref, mean, 1e-6, true)) << "mean";
  EXPECT_LT(max_rel_err(var_ref, var), 1e-5) << "variance";

  const Tensor invstd = rsqrt(add(var_ref, 1e-5));
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    Tensor out_ref = nan_filled({N, C, S}), out = nan_filled({N, C, S});
    cpu::reference::batch_norm_forward(x, mean_ref, invstd, w, b, out_ref);
    cpu::batch_norm_forward_channels(x, mean_ref, invstd, w, b, out);
    EXPECT_TRUE(test::close(out_ref, out, 1e-5)) << "forward";

    Tensor gx_ref = nan_filled({N, C, S}), gw_ref = nan_filled({C}), gb_ref = nan_filled({C});
    Tensor gx = nan_filled({N, C, S}), gw = nan_filled({C}), gb = nan_filled({C});
    cpu::reference::batch_norm_backward(g, x, mean_ref, invstd, w, training, gx_ref, gw_ref, gb_ref);
    cpu::batch_norm_backward_channels(g, x, mean_ref, invstd, w, training, gx, gw, gb);
    // The training input gradient is a difference of nearly equal terms: the harness's bound.
    EXPECT_TRUE(test::close(gx_ref, gx, 1e-4)) << "grad_x";
    EXPECT_TRUE(test::close(gw_ref, gw, 1e-4)) << "grad_weight";
    EXPECT_TRUE(test::close(gb_ref, gb, 1e-4)) << "grad_bias";
  }
}

TEST(CpuBatchNorm, OddShapesMatchTheReference) {
  const std::vector<Case> cases = {
      {1, 1, 2, 0.5, 2.0},      // one image, one channel
      {7, 1, 1, 0.5, 2.0},      // one element per plane (BatchNorm1d's (N, C))
      {5, 3, 1, -1.0, 1.0},     //
      {1, 4, 5, 0.0, 1.0},      // one image
      {3, 2, 17, 2.0, 3.0},     // a plane shorter than any vector + tail
      {2, 3, 4096 + 33, 0.5, 1.0},  // planes longer than a summation block
      {64, 16, 196, 0.3, 1.5},  // bncnn's second layer at batch 64: over OpenMP threads
  };
  for (const Case& k : cases) check_case(k);
}

// Mean 1e4, standard deviation 1e-2: a float E[x^2] - E[x]^2 would be off by more than the variance
// itself; the shifted block sums keep it to float rounding.
TEST(CpuBatchNorm, LargeMeansKeepTheVariance) {
  check_case({8, 3, 1000, 1e4, 1e-2});
  check_case({2, 2, 9000, -3e3, 0.5});
}

// float64 goes to the reference loops, bit for bit.
TEST(CpuBatchNorm, Float64IsTheReference) {
  Generator gen(1);
  const Tensor x = randn({4, 3, 10}, {.dtype = DType::Float64}, &gen);
  Tensor m1 = nan_filled({3}, DType::Float64), v1 = nan_filled({3}, DType::Float64);
  Tensor m2 = nan_filled({3}, DType::Float64), v2 = nan_filled({3}, DType::Float64);
  cpu::reference::batch_norm_stats(x, m1, v1);
  cpu::batch_norm_stats_channels(x, m2, v2);
  EXPECT_TRUE(test::close(m1, m2, 0.0)) << "mean";
  EXPECT_TRUE(test::close(v1, v2, 0.0)) << "variance";
}

}  // namespace

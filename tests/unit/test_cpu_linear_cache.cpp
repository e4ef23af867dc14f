// The CPU linear inference path keeps oneDNN's packed copy of each weight between calls
// (src/cpu/linear_dnnl.cpp). The cache must never serve a stale weight: in-place ops, copy_,
// fill_, optimizer steps, a freed weight whose memory is reused, two views of one storage.
#include <gtest/gtest.h>

#include <ember/ember.h>

using namespace ember;
namespace F = ember::nn::functional;

namespace {
// x @ w^T + b in float64 (the GEMM path, not the cached oneDNN one), back in float32.
Tensor float64_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  NoGradGuard ng;
  return add(matmul(x.to(DType::Float64), w.to(DType::Float64).t()), b.to(DType::Float64)).to(DType::Float32);
}
}  // namespace

TEST(CpuLinearCache, InferenceLinearSeesEveryWeightChange) {
  Generator g(42);
  Tensor x = randn({8, 32}, {}, &g), b = randn({16}, {}, &g);
  auto check = [&](const Tensor& w, const char* what) {
    NoGradGuard ng;
    EXPECT_TRUE(allclose(linear(x, w, b), float64_linear(x, w, b), 1e-5, 1e-4)) << what;
  };
  Tensor w = randn({16, 32}, {}, &g);
  check(w, "first use");
  {
    NoGradGuard ng;
    w.mul_(2.0);
  }
  check(w, "after mul_");
  w.copy_(randn({16, 32}, {}, &g));
  check(w, "after copy_");
  w.fill_(0.25);
  check(w, "after fill_");

  Tensor p = randn({16, 32}, {}, &g).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions{.lr = 0.5});
  check(p.detach(), "parameter before the step");
  F::cross_entropy(linear(x, p, b), randint(0, 16, {8}, {.dtype = DType::Int64}, &g)).backward();
  opt.step();
  check(p.detach(), "parameter after an optimizer step");

  for (int i = 0; i < 5; ++i) {  // the caching allocator hands the same block to the next weight
    Tensor fresh = randn({16, 32}, {}, &g);
    check(fresh, "a new weight in reused memory");
  }
  Tensor big = randn({48, 32}, {}, &g);
  for (int i = 0; i < 3; ++i) {
    check(big.narrow(0, 0, 16), "rows 0-15 of one storage");
    check(big.narrow(0, 16, 16), "rows 16-31 of the same storage");
  }
}

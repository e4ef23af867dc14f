// The fused optimizer kernels (src/kernels/optim_kernels.h) against the reference path of in-place
// tensor ops (options.fused = false), which test_optim.cpp ties to PyTorch. Both round at the same
// places, so every option combination must agree bit for bit over several steps, in float32 and
// float64, for a small parameter and one large enough for the CPU loop's OpenMP split. The *_CUDA
// tests run the same trajectories with the parameters on the GPU (fused kernel) against the CPU
// reference path.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/runtime.h"

using namespace ember;

namespace {

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, bool fused)>;

struct Case {
  std::string name;
  MakeOptimizer make;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.3})
      for (double wd : {0.0, 0.01})
        for (bool nesterov : {false, true}) {
          if (nesterov && (momentum == 0.0 || dampening != 0.0)) continue;
          std::string name = "SGD momentum=" + std::to_string(momentum) + " dampening=" + std::to_string(dampening) +
                             " wd=" + std::to_string(wd) + (nesterov ? " nesterov" : "");
          cases.push_back({name, [=](std::vector<Tensor> ps, bool fused) {
                             return std::make_unique<optim::SGD>(
                                 std::move(ps), optim::SGDOptions{.lr = 0.05, .momentum = momentum, .dampening = dampening,
                                                                  .weight_decay = wd, .nesterov = nesterov, .fused = fused});
                           }});
        }
  for (bool decoupled : {false, true})
    for (bool amsgrad : {false, true})
      for (double wd : {0.0, 0.05}) {
        std::string name = std::string(decoupled ? "AdamW" : "Adam") + (amsgrad ? " amsgrad" : "") + " wd=" + std::to_string(wd);
        cases.push_back({name, [=](std::vector<Tensor> ps, bool fused) -> std::unique_ptr<optim::Optimizer> {
                           optim::AdamOptions o{.lr = 0.01, .betas = {0.8, 0.95}, .eps = 1e-6, .weight_decay = wd,
                                                .amsgrad = amsgrad, .fused = fused};
                           if (decoupled) return std::make_unique<optim::AdamW>(std::move(ps), o);
                           return std::make_unique<optim::Adam>(std::move(ps), o);
                         }});
      }
  for (bool maximize : {false, true}) {
    const std::string m = maximize ? " maximize" : "";
    cases.push_back({"SGD nesterov wd" + m, [=](std::vector<Tensor> ps, bool fused) {
                       return std::make_unique<optim::SGD>(std::move(ps), optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01,
                                                                                          .nesterov = true, .fused = fused, .maximize = maximize});
                     }});
    cases.push_back({"AdamW amsgrad" + m, [=](std::vector<Tensor> ps, bool fused) {
                       return std::make_unique<optim::AdamW>(std::move(ps), optim::AdamOptions{.lr = 0.01, .amsgrad = true, .fused = fused,
                                                                                              .maximize = maximize});
                     }});
    for (double wd : {0.0, 0.03}) {
      const std::string w = " wd=" + std::to_string(wd) + m;
      cases.push_back({"Adagrad lr_decay" + w, [=](std::vector<Tensor> ps, bool fused) {
                         return std::make_unique<optim::Adagrad>(std::move(ps), optim::AdagradOptions{.lr = 0.05, .lr_decay = 0.1, .weight_decay = wd,
                                                                                                    .initial_accumulator_value = 0.1,
                                                                                                    .maximize = maximize, .fused = fused});
                       }});
      cases.push_back({"Adadelta" + w, [=](std::vector<Tensor> ps, bool fused) {
                         return std::make_unique<optim::Adadelta>(std::move(ps), optim::AdadeltaOptions{.lr = 0.5, .rho = 0.85, .weight_decay = wd,
                                                                                                      .maximize = maximize, .fused = fused});
                       }});
      for (double momentum : {0.0, 0.7})
        for (bool centered : {false, true})
          for (double alpha : {0.99, 0.3})  // 1 - alpha on both sides of ATen's lerp switch at 0.5
            cases.push_back({"RMSprop momentum=" + std::to_string(momentum) + (centered ? " centered" : "") + " alpha=" +
                                 std::to_string(alpha) + w,
                             [=](std::vector<Tensor> ps, bool fused) {
                               return std::make_unique<optim::RMSprop>(
                                   std::move(ps), optim::RMSpropOptions{.lr = 0.01, .alpha = alpha, .weight_decay = wd, .momentum = momentum,
                                                                        .centered = centered, .maximize = maximize, .fused = fused});
                             }});
    }
  }
  return cases;
}

// Bitwise equality of two tensors of one dtype (after moving both to the CPU); reports the first
// differing element.
::testing::AssertionResult same_bits(const Tensor& expected, const Tensor& got) {
  Tensor e = expected.to(Device::cpu()).contiguous(), g = got.to(Device::cpu()).contiguous();
  if (e.sizes() != g.sizes() || e.dtype() != g.dtype())
    return ::testing::AssertionFailure() << "shape or dtype differs: " << shape_str(e.sizes()) << " vs " << shape_str(g.sizes());
  if (std::memcmp(e.raw_data(), g.raw_data(), e.nbytes()) == 0) return ::testing::AssertionSuccess();
  std::vector<double> ev = e.to_vector<double>(), gv = g.to_vector<double>();
  for (size_t i = 0; i < ev.size(); ++i)
    if (std::memcmp(&ev[i], &gv[i], sizeof(double)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": expected " << ev[i] << ", got " << gv[i]
                                           << " (diff " << gv[i] - ev[i] << ")";
  return ::testing::AssertionFailure() << "bytes differ";
}

// Runs `steps` updates on two copies of the same parameters: `ref` on the CPU with fused = false,
// `test` on `device` with fused = true. The gradient of step k is 2 c p + w_k (c > 0 per element,
// w_k fresh noise), set directly, so it depends on the parameter as a real loss's would.
void compare_trajectories(const Case& c, DType dt, const Shape& shape, Device device, int steps = 5) {
  Generator gen(1234);
  Tensor init = randn(shape, {.dtype = dt}, &gen);
  Tensor curv = rand(shape, {.dtype = dt}, &gen).add_(0.5);
  Tensor p_ref = init.clone().requires_grad_();
  Tensor p_test = init.to(device).requires_grad_();
  auto opt_ref = c.make({p_ref}, false);
  auto opt_test = c.make({p_test}, true);
  for (int k = 0; k < steps; ++k) {
    Tensor noise = randn(shape, {.dtype = dt}, &gen);
    {
      NoGradGuard ng;
      p_ref.set_grad(add(mul(mul(p_ref, curv), 2.0), noise));
      p_test.set_grad(add(mul(mul(p_test, curv.to(device)), 2.0), noise.to(device)));
    }
    opt_ref->step();
    opt_test->step();
    ASSERT_TRUE(same_bits(p_ref, p_test)) << c.name << ", " << dtype_name(dt) << ", shape " << shape_str(shape)
                                          << ", parameter after step " << k + 1;
  }
  StateDict s_ref = opt_ref->state_dict(), s_test = opt_test->state_dict();
  ASSERT_EQ(s_ref.keys(), s_test.keys()) << c.name;
  for (const auto& [key, value] : s_ref)
    EXPECT_TRUE(same_bits(value, s_test.at(key))) << c.name << ", " << dtype_name(dt) << ": state " << key;
}

const std::vector<Shape> kShapes = {{37}, {201, 200}};  // the second passes the OpenMP threshold

}  // namespace

TEST(OptimFused, CpuEqualsTheReferencePathBitForBit) {
  for (const Case& c : all_cases())
    for (DType dt : {DType::Float32, DType::Float64})
      for (const Shape& shape : kShapes) compare_trajectories(c, dt, shape, Device::cpu());
}

// A parameter whose gradient arrives non-contiguous takes the reference path for that step; mixing
// the paths step by step changes nothing.
TEST(OptimFused, NonContiguousGradientFallsBackToTheReferencePath) {
  for (const Case& c : all_cases()) {
    Generator gen(7);
    Tensor init = randn({6, 5}, {.dtype = DType::Float64}, &gen);
    Tensor a = init.clone().requires_grad_(), b = init.clone().requires_grad_();
    auto opt_a = c.make({a}, true), opt_b = c.make({b}, false);
    for (int k = 0; k < 4; ++k) {
      Tensor g = randn({5, 6}, {.dtype = DType::Float64}, &gen).t();  // non-contiguous on odd steps
      a.set_grad(k % 2 ? g : g.contiguous());
      b.set_grad(g.contiguous());
      opt_a->step();
      opt_b->step();
      ASSERT_TRUE(same_bits(b, a)) << c.name << " step " << k + 1;
    }
  }
}

TEST(OptimFused, CudaEqualsTheCpuReferencePath_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  for (const Case& c : all_cases())
    for (DType dt : {DType::Float32, DType::Float64})
      for (const Shape& shape : kShapes) compare_trajectories(c, dt, shape, Device::cuda(0));
}

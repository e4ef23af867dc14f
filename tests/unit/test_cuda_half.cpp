// Mixed precision on CUDA against the CPU (issue 12): the float32 <-> bfloat16 / float16 cast
// kernels (bit for bit), linear / matmul (cuBLAS, half operands, float32 accumulation and output)
// and conv2d forward and both gradients (cuDNN, half data, float32 compute) under
// ember::autocast in bf16 and fp16, and one autocast training step of lenet5 through the engine's
// TrainStep (fp16 with the dynamic loss scaler). Every test is named *_CUDA (ctest label gpu) and
// skips, saying why, without a usable GPU.
//
// Inputs and seeds are multiples of 1/8 in [-2, 2): exact in bfloat16 and float16, with products
// and sums exact in float32, so the float32 CPU result on the same values is what the GPU must
// produce up to the one rounding of cuDNN's half output (cuBLAS writes float32: exact).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "ember/train/loss_scaling.h"
#include "ember/train/step.h"
#include "support/compare.h"
#include "support/gpu.h"

using namespace ember;
using ember::test::close;
namespace F = ember::nn::functional;

namespace {

const Device kGpu = Device::cuda(0);
const DType kHalves[] = {DType::BFloat16, DType::Float16};

// Multiples of 1/8 in [-2, 2), float32 on the CPU.
Tensor eighths(Shape s, uint64_t seed) {
  Generator g(seed);
  NoGradGuard ng;
  return mul(randint(-16, 16, std::move(s), {.dtype = DType::Int64}, &g).to(DType::Float32), 0.125);
}
// The rounding of one half result relative to the largest magnitude, with room for cuDNN's
// transform-based algorithms: bfloat16 has 8 significant bits, float16 11.
double half_tol(DType dt) { return dt == DType::BFloat16 ? 1e-2 : 2e-3; }

// A fresh leaf on d: detached first, so the CPU leaf (to(cpu) returns the same tensor) never makes the
// source require grad, and the GPU copy is not recorded as a differentiable to() of it (a non-leaf,
// whose .grad() stays undefined: what the first H200 run, 2026-12-04, caught).
Tensor leaf_on(const Tensor& t, Device d) { return t.detach().to(d).requires_grad_(); }

// The 16-bit patterns of a half tensor on the CPU.
std::vector<uint16_t> bits(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const uint16_t*>(c.raw_data());
  return std::vector<uint16_t>(p, p + c.numel());
}

}  // namespace

TEST(CudaHalf, CastsRoundAsTheCpuBitForBit_CUDA) {
  EMBER_REQUIRE_GPU();
  Generator g(3);
  // Normal values, large ones that overflow float16, tiny ones that go subnormal, NaN and inf; an
  // odd length for the vector path's tail, and a view starting at element 1 (unaligned: the scalar path).
  Tensor x = mul(randn({1027}, {}, &g), 3.0);
  std::vector<float> special = {1e5f, -7e4f, 65504.f, 65520.f, 1e-6f, -3e-8f, 1e-40f, NAN, -NAN, INFINITY, -INFINITY, 0.f, -0.f};
  for (size_t i = 0; i < special.size(); ++i) x.narrow(0, int64_t(i), 1).fill_(special[i]);
  const Tensor xg = x.to(kGpu);
  for (DType dt : kHalves) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t off : {0, 1}) {  // offset 1: 4-byte aligned only, the kernels' scalar path
      SCOPED_TRACE("offset " + std::to_string(off));
      const Tensor cpu_half = x.narrow(0, off, 1027 - off).to(dt);
      const Tensor gpu_half = xg.narrow(0, off, 1027 - off).to(dt);
      EXPECT_EQ(gpu_half.dtype(), dt);
      EXPECT_EQ(bits(cpu_half), bits(gpu_half.to(Device::cpu()))) << "narrowing";
      const Tensor wide_cpu = x.to(dt).narrow(0, off, 1027 - off).to(DType::Float32);
      const Tensor wide_gpu = xg.to(dt).narrow(0, off, 1027 - off).to(DType::Float32);
      EXPECT_TRUE(close(wide_cpu, wide_gpu.to(Device::cpu()), 0.0)) << "widening";
    }
  }
}

TEST(CudaHalf, LinearForwardAndGradientsMatchTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  const Tensor x = eighths({33, 100}, 1), w = eighths({50, 100}, 2), b = eighths({50}, 3), seed = eighths({33, 50}, 4);
  Tensor xc = leaf_on(x, Device::cpu()), wc = leaf_on(w, Device::cpu()), bc = leaf_on(b, Device::cpu());
  Tensor yc = linear(xc, wc, bc);
  sum(mul(yc, seed)).backward();
  for (DType dt : kHalves) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor xg = leaf_on(x, kGpu), wg = leaf_on(w, kGpu), bg = leaf_on(b, kGpu);
    Tensor yg;
    {
      autocast ac(DeviceType::CUDA, dt);
      yg = linear(xg, wg, bg);
    }
    EXPECT_EQ(yg.dtype(), DType::Float32);
    sum(mul(yg, seed.to(kGpu))).backward();
    // float32 output of exact sums: equal up to float32's last bit.
    EXPECT_TRUE(close(yc, yg, 1e-6)) << "output";
    for (auto [c, gpu, name] : {std::tuple{xc, xg, "x"}, {wc, wg, "weight"}, {bc, bg, "bias"}}) {
      ASSERT_TRUE(gpu.grad().defined()) << name;
      EXPECT_EQ(gpu.grad().dtype(), DType::Float32) << name << ": gradients reach the parameters in float32";
      EXPECT_TRUE(close(c.grad(), gpu.grad(), 1e-6)) << name << " gradient";
    }
  }
  // Not exact in half: the GPU result differs from float32 by the operands' rounding.
  Generator g(9);
  const Tensor xr = randn({16, 64}, {}, &g), wr = randn({8, 64}, {}, &g);
  Tensor f32 = linear(xr, wr, Tensor());
  for (DType dt : kHalves) {
    autocast ac(DeviceType::CUDA, dt);
    Tensor h = linear(xr.to(kGpu), wr.to(kGpu), Tensor()).to(Device::cpu());
    EXPECT_TRUE(close(f32, h, 5 * half_tol(dt))) << dtype_name(dt);
    EXPECT_FALSE(close(f32, h, 1e-7)) << dtype_name(dt) << ": nothing was computed in half";
    EXPECT_TRUE(close(linear(xr.to(dt).to(DType::Float32), wr.to(dt).to(DType::Float32), Tensor()), h, 1e-5))
        << dtype_name(dt) << ": against float32 on the half-rounded operands";
  }
}

TEST(CudaHalf, MatmulWithA2dRightOperandRunsInHalf_CUDA) {
  EMBER_REQUIRE_GPU();
  const Tensor a = eighths({2, 3, 40}, 5), b = eighths({40, 7}, 6);
  const Tensor want = matmul(a, b);
  for (DType dt : kHalves) {
    autocast ac(DeviceType::CUDA, dt);
    Tensor got = matmul(a.to(kGpu), b.to(kGpu));
    EXPECT_EQ(got.sizes(), (Shape{2, 3, 7}));
    EXPECT_EQ(got.dtype(), DType::Float32);
    EXPECT_TRUE(close(want, got, 1e-6)) << dtype_name(dt);
  }
  // A batched matmul of half tensors (no autocast): half in, half out, float32 sums.
  for (DType dt : kHalves) {
    const Tensor p = eighths({3, 5, 24}, 7), q = eighths({3, 24, 6}, 8);
    Tensor got = matmul(p.to(kGpu).to(dt), q.to(kGpu).to(dt));
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(close(matmul(p, q), got.to(DType::Float32), half_tol(dt))) << dtype_name(dt);
  }
}

TEST(CudaHalf, Conv2dForwardAndBothGradientsMatchTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  struct Case {
    int64_t groups;
    F::Conv2dOptions opt;
  };
  const Case cases[] = {{1, {.stride = {1, 1}, .padding = {2, 2}}},
                        {2, {.stride = {2, 1}, .padding = {1, 1}, .groups = 2}},
                        {1, {.stride = {1, 1}, .padding = {0, 0}, .dilation = {2, 2}}}};
  for (const Case& c : cases) {
    const Tensor x = eighths({4, 4, 12, 12}, 11), w = eighths({8, 4 / c.groups, 3, 3}, 12), b = eighths({8}, 13);
    Tensor xc = leaf_on(x, Device::cpu()), wc = leaf_on(w, Device::cpu()), bc = leaf_on(b, Device::cpu());
    Tensor yc = F::conv2d(xc, wc, bc, c.opt);
    const Tensor seed = eighths(yc.sizes(), 14);
    sum(mul(yc, seed)).backward();
    for (DType dt : kHalves) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + ", groups " + std::to_string(c.groups) + ", stride " +
                   std::to_string(c.opt.stride[0]) + ", dilation " + std::to_string(c.opt.dilation[0]));
      Tensor xg = leaf_on(x, kGpu), wg = leaf_on(w, kGpu), bg = leaf_on(b, kGpu);
      Tensor yg;
      {
        autocast ac(DeviceType::CUDA, dt);
        yg = F::conv2d(xg, wg, bg, c.opt);
      }
      EXPECT_EQ(yg.dtype(), DType::Float32);
      sum(mul(yg, seed.to(kGpu))).backward();
      EXPECT_TRUE(close(yc, yg, half_tol(dt))) << "output";
      for (auto [cpu, gpu, name] : {std::tuple{xc, xg, "x"}, {wc, wg, "weight"}, {bc, bg, "bias"}}) {
        ASSERT_TRUE(gpu.grad().defined()) << name;
        EXPECT_EQ(gpu.grad().dtype(), DType::Float32) << name;
        EXPECT_TRUE(close(cpu.grad(), gpu.grad(), half_tol(dt))) << name << " gradient";
      }
    }
  }
}

// One optimizer step of lenet5 through the engine's TrainStep under autocast on the GPU against
// the CPU: bf16 against the CPU's bf16 autocast, fp16 (with the dynamic loss scaler: 2^16) against
// the CPU in float32. Loss, every gradient and the updated weights, within half tolerances.
TEST(CudaHalf, AutocastLenet5TrainingStepMatchesTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  const int64_t B = 32;
  Generator gx(21), gy(22);
  const Tensor x = randn({B, 1, 28, 28}, {}, &gx);
  const Tensor y = randint(0, 10, {B}, {.dtype = DType::Int64}, &gy);
  struct Side {
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<optim::SGD> opt;
    std::unique_ptr<train::TrainStep> step;
    train::DeviceMetrics metrics;
  };
  auto make = [&](Device d, DType dt, bool scaler) {
    Side s;
    Generator g(7);
    s.model = models::lenet5(10, 1, 28, &g);
    s.model->to(d);
    s.opt = std::make_unique<optim::SGD>(s.model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    s.step = std::make_unique<train::TrainStep>(*s.model, *s.opt);
    if (dt != DType::Float32) s.step->set_precision(std::make_shared<train::AutocastPolicy>(d.type, dt));
    if (scaler) s.step->set_loss_scaler(std::make_shared<train::DynamicLossScaler>());
    const data::Batch batch{x.to(d), y.to(d)};
    EXPECT_TRUE(s.step->run(1, B, [&] { return batch; }, &s.metrics)) << "the step was skipped";
    return s;
  };
  struct Mode {
    DType gpu, cpu;
    bool scaler;
    double tol;
  };
  for (const Mode m : {Mode{DType::BFloat16, DType::BFloat16, false, 3e-2}, Mode{DType::Float16, DType::Float32, true, 1e-2}}) {
    SCOPED_TRACE(dtype_name(m.gpu));
    Side cpu = make(Device::cpu(), m.cpu, false), gpu = make(kGpu, m.gpu, m.scaler);
    const auto vc = cpu.metrics.read(), vg = gpu.metrics.read();
    EXPECT_NEAR(vc.loss_sum, vg.loss_sum, m.tol * std::max(1.0, std::abs(vc.loss_sum))) << "loss";
    auto pc = cpu.model->named_parameters(), pg = gpu.model->named_parameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      SCOPED_TRACE(pc[i].first);
      EXPECT_EQ(pg[i].second.dtype(), DType::Float32) << "master weights stay float32";
      EXPECT_EQ(pg[i].second.grad().dtype(), DType::Float32);
      // The unscaled gradient (the scaler divided it back) and the weights after the update.
      EXPECT_TRUE(close(pc[i].second.grad(), pg[i].second.grad(), m.tol)) << "gradient";
      EXPECT_TRUE(close(pc[i].second, pg[i].second, m.tol)) << "weights after the step";
    }
  }
}

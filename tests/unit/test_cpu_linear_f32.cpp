// linear's float32 training products on the CPU (src/cpu/linear_matmul.cpp): the forward as a
// oneDNN matmul with the bias in its epilogue and the input gradient as oneDNN's sgemm, for the
// layers big enough to gain (kMinDnnlLinearWork) outside ember::deterministic(). Against float64:
// values and gradients within float32 rounding, the same bits on every call; which products the
// slots take; and under set_deterministic(true) the tiled GEMM path (the same bits as matmul + add,
// for 1 and 2 threads).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/linear_matmul.h"
#include "kernels/kernels.h"
#include "support/compare.h"
#include "support/threads.h"

using namespace ember;

namespace {
struct Layer {
  int64_t n, in, out;
};
// mnistnet's fc1, mlp's first layer, lenet5's 120 -> 84 (just above the threshold), mlp's last
// layer (below it: the tiled GEMM) and an odd shape.
const Layer kLayers[] = {{64, 9216, 128}, {64, 784, 256}, {64, 120, 84}, {64, 256, 10}, {37, 301, 53}};

struct Step {
  std::vector<float> y, gx, gw, gb;
};
// One training step's products through ember::linear: y = x W^T + b, then the gradients of
// sum(y * r) (grad_out = r).
Step step(const Tensor& x0, const Tensor& w0, const Tensor& b0, const Tensor& r) {
  Tensor x = x0.detach().requires_grad_(), w = w0.detach().requires_grad_(), b = b0.detach().requires_grad_();
  Tensor y = linear(x, w, b);
  mul(y, r).sum().backward();
  return {y.to_vector<float>(), x.grad().to_vector<float>(), w.grad().to_vector<float>(), b.grad().to_vector<float>()};
}

}  // namespace

TEST(CpuLinearF32, TrainingProductsMatchFloat64AndRepeatBitForBit) {
  test::ThreadsAndMode restore;
  set_deterministic(false);
  for (const Layer& l : kLayers) {
    Generator g(uint64_t(l.in * 7 + l.out));
    const Tensor x = randn({l.n, l.in}, {}, &g), w = randn({l.out, l.in}, {}, &g), b = randn({l.out}, {}, &g);
    const Tensor r = randn({l.n, l.out}, {}, &g);
    const Step a = step(x, w, b, r), again = step(x, w, b, r);
    NoGradGuard ng;
    const Tensor xd = x.to(DType::Float64), wd = w.to(DType::Float64), bd = b.to(DType::Float64);
    const Tensor rd = r.to(DType::Float64);
    // Within float32 rounding: 1e-5 of the sum of |terms|.
    SCOPED_TRACE(std::to_string(l.n) + "x" + std::to_string(l.in) + "->" + std::to_string(l.out));
    EXPECT_TRUE(test::close_to_terms(a.y, add(matmul(xd, wd.t()), bd), add(matmul(abs(xd), abs(wd).t()), abs(bd)), 1e-5))
        << "y";
    EXPECT_TRUE(test::close_to_terms(a.gx, matmul(rd, wd), matmul(abs(rd), abs(wd)), 1e-5)) << "grad_x";
    EXPECT_TRUE(test::close_to_terms(a.gw, matmul(rd.t(), xd), matmul(abs(rd).t(), abs(xd)), 1e-5)) << "grad_w";
    EXPECT_TRUE(test::close_to_terms(a.gb, sum(rd, {0}), sum(abs(rd), {0}), 1e-5)) << "grad_b";
    for (auto [p, q] : {std::pair{&a.y, &again.y}, std::pair{&a.gx, &again.gx}})
      EXPECT_EQ(std::memcmp(p->data(), q->data(), p->size() * sizeof(float)), 0)
          << l.n << "x" << l.in << "->" << l.out << ": a second call gave other bits";
  }
}

TEST(CpuLinearF32, TheSlotsTakeTheBigLayersOnlyOutsideDeterministicMode) {
  test::ThreadsAndMode restore;
  for (bool det : {false, true}) {
    set_deterministic(det);
    for (const Layer& l : kLayers) {
      Generator g(3);
      const Tensor x = randn({l.n, l.in}, {}, &g), w = randn({l.out, l.in}, {}, &g), b = randn({l.out}, {}, &g);
      const Tensor go = randn({l.n, l.out}, {}, &g);
      Tensor y = empty({l.n, l.out}), gx = empty({l.n, l.in});
      const bool big = l.n * l.in * l.out >= cpu::kMinDnnlLinearWork;
      EXPECT_EQ(kernels::linear_forward_training(Device::cpu())(x, w, b, y), big && !det)
          << l.n << "x" << l.in << "->" << l.out << " deterministic=" << det;
      EXPECT_EQ(kernels::linear_backward_data(Device::cpu())(go, w, gx), big && !det)
          << l.n << "x" << l.in << "->" << l.out << " deterministic=" << det;
      // Float64 is never theirs.
      Tensor y64 = empty({l.n, l.out}, {.dtype = DType::Float64});
      EXPECT_FALSE(kernels::linear_forward_training(Device::cpu())(x.to(DType::Float64), w.to(DType::Float64),
                                                                    b.to(DType::Float64), y64));
    }
  }
}

TEST(CpuLinearF32, DeterministicTrainingIsMatmulPlusAddForAnyThreadCount) {
  test::ThreadsAndMode restore;
  set_deterministic(true);
  const Layer l = kLayers[0];
  Generator g(5);
  const Tensor x = randn({l.n, l.in}, {}, &g), w = randn({l.out, l.in}, {}, &g), b = randn({l.out}, {}, &g);
  const Tensor r = randn({l.n, l.out}, {}, &g);
  std::vector<Step> runs;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    runs.push_back(step(x, w, b, r));
  }
  NoGradGuard ng;
  const std::vector<float> y = add(matmul(x, w.t()), b).to_vector<float>(), gx = matmul(r, w).to_vector<float>();
  for (const Step& s : runs) {
    EXPECT_EQ(std::memcmp(s.y.data(), y.data(), y.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(s.gx.data(), gx.data(), gx.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(s.gw.data(), runs[0].gw.data(), s.gw.size() * sizeof(float)), 0);
  }
}

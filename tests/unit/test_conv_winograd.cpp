// The float32 weight gradient of a 3x3 / stride 1 convolution with >= 16 input and output channels
// runs through oneDNN's Winograd kernel on AVX-512 CPUs (src/cpu/nn_conv_dnnl.cpp): within float32
// rounding of the float64 reference, scaled by the sum of the products' magnitudes, for the weight
// and the bias gradient; the same bits on every call; and under set_deterministic(true) the direct
// path's gradient within the same bound (and the same bits for 1 and 2 threads, as before).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstring>
#include <vector>
#include "support/compare.h"
#include "support/threads.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {
struct Case {
  int64_t n, ci, co, hw, pad;
};
// mnistnet's conv2 (no padding), a resnet block's (padding 1) at a 7x7 plane, an odd plane.
const Case kCases[] = {{2, 32, 64, 26, 0}, {4, 64, 64, 7, 1}, {3, 16, 24, 13, 1}};

struct Grads {
  std::vector<float> w, b;
};
Grads grads(const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& r, int64_t pad) {
  Tensor w = w0.detach().requires_grad_(), b = b0.detach().requires_grad_();
  Tensor y = F::conv2d(x, w, b, {.padding = {pad, pad}});
  mul(y, r).sum().backward();
  return {w.grad().to_vector<float>(), b.grad().to_vector<float>()};
}

// The bound (test::close_to_terms): 2e-6 of the sum of |terms|. Measured (Zen 4, 2026-12-03) largest |error| / sum|terms|:
// Winograd 2.1e-7 - 6.1e-7, oneDNN's direct kernel (EMBER_CONV_WINOGRAD=0) 1.8e-7 - 2.3e-7, the
// deterministic im2col path 0.9e-7 - 1.0e-7.
}  // namespace

TEST(ConvWinograd, WeightAndBiasGradientsAreWithinFloat32RoundingOfFloat64) {
  test::ThreadsAndMode restore;
  for (bool det : {false, true}) {
    set_deterministic(det);
    for (const Case& c : kCases) {
      Generator g(uint64_t(c.ci * 100 + c.hw));
      const Tensor x = randn({c.n, c.ci, c.hw, c.hw}, {}, &g), w = randn({c.co, c.ci, 3, 3}, {}, &g);
      const Tensor b = randn({c.co}, {}, &g);
      const int64_t oh = c.hw + 2 * c.pad - 2;
      const Tensor r = randn({c.n, c.co, oh, oh}, {}, &g);
      const Grads a = grads(x, w, b, r, c.pad), again = grads(x, w, b, r, c.pad);
      EXPECT_EQ(std::memcmp(a.w.data(), again.w.data(), a.w.size() * sizeof(float)), 0) << "a second call differs";
      // float64: the reference weight gradient of the values and of their magnitudes (the bound).
      auto ref = [&](const Tensor& xx, const Tensor& rr) {
        Tensor w64 = w.to(DType::Float64).detach().requires_grad_();
        mul(F::conv2d(xx, w64, Tensor(), {.padding = {c.pad, c.pad}}), rr).sum().backward();
        return w64.grad();
      };
      const Tensor x64 = x.to(DType::Float64), r64 = r.to(DType::Float64);
      SCOPED_TRACE(std::to_string(c.ci) + "->" + std::to_string(c.co) + " at " + std::to_string(c.hw) + " px" +
                   (det ? ", deterministic" : ""));
      EXPECT_TRUE(test::close_to_terms(a.w, ref(x64, r64), ref(abs(x64), abs(r64)), 2e-6)) << "weight";
      EXPECT_TRUE(test::close_to_terms(a.b, sum(r64, {0, 2, 3}), sum(abs(r64), {0, 2, 3}), 2e-6)) << "bias";
    }
  }
}

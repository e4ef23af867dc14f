// Every CPU fast path of the nn kernels (conv2d im2col + OpenBLAS, plane-parallel max-pool) against
// its reference kernel on random float32 data. Outputs are pre-filled with different sentinels
// (NaN for the fast path, 1e30 for the reference) so a kernel that skips an element fails, and
// inputs and outputs are asserted non-zero so an all-zero comparison cannot pass.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "cpu/nn_conv.h"
#include "cpu/reference/nn.h"
#include "kernels/nn_kernels.h"
#include "ops/backends.h"

using namespace ember;
using kernels::Conv2dParams;
using kernels::Pool2dParams;

namespace {

Tensor random_f32(Shape shape, uint64_t seed) {
  Generator g(seed);
  return randn(std::move(shape), {}, &g);
}

bool any_nonzero(const Tensor& t) {
  for (float v : t.to_vector<float>())
    if (v != 0.0f) return true;
  return false;
}

::testing::AssertionResult parity(const Tensor& fast, const Tensor& ref, const char* what) {
  if (!any_nonzero(ref)) return ::testing::AssertionFailure() << what << ": reference output is all zero";
  auto a = fast.to_vector<float>(), b = ref.to_vector<float>();
  double scale = 0;
  for (float v : b) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(double(a[i]) - double(b[i])) <= 1e-4 * std::max(1.0, scale) + 1e-4 * std::abs(double(b[i]))))
      return ::testing::AssertionFailure() << what << " element " << i << ": fast " << a[i] << " vs reference " << b[i];
  return ::testing::AssertionSuccess();
}

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

Shape conv_out_shape(const ConvCase& c) {
  int64_t oh = (c.x[2] + 2 * c.p.pad_h - c.p.dilation_h * (c.w[2] - 1) - 1) / c.p.stride_h + 1;
  int64_t ow = (c.x[3] + 2 * c.p.pad_w - c.p.dilation_w * (c.w[3] - 1) - 1) / c.p.stride_w + 1;
  return {c.x[0], c.w[0], oh, ow};
}

const std::vector<ConvCase> kConvCases = {
    {{4, 32, 10, 10}, {64, 32, 3, 3}, {}, true},                        // mnistnet conv2, smaller
    {{3, 1, 28, 28}, {8, 1, 3, 3}, {}, true},                           // conv1-like, one input channel
    {{1, 6, 9, 11}, {4, 6, 3, 2}, {2, 1, 1, 0, 1, 2, 1}, false},        // batch 1, non-square, stride/pad/dilation
    {{2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 2}, true},           // groups
    {{2, 4, 6, 5}, {4, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 4}, false},          // depthwise
    {{3, 16, 5, 6}, {8, 16, 1, 1}, {}, true},                           // pointwise (no unrolling)
    {{2, 6, 8, 8}, {4, 6, 5, 5}, {1, 1, 2, 2, 1, 1, 1}, true},           // large padding
    {{2, 3, 8, 8}, {4, 3, 3, 3}, {2, 2, 0, 0, 1, 1, 1}, true},           // stride leaves a row unread
};

struct ConvKernels {
  const char* name;
  kernels::Conv2dForwardFn forward;
  kernels::Conv2dBackwardDataFn backward_data;
  kernels::Conv2dBackwardWeightFn backward_weight;
};

void check_conv_kernels(const ConvKernels& k) {
  uint64_t seed = 100;
  for (const auto& c : kConvCases) {
    SCOPED_TRACE(std::string(k.name) + " " + shape_str(c.x) + " * " + shape_str(c.w));
    Tensor x = random_f32(c.x, ++seed), w = random_f32(c.w, ++seed);
    Tensor b = c.bias ? random_f32({c.w[0]}, ++seed) : Tensor();
    Shape os = conv_out_shape(c);
    Tensor go = random_f32(os, ++seed);
    ASSERT_TRUE(any_nonzero(x) && any_nonzero(w) && any_nonzero(go));

    Tensor out_fast = full(os, std::nan("")), out_ref = full(os, 1e30);
    k.forward(x, w, b, c.p, out_fast);
    cpu::reference::conv2d_forward(x, w, b, c.p, out_ref);
    EXPECT_TRUE(parity(out_fast, out_ref, "conv2d_forward"));

    Tensor gx_fast = full(c.x, std::nan("")), gx_ref = full(c.x, 1e30);
    k.backward_data(go, w, c.p, gx_fast);
    cpu::reference::conv2d_backward_data(go, w, c.p, gx_ref);
    EXPECT_TRUE(parity(gx_fast, gx_ref, "conv2d_backward_data"));

    Tensor gw_fast = full(c.w, std::nan("")), gw_ref = full(c.w, 1e30);
    k.backward_weight(go, x, c.p, gw_fast);
    cpu::reference::conv2d_backward_weight(go, x, c.p, gw_ref);
    EXPECT_TRUE(parity(gw_fast, gw_ref, "conv2d_backward_weight"));
  }
}

}  // namespace

// The registered kernels, whichever they are.
TEST(NnParity, Conv2dForwardBackward) {
  ensure_backends();  // the slots are read before any tensor exists (which would register them)
  check_conv_kernels({"registered", kernels::conv2d_forward(Device::cpu()),
                      kernels::conv2d_backward_data(Device::cpu()),
                      kernels::conv2d_backward_weight(Device::cpu())});
}
TEST(NnParity, Conv2dIm2colForwardBackward) {
  check_conv_kernels({"im2col", &cpu::conv2d_forward_im2col, &cpu::conv2d_backward_data_im2col,
                      &cpu::conv2d_backward_weight_im2col});
}
TEST(NnParity, Conv2dDnnlForwardBackward) {
  check_conv_kernels({"dnnl", &cpu::conv2d_forward_dnnl, &cpu::conv2d_backward_data_dnnl,
                      &cpu::conv2d_backward_weight_dnnl});
}

TEST(NnParity, MaxPool2dForwardBackward) {
  struct PoolCase {
    Shape x;
    Pool2dParams p;
    Shape out;
  };
  const std::vector<PoolCase> cases = {
      {{64, 32, 26, 26}, {2, 2, 2, 2, 0, 0}, {64, 32, 13, 13}},  // mnistnet's pool
      {{2, 3, 9, 8}, {3, 2, 2, 1, 1, 1}, {2, 3, 5, 9}},
      {{1, 2, 7, 7}, {3, 3, 2, 2, 0, 0}, {1, 2, 3, 3}},
      {{1, 2, 7, 7}, {3, 3, 2, 2, 1, 1}, {1, 2, 4, 4}},          // ceil-mode sized: last window clipped
  };
  uint64_t seed = 200;
  for (const auto& c : cases) {
    SCOPED_TRACE(shape_str(c.x));
    Tensor x = random_f32(c.x, ++seed), go = random_f32(c.out, ++seed);
    ASSERT_TRUE(any_nonzero(x) && any_nonzero(go));
    Tensor out_fast = full(c.out, std::nan("")), out_ref = full(c.out, 1e30);
    Tensor idx_fast = full(c.out, -7, {.dtype = DType::Int64}), idx_ref = full(c.out, -9, {.dtype = DType::Int64});
    kernels::max_pool2d_forward(Device::cpu())(x, c.p, out_fast, idx_fast);
    cpu::reference::max_pool2d_forward(x, c.p, out_ref, idx_ref);
    EXPECT_TRUE(parity(out_fast, out_ref, "max_pool2d_forward"));
    EXPECT_EQ(idx_fast.to_vector<int64_t>(), idx_ref.to_vector<int64_t>());

    Tensor gx_fast = full(c.x, std::nan("")), gx_ref = full(c.x, 1e30);
    kernels::max_pool2d_backward(Device::cpu())(go, idx_ref, gx_fast);
    cpu::reference::max_pool2d_backward(go, idx_ref, gx_ref);
    EXPECT_TRUE(parity(gx_fast, gx_ref, "max_pool2d_backward"));
  }
}

// The 2x2/2 path on data full of ties (small integers) and NaNs, odd sizes (a row and a column
// left over): indices must follow the reference's first-NaN, else first-maximum rule.
// Shapes: odd sizes; LeNet-5's rows of 14 and 5 outputs; rows of 16, 17 and 40 outputs (one, two
// and three 16-wide vector steps on AVX-512, the last one partial).
TEST(NnParity, MaxPool2d2x2TiesAndNaN) {
  for (auto [xs, os] : std::vector<std::pair<Shape, Shape>>{{{3, 4, 9, 7}, {3, 4, 4, 3}},
                                                            {{2, 3, 28, 28}, {2, 3, 14, 14}},
                                                            {{2, 3, 10, 10}, {2, 3, 5, 5}},
                                                            {{2, 2, 6, 32}, {2, 2, 3, 16}},
                                                            {{1, 2, 5, 35}, {1, 2, 2, 17}},
                                                            {{1, 1, 4, 81}, {1, 1, 2, 40}}}) {
  SCOPED_TRACE(shape_str(xs));
  Generator g(321);
  Tensor x = randint(0, 3, xs, {.dtype = DType::Int64}, &g).to(DType::Float32);
  float* xp = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); i += 13) xp[i] = std::nanf("");
  Pool2dParams p{2, 2, 2, 2, 0, 0};
  Tensor out_fast = full(os, -5.0), out_ref = full(os, 1e30);
  Tensor idx_fast = full(os, -7, {.dtype = DType::Int64}), idx_ref = full(os, -9, {.dtype = DType::Int64});
  kernels::max_pool2d_forward(Device::cpu())(x, p, out_fast, idx_fast);
  cpu::reference::max_pool2d_forward(x, p, out_ref, idx_ref);
  EXPECT_EQ(idx_fast.to_vector<int64_t>(), idx_ref.to_vector<int64_t>());
  auto a = out_fast.to_vector<float>(), b = out_ref.to_vector<float>();
  int nans = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    nans += std::isnan(b[i]);
    EXPECT_TRUE((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]) << i << ": " << a[i] << " vs " << b[i];
  }
  EXPECT_GT(nans, 0);
  }
}

// Not a correctness test: times conv2d forward + both backward kernels for mnistnet's conv2
// (N=64, 32->64, 3x3 on 26x26), registered kernels vs reference. Run with --gtest_also_run_disabled_tests.
TEST(NnParity, DISABLED_TimingMnistConv2) {
  ConvCase c{{64, 32, 26, 26}, {64, 32, 3, 3}, {}, true};
  Tensor x = random_f32(c.x, 1), w = random_f32(c.w, 2), b = random_f32({64}, 3);
  Shape os = conv_out_shape(c);
  Tensor go = random_f32(os, 4), out = empty(os), gx = empty(c.x), gw = empty(c.w);
  auto time = [&](auto fwd, auto bwd_data, auto bwd_weight, int reps) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      fwd(x, w, b, c.p, out);
      bwd_data(go, w, c.p, gx);
      bwd_weight(go, x, c.p, gw);
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  auto fast_fwd = kernels::conv2d_forward(Device::cpu());
  auto fast_bd = kernels::conv2d_backward_data(Device::cpu());
  auto fast_bw = kernels::conv2d_backward_weight(Device::cpu());
  time(fast_fwd, fast_bd, fast_bw, 1);  // warm-up
  double fast = time(fast_fwd, fast_bd, fast_bw, 10);
  double ref = time(&cpu::reference::conv2d_forward, &cpu::reference::conv2d_backward_data,
                    &cpu::reference::conv2d_backward_weight, 1);
  std::printf("mnistnet conv2 fwd+bwd, %d threads: registered %.1f ms, reference %.1f ms (%.0fx)\n",
              get_num_threads(), fast, ref, ref / fast);
}

// Activations held in oneDNN's layout between CPU ops (issue 24, src/cpu/dnnl_form.h): without
// autograd a convolution leaves its output in the primitive's blocked layout, and the next
// convolution and max pooling read it there. What a user sees must not change: every tensor read
// through .data() is the plain NCHW float32 tensor with the values the unheld ops give (bit for bit
// in float32; under bf16 autocast the convolution's output rounded to bfloat16, as PyTorch's autocast
// returns it); views, in-place ops, NaNs, other threads and channel counts that the blocked layout
// pads all see the same values. Training holds too: a convolution's output, the batch norm, ReLU and
// add that follow it and the gradients back through them stay in the primitive's layout
// (test_held_training.cpp).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cpu/dnnl_form.h"
#include "support/compare.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

bool held(const Tensor& t) { return t.storage()->form() != nullptr; }
bool avx512() { return __builtin_cpu_supports("avx512f"); }

// x (N, C, H, W), w (O, C, 3, 3), b (O) with values in [-1, 1).
struct Conv {
  Tensor x, w, b;
};
Conv conv_operands(int64_t n, int64_t c, int64_t hw, int64_t o, uint64_t seed) {
  Generator g(seed);
  return {rand({n, c, hw, hw}, {}, &g) * 2.0 - 1.0, (rand({o, c, 3, 3}, {}, &g) * 2.0 - 1.0) * 0.3,
          rand({o}, {}, &g) * 0.2 - 0.1};
}

// conv -> ReLU -> conv -> ReLU -> 2x2 max pool -> flatten, with or without autograd recording (with
// it nothing is held: the reference); `second` output channels of the second convolution.
Tensor chain(const Conv& a, const Tensor& w2, const Tensor& b2, bool record) {
  auto run = [&] {
    Tensor y = F::conv2d_activation(a.x, a.w, a.b, {}, F::ConvActivation::Relu);
    y = F::conv2d_activation(y, w2, b2, {}, F::ConvActivation::Relu);
    return flatten(F::max_pool2d(y, {.kernel = {2, 2}}), 1);
  };
  if (!record) {
    NoGradGuard ng;
    return run();
  }
  Conv r{a.x.detach().requires_grad_(true), a.w, a.b};
  Tensor y = F::conv2d_activation(r.x, r.w, r.b, {}, F::ConvActivation::Relu);
  y = F::conv2d_activation(y, w2, b2, {}, F::ConvActivation::Relu);
  return flatten(F::max_pool2d(y, {.kernel = {2, 2}}), 1).detach();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.data_ptr<float>(), bc.data_ptr<float>(), size_t(a.numel()) * sizeof(float)) == 0;
}

}  // namespace

// On an AVX-512 CPU oneDNN writes a 32-channel convolution in nChw16c: without autograd the output
// is held there, and reading it gives the plain NCHW tensor the recorded op gives, bit for bit, the
// form dropped once read.
TEST(LayoutForms, AnInferenceConvolutionIsHeldAndReadsAsThePlainTensor) {
  const Conv a = conv_operands(3, 8, 12, 32, 1);
  Tensor want;
  {
    Tensor x = a.x.detach().requires_grad_(true);
    want = F::conv2d(x, a.w, a.b, {}).detach();
  }
  NoGradGuard ng;
  Tensor got = F::conv2d(a.x, a.w, a.b, {});
  if (avx512()) EXPECT_TRUE(held(got));
  EXPECT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(got.is_contiguous());
  EXPECT_TRUE(same_bits(want, got));
  EXPECT_FALSE(held(got));
}

// The next convolution and the max pooling read the held values as they are; the chain's result
// equals the recorded chain's, float32 bit for bit, for channel counts the blocked layout pads (6,
// 20) and for one it does not (32).
TEST(LayoutForms, ConvConvPoolWithoutAutogradEqualsTheRecordedOpsBitForBit) {
  for (int64_t c1 : {6, 20, 32}) {
    SCOPED_TRACE(c1);
    const Conv a = conv_operands(4, 3, 14, c1, 2);
    const Conv b = conv_operands(1, c1, 3, 16, 3);
    EXPECT_TRUE(same_bits(chain(a, b.w, b.b, true), chain(a, b.w, b.b, false)));
  }
}

// A NaN reaching the pooling stays where the plain kernel puts it; numbers around it are unchanged.
TEST(LayoutForms, HeldMaxPoolingKeepsNaNsWhereThePlainKernelDoes) {
  Conv a = conv_operands(2, 4, 10, 32, 4);
  a.x.data_ptr<float>()[37] = std::nanf("");
  a.x.data_ptr<float>()[3 * 100 + 55] = std::nanf("");
  a.x.storage()->bump_version();
  Tensor want;
  {
    Tensor x = a.x.detach().requires_grad_(true);
    want = F::max_pool2d(F::conv2d(x, a.w, a.b, {}), {.kernel = {2, 2}}).detach();
  }
  NoGradGuard ng;
  const Tensor got = F::max_pool2d(F::conv2d(a.x, a.w, a.b, {}), {.kernel = {2, 2}});
  ASSERT_EQ(want.numel(), got.numel());
  int nans = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float u = want.data_ptr<float>()[i], v = got.data_ptr<float>()[i];
    if (std::isnan(u)) {
      ++nans;
      EXPECT_TRUE(std::isnan(v)) << i;
    } else {
      EXPECT_EQ(u, v) << i;
    }
  }
  EXPECT_GT(nans, 0);
}

// Windows other than 2x2/2 (ResNet's 3x3 stride 2 padding 1, a 3x3 stride 1) pool the held layout
// as the plain kernel does.
TEST(LayoutForms, HeldMaxPoolingOfOtherWindowsEqualsThePlainKernel) {
  const Conv a = conv_operands(2, 3, 15, 32, 6);
  const std::vector<F::Pool2dOptions> windows = {{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}},
                                                 {.kernel = {3, 3}, .stride = {1, 1}},
                                                 {.kernel = {2, 2}, .stride = {2, 2}, .ceil_mode = true}};
  for (const F::Pool2dOptions& opt : windows) {
    Tensor want;
    {
      Tensor x = a.x.detach().requires_grad_(true);
      want = F::max_pool2d(F::conv2d(x, a.w, a.b, {}), opt).detach();
    }
    NoGradGuard ng;
    Tensor y = F::conv2d(a.x, a.w, a.b, {});
    Tensor got = F::max_pool2d(y, opt);
    if (avx512()) EXPECT_TRUE(held(got));
    EXPECT_TRUE(same_bits(want, got));
  }
}

// Views of a held tensor (a channel slice, one image, a transposition) and in-place ops on it see
// the plain values; an in-place write after holding is what later readers get.
TEST(LayoutForms, ViewsAndInPlaceOpsOfAHeldTensorSeeThePlainValues) {
  const Conv a = conv_operands(3, 4, 9, 32, 7);
  Tensor want;
  {
    Tensor x = a.x.detach().requires_grad_(true);
    want = F::conv2d(x, a.w, a.b, {}).detach();
  }
  NoGradGuard ng;
  EXPECT_TRUE(same_bits(want.narrow(1, 5, 7), F::conv2d(a.x, a.w, a.b, {}).narrow(1, 5, 7)));
  EXPECT_TRUE(same_bits(want.select(0, 2), F::conv2d(a.x, a.w, a.b, {}).select(0, 2)));
  EXPECT_TRUE(same_bits(want.transpose(1, 3), F::conv2d(a.x, a.w, a.b, {}).transpose(1, 3)));
  Tensor y = F::conv2d(a.x, a.w, a.b, {});
  y.relu_();
  EXPECT_TRUE(same_bits(relu(want), y));
  // A pooled held tensor written in place before the pooling reads it: the pooling sees the write.
  Tensor z = F::conv2d(a.x, a.w, a.b, {});
  z.add_(100.0);
  EXPECT_TRUE(same_bits(F::max_pool2d(add(want, 100.0), {.kernel = {2, 2}}), F::max_pool2d(z, {.kernel = {2, 2}})));
}

// Two threads reading a held tensor at once both get the plain values (one writes them, the other
// waits for it).
TEST(LayoutForms, TwoThreadsReadingAHeldTensorGetTheSameValues) {
  const Conv a = conv_operands(8, 16, 20, 64, 8);
  Tensor want;
  {
    Tensor x = a.x.detach().requires_grad_(true);
    want = F::conv2d(x, a.w, a.b, {}).detach();
  }
  for (int round = 0; round < 5; ++round) {
    Tensor y;
    {
      NoGradGuard ng;
      y = F::conv2d(a.x, a.w, a.b, {});
    }
    std::vector<float> first(size_t(y.numel())), second(size_t(y.numel()));
    std::thread t1([&] { std::memcpy(first.data(), y.data_ptr<float>(), first.size() * sizeof(float)); });
    std::thread t2([&] { std::memcpy(second.data(), y.data_ptr<float>(), second.size() * sizeof(float)); });
    t1.join();
    t2.join();
    EXPECT_EQ(0, std::memcmp(first.data(), want.data_ptr<float>(), first.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(second.data(), want.data_ptr<float>(), second.size() * sizeof(float)));
  }
}

// Under bf16 autocast a held convolution that multiplies in bfloat16 writes bfloat16, as PyTorch's
// autocast returns it: every value is a bfloat16 number. The recorded op (training) returns the
// same rounded values, held in bf16 or not; ReLU and max pooling commute with that rounding.
TEST(LayoutForms, UnderBf16AutocastAHeldConvolutionIsTheRecordedOneRoundedToBfloat16) {
  const Conv a = conv_operands(4, 32, 12, 64, 9);
  const Conv b = conv_operands(1, 64, 3, 32, 10);
  autocast ac;
  Tensor want, got;
  {
    Tensor x = a.x.detach().requires_grad_(true);
    Tensor y = F::conv2d_activation(x, a.w, a.b, {}, F::ConvActivation::Relu);
    want = F::max_pool2d(F::conv2d_activation(y, b.w, b.b, {}, F::ConvActivation::Relu), {.kernel = {2, 2}}).detach();
  }
  {
    NoGradGuard ng;
    Tensor y = F::conv2d_activation(a.x, a.w, a.b, {}, F::ConvActivation::Relu);
    got = F::max_pool2d(F::conv2d_activation(y, b.w, b.b, {}, F::ConvActivation::Relu), {.kernel = {2, 2}});
  }
  ASSERT_EQ(want.sizes(), got.sizes());
  const float* w = want.data_ptr<float>();
  const float* g = got.data_ptr<float>();
  int64_t differ = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(g[i])), g[i]) << i;  // a bfloat16 number
    EXPECT_LE(std::fabs(g[i] - w[i]), std::fabs(w[i]) * 0x1p-8f) << i;
    differ += g[i] != w[i];
  }
  EXPECT_EQ(differ, 0);  // training's output is rounded too
}

// Training holds too (keep_layout): a recorded convolution's output, the ReLU of it and the input
// gradient its backward writes may stay in the primitive's layout, and each reads as the tensor the
// unheld ops give, bit for bit (the same primitives; only where the reorder to NCHW happens moves).
// Pooling reads plain and writes plain.
TEST(LayoutForms, RecordedOpsReadAsTheUnheldOps) {
  struct PlainAgain {
    ~PlainAgain() { cpu::set_forms_enabled(true); }
  } restore;
  const Conv a = conv_operands(2, 4, 10, 32, 11);
  auto step = [&](bool forms, bool* held_out, bool* held_grad) {
    cpu::set_forms_enabled(forms);
    Tensor x = a.x.detach().requires_grad_(true);
    Tensor w = a.w.detach().requires_grad_(true);
    Tensor y = F::conv2d(x, w, a.b, {});
    Tensor r = relu(y);
    if (held_out) *held_out = held(y) && held(r);
    Tensor p = F::max_pool2d(r, {.kernel = {2, 2}});
    EXPECT_FALSE(held(p));
    Tensor gy = autograd::grad({sum(p * p)}, {y})[0];
    if (held_grad) *held_grad = held(gy);
    auto g = autograd::grad({sum(F::conv2d(x, w, a.b, {}) * gy.detach())}, {x, w});
    return std::vector<Tensor>{y.detach(), r.detach(), gy.detach(), g[0], g[1]};
  };
  const auto want = step(false, nullptr, nullptr);
  bool held_out = false, held_grad = false;
  const auto got = step(true, &held_out, &held_grad);
  if (avx512()) EXPECT_TRUE(held_out);  // nChw16c float32 on every AVX-512 CPU
  (void)held_grad;                      // the pooling's gradient is plain; its relu backward reads plain
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_bits(want[i], got[i])) << i;
}

// Whole models in evaluation without autograd: mnistnet, lenet5, bncnn48_fc128, resnet_small,
// alexnet_cifar, resnet18 and mobilenet_v2 (at 32 pixels) give the same logits with held activations as with every output written plain,
// float32 bit for bit; under bf16 autocast within bfloat16 rounding of them.
TEST(LayoutForms, ZooModelsGiveTheSameLogitsHeldOrNot) {
  struct PlainAgain {
    ~PlainAgain() { cpu::set_forms_enabled(true); }
  } restore;
  for (const char* name :
       {"mnistnet", "lenet5", "bncnn48_fc128", "resnet_small", "alexnet_cifar", "resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    Generator g(12);
    const int64_t channels = std::string(name) == "mnistnet" || std::string(name) == "lenet5" ||
                                     std::string(name).starts_with("bncnn") || std::string(name) == "resnet_small"
                                 ? 1
                                 : 3;
    auto model = models::create(name, 10, channels, 32, &g);
    model->eval();
    Tensor x = rand({5, channels, 32, 32}, {}, &g);
    NoGradGuard ng;
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(bf16 ? "bf16" : "fp32");
      std::optional<autocast> ac;
      if (bf16) ac.emplace();
      cpu::set_forms_enabled(false);
      const Tensor want = (*model)(x);
      cpu::set_forms_enabled(true);
      const Tensor got = (*model)(x);
      if (!bf16) EXPECT_TRUE(same_bits(want, got));
      if (bf16) EXPECT_TRUE(test::close(want, got, 0.02));
    }
  }
}

// A residual block's add and ReLU on held activations stay held and give the plain kernels' values
// on the same operands (float32, or bfloat16 under autocast, added in float32): the held result
// first, then the plain ops on the same held operands (which settles them); one held float32 and one
// plain operand stay held, a broadcast operand is read plain.
TEST(LayoutForms, AddAndReluOfHeldActivationsEqualThePlainOps) {
  struct PlainAgain {
    ~PlainAgain() { cpu::set_forms_enabled(true); }
  } restore;
  const Conv a = conv_operands(3, 8, 10, 32, 13);
  const Conv b = conv_operands(3, 8, 10, 32, 14);
  Generator g(15);
  const Tensor bias = rand({32, 1, 1}, {}, &g);
  NoGradGuard ng;
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "fp32");
    std::optional<autocast> ac;
    if (bf16) ac.emplace();
    const Tensor ya = F::conv2d(a.x, a.w, a.b, {}), yb = F::conv2d(b.x, b.w, b.b, {});
    const Tensor sum = add(ya, yb);
    const Tensor got = relu(sum);
    // float32 convolutions are nChw16c on every AVX-512 CPU; a bf16 one is NHWC on AMX, where add
    // and relu read plain.
    if (avx512() && !bf16) EXPECT_TRUE(held(sum) && held(got));
    cpu::set_forms_enabled(false);
    const Tensor want = relu(add(ya, yb));
    EXPECT_FALSE(held(want));
    cpu::set_forms_enabled(true);
    EXPECT_TRUE(same_bits(want, got));
    // One held operand, one plain: float32 the plain one is reordered into the held layout and the
    // sum stays held; a bfloat16 one is read plain.
    const Tensor yc = F::conv2d(a.x, a.w, a.b, {});
    const bool yc_f32 = held(yc) && cpu::dnnl_form_of(yc) != nullptr &&
                        cpu::dnnl_form_of(yc)->desc().data_type() == dnnl::memory::data_type::f32;
    const Tensor mixed = add(yc, ya);  // ya was settled above
    EXPECT_EQ(held(mixed), yc_f32);
    EXPECT_TRUE(same_bits(add(ya, yc), mixed));
    const Tensor yd = F::conv2d(a.x, a.w, a.b, {});
    const Tensor broadcast = add(yd, bias);
    EXPECT_FALSE(held(broadcast));
    EXPECT_TRUE(same_bits(add(yd, bias), broadcast));
  }
}

// Every layout a held form may come in (nChw16c f32 / bf16 on AVX-512, NHWC bf16 from AMX's bf16
// convolutions, a channel count the blocked layout pads) reads back as the plain tensor, bit for bit:
// the form is filled by oneDNN's own reorder (cpu::hold_as), the read goes through ember's fast paths.
TEST(LayoutForms, HeldFormsOfEveryLayoutReadBackAsThePlainTensor) {
  using dnnl::memory;
  Generator g(16);
  for (int64_t c : {32, 20}) {
    // bfloat16 numbers, so that a bf16 form holds them exactly
    const Tensor want = randn({2, c, 5, 7}, {}, &g).to(DType::BFloat16).to(DType::Float32);
    for (auto [type, layout] : {std::pair{memory::data_type::f32, memory::format_tag::nChw16c},
                                {memory::data_type::bf16, memory::format_tag::nChw16c},
                                {memory::data_type::bf16, memory::format_tag::nhwc},
                                {memory::data_type::f32, memory::format_tag::nhwc}}) {
      SCOPED_TRACE(std::to_string(c) + " channels, layout " + std::to_string(int(layout)) + ", type " +
                   std::to_string(int(type)));
      Tensor t = full({2, c, 5, 7}, std::nan(""));  // stale plain bytes: NaN
      cpu::hold_as(want, t, type, layout);
      ASSERT_TRUE(held(t));
      EXPECT_TRUE(same_bits(want, t));
      EXPECT_FALSE(held(t));
    }
  }
}

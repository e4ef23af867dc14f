// The CPU's bfloat16 fast paths behind autocast: the vectorised float32 <-> bfloat16 conversion
// (src/cpu/convert_bf16.cpp) against the scalar rule bit for bit, and the bf16 linear slot
// (oneDNN matmul on the plain weight, src/cpu/linear_matmul.cpp) against float64: the same
// bits on every call, and a weight changed in place between calls is seen at once; and the bf16
// conv's kept f32 -> bf16 conversions (src/cpu/nn_conv_dnnl.cpp), which must never serve a tensor
// written since; and the NCHW <-> NHWC transpositions around the bf16 conv (src/cpu/layout_nhwc.cpp)
// against plain loops, bit for bit; and the small-plane bf16 weight gradient GEMM (src/cpu/nn_conv_wgrad.cpp).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/layout_nhwc.h"
#include "cpu/nn_conv.h"
#include "kernels/kernels.h"

using namespace ember;

namespace {
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Values that exercise every branch of the rounding rule: ties to even both ways, the carry into
// the exponent, the largest finite values (rounding to infinity), infinities, signalling and quiet
// NaNs, denormals, zeros of both signs.
std::vector<float> special_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 3.14159f, 1e-40f, -1e-40f, 1e-45f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::signaling_NaN(),
                          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()};
  for (uint32_t u : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3f7fffffu, 0x7f7fffffu, 0x7f7f8000u, 0x7f800001u,
                     0xff800001u, 0x7fc00001u, 0x00008000u, 0x00018000u, 0x807fffffu, 0x3f808001u})
    v.push_back(from_bits(u));
  return v;
}
}  // namespace

TEST(CpuBf16Convert, VectorisedCastsMatchTheScalarRuleBitForBit) {
  // Sizes around the 16-wide vector step and above the threaded split (2 x 65536 values).
  for (int64_t n : {int64_t(1), int64_t(15), int64_t(16), int64_t(17), int64_t(1000), int64_t(3 * 65536 + 7)}) {
    Generator g{uint64_t(n)};
    Tensor x = mul(randn({n}, {}, &g), 1000.0);
    const std::vector<float> sp = special_values();
    float* xp = x.data_ptr<float>();
    for (size_t i = 0; i < sp.size() && int64_t(i) < n; ++i) xp[(int64_t(i) * 7919) % n] = sp[i];
    x.storage()->bump_version();
    Tensor h = x.to(DType::BFloat16);
    const uint16_t* hp = static_cast<const uint16_t*>(h.raw_data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(hp[i], float_to_bf16(xp[i])) << "n=" << n << " i=" << i << " value " << xp[i];
    Tensor back = h.to(DType::Float32);
    const float* bp = back.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float want = bf16_to_float(hp[i]);
      ASSERT_EQ(std::memcmp(&bp[i], &want, 4), 0) << "n=" << n << " i=" << i;
    }
  }
}

TEST(CpuBf16Linear, ForwardMatchesTheReferenceRepeatablyAndSeesAnInPlaceChange) {
  if (!bf16_support(Device::cpu()).native) GTEST_SKIP() << "no bf16 hardware: " << bf16_support(Device::cpu()).reason;
  Generator g(11);
  const Tensor x = randn({32, 200}, {}, &g).to(DType::BFloat16), b = randn({48}, {}, &g);
  Tensor w = randn({48, 200}, {}, &g).to(DType::BFloat16);
  auto reference = [&](const Tensor& wh) {
    NoGradGuard ng;
    return add(matmul(x.to(DType::Float64), wh.to(DType::Float64).t()), b.to(DType::Float64)).to(DType::Float32);
  };
  // Inference (the inner product on the packed, cached weight) and training (the matmul on the
  // plain weight, the linear_forward_training slot).
  for (const char* name : {"linear_inference", "linear_forward_training"}) {
    auto* slot = std::string(name) == "linear_inference" ? &kernels::linear_inference : &kernels::linear_forward_training;
    auto run = [&](const Tensor& wh) {
      Tensor out = full({32, 48}, 12345.0);  // a sentinel: a kernel that writes nothing fails
      EXPECT_TRUE((*slot)(Device::cpu())(x, wh, b, out));
      return out;
    };
    Tensor want = reference(w);
    const Tensor first = run(w);
    EXPECT_TRUE(allclose(first, want, 1e-4, 1e-3)) << name;
    for (int call = 1; call < 3; ++call) EXPECT_TRUE(allclose(run(w), first, 0, 0)) << name << " call " << call;
    w.copy_(randn({48, 200}, {}, &g).to(DType::BFloat16));  // bumps the storage version
    want = reference(w);
    for (int call = 0; call < 3; ++call)
      EXPECT_TRUE(allclose(run(w), want, 1e-4, 1e-3)) << name << " after copy_, call " << call;
  }
}

TEST(CpuBf16Conv, KeptConversionIsReusedOnlyWhileTheTensorIsUnchanged) {
  if (!bf16_support(Device::cpu()).native) GTEST_SKIP() << "no bf16 hardware: " << bf16_support(Device::cpu()).reason;
  Generator g(12);
  const kernels::Conv2dParams p{.compute = DType::BFloat16};
  Tensor x = randn({4, 8, 10, 10}, {}, &g), go = randn({4, 16, 8, 8}, {}, &g);
  const Tensor w = randn({16, 8, 3, 3}, {}, &g).to(DType::BFloat16);
  auto weight_grad = [&](const Tensor& xs) {
    Tensor gw = full({16, 8, 3, 3}, 12345.0);
    cpu::conv2d_backward_weight_dnnl(go, xs, p, gw);
    return gw;
  };
  Tensor out = empty({4, 16, 8, 8});
  cpu::conv2d_forward_dnnl(x, w, Tensor(), p, out);  // converts x to bf16 and keeps the copy
  const Tensor gw1 = weight_grad(x);                   // takes the kept copy
  EXPECT_TRUE(allclose(gw1, weight_grad(x.clone()), 0, 0)) << "the kept copy holds x's values";
  x.copy_(randn({4, 8, 10, 10}, {}, &g));              // bumps the version: the copy is stale
  const Tensor gw2 = weight_grad(x);
  EXPECT_TRUE(allclose(gw2, weight_grad(x.clone()), 0, 0)) << "after copy_";
  EXPECT_FALSE(allclose(gw1, gw2, 1e-3, 1e-3));
  // grad_out: converted by the backward-data primitive, reused by the weight gradient.
  Tensor gx = empty({4, 8, 10, 10});
  cpu::conv2d_backward_data_dnnl(go, w, p, gx);
  EXPECT_TRUE(allclose(weight_grad(x), gw2, 0, 0));
  go.copy_(randn({4, 16, 8, 8}, {}, &g));
  cpu::conv2d_backward_data_dnnl(go, w, p, gx);
  const Tensor gw3 = weight_grad(x);
  EXPECT_FALSE(allclose(gw3, gw2, 1e-3, 1e-3));
  EXPECT_TRUE(allclose(gw3, weight_grad(x.clone()), 0, 0));
}

// The bf16 weight gradient of small-plane convolutions as one GEMM (src/cpu/nn_conv_wgrad.cpp):
// the same products as the im2col reference on the bf16-rounded operands, summed in another order
// (float32 tolerance), for strides, padding, dilation, 1x1 and non-square kernels; and the slot
// (conv2d_backward_weight_dnnl) takes it. Larger planes and thin layers are declined.
TEST(CpuBf16Conv, SmallPlaneWeightGradientGemmEqualsTheProductsOfTheRoundedOperands) {
  if (!bf16_support(Device::cpu()).native) GTEST_SKIP() << "no bf16 hardware: " << bf16_support(Device::cpu()).reason;
  struct Geo {
    int64_t n, ci, co, h, w, kh, kw;
    kernels::Conv2dParams p;
  };
  const DType bf = DType::BFloat16;
  const std::vector<Geo> geos = {
      {4, 64, 80, 7, 7, 3, 3, {.pad_h = 1, .pad_w = 1, .compute = bf}},
      {3, 64, 64, 8, 8, 3, 3, {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .compute = bf}},
      {2, 64, 128, 7, 7, 1, 1, {.stride_h = 2, .stride_w = 2, .compute = bf}},
      {2, 96, 64, 6, 6, 3, 3, {.pad_h = 2, .pad_w = 2, .dilation_h = 2, .dilation_w = 2, .compute = bf}},
      {3, 64, 72, 5, 9, 3, 2, {.stride_w = 2, .pad_h = 1, .compute = bf}}};
  Generator g(21);
  for (const Geo& e : geos) {
    const int64_t oh = (e.h + 2 * e.p.pad_h - e.p.dilation_h * (e.kh - 1) - 1) / e.p.stride_h + 1;
    const int64_t ow = (e.w + 2 * e.p.pad_w - e.p.dilation_w * (e.kw - 1) - 1) / e.p.stride_w + 1;
    const Tensor x = randn({e.n, e.ci, e.h, e.w}, {}, &g), go = randn({e.n, e.co, oh, ow}, {}, &g);
    Tensor want = empty({e.co, e.ci, e.kh, e.kw}), got = full({e.co, e.ci, e.kh, e.kw}, 12345.0);
    cpu::conv2d_backward_weight_im2col(cpu::bf16_rounded(go), cpu::bf16_rounded(x), cpu::as_f32(e.p), want);
    ASSERT_TRUE(cpu::conv2d_backward_weight_gemm_bf16(go, x, e.p, got)) << shape_str(x.sizes());
    const double scale = std::max(1.0, amax(abs(want)).item<double>());
    EXPECT_LE(amax(abs(sub(got, want))).item<double>() / scale, 1e-5) << shape_str(x.sizes());
    Tensor via_slot = full({e.co, e.ci, e.kh, e.kw}, 12345.0);
    cpu::conv2d_backward_weight_dnnl(go, x, e.p, via_slot);
    EXPECT_TRUE(allclose(via_slot, got, 0, 0)) << "the slot takes the GEMM for " << shape_str(x.sizes());
  }
  const kernels::Conv2dParams p{.pad_h = 1, .pad_w = 1, .compute = bf};
  Tensor gw = empty({64, 64, 3, 3});
  EXPECT_FALSE(cpu::conv2d_backward_weight_gemm_bf16(randn({2, 64, 9, 9}), randn({2, 64, 9, 9}), p, gw)) << "81 pixels";
  EXPECT_FALSE(cpu::conv2d_backward_weight_gemm_bf16(randn({2, 64, 4, 4}), randn({2, 32, 4, 4}), p, empty({64, 32, 3, 3})))
      << "32 input channels";
}

TEST(CpuBf16Layout, NhwcTranspositionsMatchThePlainLoopsBitForBit) {
  // Channel counts on and off the 16-wide vector path (6 and 24 take the plain loops), pixel
  // counts with and without a remainder past the 16-pixel tiles, and more than 512 channels (the
  // tile buffer's split).
  struct Case {
    int64_t n, c, h, w;
  };
  for (const Case k : {Case{3, 32, 26, 26}, Case{2, 64, 24, 24}, Case{2, 16, 1, 5}, Case{1, 6, 7, 9},
                       Case{2, 24, 4, 4}, Case{1, 528, 5, 7}, Case{5, 48, 4, 8}}) {
    const int64_t hw = k.h * k.w, total = k.n * k.c * hw;
    Generator g{uint64_t(total)};
    Tensor x = mul(randn({k.n, k.c, k.h, k.w}, {}, &g), 100.0);
    const std::vector<float> sp = special_values();
    float* xp = x.data_ptr<float>();
    for (size_t i = 0; i < sp.size() && int64_t(i) < total; ++i) xp[(int64_t(i) * 7919) % total] = sp[i];
    std::vector<uint16_t> h(size_t(total), 0xdead);
    cpu::nchw_f32_to_nhwc_bf16(xp, h.data(), k.n, k.c, hw);
    std::vector<float> back(size_t(total), -12345.0f);
    std::vector<float> nhwc(static_cast<size_t>(total));
    for (int64_t i = 0; i < k.n; ++i)
      for (int64_t c = 0; c < k.c; ++c)
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t from = (i * k.c + c) * hw + p, to = (i * hw + p) * k.c + c;
          ASSERT_EQ(h[size_t(to)], float_to_bf16(xp[from])) << k.c << " channels, image " << i << " c " << c << " p " << p;
          nhwc[size_t(to)] = xp[from];
        }
    cpu::nhwc_to_nchw_f32(nhwc.data(), back.data(), k.n, k.c, hw);
    ASSERT_EQ(std::memcmp(back.data(), xp, size_t(total) * sizeof(float)), 0) << k.c << " channels, " << hw << " pixels";
    std::vector<float> there(size_t(total), -12345.0f);  // and back into NHWC at float32
    cpu::nchw_to_nhwc_f32(xp, there.data(), k.n, k.c, hw);
    ASSERT_EQ(std::memcmp(there.data(), nhwc.data(), size_t(total) * sizeof(float)), 0) << k.c << " channels, " << hw << " pixels";
  }
}

// ember::autocast (include/ember/autocast.h): the policy table, the guard's scoping, the weight cast
// cache, bfloat16 conv2d / linear / matmul against float32 on the bf16-rounded values, float32 ops
// under autocast, gradients that reach the parameters in float32, and bf16_support().
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "core/dispatch.h"
#include "ops/autocast.h"
#include "support/bf16.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {
Tensor rounded(const Tensor& t) { return t.detach().to(DType::BFloat16).to(DType::Float32); }
// max |a - b| / max(1, max |b|)
double rel_err(const Tensor& a, const Tensor& b) {
  NoGradGuard ng;
  const double diff = amax(abs(sub(a, b))).item<float>();
  const double scale = std::max(1.0, double(amax(abs(b)).item<float>()));
  return diff / scale;
}
// Values exactly representable in bfloat16 (multiples of 1/8 in [-2, 2)), so a gradient seeded with
// them reaches the kernels unrounded.
Tensor bf16_exact(Shape s, Generator& g) {
  NoGradGuard ng;
  return mul(randint(-16, 16, s, {.dtype = DType::Int64}, &g).to(DType::Float32), 0.125);
}
}  // namespace

TEST(AutocastPolicy, OneRowPerOpMatmulsLowerEverythingElseFloat32) {
  std::set<AutocastOp> seen;
  for (const AutocastRule& r : autocast_policy()) {
    EXPECT_TRUE(seen.insert(r.op).second) << r.name << " has two rows";
    EXPECT_FALSE(r.why.empty()) << r.name;
    const bool lower = r.op == AutocastOp::Conv2d || r.op == AutocastOp::Linear || r.op == AutocastOp::Matmul;
    EXPECT_EQ(r.policy, lower ? CastPolicy::Lower : CastPolicy::Float32) << r.name;
  }
  EXPECT_EQ(seen.size(), size_t(AutocastOp::Mean) + 1);
  EXPECT_EQ(autocast_rule(AutocastOp::Softmax).policy, CastPolicy::Float32);
}

TEST(AutocastGuard, ScopedNestedAndPerThread) {
  EXPECT_FALSE(autocast::is_enabled());
  {
    autocast ac;
    EXPECT_TRUE(autocast::is_enabled());
    EXPECT_EQ(autocast::dtype(), DType::BFloat16);
    {
      autocast off(DeviceType::CPU, DType::BFloat16, false);
      EXPECT_FALSE(autocast::is_enabled());
    }
    EXPECT_TRUE(autocast::is_enabled());
    bool other_thread = true;
    std::thread([&] { other_thread = autocast::is_enabled(); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(autocast::is_enabled());
  EXPECT_EQ(autocast::dtype(), DType::Float32);
}

TEST(AutocastGuard, RefusesWhatHasNoHalfKernels) {
  EXPECT_THROW(autocast(DeviceType::CPU, DType::Float16), NotImplementedError);
  EXPECT_NO_THROW(autocast(DeviceType::CUDA, DType::Float16));  // CUDA: bf16 and fp16 (test_autocast_cuda_policy.cpp)
  EXPECT_THROW(autocast(DeviceType::CPU, DType::Float32), DTypeError);
  EXPECT_NO_THROW(autocast(DeviceType::CUDA, DType::BFloat16, false));
}

TEST(AutocastOps, LinearMultipliesInBf16AndReturnsFloat32) {
  Generator g(1);
  Tensor x = randn({64, 784}, {}, &g), w = mul(randn({256, 784}, {}, &g), 0.05), b = randn({256}, {}, &g);
  Tensor want = linear(rounded(x), rounded(w), b);  // float32 on the bf16-rounded inputs
  Tensor f32 = linear(x, w, b);
  Tensor got;
  {
    autocast ac;
    got = linear(x, w, b);
  }
  EXPECT_EQ(got.dtype(), DType::Float32);
  EXPECT_LT(rel_err(got, want), 1e-5);  // same products, summed in another order
  EXPECT_LT(rel_err(got, f32), 2e-2);   // and bf16's rounding against float32
  EXPECT_GT(rel_err(got, f32), 0.0) << "nothing was computed in bfloat16";
}

TEST(AutocastOps, LinearGradientsAreFloat32AndMatchTheRoundedReference) {
  Generator g(2);
  Tensor x = randn({32, 100}, {}, &g).requires_grad_(), w = mul(randn({50, 100}, {}, &g), 0.1).requires_grad_();
  Tensor b = randn({50}, {}, &g).requires_grad_();
  Tensor seed = bf16_exact({32, 50}, g);
  {
    autocast ac;
    sum(mul(linear(x, w, b), seed)).backward();
  }
  Tensor xr = rounded(x).requires_grad_(), wr = rounded(w).requires_grad_(), br = b.detach().clone().requires_grad_();
  sum(mul(linear(xr, wr, br), seed)).backward();
  for (auto [got, want, name] : {std::tuple{x.grad(), xr.grad(), "x"}, {w.grad(), wr.grad(), "w"}, {b.grad(), br.grad(), "b"}}) {
    ASSERT_TRUE(got.defined()) << name;
    EXPECT_EQ(got.dtype(), DType::Float32) << name;
    EXPECT_LT(rel_err(got, want), 1e-5) << name;
  }
}

TEST(AutocastOps, Conv2dForwardAndBothGradientsMatchTheRoundedReference) {
  Generator g(3);
  // 4 -> 8 channels in groups of 1 and 2, and 32 -> 48 (oneDNN's AMX kernels take channels-last
  // operands there, moved by src/cpu/layout_nhwc.cpp's 16-channel transposition).
  for (auto [groups, ci, co] : {std::tuple<int64_t, int64_t, int64_t>{1, 4, 8}, {2, 4, 8}, {1, 32, 48}}) {
    Tensor x = randn({4, ci, 12, 12}, {}, &g).requires_grad_();
    Tensor w = mul(randn({co, ci / groups, 3, 3}, {}, &g), 0.2).requires_grad_();
    Tensor b = randn({co}, {}, &g).requires_grad_();
    const F::Conv2dOptions opt{.stride = {1, 2}, .padding = {1, 1}, .groups = groups};
    Tensor seed = bf16_exact({4, co, 12, 6}, g);
    Tensor out;
    {
      autocast ac;
      out = F::conv2d(x, w, b, opt);
      sum(mul(out, seed)).backward();
    }
    EXPECT_EQ(out.dtype(), DType::Float32);
    Tensor xr = rounded(x).requires_grad_(), wr = rounded(w).requires_grad_(), br = b.detach().clone().requires_grad_();
    Tensor want = F::conv2d(xr, wr, br, opt);
    sum(mul(want, seed)).backward();
    // In training the output is the float32 sum rounded to bf16 (as PyTorch's autocast returns a
    // bf16 tensor); the sums run in another order, so a rounding may land a bf16 step away.
    EXPECT_LT(rel_err(out, rounded(want)), 1.0 / 128) << "groups " << groups;
    for (float v : out.to_vector<float>()) ASSERT_EQ(bf16_to_float(float_to_bf16(v)), v);
    EXPECT_GT(rel_err(out, F::conv2d(x.detach(), w.detach(), b.detach(), opt)), 0.0) << "not computed in bf16";
    for (auto [got, ref, name] : {std::tuple{x.grad(), xr.grad(), "x"}, {w.grad(), wr.grad(), "w"}, {b.grad(), br.grad(), "b"}}) {
      ASSERT_TRUE(got.defined()) << name;
      EXPECT_EQ(got.dtype(), DType::Float32) << name;
      EXPECT_LT(rel_err(got, ref), 1e-5) << name << " groups " << groups;
    }
  }
}

TEST(AutocastOps, Conv2dOnFewInputChannelsStaysFloat32WhenTraining) {
  // The policy's exception (src/ops/autocast.cpp): a first layer on 1-channel images (and 2-3 with
  // AMX) whose weight gradient is wanted runs in float32, to the bit what it gives outside autocast,
  // gradients included; without AMX an RGB first layer is lowered like the rest.
  Generator g(4);
  const int64_t min_lowered = autocast_detail::conv2d_min_lowered_channels();
  EXPECT_TRUE(min_lowered == 2 || min_lowered == 4);
  for (int64_t c : {1, 3}) {
    Tensor x = randn({4, c, 12, 12}, {}, &g).requires_grad_(), w = randn({6, c, 5, 5}, {}, &g).requires_grad_();
    Tensor seed = randn({4, 6, 8, 8}, {}, &g);
    Tensor out;
    {
      autocast ac;
      out = F::conv2d(x, w);
      sum(mul(out, seed)).backward();
    }
    Tensor x2 = x.detach().clone().requires_grad_(), w2 = w.detach().clone().requires_grad_();
    Tensor want = F::conv2d(x2, w2);
    sum(mul(want, seed)).backward();
    if (c < min_lowered) {
      EXPECT_TRUE(allclose(out, want, 0, 0)) << c << " channels";
      EXPECT_TRUE(allclose(x.grad(), x2.grad(), 0, 0)) << c << " channels";
      EXPECT_TRUE(allclose(w.grad(), w2.grad(), 0, 0)) << c << " channels";
    } else {
      EXPECT_FALSE(allclose(out, want, 0, 0)) << c << " channels: lowered";
      EXPECT_TRUE(allclose(out, want, 2e-2, 2e-1)) << c << " channels: within bf16 rounding";
    }
    // Inference (no weight gradient): lowered like any conv large enough (below: the small ones).
    Tensor big = randn({64, c, 8, 8}, {}, &g);  // 4,096 multiply-adds per output pixel and up
    NoGradGuard ng;
    const Tensor big_want = F::conv2d(x, big);
    autocast ac;
    EXPECT_FALSE(allclose(F::conv2d(x, big), big_want, 0, 0)) << c << " channels, inference";
  }
}

TEST(AutocastOps, InferenceConvsAreLoweredAtEverySize) {
  // Until issue 24's held layouts a dense conv of fewer than 4,096 multiply-adds per output pixel
  // (lenet5's 1 -> 6 and 6 -> 16, 5x5) stayed float32 without autograd; inference convolutions now
  // write bfloat16 in oneDNN's layout, where the bf16 kernel wins at every size measured
  // (src/ops/autocast.cpp), so they are lowered like any other: within bf16 rounding of the float32
  // result, not equal to it, every value a bfloat16 number; with autograd too.
  EMBER_SKIP_WITHOUT_FAST_BF16();
  Generator g(5);
  for (auto [ci, co] : {std::pair<int64_t, int64_t>{1, 6}, {6, 16}}) {
    Tensor x = randn({4, ci, 14, 14}, {}, &g), w = randn({co, ci, 5, 5}, {}, &g);
    const Tensor want = F::conv2d(x, w);
    const double scale = amax(abs(want)).item<float>();
    {
      NoGradGuard ng;
      autocast ac;
      const Tensor got = F::conv2d(x, w);
      EXPECT_FALSE(allclose(got, want, 0, 0)) << ci << " -> " << co << ", inference";
      EXPECT_LE(amax(abs(sub(got, want))).item<float>(), scale / 64) << ci << " -> " << co << ", inference";
      for (float v : got.to_vector<float>()) ASSERT_EQ(bf16_to_float(float_to_bf16(v)), v);
    }
    if (ci >= 4) {  // fewer input channels stay float32 in training (the test above)
      Tensor wg = w.detach().clone().requires_grad_();
      autocast ac;
      EXPECT_FALSE(allclose(F::conv2d(x, wg).detach(), want, 0, 0)) << ci << " -> " << co << ", training";
    }
  }
  // Depthwise convolutions are lowered without autograd (the table's rule) and in training (their
  // input is a bf16 activation there, held between ops); so is a grouped convolution of several
  // channels per group. In training the output is the bf16-rounded result, as without autograd.
  Tensor x = randn({4, 16, 14, 14}, {}, &g), dw = randn({16, 1, 3, 3}, {}, &g);
  const F::Conv2dOptions opt{.padding = {1, 1}, .groups = 16};
  const Tensor want = F::conv2d(x, dw, Tensor(), opt);
  Tensor gw = randn({16, 4, 3, 3}, {}, &g).requires_grad_();
  const F::Conv2dOptions grouped{.padding = {1, 1}, .groups = 4};
  const Tensor want_grouped = F::conv2d(x, gw.detach(), Tensor(), grouped);
  {
    Tensor dwg = dw.detach().clone().requires_grad_();
    autocast ac;
    const Tensor got_dw = F::conv2d(x, dwg, Tensor(), opt).detach();
    EXPECT_FALSE(allclose(got_dw, want, 0, 0)) << "depthwise, training";
    const Tensor got_grouped = F::conv2d(x, gw, Tensor(), grouped).detach();
    EXPECT_FALSE(allclose(got_grouped, want_grouped, 0, 0)) << "groups of 4";
    for (const Tensor& t : {got_dw, got_grouped})
      for (float v : t.to_vector<float>()) ASSERT_EQ(bf16_to_float(float_to_bf16(v)), v);
  }
  NoGradGuard ng;
  autocast ac;
  EXPECT_FALSE(allclose(F::conv2d(x, dw, Tensor(), opt), want, 0, 0)) << "depthwise, inference";
}

TEST(AutocastOps, SmallLinearsStayFloat32WithoutAutograd) {
  // Inference: a weight of fewer than 65,536 elements (lenet5's 400 -> 120) stays float32, to the bit;
  // a larger one (mlp's 784 -> 256) and any one whose gradient is wanted are lowered.
  EMBER_SKIP_WITHOUT_FAST_BF16();
  Generator g(6);
  Tensor x = randn({64, 400}, {}, &g), w = randn({120, 400}, {}, &g), b = randn({120}, {}, &g);
  Tensor xl = randn({64, 784}, {}, &g), wl = randn({256, 784}, {}, &g);
  const Tensor want = linear(x, w, b), want_large = linear(xl, wl, Tensor());
  {
    NoGradGuard ng;
    autocast ac;
    EXPECT_TRUE(allclose(linear(x, w, b), want, 0, 0)) << "small, inference";
    EXPECT_FALSE(allclose(linear(xl, wl, Tensor()), want_large, 0, 0)) << "large, inference";
  }
  Tensor wg = w.detach().clone().requires_grad_();
  autocast ac;
  EXPECT_FALSE(allclose(linear(x, wg, b).detach(), want, 0, 0)) << "small, training";
}

TEST(AutocastOps, MatmulWithA2dRightOperandRunsAsLinear) {
  Generator g(4);
  Tensor a = randn({2, 3, 40}, {}, &g), b = randn({40, 5}, {}, &g);
  Tensor got;
  {
    autocast ac;
    got = matmul(a, b);
  }
  EXPECT_EQ(got.sizes(), (Shape{2, 3, 5}));
  EXPECT_EQ(got.dtype(), DType::Float32);
  EXPECT_LT(rel_err(got, matmul(rounded(a), rounded(b))), 1e-5);
}

TEST(AutocastOps, Float32OpsConvertHalfInputsUnderAutocastOnly) {
  Tensor h = randn({4, 10}).to(DType::BFloat16);
  EXPECT_THROW(F::softmax(h, 1), DTypeError);
  autocast ac;
  Tensor s = F::softmax(h, 1);
  EXPECT_EQ(s.dtype(), DType::Float32);
  EXPECT_EQ(F::log_softmax(h, 1).dtype(), DType::Float32);
  EXPECT_EQ(sum(h).dtype(), DType::Float32);
  EXPECT_EQ(F::cross_entropy(h, zeros({4}, {.dtype = DType::Int64})).dtype(), DType::Float32);
}

TEST(AutocastOps, FloatSixtyFourIsLeftAlone) {
  Tensor x = randn({3, 4}, {.dtype = DType::Float64}), w = randn({2, 4}, {.dtype = DType::Float64});
  autocast ac;
  Tensor y = linear(x, w);
  EXPECT_EQ(y.dtype(), DType::Float64);
  EXPECT_TRUE(allclose(y, matmul(x, w.t()), 1e-12, 1e-12));
}

TEST(AutocastCache, EachParameterCastOncePerScopeAndAgainAfterAStep) {
  Generator g(5);
  auto model = models::create("mlp", 10, 1, 28, &g);
  Tensor x = randn({8, 1, 28, 28}, {}, &g);
  optim::SGD opt(model->parameters(), optim::SGDOptions{.lr = 0.1});
  size_t weights = 0;
  for (const Tensor& p : model->parameters()) weights += p.dim() == 2 ? 1 : 0;
  {
    autocast ac;
    Tensor y1 = model->forward(x);
    EXPECT_EQ(autocast::cache_size(), weights);
    Tensor y2 = model->forward(x);
    EXPECT_EQ(autocast::cache_size(), weights);  // served from the cache
    EXPECT_TRUE(allclose(y1, y2, 0, 0));
    F::cross_entropy(y2, zeros({8}, {.dtype = DType::Int64})).backward();
    opt.step();  // bumps the weights' versions: the next forward must see the new values
    Tensor y3 = model->forward(x);
    EXPECT_FALSE(allclose(y3, y2, 0, 0));
    autocast::cache_size();
  }
  EXPECT_EQ(autocast::cache_size(), 0u);
}

TEST(AutocastTraining, ModelGradientsReachTheParametersInFloat32) {
  for (const char* name : {"lenet5", "mnistnet", "mlp"}) {
    Generator g(6);
    auto model = models::create(name, 10, 1, 28, &g);
    model->eval();  // no dropout: the two passes must see the same network
    Tensor x = randn({16, 1, 28, 28}, {}, &g);
    Tensor y = randint(0, 10, {16}, {.dtype = DType::Int64}, &g);
    std::vector<Tensor> ref;
    F::cross_entropy(model->forward(x), y).backward();
    for (Tensor& p : model->parameters()) {
      ref.push_back(p.grad().clone());
      p.set_grad({});
    }
    {
      autocast ac;
      Tensor loss = F::cross_entropy(model->forward(x), y);
      EXPECT_EQ(loss.dtype(), DType::Float32);
      loss.backward();
    }
    size_t i = 0;
    for (Tensor& p : model->parameters()) {
      EXPECT_EQ(p.dtype(), DType::Float32) << name;
      ASSERT_TRUE(p.grad().defined()) << name << " parameter " << i;
      EXPECT_EQ(p.grad().dtype(), DType::Float32) << name << " parameter " << i;
      EXPECT_LT(rel_err(p.grad(), ref[i]), 5e-2) << name << " parameter " << i;
      std::printf("%s parameter %zu: bf16 vs f32 gradient error %.4f\n", name, i, rel_err(p.grad(), ref[i]));
      ++i;
    }
  }
}

TEST(PrecisionSupport, Bf16AnswerMatchesProcCpuinfo) {
  const PrecisionSupport s = bf16_support(Device::cpu());
  EXPECT_FALSE(s.reason.empty());
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  bool flags = false;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.find(" amx_bf16") != std::string::npos || line.find(" avx512_bf16") != std::string::npos;
      break;
    }
  EXPECT_EQ(s.native, flags) << s.reason;
  if (s.fast) EXPECT_TRUE(s.native) << s.reason;
  std::printf("bf16_support(cpu): %s, %s — %s\n", s.native ? "native" : "not native", s.fast ? "fast" : "not fast",
              s.reason.c_str());
}

// --precision auto's CPU rule: AMX (when oneDNN may use it) and AMD's AVX512-BF16 are fast; an Intel
// CPU's AVX512-BF16 alone runs bf16 (native) but auto keeps fp32 (measured 0.74-0.85x of fp32
// training with oneDNN capped to avx512_core_bf16, docs/benchmarks.md); no bf16 hardware: neither.
TEST(PrecisionSupport, CpuRuleForEachKindOfCpu) {
  CpuBf16Facts spr{.cpu = "Xeon", .amd = false, .avx512_bf16 = true, .amx_bf16 = true, .os_amx = true,
                   .onednn_amx = true, .avx512 = true};
  PrecisionSupport s = cpu_bf16_support(spr);
  EXPECT_TRUE(s.fast && s.native) << s.reason;
  EXPECT_NE(s.reason.find("AMX-BF16 on Xeon"), std::string::npos) << s.reason;
  CpuBf16Facts capped = spr;
  capped.onednn_amx = false;  // ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
  s = cpu_bf16_support(capped);
  EXPECT_TRUE(!s.fast && s.native) << s.reason;
  EXPECT_NE(s.reason.find("ONEDNN_MAX_CPU_ISA"), std::string::npos) << s.reason;
  CpuBf16Facts no_os_amx = spr;
  no_os_amx.os_amx = false;
  s = cpu_bf16_support(no_os_amx);
  EXPECT_TRUE(!s.fast && s.native) << s.reason;
  EXPECT_NE(s.reason.find("XCR0"), std::string::npos) << s.reason;
  CpuBf16Facts cooper{.cpu = "Xeon 8380H", .amd = false, .avx512_bf16 = true, .avx512 = true};
  s = cpu_bf16_support(cooper);
  EXPECT_TRUE(!s.fast && s.native) << s.reason;
  EXPECT_NE(s.reason.find("auto keeps fp32"), std::string::npos) << s.reason;
  CpuBf16Facts zen5{.cpu = "AMD EPYC", .amd = true, .avx512_bf16 = true, .onednn_amx = false, .avx512 = true};
  s = cpu_bf16_support(zen5);
  EXPECT_TRUE(s.fast && s.native) << s.reason;
  EXPECT_NE(s.reason.find("AVX512-BF16 on AMD EPYC"), std::string::npos) << s.reason;
  CpuBf16Facts skylake{.cpu = "Xeon Gold", .avx512 = true};
  s = cpu_bf16_support(skylake);
  EXPECT_FALSE(s.fast || s.native) << s.reason;
  EXPECT_NE(s.reason.find("emulated"), std::string::npos) << s.reason;
  s = cpu_bf16_support(CpuBf16Facts{.cpu = "Core i7"});
  EXPECT_FALSE(s.fast || s.native) << s.reason;
}

// oneDNN capped below avx512_core_bf16 (ONEDNN_MAX_CPU_ISA=AVX2 or AVX512_CORE) runs no bf16
// instruction, whatever the CPU has: neither auto nor --precision bf16 may take it, on AMD or Intel.
TEST(PrecisionSupport, CpuRuleWithOneDnnCappedBelowBf16) {
  CpuBf16Facts zen5{.cpu = "AMD EPYC", .amd = true, .avx512_bf16 = true, .onednn_amx = false, .avx512 = true,
                    .onednn_bf16 = false};
  PrecisionSupport s = cpu_bf16_support(zen5);
  EXPECT_FALSE(s.fast || s.native) << s.reason;
  EXPECT_NE(s.reason.find("capped below avx512_core_bf16"), std::string::npos) << s.reason;
  CpuBf16Facts spr{.cpu = "Xeon", .avx512_bf16 = true, .amx_bf16 = true, .os_amx = true, .onednn_amx = false,
                   .avx512 = true, .onednn_bf16 = false};
  s = cpu_bf16_support(spr);
  EXPECT_FALSE(s.fast || s.native) << s.reason;
  EXPECT_NE(s.reason.find("AMX-BF16 and AVX512-BF16, but oneDNN is capped"), std::string::npos) << s.reason;
  spr.onednn_bf16 = true;  // capped to AVX512_CORE_BF16 exactly: bf16 runs, auto keeps fp32
  s = cpu_bf16_support(spr);
  EXPECT_TRUE(!s.fast && s.native) << s.reason;
}

TEST(DispatchHalf, FloatingAndHalfReachesTheStorageTypesFloatingOnlySaysWhy) {
  EXPECT_EQ(dispatch_floating_and_half(DType::BFloat16, "t", []<class T>() { return dtype_of<T>(); }), DType::BFloat16);
  EXPECT_EQ(dispatch_floating_and_half(DType::Float16, "t", []<class T>() { return dtype_of<T>(); }), DType::Float16);
  EXPECT_TRUE((std::is_same_v<acc_t<bfloat16>, float>));
  EXPECT_EQ(float(bfloat16(1.00390625f)), 1.0f);  // rounds to nearest even
  try {
    dispatch_floating(DType::BFloat16, "softmax", []<class T>() {});
    FAIL() << "no throw";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("autocast"), std::string::npos) << e.what();
  }
}

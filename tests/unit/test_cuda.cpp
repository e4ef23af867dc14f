// The CUDA backend against the CPU twins. Tests named *_CUDA need a usable GPU and skip (saying
// why) without one; ctest labels them `gpu`. The rest are pure and run in every build:
// CUDA_VISIBLE_DEVICES parsing, device choice and the errors for a device that is not there.
// Parity tests fill both outputs with different sentinels first, so a kernel that writes nothing
// fails, and use non-contiguous and broadcast inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "core/runtime.h"
#include "core/visible_devices.h"
#include "kernels/kernels.h"
#ifdef EMBER_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace ember;
using kernels::BinaryOp;
using kernels::RandomDist;
using kernels::ReduceOp;
using kernels::UnaryOp;

namespace {
const Device kGpu = Device::cuda(0);
const std::vector<DType> kNumeric = {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool};
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Int64, DType::Int32,
                                 DType::UInt8,   DType::Bool,    DType::BFloat16, DType::Float16};

template <class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no exception>";
}

// Element-wise comparison after conversion to float64 on the CPU: NaN equals NaN, infinities must
// match, otherwise |g - c| <= atol + rtol |c|. Reports the first mismatch.
::testing::AssertionResult close(const Tensor& cpu, const Tensor& gpu, double rtol = 0, double atol = 0) {
  if (cpu.sizes() != gpu.sizes())
    return ::testing::AssertionFailure() << "shapes " << shape_str(cpu.sizes()) << " vs " << shape_str(gpu.sizes());
  if (cpu.dtype() != gpu.dtype())
    return ::testing::AssertionFailure() << "dtypes " << cpu.dtype() << " vs " << gpu.dtype();
  std::vector<double> c = cpu.to_vector<double>(), g = gpu.to_vector<double>();
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i]) && std::isnan(g[i])) continue;
    if (std::isinf(c[i]) || std::isinf(g[i])) {
      if (c[i] == g[i]) continue;
    } else if (std::abs(g[i] - c[i]) <= atol + rtol * std::abs(c[i])) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << ": cpu " << c[i] << " vs cuda " << g[i];
  }
  return ::testing::AssertionSuccess();
}

// A (rows, cols) tensor of dtype dt with small values (ints in [lo, hi)), as a transposed view
// of a contiguous (cols, rows) tensor: non-contiguous on purpose.
Tensor sample(DType dt, int64_t rows, int64_t cols, Generator& g, double lo = -3, double hi = 4) {
  Tensor base;
  if (is_floating(dt)) base = rand({cols, rows}, {.dtype = DType::Float64}, &g).mul_(hi - lo).add_(lo).to(dt);
  else if (dt == DType::Bool) base = randint(0, 2, {cols, rows}, {.dtype = DType::Int64}, &g).to(dt);
  else base = randint(int64_t(std::max(lo, dt == DType::UInt8 ? 0.0 : lo)), int64_t(hi), {cols, rows}, {.dtype = DType::Int64}, &g).to(dt);
  return base.t();
}
// The same view on the GPU: copy the storage, keep the strides.
Tensor on_gpu(const Tensor& t) {
  if (t.is_contiguous()) return t.to(kGpu);
  Tensor c = t.t().contiguous().to(kGpu);  // sample()'s layout: a transposed contiguous base
  return c.t();
}
double tol(DType dt) { return dt == DType::Float32 ? 1e-5 : dt == DType::Float64 ? 1e-12 : 0.0; }
}  // namespace

// ---- pure: every build, GPU or not ----------------------------------------------------------------
TEST(VisibleDevices, ParsesLikeTheCudaRuntime) {
  EXPECT_TRUE(parse_visible_devices(std::nullopt).all);
  EXPECT_EQ(parse_visible_devices(std::nullopt).count(), -1);
  EXPECT_EQ(visible_device_ordinals(std::string("0,3")), (std::vector<int>{0, 3}));
  EXPECT_EQ(visible_device_ordinals(std::string(" 2 , 0 ")), (std::vector<int>{2, 0}));
  EXPECT_EQ(parse_visible_devices(std::string("")).count(), 0);
  EXPECT_FALSE(parse_visible_devices(std::string("")).all);
  EXPECT_EQ(parse_visible_devices(std::string("-1")).count(), 0);
  EXPECT_EQ(parse_visible_devices(std::string("-1")).stopped_at, "-1");
  EXPECT_EQ(visible_device_ordinals(std::string("0,-1,2")), (std::vector<int>{0}));
  EXPECT_EQ(visible_device_ordinals(std::string("1,x,2")), (std::vector<int>{1}));
  EXPECT_EQ(visible_device_ordinals(std::string("0,,1")), (std::vector<int>{0}));
  EXPECT_EQ(visible_device_ordinals(std::string("1,1,2")), (std::vector<int>{1}));
  EXPECT_EQ(visible_device_ordinals(std::string("3a")), (std::vector<int>{}));
  VisibleDevices u = parse_visible_devices(std::string("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,MIG-1"));
  EXPECT_EQ(u.uuids, (std::vector<std::string>{"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "MIG-1"}));
  EXPECT_EQ(u.count(), 2);
  VisibleDevices mixed = parse_visible_devices(std::string("0,GPU-abc"));
  EXPECT_EQ(mixed.ordinals, (std::vector<int>{0}));
  EXPECT_EQ(mixed.stopped_at, "GPU-abc");
}

TEST(CudaRuntime, WithoutAGpuTheCpuIsChosenAndTheReasonSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(Device::best(), Device::cpu());
  std::string why = cuda_unavailable_reason();
  ASSERT_FALSE(why.empty());
#ifdef EMBER_WITH_CUDA
  EXPECT_TRUE(why.find("driver") != std::string::npos || why.find("device") != std::string::npos) << why;
#else
  EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
#endif
}

// The public API of include/ember/cuda.h (what apps/ember uses instead of core/runtime.h).
TEST(CudaRuntime, ThePublicApiAnswersLikeTheRuntime) {
  EXPECT_EQ(ember::cuda::device_count(), cuda_device_count());
  EXPECT_EQ(ember::cuda::is_available(), cuda_device_count() > 0);
  EXPECT_EQ(ember::cuda::unavailable_reason(), cuda_unavailable_reason());
  if (ember::cuda::is_available()) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_FALSE(ember::cuda::unavailable_reason().empty());
  EXPECT_THROW(ember::cuda::time_ms(0, [] {}, 1), DeviceError);
  EXPECT_THROW(ember::cuda::copy_bandwidth(0, 1 << 20, 1), DeviceError);
}

TEST(CudaRuntime, CreatingATensorOnAMissingDeviceIsADeviceError) {
  const int n = cuda_device_count();
  const Device missing = Device::cuda(n);
  EXPECT_THROW(empty({2}, {.device = missing}), DeviceError);
  std::string msg = message_of([&] { zeros({2}, {.device = missing}); });
#ifdef EMBER_WITH_CUDA
  EXPECT_NE(msg.find(missing.str() + " is not available"), std::string::npos) << msg;
  if (n == 0) EXPECT_NE(msg.find(cuda_unavailable_reason()), std::string::npos) << msg;
  else EXPECT_NE(msg.find("sees " + std::to_string(n) + " CUDA device"), std::string::npos) << msg;
#else
  EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
#endif
  if (n == 0) EXPECT_THROW(ones({3}).to(kGpu), DeviceError);
}

#ifdef EMBER_WITH_CUDA
TEST(CudaAllocator, SizeClassesBoundTheWaste) {
  EXPECT_EQ(cuda::size_class(0), 512u);
  EXPECT_EQ(cuda::size_class(1), 512u);
  EXPECT_EQ(cuda::size_class(513), 1024u);
  EXPECT_EQ(cuda::size_class(size_t(1) << 20), size_t(1) << 20);
  EXPECT_EQ(cuda::size_class((size_t(1) << 20) + 1), size_t(5) << 18);  // 1.25 MiB
  for (size_t n : {size_t(3) << 20, size_t(1000000007), size_t(1) << 33}) {
    EXPECT_GE(cuda::size_class(n), n);
    EXPECT_LE(double(cuda::size_class(n)), 1.25 * double(n) + 1);
  }
}
#endif

// ---- GPU parity ----------------------------------------------------------------------------------
TEST(CudaKernels, BinaryMatchesCpu_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(11);
  const std::vector<BinaryOp> ops = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow,
                                     BinaryOp::Max, BinaryOp::Min, BinaryOp::Eq,  BinaryOp::Ne,  BinaryOp::Lt,
                                     BinaryOp::Le,  BinaryOp::Gt,  BinaryOp::Ge};
  for (DType dt : kNumeric) {
    for (BinaryOp op : ops) {
      if (dt == DType::Bool && !kernels::is_comparison(op) && op != BinaryOp::Add && op != BinaryOp::Mul &&
          op != BinaryOp::Max && op != BinaryOp::Min)
        continue;
      const bool fl = is_floating(dt);
      Tensor a = sample(dt, 37, 29, g, op == BinaryOp::Pow ? (fl ? 0.1 : 0) : -3, op == BinaryOp::Pow ? 3 : 4);
      // b: a broadcast row, non-zero for division
      Tensor b = sample(dt, 1, 29, g, op == BinaryOp::Pow ? 0 : 1, op == BinaryOp::Pow ? 3 : 5).expand({37, 29});
      Tensor ga = on_gpu(a), gb = on_gpu(b.narrow(0, 0, 1)).expand({37, 29});
      DType odt = kernels::is_comparison(op) ? DType::Bool : dt;
      Tensor oc = full({37, 29}, 1, {.dtype = odt}), og = full({37, 29}, 0, {.dtype = odt, .device = kGpu});
      const double alpha = (op == BinaryOp::Add || op == BinaryOp::Sub) && dt != DType::Bool ? 2.0 : 1.0;
      kernels::binary(Device::cpu())(op, a, b, oc, alpha);
      kernels::binary(kGpu)(op, ga, gb, og, alpha);
      EXPECT_TRUE(close(oc, og, op == BinaryOp::Pow ? 1e-5 : tol(dt), 0)) << dtype_name(dt) << " op " << int(op);
    }
  }
  // NaN propagation of max/min and integer division by zero raise like the CPU
  Tensor x = tensor({1.0f, NAN, 3.0f}), y = tensor({NAN, 2.0f, 1.0f});
  EXPECT_TRUE(close(maximum(x, y), maximum(x.to(kGpu), y.to(kGpu))));
  Tensor i = tensor(std::vector<int64_t>{4, 5}), z = tensor(std::vector<int64_t>{1, 0});
  Tensor q = empty({2}, {.dtype = DType::Int64, .device = kGpu});
  EXPECT_THROW(kernels::binary(kGpu)(BinaryOp::Div, i.to(kGpu), z.to(kGpu), q, 1.0), ValueError);
  EXPECT_TRUE(close(add(i, i), add(i.to(kGpu), i.to(kGpu))));  // the device is usable afterwards
}

TEST(CudaKernels, UnaryMatchesCpu_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(12);
  const std::vector<UnaryOp> int_ops = {UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Relu,
                                        UnaryOp::AddScalar, UnaryOp::MulScalar, UnaryOp::Clamp};
  const std::vector<UnaryOp> float_ops = {UnaryOp::Exp, UnaryOp::Log, UnaryOp::Sqrt, UnaryOp::Rsqrt, UnaryOp::Gelu,
                                          UnaryOp::Sigmoid, UnaryOp::Tanh, UnaryOp::PowScalar, UnaryOp::ReluGrad,
                                          UnaryOp::GeluGrad, UnaryOp::Reciprocal};
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8}) {
    std::vector<UnaryOp> ops = int_ops;
    if (is_floating(dt)) ops.insert(ops.end(), float_ops.begin(), float_ops.end());
    for (UnaryOp op : ops) {
      const bool positive = op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt ||
                            op == UnaryOp::PowScalar || op == UnaryOp::Reciprocal;
      Tensor a = sample(dt, 41, 23, g, positive ? 0.2 : -6, 6);
      Tensor ga = on_gpu(a);
      Tensor oc = full({41, 23}, 5, {.dtype = dt}), og = full({41, 23}, 9, {.dtype = dt, .device = kGpu});
      const double p0 = op == UnaryOp::Clamp ? -1.0 : op == UnaryOp::PowScalar ? 1.7 : 3.0;
      const double p1 = op == UnaryOp::Clamp ? 2.0 : 0.0;
      kernels::unary(Device::cpu())(op, a, oc, p0, p1);
      kernels::unary(kGpu)(op, ga, og, p0, p1);
      EXPECT_TRUE(close(oc, og, dt == DType::Float32 ? 2e-6 : tol(dt), dt == DType::Float32 ? 1e-7 : 0))
          << dtype_name(dt) << " op " << int(op);
    }
  }
  EXPECT_THROW(relu(ones({2}, {.dtype = DType::Bool, .device = kGpu})), DTypeError);
}

TEST(CudaKernels, CopyConvertsEveryDtypePairLikeTheCpu_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(13);
  for (DType s : kAll) {
    // float sources stay in [0, 247): converting an out-of-range float to an integer is undefined
    Tensor src = sample(is_floating(s) ? DType::Float64 : s, 19, 31, g, is_floating(s) ? 0 : -2, is_floating(s) ? 180 : 200).contiguous();
    if (is_floating(s)) src = mul(src, 1.37).to(s);  // non-integers, some beyond half's exact range
    Tensor src_t = src.t();                          // non-contiguous source
    for (DType d : kAll) {
      // destination: a transposed view of a sentinel-filled buffer
      Tensor oc = full({19, 31}, 3, {.dtype = d}).t(), og = full({19, 31}, 7, {.dtype = d, .device = kGpu}).t();
      kernels::copy(Device::cpu())(src_t, oc);
      kernels::copy(kGpu)(on_gpu(src_t), og);
      EXPECT_TRUE(close(oc, og)) << dtype_name(s) << " -> " << dtype_name(d);
    }
  }
  // a broadcast (stride-0) source
  Tensor row = arange(5).reshape({1, 5});
  Tensor oc = empty({4, 5}), og = empty({4, 5}, {.device = kGpu});
  kernels::copy(Device::cpu())(row.expand({4, 5}), oc);
  kernels::copy(kGpu)(row.to(kGpu).expand({4, 5}), og);
  EXPECT_TRUE(close(oc, og));
}

TEST(CudaKernels, FillAndWhereMatchCpu_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  for (DType d : kAll) {
    for (double v : {0.0, -2.5, 7.0, 1e9}) {
      if (d == DType::UInt8 && (v < 0 || v > 255)) continue;  // an undefined conversion
      Tensor oc = full({6, 4}, 1, {.dtype = d}).t(), og = full({6, 4}, 2, {.dtype = d, .device = kGpu}).t();
      kernels::fill(Device::cpu())(oc, v);
      kernels::fill(kGpu)(og, v);
      EXPECT_TRUE(close(oc, og)) << dtype_name(d) << " " << v;
    }
  }
  Generator g(14);
  for (DType d : kNumeric) {
    Tensor c = sample(DType::Bool, 17, 9, g), a = sample(d, 17, 9, g), b = sample(d, 1, 9, g).expand({17, 9});
    Tensor oc = full({17, 9}, 1, {.dtype = d}), og = full({17, 9}, 0, {.dtype = d, .device = kGpu});
    kernels::where(Device::cpu())(c, a, b, oc);
    kernels::where(kGpu)(on_gpu(c), on_gpu(a), on_gpu(b.narrow(0, 0, 1)).expand({17, 9}), og);
    EXPECT_TRUE(close(oc, og)) << dtype_name(d);
  }
}

TEST(CudaKernels, ReductionsMatchCpu_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(15);
  for (DType dt : kNumeric) {
    Tensor base = sample(dt, 300, 70, g, -50, 50).contiguous().reshape({30, 10, 70});
    Tensor a = base.permute({2, 0, 1}), ga = base.to(kGpu).permute({2, 0, 1});  // (70, 30, 10), non-contiguous
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin}) {
        if ((op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) && dims.size() != 1) continue;
        Shape os = a.sizes();
        for (int64_t d : dims) os[d] = 1;
        DType odt = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin ? DType::Int64
                    : op == ReduceOp::Sum && !is_floating(dt)        ? DType::Int64
                                                                      : dt;
        Tensor oc = full(os, 1, {.dtype = odt}), og = full(os, 0, {.dtype = odt, .device = kGpu});
        kernels::reduce(Device::cpu())(op, a, dims, oc);
        kernels::reduce(kGpu)(op, ga, dims, og);
        EXPECT_TRUE(close(oc, og, op == ReduceOp::Sum ? tol(dt) : 0, 0))
            << dtype_name(dt) << " op " << int(op) << " dims " << shape_str(dims);
      }
    }
  }
  // NaN: max is NaN, argmax points at the first NaN, as on the CPU; ties go to the first index
  Tensor x = tensor({1.0f, NAN, 5.0f, NAN, 5.0f}).reshape({1, 5});
  EXPECT_TRUE(close(amax(x, {1}), amax(x.to(kGpu), {1})));
  EXPECT_TRUE(close(argmax(x, 1), argmax(x.to(kGpu), 1)));
  Tensor t = tensor({2.0f, 5.0f, 5.0f, 1.0f, 1.0f}).reshape({1, 5});
  EXPECT_EQ(argmax(t.to(kGpu), 1).item<int64_t>(), 1);
  EXPECT_EQ(argmin(t.to(kGpu), 1).item<int64_t>(), 3);
  // a long float32 row: double accumulation keeps it close to the CPU's
  Tensor big = randn({1, 1 << 20}, {}, &g);
  EXPECT_TRUE(close(sum(big, {1}), sum(big.to(kGpu), {1}), 1e-6, 1e-4));
}

TEST(CudaKernels, GemmMatchesCpuIncludingTransposedViews_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(16);
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (auto [B, M, K, N] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 64, 33, 17}, {1, 128, 256, 96}, {2, 4, 0, 3}}) {
      Tensor a = randn({B, M, K}, {.dtype = dt}, &g), b = randn({B, K, N}, {.dtype = dt}, &g);
      for (int variant = 0; variant < 4; ++variant) {
        Tensor aa = a, bb = b;
        if (variant == 1 || variant == 3) aa = a.transpose(1, 2).contiguous().transpose(1, 2);
        if (variant == 2 || variant == 3) bb = b.transpose(1, 2).contiguous().transpose(1, 2);
        Tensor ga = aa.transpose(1, 2).is_contiguous() ? aa.transpose(1, 2).to(kGpu).transpose(1, 2) : aa.to(kGpu);
        Tensor gb = bb.transpose(1, 2).is_contiguous() ? bb.transpose(1, 2).to(kGpu).transpose(1, 2) : bb.to(kGpu);
        Tensor oc = full({B, M, N}, 1, {.dtype = dt}), og = full({B, M, N}, std::nan(""), {.dtype = dt, .device = kGpu});
        kernels::batched_gemm(Device::cpu())(aa, bb, oc);
        kernels::batched_gemm(kGpu)(ga, gb, og);
        EXPECT_TRUE(close(oc, og, dt == DType::Float32 ? 1e-4 : 1e-10, (dt == DType::Float32 ? 1e-4 : 1e-10) * std::sqrt(double(K + 1))))
            << B << "x" << M << "x" << K << "x" << N << " variant " << variant << " " << dtype_name(dt);
      }
    }
  }
  // through the public op, broadcasting a 2-D weight
  Tensor x = randn({5, 8, 16}, {}, &g), w = randn({16, 4}, {}, &g);
  EXPECT_TRUE(close(matmul(x, w), matmul(x.to(kGpu), w.to(kGpu)), 1e-4, 1e-4));
}

// TF32 rounds the inputs to a 10-bit mantissa: with K = 512 products of N(0, 1) values the error
// grows to ~1e-3 relative, far beyond the float32 tolerance above, and vanishes when switched off.
TEST(CudaKernels, GemmUsesTf32OnlyWhenAllowed_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  struct Tf32Scope {
    ~Tf32Scope() { set_allow_tf32(false); }
  } scope;
  Generator g(17);
  Tensor a = randn({256, 512}, {}, &g), b = randn({512, 256}, {}, &g);
  Tensor ref = matmul(a.to(DType::Float64), b.to(DType::Float64));
  auto max_err = [&](const Tensor& out) { return amax(abs(sub(out.to(Device::cpu()).to(DType::Float64), ref))).item<double>(); };
  const double fp32_err = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  set_allow_tf32(true);
  const double tf32_err = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  set_allow_tf32(false);
  const double fp32_again = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  EXPECT_LT(fp32_err, 1e-3) << "full float32";
  EXPECT_GT(tf32_err, 4 * fp32_err) << "TF32 on: the error should grow (H100/A100 tensor cores)";
  EXPECT_LT(tf32_err, 0.5) << "TF32 still approximates the product";
  EXPECT_EQ(fp32_again, fp32_err) << "switching TF32 off restores full float32";
}

TEST(CudaKernels, RandomStreamsEqualTheCpus_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  for (int64_t n : {1, 3, 4, 1001, 1 << 16}) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      for (RandomDist dist : {RandomDist::Uniform, RandomDist::Normal, RandomDist::Bernoulli}) {
        const double p0 = dist == RandomDist::Uniform ? -2.0 : dist == RandomDist::Normal ? 0.5 : 0.3;
        const double p1 = dist == RandomDist::Uniform ? 3.0 : dist == RandomDist::Normal ? 2.0 : 0.0;
        Tensor oc = full({n}, 42, {.dtype = dt}), og = full({n}, 43, {.dtype = dt, .device = kGpu});
        kernels::random(Device::cpu())(dist, oc, 0x123456789abcdefull, 77, p0, p1);
        kernels::random(kGpu)(dist, og, 0x123456789abcdefull, 77, p0, p1);
        // uniform and bernoulli bit for bit; normal (double sin/cos/log) to float tolerance
        EXPECT_TRUE(close(oc, og, dist == RandomDist::Normal ? 1e-6 : 0, dist == RandomDist::Normal ? 1e-6 : 0))
            << n << " " << dtype_name(dt) << " dist " << int(dist);
      }
    }
    for (DType dt : {DType::Int64, DType::Int32, DType::UInt8}) {
      Tensor oc = full({n}, 1, {.dtype = dt}), og = full({n}, 2, {.dtype = dt, .device = kGpu});
      kernels::random(Device::cpu())(RandomDist::RandInt, oc, 5, 3, 3.0, 200.0);
      kernels::random(kGpu)(RandomDist::RandInt, og, 5, 3, 3.0, 200.0);
      EXPECT_TRUE(close(oc, og)) << n << " " << dtype_name(dt);
    }
  }
  // the public factories: one seed, the same numbers on either device
  Generator gc(99), gg(99);
  EXPECT_TRUE(close(rand({7, 9}, {}, &gc), rand({7, 9}, {.device = kGpu}, &gg)));
  EXPECT_TRUE(close(randint(-5, 5, {33}, {.dtype = DType::Int64}, &gc), randint(-5, 5, {33}, {.dtype = DType::Int64, .device = kGpu}, &gg)));
  EXPECT_EQ(gc.offset(), gg.offset());
}

TEST(CudaCopies, ToDeviceRoundTripsEveryDtype_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  Generator g(17);
  for (DType dt : kAll) {
    Tensor src = sample(is_floating(dt) ? DType::Float32 : dt, 13, 21, g, -100, 100).contiguous().to(dt);
    Tensor back = src.to(kGpu).to(Device::cpu());
    ASSERT_EQ(back.dtype(), dt);
    EXPECT_EQ(std::memcmp(back.raw_data(), src.raw_data(), src.nbytes()), 0) << dtype_name(dt);
    // non-contiguous source, dtype change on the way, copy_ into a strided destination
    Tensor nc = src.t();
    EXPECT_TRUE(close(nc.to(DType::Float64), nc.to(kGpu, DType::Float64))) << dtype_name(dt);
    Tensor dst = zeros({21, 26}, {.dtype = dt, .device = kGpu}).narrow(1, 3, 13);
    dst.copy_(nc);
    EXPECT_TRUE(close(nc, dst)) << dtype_name(dt);
    Tensor host = zeros({13, 21}, {.dtype = dt}).t();
    host.copy_(dst);
    EXPECT_TRUE(close(nc, host)) << dtype_name(dt);
  }
  EXPECT_EQ(empty({0, 3}, {.device = kGpu}).to(Device::cpu()).numel(), 0);
  EXPECT_FLOAT_EQ(scalar_tensor(2.5, {.device = kGpu}).item<float>(), 2.5f);
  if (cuda_device_count() >= 2) {
    Tensor a = arange(10, {.device = Device::cuda(0)});
    Tensor b = a.to(Device::cuda(1));
    EXPECT_EQ(b.device(), Device::cuda(1));
    EXPECT_TRUE(close(a, b));
  }
}

#ifdef EMBER_WITH_CUDA
TEST(CudaAllocator, ReusesBlocksAndKeepsStatistics_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  cuda::empty_cache();
  const cuda::MemoryStats s0 = cuda::memory_stats(0);
  const size_t bytes = size_t(3) << 20;
  void* first = nullptr;
  {
    Tensor t = empty({int64_t(bytes / 4)}, {.device = kGpu});
    first = t.raw_data();
    cuda::MemoryStats s1 = cuda::memory_stats(0);
    EXPECT_EQ(s1.allocated, s0.allocated + cuda::size_class(bytes));
    EXPECT_GE(s1.reserved, s1.allocated);
    EXPECT_GE(s1.peak_allocated, s1.allocated);
  }
  cuda::MemoryStats s2 = cuda::memory_stats(0);
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_EQ(s2.reserved, s0.reserved + cuda::size_class(bytes));  // cached, not returned
  Tensor again = empty({int64_t(bytes / 4)}, {.device = kGpu});
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(cuda::memory_stats(0).num_cache_hits, s2.num_cache_hits + 1);
  again = Tensor();
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats(0).reserved, cuda::memory_stats(0).allocated);
}

TEST(CudaAllocator, OutOfMemoryIsAnErrorWithNumbersAndTheDeviceStaysUsable_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  const cuda::DeviceMemory mem = cuda::device_memory(0);
  const int64_t too_many = int64_t(mem.total / 4) * 10;  // 10x the device, in floats
  std::string msg = message_of([&] { empty({too_many}, {.device = kGpu}); });
  EXPECT_NE(msg.find("CUDA out of memory on cuda:0"), std::string::npos) << msg;
  for (const char* part : {"requested", "allocated", "reserved", "free", "total"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  EXPECT_THROW(empty({int64_t(1) << 61}, {.device = kGpu}), OutOfMemoryError);
  EXPECT_GE(cuda::memory_stats(0).num_ooms, 1u);
  Tensor x = arange(100, {.device = kGpu});
  EXPECT_EQ(sum(x).item<float>(), 4950.0f);  // the device still computes

  // Flush-and-retry: 40 % cached, then 70 % succeeds because the cache is released first.
  cuda::empty_cache();
  const cuda::DeviceMemory now = cuda::device_memory(0);
  { Tensor big = empty({int64_t(now.free / 4 * 4 / 10)}, {.device = kGpu}); }
  EXPECT_GT(cuda::memory_stats(0).reserved, cuda::memory_stats(0).allocated);
  Tensor bigger;
  EXPECT_NO_THROW(bigger = empty({int64_t(now.free / 4 * 7 / 10)}, {.device = kGpu}));
  bigger = Tensor();
  cuda::empty_cache();
}
#endif

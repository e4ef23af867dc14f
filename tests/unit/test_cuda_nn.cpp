// The CUDA nn kernels (cuDNN conv2d; our pooling, batch-norm, softmax and nll kernels) against
// the CPU ones, at three levels: each kernel slot on the same contiguous inputs (outputs
// pre-filled with different sentinels, NaN on the GPU and 1e30 on the CPU, so a kernel that skips
// an element fails); each nn::functional op with autograd on non-contiguous inputs (forward and
// every gradient); and whole models (mnistnet, resnet_small): same seed, same weights, same
// logits, loss, gradients and SGD trajectory. Every test is named *_CUDA and skips, saying why,
// without a usable GPU.
//
// Tolerances: pooling, nll and the max-pool routing are exact (same arithmetic, same order as the
// CPU); conv2d (cuDNN sums in the data type, in its own order, the CPU in double or via OpenBLAS),
// batch norm and softmax (double sums in another order) get a tolerance per dtype, relative to
// the largest magnitude of the CPU result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "core/runtime.h"
#include "kernels/nn_kernels.h"

using namespace ember;
using kernels::Conv2dParams;
using kernels::Pool2dParams;
namespace F = ember::nn::functional;

#define EMBER_REQUIRE_GPU()            \
  if (ember::cuda_device_count() == 0) \
  GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason()

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);
const std::vector<DType> kFloats = {DType::Float32, DType::Float64};

// Restores ember::deterministic() at scope exit, so a failing test cannot leak the setting.
struct DeterministicScope {
  bool prev = deterministic();
  explicit DeterministicScope(bool on) { set_deterministic(on); }
  ~DeterministicScope() { set_deterministic(prev); }
};

// |gpu - cpu| <= tol * max(1, max |cpu|) element-wise; NaN must meet NaN, infinities must match.
// tol = 0 asks for equality. Reports the first mismatch and refuses an all-zero CPU result, which
// would let a kernel that writes zeros pass.
::testing::AssertionResult close(const Tensor& cpu, const Tensor& gpu, double tol, bool allow_all_zero = false) {
  if (cpu.sizes() != gpu.sizes())
    return ::testing::AssertionFailure() << "shapes " << shape_str(cpu.sizes()) << " vs " << shape_str(gpu.sizes());
  if (cpu.dtype() != gpu.dtype())
    return ::testing::AssertionFailure() << "dtypes " << cpu.dtype() << " vs " << gpu.dtype();
  if (!gpu.is_cuda()) return ::testing::AssertionFailure() << "the second tensor is on " << gpu.device().str();
  std::vector<double> c = cpu.to_vector<double>(), g = gpu.to_vector<double>();
  double scale = 1.0;
  bool nonzero = false;
  for (double v : c) {
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    nonzero = nonzero || v != 0.0;
  }
  if (!nonzero && !allow_all_zero && !c.empty()) return ::testing::AssertionFailure() << "the CPU result is all zero";
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i]) && std::isnan(g[i])) continue;
    if (std::isinf(c[i]) || std::isinf(g[i]) || std::isnan(g[i]) || std::isnan(c[i])) {
      if (c[i] == g[i]) continue;
    } else if (std::abs(g[i] - c[i]) <= tol * scale) {
      continue;
    }
    return ::testing::AssertionFailure() << "element " << i << " of " << shape_str(cpu.sizes()) << ": cpu " << c[i]
                                         << " vs cuda " << g[i] << " (tolerance " << tol * scale << ")";
  }
  return ::testing::AssertionSuccess();
}

double conv_tol(DType dt) { return dt == DType::Float32 ? 2e-5 : 1e-11; }
double reduce_tol(DType dt) { return dt == DType::Float32 ? 2e-6 : 1e-12; }

Tensor randn_on(Shape s, DType dt, uint64_t seed, Device d = kCpu) {
  Generator g(seed);
  return randn(std::move(s), {.dtype = DType::Float64}, &g).to(dt).to(d);
}
// Small integers in [lo, hi) as dtype dt: exact sums, and many ties for max-pool.
Tensor randint_on(Shape s, DType dt, int64_t lo, int64_t hi, uint64_t seed) {
  Generator g(seed);
  return randint(lo, hi, std::move(s), {.dtype = DType::Int64}, &g).to(dt);
}

// A CPU tensor and the same values on the GPU, both as non-contiguous (N, C, H, W) views:
// transposes of contiguous (N, C, W, H) bases.
struct Pair {
  Tensor cpu, gpu;
};
Pair noncontiguous_pair(const Shape& nchw, DType dt, uint64_t seed) {
  Tensor base = randn_on({nchw[0], nchw[1], nchw[3], nchw[2]}, dt, seed);
  Pair p{base.transpose(2, 3), base.to(kGpu).transpose(2, 3)};
  return p;
}
Tensor leaf(const Tensor& t) { return t.detach().requires_grad_(); }

// ---- conv cases (shared by the kernel and the functional tests) ---------------------------------
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
// Conv2dParams: stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups.
const std::vector<ConvCase> kConvCases = {
    {{4, 32, 10, 10}, {64, 32, 3, 3}, {}, true},                  // mnistnet conv2, smaller
    {{3, 1, 28, 28}, {8, 1, 3, 3}, {}, true},                     // one input channel
    {{1, 6, 9, 11}, {4, 6, 3, 2}, {2, 1, 1, 0, 1, 2, 1}, false},  // non-square, stride/pad/dilation
    {{2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 2}, true},    // groups
    {{2, 4, 6, 5}, {4, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 4}, false},   // depthwise, stride 2
    {{3, 16, 5, 6}, {8, 16, 1, 1}, {}, true},                     // pointwise
    {{2, 6, 8, 8}, {4, 6, 5, 5}, {1, 1, 2, 2, 2, 2, 1}, true},    // large padding with dilation
};
F::Conv2dOptions conv_options(const Conv2dParams& p) {
  return {{p.stride_h, p.stride_w}, {p.pad_h, p.pad_w}, {p.dilation_h, p.dilation_w}, p.groups};
}

// ---- pool cases ----------------------------------------------------------------------------------
struct PoolCase {
  Shape x;
  F::Pool2dOptions opt;
  bool overlapping;  // windows share inputs (stride < kernel): max-pool backward adds in any order
};
const std::vector<PoolCase> kPoolCases = {
    {{4, 8, 26, 26}, {{2, 2}, {0, 0}, {0, 0}}, false},              // mnistnet's pool
    {{2, 3, 9, 8}, {{3, 2}, {2, 1}, {1, 1}}, true},                 // non-square, padded
    {{1, 2, 7, 7}, {{3, 3}, {2, 2}, {0, 0}}, true},
    {{1, 2, 7, 7}, {{3, 3}, {2, 2}, {1, 1}, true}, true},            // ceil mode: last window clipped
    {{2, 2, 8, 6}, {{2, 2}, {2, 2}, {1, 0}, true, false}, false},    // ceil mode, padding not counted
    {{1, 3, 5, 5}, {{5, 5}, {1, 1}, {2, 2}, false, false}, true},    // windows mostly in the padding
};
Pool2dParams pool_params(const F::Pool2dOptions& o) {
  return {o.kernel[0], o.kernel[1], o.stride[0] == 0 ? o.kernel[0] : o.stride[0],
          o.stride[1] == 0 ? o.kernel[1] : o.stride[1], o.padding[0], o.padding[1], o.count_include_pad};
}
std::string pool_str(const PoolCase& c) {
  return ::ember::detail::cat(shape_str(c.x), " kernel ", c.opt.kernel[0], "x", c.opt.kernel[1], " stride ",
                              c.opt.stride[0], "x", c.opt.stride[1], " pad ", c.opt.padding[0], "x", c.opt.padding[1],
                              c.opt.ceil_mode ? " ceil" : "", c.opt.count_include_pad ? "" : " exclude-pad");
}

}  // namespace

// =================================================================================================
// Kernel slots, contiguous inputs, sentinel-filled outputs
// =================================================================================================

TEST(CudaNnKernels, Conv2dForwardAndBothBackwardsMatchTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 1000;
  for (DType dt : kFloats)
    for (const auto& c : kConvCases) {
      SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " x ", shape_str(c.x), " w ", shape_str(c.w), " groups ",
                                        c.p.groups));
      Tensor x = randn_on(c.x, dt, ++seed), w = randn_on(c.w, dt, ++seed);
      Tensor b = c.bias ? randn_on({c.w[0]}, dt, ++seed) : Tensor();
      const Shape os = conv_out_shape(c);
      Tensor go = randn_on(os, dt, ++seed);
      const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};

      Tensor out_c = full(os, 1e30, ct), out_g = full(os, std::nan(""), gt);
      kernels::conv2d_forward(kCpu)(x, w, b, c.p, out_c);
      kernels::conv2d_forward(kGpu)(x.to(kGpu), w.to(kGpu), c.bias ? b.to(kGpu) : Tensor(), c.p, out_g);
      EXPECT_TRUE(close(out_c, out_g, conv_tol(dt))) << "conv2d_forward";

      Tensor gx_c = full(c.x, 1e30, ct), gx_g = full(c.x, std::nan(""), gt);
      kernels::conv2d_backward_data(kCpu)(go, w, c.p, gx_c);
      kernels::conv2d_backward_data(kGpu)(go.to(kGpu), w.to(kGpu), c.p, gx_g);
      EXPECT_TRUE(close(gx_c, gx_g, conv_tol(dt))) << "conv2d_backward_data";

      Tensor gw_c = full(c.w, 1e30, ct), gw_g = full(c.w, std::nan(""), gt);
      kernels::conv2d_backward_weight(kCpu)(go, x, c.p, gw_c);
      kernels::conv2d_backward_weight(kGpu)(go.to(kGpu), x.to(kGpu), c.p, gw_g);
      EXPECT_TRUE(close(gw_c, gw_g, conv_tol(dt))) << "conv2d_backward_weight";
    }
}

TEST(CudaNnKernels, Conv2dIsBitReproducibleInDeterministicMode_CUDA) {
  EMBER_REQUIRE_GPU();
  DeterministicScope det(true);
  const ConvCase c{{8, 16, 12, 12}, {32, 16, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, true};
  Tensor x = randn_on(c.x, DType::Float32, 1, kGpu), w = randn_on(c.w, DType::Float32, 2, kGpu);
  Tensor go = randn_on(conv_out_shape(c), DType::Float32, 3, kGpu);
  std::vector<float> first_gw, first_gx;
  for (int rep = 0; rep < 3; ++rep) {
    Tensor gw = empty(c.w, {.device = kGpu}), gx = empty(c.x, {.device = kGpu});
    kernels::conv2d_backward_weight(kGpu)(go, x, c.p, gw);
    kernels::conv2d_backward_data(kGpu)(go, w, c.p, gx);
    if (rep == 0) {
      first_gw = gw.to_vector<float>();
      first_gx = gx.to_vector<float>();
      Tensor gw_c = empty(c.w);
      kernels::conv2d_backward_weight(kCpu)(go.to(kCpu), x.to(kCpu), c.p, gw_c);
      EXPECT_TRUE(close(gw_c, gw, conv_tol(DType::Float32)));
    } else {
      EXPECT_EQ(gw.to_vector<float>(), first_gw) << "repetition " << rep;
      EXPECT_EQ(gx.to_vector<float>(), first_gx) << "repetition " << rep;
    }
  }
}

TEST(CudaNnKernels, MaxPool2dPicksTheCpusMaximaAndRoutesGradientsAlike_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 2000;
  for (DType dt : kFloats)
    for (const auto& c : kPoolCases)
      for (bool ties : {false, true}) {
        SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", pool_str(c), ties ? " integer inputs (ties)" : ""));
        // Integer values in [0, 3) make most windows hold several maxima: the first must win.
        Tensor x = ties ? randint_on(c.x, dt, 0, 3, ++seed) : randn_on(c.x, dt, ++seed);
        if (!ties) x.view({-1}).narrow(0, 5, 1).fill_(std::nan(""));  // NaN propagates, as on the CPU
        const Shape os = F::max_pool2d(x, c.opt).sizes();
        const Pool2dParams p = pool_params(c.opt);
        const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
        Tensor out_c = full(os, 1e30, ct), out_g = full(os, -1e30, gt);
        Tensor idx_c = full(os, -7, {.dtype = DType::Int64});
        Tensor idx_g = full(os, -9, {.dtype = DType::Int64, .device = kGpu});
        kernels::max_pool2d_forward(kCpu)(x, p, out_c, idx_c);
        kernels::max_pool2d_forward(kGpu)(x.to(kGpu), p, out_g, idx_g);
        EXPECT_TRUE(close(out_c, out_g, 0.0)) << "max_pool2d_forward";
        EXPECT_EQ(idx_c.to_vector<int64_t>(), idx_g.to_vector<int64_t>()) << "max_pool2d_forward indices";

        // Routed with the CPU's indices, so both sides scatter to the same places.
        Tensor go = randint_on(os, dt, -4, 5, ++seed);
        Tensor gx_c = full(c.x, 1e30, ct);
        kernels::max_pool2d_backward(kCpu)(go, idx_c, gx_c);
        for (bool det : {false, true}) {
          DeterministicScope scope(det);
          Tensor gx_g = full(c.x, std::nan(""), gt);
          kernels::max_pool2d_backward(kGpu)(go.to(kGpu), idx_c.to(kGpu), gx_g);
          // Integer gradients add exactly in any order; random ones only where no input is shared
          // or in deterministic mode.
          Tensor gof = randn_on(os, dt, seed + 100);
          Tensor gxf_c = full(c.x, 1e30, ct), gxf_g = full(c.x, std::nan(""), gt);
          kernels::max_pool2d_backward(kCpu)(gof, idx_c, gxf_c);
          kernels::max_pool2d_backward(kGpu)(gof.to(kGpu), idx_c.to(kGpu), gxf_g);
          EXPECT_TRUE(close(gx_c, gx_g, 0.0)) << "max_pool2d_backward (integer gradients), deterministic=" << det;
          EXPECT_TRUE(close(gxf_c, gxf_g, (det || !c.overlapping) ? 0.0 : reduce_tol(dt)))
              << "max_pool2d_backward, deterministic=" << det;
        }
      }
}

TEST(CudaNnKernels, AvgPool2dEqualsTheCpuBitForBit_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 3000;
  for (DType dt : kFloats)
    for (auto c : kPoolCases)
      for (bool include_pad : {true, false}) {
        c.opt.count_include_pad = include_pad;
        SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", pool_str(c)));
        Tensor x = randn_on(c.x, dt, ++seed);
        const Shape os = F::avg_pool2d(x, c.opt).sizes();
        const Pool2dParams p = pool_params(c.opt);
        const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
        Tensor out_c = full(os, 1e30, ct), out_g = full(os, std::nan(""), gt);
        kernels::avg_pool2d_forward(kCpu)(x, p, out_c);
        kernels::avg_pool2d_forward(kGpu)(x.to(kGpu), p, out_g);
        EXPECT_TRUE(close(out_c, out_g, 0.0)) << "avg_pool2d_forward";

        Tensor go = randn_on(os, dt, ++seed);
        Tensor gx_c = full(c.x, 1e30, ct), gx_g = full(c.x, std::nan(""), gt);
        kernels::avg_pool2d_backward(kCpu)(go, p, gx_c);
        kernels::avg_pool2d_backward(kGpu)(go.to(kGpu), p, gx_g);
        EXPECT_TRUE(close(gx_c, gx_g, 0.0)) << "avg_pool2d_backward";
      }
}

TEST(CudaNnKernels, AdaptiveAvgPool2dEqualsTheCpuBitForBit_CUDA) {
  EMBER_REQUIRE_GPU();
  struct Case {
    Shape x;
    int64_t oh, ow;
  };
  const std::vector<Case> cases = {
      {{2, 4, 8, 8}, 1, 1},   // global average (resnet_small's head)
      {{2, 3, 10, 7}, 3, 4},  // windows of different sizes that overlap
      {{1, 2, 5, 5}, 5, 5},   // identity
      {{1, 2, 3, 4}, 6, 7},   // larger output than input: inputs feed several outputs
  };
  uint64_t seed = 4000;
  for (DType dt : kFloats)
    for (const auto& c : cases) {
      SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", shape_str(c.x), " -> ", c.oh, "x", c.ow));
      Tensor x = randn_on(c.x, dt, ++seed);
      const Shape os = {c.x[0], c.x[1], c.oh, c.ow};
      const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
      Tensor out_c = full(os, 1e30, ct), out_g = full(os, std::nan(""), gt);
      kernels::adaptive_avg_pool2d_forward(kCpu)(x, out_c);
      kernels::adaptive_avg_pool2d_forward(kGpu)(x.to(kGpu), out_g);
      EXPECT_TRUE(close(out_c, out_g, 0.0)) << "adaptive_avg_pool2d_forward";

      Tensor go = randn_on(os, dt, ++seed);
      Tensor gx_c = full(c.x, 1e30, ct), gx_g = full(c.x, std::nan(""), gt);
      kernels::adaptive_avg_pool2d_backward(kCpu)(go, gx_c);
      kernels::adaptive_avg_pool2d_backward(kGpu)(go.to(kGpu), gx_g);
      EXPECT_TRUE(close(gx_c, gx_g, 0.0)) << "adaptive_avg_pool2d_backward";
    }
}

TEST(CudaNnKernels, BatchNormStatsForwardBackwardMatchTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  const std::vector<Shape> shapes = {{8, 4, 36}, {3, 5, 1}, {2, 3, 700}, {1, 2, 2}};
  uint64_t seed = 5000;
  for (DType dt : kFloats)
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", shape_str(s)));
      const int64_t C = s[1];
      // An offset mean makes the two-pass variance matter.
      Tensor x = add(randn_on(s, dt, ++seed), 3.0);
      const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
      Tensor m_c = full({C}, 1e30, ct), v_c = full({C}, 1e30, ct);
      Tensor m_g = full({C}, std::nan(""), gt), v_g = full({C}, std::nan(""), gt);
      kernels::batch_norm_stats(kCpu)(x, m_c, v_c);
      kernels::batch_norm_stats(kGpu)(x.to(kGpu), m_g, v_g);
      EXPECT_TRUE(close(m_c, m_g, reduce_tol(dt))) << "batch_norm_stats mean";
      EXPECT_TRUE(close(v_c, v_g, reduce_tol(dt))) << "batch_norm_stats var";

      Tensor invstd = rsqrt(add(v_c, 1e-5)), w = randn_on({C}, dt, ++seed), b = randn_on({C}, dt, ++seed);
      Tensor out_c = full(s, 1e30, ct), out_g = full(s, std::nan(""), gt);
      kernels::batch_norm_forward(kCpu)(x, m_c, invstd, w, b, out_c);
      kernels::batch_norm_forward(kGpu)(x.to(kGpu), m_c.to(kGpu), invstd.to(kGpu), w.to(kGpu), b.to(kGpu), out_g);
      EXPECT_TRUE(close(out_c, out_g, reduce_tol(dt))) << "batch_norm_forward";

      Tensor go = randn_on(s, dt, ++seed);
      for (bool training : {true, false}) {
        SCOPED_TRACE(training ? "training" : "eval");
        Tensor gx_c = full(s, 1e30, ct), gw_c = full({C}, 1e30, ct), gb_c = full({C}, 1e30, ct);
        Tensor gx_g = full(s, std::nan(""), gt), gw_g = full({C}, std::nan(""), gt), gb_g = full({C}, std::nan(""), gt);
        kernels::batch_norm_backward(kCpu)(go, x, m_c, invstd, w, training, gx_c, gw_c, gb_c);
        kernels::batch_norm_backward(kGpu)(go.to(kGpu), x.to(kGpu), m_c.to(kGpu), invstd.to(kGpu), w.to(kGpu), training,
                                           gx_g, gw_g, gb_g);
        // In training the input gradient is a difference of nearly equal terms: a looser bound.
        EXPECT_TRUE(close(gx_c, gx_g, training ? 50 * reduce_tol(dt) : reduce_tol(dt))) << "grad_x";
        EXPECT_TRUE(close(gw_c, gw_g, reduce_tol(dt))) << "grad_weight";
        EXPECT_TRUE(close(gb_c, gb_g, reduce_tol(dt))) << "grad_bias";
      }
    }
}

TEST(CudaNnKernels, SoftmaxAndLogSoftmaxMatchTheCpuAlongEveryDim_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 6000;
  for (DType dt : kFloats)
    for (const Shape& s : {Shape{4, 10}, Shape{3, 5, 7}, Shape{2, 1000}, Shape{1, 1}})
      for (int64_t dim = 0; dim < int64_t(s.size()); ++dim)
        for (bool log : {false, true}) {
          SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", shape_str(s), " dim ", dim, log ? " log" : ""));
          // Large logits: the row maximum must be subtracted before exp().
          Tensor x = mul(randn_on(s, dt, ++seed), 30.0);
          x.view({-1}).narrow(0, 0, 1).fill_(800.0);
          const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
          Tensor out_c = full(s, 1e30, ct), out_g = full(s, std::nan(""), gt);
          kernels::softmax_forward(kCpu)(x, dim, log, out_c);
          kernels::softmax_forward(kGpu)(x.to(kGpu), dim, log, out_g);
          EXPECT_TRUE(close(out_c, out_g, reduce_tol(dt), /*allow_all_zero=*/true)) << "softmax_forward";

          Tensor go = randn_on(s, dt, ++seed);
          Tensor gx_c = full(s, 1e30, ct), gx_g = full(s, std::nan(""), gt);
          kernels::softmax_backward(kCpu)(go, out_c, dim, log, gx_c);
          kernels::softmax_backward(kGpu)(go.to(kGpu), out_c.to(kGpu), dim, log, gx_g);
          EXPECT_TRUE(close(gx_c, gx_g, reduce_tol(dt), /*allow_all_zero=*/true)) << "softmax_backward";
        }
}

TEST(CudaNnKernels, NllLossForwardBackwardEqualTheCpuWithIgnoredRows_CUDA) {
  EMBER_REQUIRE_GPU();
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t N = 9, C = 5, ignore = -100;
    Tensor lp = randn_on({N, C}, dt, 7000);
    Tensor target = tensor<int64_t>({0, 4, ignore, 2, 2, 1, ignore, 3, 0}, {N});
    const TensorOptions ct{.dtype = dt}, gt{.dtype = dt, .device = kGpu};
    Tensor out_c = full({N}, 1e30, ct), out_g = full({N}, std::nan(""), gt);
    kernels::nll_loss_forward(kCpu)(lp, target, ignore, out_c);
    kernels::nll_loss_forward(kGpu)(lp.to(kGpu), target.to(kGpu), ignore, out_g);
    EXPECT_TRUE(close(out_c, out_g, 0.0));
    EXPECT_EQ(out_g.to_vector<double>()[2], 0.0);

    Tensor go = randn_on({N}, dt, 7001);
    Tensor g_c = full({N, C}, 1e30, ct), g_g = full({N, C}, std::nan(""), gt);
    kernels::nll_loss_backward(kCpu)(go, target, ignore, g_c);
    kernels::nll_loss_backward(kGpu)(go.to(kGpu), target.to(kGpu), ignore, g_g);
    EXPECT_TRUE(close(g_c, g_g, 0.0));
  }
}

// =================================================================================================
// nn::functional with autograd on non-contiguous inputs: forward and every gradient
// =================================================================================================

TEST(CudaNnFunctional, Conv2dForwardAndGradientsOnNonContiguousInputs_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 8000;
  for (DType dt : kFloats)
    for (const auto& c : kConvCases) {
      SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " x ", shape_str(c.x), " w ", shape_str(c.w)));
      Pair x = noncontiguous_pair(c.x, dt, ++seed), w = noncontiguous_pair(c.w, dt, ++seed);
      ASSERT_FALSE(x.gpu.is_contiguous());
      Tensor b = randn_on({c.w[0]}, dt, ++seed);
      Tensor xc = leaf(x.cpu), wc = leaf(w.cpu), bc = c.bias ? leaf(b) : Tensor();
      Tensor xg = leaf(x.gpu), wg = leaf(w.gpu), bg = c.bias ? leaf(b.to(kGpu)) : Tensor();
      Tensor yc = F::conv2d(xc, wc, bc, conv_options(c.p)), yg = F::conv2d(xg, wg, bg, conv_options(c.p));
      EXPECT_TRUE(close(yc, yg, conv_tol(dt))) << "output";
      Tensor go = randn_on(yc.sizes(), dt, ++seed);
      sum(mul(yc, go)).backward();
      sum(mul(yg, go.to(kGpu))).backward();
      EXPECT_TRUE(close(xc.grad(), xg.grad(), conv_tol(dt))) << "grad x";
      EXPECT_TRUE(close(wc.grad(), wg.grad(), conv_tol(dt))) << "grad weight";
      if (c.bias) EXPECT_TRUE(close(bc.grad(), bg.grad(), reduce_tol(dt))) << "grad bias";
    }
}

TEST(CudaNnFunctional, PoolingForwardAndGradientsOnNonContiguousInputs_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 9000;
  for (DType dt : kFloats)
    for (const auto& c : kPoolCases) {
      SCOPED_TRACE(::ember::detail::cat(dtype_name(dt), " ", pool_str(c)));
      Pair x = noncontiguous_pair(c.x, dt, ++seed);
      for (int op = 0; op < 3; ++op) {
        SCOPED_TRACE(op == 0 ? "max_pool2d" : op == 1 ? "avg_pool2d" : "adaptive_avg_pool2d");
        auto run = [&](const Tensor& in) {
          if (op == 0) return F::max_pool2d(in, c.opt);
          if (op == 1) return F::avg_pool2d(in, c.opt);
          return F::adaptive_avg_pool2d(in, {3, 2});
        };
        Tensor xc = leaf(x.cpu), xg = leaf(x.gpu);
        Tensor yc = run(xc), yg = run(xg);
        EXPECT_TRUE(close(yc, yg, 0.0)) << "output";
        Tensor go = randn_on(yc.sizes(), dt, ++seed);
        sum(mul(yc, go)).backward();
        sum(mul(yg, go.to(kGpu))).backward();
        const bool exact = op != 0 || !c.overlapping;
        EXPECT_TRUE(close(xc.grad(), xg.grad(), exact ? 0.0 : reduce_tol(dt))) << "grad x";
      }
    }
}

TEST(CudaNnFunctional, BatchNormTrainingAndEvalWithRunningStats_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 10000;
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    const Shape s = {6, 3, 5, 4};
    Pair x = noncontiguous_pair(s, dt, ++seed);
    Tensor w = randn_on({3}, dt, ++seed), b = randn_on({3}, dt, ++seed);
    Tensor rm_c = randn_on({3}, dt, ++seed), rv_c = add(rand({3}, {.dtype = dt}), 0.5);
    Tensor rm_g = rm_c.to(kGpu), rv_g = rv_c.to(kGpu);
    for (bool training : {true, false}) {
      SCOPED_TRACE(training ? "training" : "eval");
      Tensor xc = leaf(x.cpu), wc = leaf(w), bc = leaf(b);
      Tensor xg = leaf(x.gpu), wg = leaf(w.to(kGpu)), bg = leaf(b.to(kGpu));
      Tensor yc = F::batch_norm(xc, rm_c, rv_c, wc, bc, training, 0.1, 1e-5);
      Tensor yg = F::batch_norm(xg, rm_g, rv_g, wg, bg, training, 0.1, 1e-5);
      EXPECT_TRUE(close(yc, yg, reduce_tol(dt))) << "output";
      EXPECT_TRUE(close(rm_c, rm_g, reduce_tol(dt))) << "running_mean";
      EXPECT_TRUE(close(rv_c, rv_g, reduce_tol(dt))) << "running_var";
      Tensor go = randn_on(s, dt, ++seed);
      sum(mul(yc, go)).backward();
      sum(mul(yg, go.to(kGpu))).backward();
      EXPECT_TRUE(close(xc.grad(), xg.grad(), 50 * reduce_tol(dt))) << "grad x";
      EXPECT_TRUE(close(wc.grad(), wg.grad(), reduce_tol(dt))) << "grad weight";
      EXPECT_TRUE(close(bc.grad(), bg.grad(), reduce_tol(dt))) << "grad bias";
    }
  }
}

TEST(CudaNnFunctional, SoftmaxCrossEntropyAndNllOnNonContiguousInputs_CUDA) {
  EMBER_REQUIRE_GPU();
  uint64_t seed = 11000;
  for (DType dt : kFloats) {
    SCOPED_TRACE(dtype_name(dt));
    // logits (8, 6) as the transpose of a (6, 8) tensor.
    Tensor base = randn_on({6, 8}, dt, ++seed);
    Tensor lc = leaf(base.t()), lg = leaf(base.to(kGpu).t());
    ASSERT_FALSE(lg.is_contiguous());
    Tensor target = tensor<int64_t>({0, 5, 2, -100, 3, 3, 1, 4}, {8});
    for (int op = 0; op < 4; ++op) {
      SCOPED_TRACE(op == 0 ? "softmax dim 0" : op == 1 ? "log_softmax dim 1" : op == 2 ? "cross_entropy" : "nll_loss sum");
      auto run = [&](const Tensor& l, const Tensor& t) {
        if (op == 0) return F::softmax(l, 0);
        if (op == 1) return F::log_softmax(l, 1);
        if (op == 2) return F::cross_entropy(l, t);
        return F::nll_loss(F::log_softmax(l, 1), t, {.reduction = F::Reduction::Sum});
      };
      lc.set_grad({});
      lg.set_grad({});
      Tensor yc = run(lc, target), yg = run(lg, target.to(kGpu));
      EXPECT_TRUE(close(yc, yg, reduce_tol(dt))) << "output";
      Tensor go = randn_on(yc.sizes(), dt, ++seed);
      sum(mul(yc, go)).backward();
      sum(mul(yg, go.to(kGpu))).backward();
      EXPECT_TRUE(close(lc.grad(), lg.grad(), reduce_tol(dt))) << "grad logits";
    }
  }
}

TEST(CudaNnFunctional, MixingDevicesIsADeviceError_CUDA) {
  EMBER_REQUIRE_GPU();
  Tensor x = randn_on({1, 2, 5, 5}, DType::Float32, 1, kGpu), w = randn_on({3, 2, 3, 3}, DType::Float32, 2);
  EXPECT_THROW(F::conv2d(x, w), DeviceError);
  Tensor lp = randn_on({4, 3}, DType::Float32, 3, kGpu);
  Tensor target = tensor<int64_t>({0, 1, 2, 0}, {4});
  EXPECT_THROW(F::nll_loss(lp, target), DeviceError);
}

// =================================================================================================
// Whole models: same seed, same weights; one batch; an SGD trajectory
// =================================================================================================

namespace {
// Gradients of every parameter of two copies of a model, by name, CPU against GPU.
void expect_same_gradients(nn::Module& cpu, nn::Module& gpu, double tol) {
  auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    SCOPED_TRACE(pc[i].first);
    ASSERT_EQ(pc[i].first, pg[i].first);
    ASSERT_TRUE(pc[i].second.grad().defined() && pg[i].second.grad().defined());
    EXPECT_TRUE(close(pc[i].second.grad(), pg[i].second.grad(), tol)) << "gradient of " << pc[i].first;
  }
}
}  // namespace

TEST(CudaNnModels, MnistnetMatchesTheCpuForOneBatchAndTwentySgdSteps_CUDA) {
  EMBER_REQUIRE_GPU();
  Generator gc(42), gg(42);
  auto cpu = models::mnistnet(10, 1, 28, &gc);
  auto gpu = models::mnistnet(10, 1, 28, &gg);
  gpu->to(kGpu);
  // Dropout off on both sides: this compares the deterministic part of the network.
  cpu->eval();
  gpu->eval();
  {
    auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_TRUE(pg[i].second.is_cuda()) << pg[i].first;
      EXPECT_TRUE(close(pc[i].second, pg[i].second, 0.0)) << "initial " << pc[i].first;
    }
  }
  const int64_t B = 16;
  Tensor x = randn_on({B, 1, 28, 28}, DType::Float32, 7);
  Generator gt(8);
  Tensor y = randint(0, 10, {B}, {.dtype = DType::Int64}, &gt);
  Tensor xg = x.to(kGpu), yg = y.to(kGpu);

  Tensor logits_c = cpu->forward(x), logits_g = gpu->forward(xg);
  EXPECT_TRUE(close(logits_c, logits_g, 1e-4)) << "logits";
  Tensor loss_c = F::cross_entropy(logits_c, y), loss_g = F::cross_entropy(logits_g, yg);
  EXPECT_NEAR(loss_c.item<double>(), loss_g.item<double>(), 1e-4 * std::max(1.0, std::abs(loss_c.item<double>())));
  loss_c.backward();
  loss_g.backward();
  expect_same_gradients(*cpu, *gpu, 1e-4);

  optim::SGD opt_c(cpu->parameters(), {.lr = 0.01, .momentum = 0.9});
  optim::SGD opt_g(gpu->parameters(), {.lr = 0.01, .momentum = 0.9});
  std::vector<double> losses_c, losses_g;
  for (int step = 0; step < 20; ++step) {
    // A fixed set of 4 batches, so the loss goes down and the trajectories stay comparable.
    Tensor xb = randn_on({B, 1, 28, 28}, DType::Float32, 100 + step % 4);
    Generator gy(200 + step % 4);
    Tensor yb = randint(0, 10, {B}, {.dtype = DType::Int64}, &gy);
    opt_c.zero_grad();
    opt_g.zero_grad();
    Tensor lc = F::cross_entropy(cpu->forward(xb), yb);
    Tensor lg = F::cross_entropy(gpu->forward(xb.to(kGpu)), yb.to(kGpu));
    lc.backward();
    lg.backward();
    opt_c.step();
    opt_g.step();
    losses_c.push_back(lc.item<double>());
    losses_g.push_back(lg.item<double>());
  }
  for (size_t i = 0; i < losses_c.size(); ++i)
    EXPECT_NEAR(losses_c[i], losses_g[i], 2e-3 * std::max(1.0, std::abs(losses_c[i]))) << "step " << i;
  // The last pass over the 4 batches against the first.
  double first = 0, last = 0;
  for (size_t i = 0; i < 4; ++i) {
    first += losses_g[i];
    last += losses_g[losses_g.size() - 4 + i];
  }
  EXPECT_LT(last, first) << "the GPU model did not learn";
}

TEST(CudaNnModels, ResnetSmallTrainModeStepMatchesTheCpu_CUDA) {
  EMBER_REQUIRE_GPU();
  // Batch norm in training mode (batch statistics, running-stat updates) and the adaptive
  // average pool head, which mnistnet does not use.
  Generator gc(5), gg(5);
  auto cpu = models::resnet_small(10, 1, 28, &gc);
  auto gpu = models::resnet_small(10, 1, 28, &gg);
  gpu->to(kGpu);
  cpu->train();
  gpu->train();
  const int64_t B = 8;
  Tensor x = randn_on({B, 1, 28, 28}, DType::Float32, 11);
  Generator gt(12);
  Tensor y = randint(0, 10, {B}, {.dtype = DType::Int64}, &gt);
  Tensor logits_c = cpu->forward(x), logits_g = gpu->forward(x.to(kGpu));
  EXPECT_TRUE(close(logits_c, logits_g, 1e-4)) << "logits";
  Tensor lc = F::cross_entropy(logits_c, y), lg = F::cross_entropy(logits_g, y.to(kGpu));
  EXPECT_NEAR(lc.item<double>(), lg.item<double>(), 1e-4 * std::max(1.0, std::abs(lc.item<double>())));
  lc.backward();
  lg.backward();
  // Batch norm's input gradient subtracts nearly equal terms layer after layer: a looser bound.
  expect_same_gradients(*cpu, *gpu, 1e-3);
  auto bc = cpu->named_buffers(), bg = gpu->named_buffers();
  ASSERT_EQ(bc.size(), bg.size());
  for (size_t i = 0; i < bc.size(); ++i)
    if (is_floating(bc[i].second.dtype())) EXPECT_TRUE(close(bc[i].second, bg[i].second, 1e-5, true)) << bc[i].first;
}

// conv2d on CUDA through cuDNN's convolution API, the twin of src/cpu/nn_conv.cpp: forward,
// backward-data and backward-filter, float32 and float64, groups and dilation. Algorithms come from
// cuDNN's heuristics (cudnnGetConvolution*Algorithm_v7), restricted to FMA math (no TF32, so float32
// results compare to the CPU's), to a workspace limit, and to deterministic algorithms while
// ember::deterministic() is set. Workspaces come from ember's caching allocator.
// Half precision (Conv2dParams::compute bfloat16 / float16, set under ember::autocast): x, weight
// and grad_out are cast to half on the GPU (cast.h), cuDNN multiplies on the tensor cores with
// float32 accumulation (CUDNN_DATA_FLOAT compute, CUDNN_TENSOR_OP_MATH) and writes half, which is
// widened into the float32 output or gradient (the legacy API wants one data type for x, w and y,
// so each result is rounded to half once, as in PyTorch's autocast); the bias is added in float32.
// Built without cuDNN, the slots throw NotImplementedError saying so.
#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor_raw.h"
#include "cuda/cast.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "ember/core/settings.h"
#include "kernels/kernels.h"
#include "kernels/nn_kernels.h"

namespace ember::cuda {

using kernels::Conv2dParams;

namespace {

#ifdef EMBER_WITH_CUDNN

// Heuristic candidates needing more scratch memory than this are skipped; the next one that fits
// is usually only slightly slower.
constexpr size_t kWorkspaceLimit = size_t(1) << 30;

int to_int(int64_t v, const char* what) {
  EMBER_CHECK(v <= INT_MAX, NotImplementedError, "conv2d on CUDA: ", what, " = ", v,
              " exceeds cuDNN's 32-bit descriptor limit");
  return int(v);
}

// Owning wrappers for the three descriptor kinds; destroyed even when a later call throws.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(cudnnDataType_t dt, const Shape& s) {
    EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
    EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, to_int(s[0], "N"), to_int(s[1], "C"),
                                                 to_int(s[2], "H"), to_int(s[3], "W")));
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc(cudnnDataType_t dt, const Shape& s) {  // (C_out, C_in/groups, kH, kW)
    EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
    EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, dt, CUDNN_TENSOR_NCHW, to_int(s[0], "C_out"),
                                                 to_int(s[1], "C_in/groups"), to_int(s[2], "kH"), to_int(s[3], "kW")));
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};
bool is_half_data(cudnnDataType_t dt) { return dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16; }

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc(cudnnDataType_t dt, const Conv2dParams& p) {
    EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
    // Cross-correlation is what PyTorch (and our CPU kernels) call convolution. Compute in the
    // data type: float32 accumulates in float32 here, float64 in float64; half data in float32.
    const bool half = is_half_data(dt);
    EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, to_int(p.pad_h, "pad_h"), to_int(p.pad_w, "pad_w"),
                                                      to_int(p.stride_h, "stride_h"), to_int(p.stride_w, "stride_w"),
                                                      to_int(p.dilation_h, "dilation_h"),
                                                      to_int(p.dilation_w, "dilation_w"), CUDNN_CROSS_CORRELATION,
                                                      half ? CUDNN_DATA_FLOAT : dt));
    EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, to_int(p.groups, "groups")));
    // The math type the heuristics are asked with; pick_algorithm then sets each candidate's own
    // (conv_math_type) before its workspace query and keeps the chosen one's for the call.
    // float32: FMA only (CUDNN_DEFAULT_MATH lets Ampere and newer use TF32 tensor cores for it).
    // float64: the default (no tensor-core path changes its results). Half data: the tensor cores.
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(
        d, half ? CUDNN_TENSOR_OP_MATH : dt == CUDNN_DATA_DOUBLE ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float16: return CUDNN_DATA_HALF;
    default: throw DTypeError(::ember::detail::cat("conv2d on CUDA: expected a floating tensor, got ", dtype_name(t)));
  }
}

// x (N, C_in, H, W), weight (C_out, C_in/groups, kH, kW), y (N, C_out, OH, OW) for one call.
struct ConvSetup {
  cudnnDataType_t dt;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  ConvSetup(DType dtype, const Shape& xs, const Shape& ws, const Shape& ys, const Conv2dParams& p)
      : dt(cudnn_dtype(dtype)), x(dt, xs), y(dt, ys), w(dt, ws), conv(dt, p) {}
};

// alpha = 1 and beta = 0 or 1 in the scaling type cuDNN wants: double for double data, else float.
struct Scale {
  float f;
  double d;
  const void* ptr(cudnnDataType_t dt) const { return dt == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&d) : &f; }
};
constexpr Scale kOne{1.0f, 1.0}, kZero{0.0f, 0.0};

std::string geometry_str(const Shape& xs, const Shape& ws, const Conv2dParams& p) {
  return ::ember::detail::cat("input ", shape_str(xs), ", weight ", shape_str(ws), ", stride [", p.stride_h, ", ",
                              p.stride_w, "], padding [", p.pad_h, ", ", p.pad_w, "], dilation [", p.dilation_h,
                              ", ", p.dilation_w, "], groups ", p.groups);
}

// The math type a heuristic candidate runs under, or false when ember does not use it for this data.
// float32 (not half): FMA only; a candidate offered with CUDNN_DEFAULT_MATH runs as FMA, since the
// default lets Ampere and newer round the inputs to TF32 and results would differ from the CPU's.
// float64: FMA or the default, as offered. Half data: FMA, the default or tensor-op math, as offered.
bool conv_math_type(cudnnDataType_t dt, bool tensor_ops, cudnnMathType_t offered, cudnnMathType_t* use) {
  const bool fma_or_default = offered == CUDNN_FMA_MATH || offered == CUDNN_DEFAULT_MATH;
  if (tensor_ops) {
    if (!fma_or_default && offered != CUDNN_TENSOR_OP_MATH && offered != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      return false;
    *use = offered;
    return true;
  }
  if (!fma_or_default) return false;
  *use = dt == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : offered;
  return true;
}

// The first heuristic candidate that succeeded, whose math ember uses (conv_math_type: FMA, tensor-op
// math too for half data, `tensor_ops`), fits the workspace limit and (when ember::deterministic())
// is deterministic. Each candidate's math type is set on `conv` before cuDNN is asked for its
// workspace (`workspace_of(algo, &bytes)`; a candidate it rejects is skipped), so the descriptor
// leaves here with the chosen algorithm's math type: a descriptor fixed to one math type would
// reject candidates offered under another (float64 found none).
template <class Perf, class WorkspaceOf>
std::pair<decltype(Perf{}.algo), size_t> pick_algorithm(const std::vector<Perf>& perfs, int returned,
                                                        cudnnConvolutionDescriptor_t conv, cudnnDataType_t dt,
                                                        WorkspaceOf workspace_of, const char* what,
                                                        const std::string& geometry, bool tensor_ops) {
  const bool det = deterministic();
  for (int i = 0; i < returned; ++i) {
    const Perf& r = perfs[size_t(i)];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    if (!conv_math_type(dt, tensor_ops, r.mathType, &math)) continue;
    if (det && r.determinism != CUDNN_DETERMINISTIC) continue;
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    size_t bytes = 0;
    if (workspace_of(r.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kWorkspaceLimit) continue;
    return {r.algo, bytes};
  }
  throw NotImplementedError(::ember::detail::cat("conv2d ", what, " on CUDA: cuDNN offers no ",
                                                 det ? "deterministic " : "", "algorithm for ", geometry,
                                                 " within a workspace of ", kWorkspaceLimit >> 20, " MiB"),
                            det ? "call ember::set_deterministic(false), or run this convolution on the CPU" : "");
}

// Scratch memory from the caching allocator. Freed when it goes out of scope, which is safe right
// after the launch: every later use of the block is queued on the same stream.
struct Workspace {
  Tensor t;
  void* ptr = nullptr;
  Workspace(size_t bytes, int dev) {
    if (bytes == 0) return;
    t = core::empty({int64_t(bytes)}, DType::UInt8, Device::cuda(dev));
    ptr = t.raw_data();
  }
};

// Half compute: the operands cast to p.compute, and a half tensor for cuDNN's result that the caller
// widens into the float32 one. Otherwise the tensors themselves.
bool half_compute(const Conv2dParams& p) { return is_half(p.compute); }
Tensor operand(const Tensor& t, const Conv2dParams& p) { return half_compute(p) ? to_half(t, p.compute) : t; }
Tensor result(const Tensor& t, const Conv2dParams& p) {
  return half_compute(p) ? core::empty(t.sizes(), p.compute, t.device()) : t;
}
void widen_into(const Tensor& half, const Tensor& t) {
  if (half.raw_data() != t.raw_data()) kernels::copy(t.device())(half, t);
}

void conv2d_forward(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias, const Conv2dParams& p,
                    const Tensor& out) {
  if (out.numel() == 0) return;
  if (x_in.numel() == 0) {  // no input channels (or an empty padded plane): only the bias is left
    if (bias.defined()) kernels::copy(out.device())(core::expand(core::view(bias, {1, bias.size(0), 1, 1}), out.sizes()), out);
    else kernels::fill(out.device())(out, 0.0);
    return;
  }
  const int dev = out.device().index;
  DeviceGuard g(dev);
  cudnnHandle_t h = cudnn_handle(dev);
  const Tensor x = operand(x_in, p), weight = operand(weight_in, p), y = result(out, p);
  ConvSetup s(x.dtype(), x.sizes(), weight.sizes(), out.sizes(), p);
  int max_algos = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(size_t(std::max(max_algos, 1)));
  int returned = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, s.x.d, s.w.d, s.conv.d, s.y.d, int(perfs.size()),
                                                           &returned, perfs.data()));
  auto [algo, bytes] = pick_algorithm(
      perfs, returned, s.conv.d, s.dt,
      [&](cudnnConvolutionFwdAlgo_t a, size_t* b) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, s.x.d, s.w.d, s.conv.d, s.y.d, a, b);
      },
      "forward", geometry_str(x.sizes(), weight.sizes(), p), half_compute(p));
  Workspace ws(bytes, dev);
  EMBER_CUDNN_CHECK(cudnnConvolutionForward(h, kOne.ptr(s.dt), s.x.d, x.raw_data(), s.w.d, weight.raw_data(), s.conv.d,
                                            algo, ws.ptr, bytes, kZero.ptr(s.dt), s.y.d, y.raw_data()));
  widen_into(y, out);
  if (bias.defined()) {  // in out's dtype (float32 under autocast)
    const cudnnDataType_t ot = cudnn_dtype(out.dtype());
    TensorDesc b(ot, Shape{1, bias.size(0), 1, 1}), o(ot, out.sizes());
    EMBER_CUDNN_CHECK(cudnnAddTensor(h, kOne.ptr(ot), b.d, bias.raw_data(), kOne.ptr(ot), o.d, out.raw_data()));
  }
}

void conv2d_backward_data(const Tensor& grad_out_in, const Tensor& weight_in, const Conv2dParams& p,
                          const Tensor& grad_x_out) {
  if (grad_x_out.numel() == 0) return;
  if (grad_out_in.numel() == 0) {  // no output channels: x did not influence anything
    kernels::fill(grad_x_out.device())(grad_x_out, 0.0);
    return;
  }
  const int dev = grad_x_out.device().index;
  DeviceGuard g(dev);
  cudnnHandle_t h = cudnn_handle(dev);
  const Tensor grad_out = operand(grad_out_in, p), weight = operand(weight_in, p), grad_x = result(grad_x_out, p);
  ConvSetup s(grad_x.dtype(), grad_x.sizes(), weight.sizes(), grad_out.sizes(), p);
  int max_algos = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_algos));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(size_t(std::max(max_algos, 1)));
  int returned = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s.w.d, s.y.d, s.conv.d, s.x.d, int(perfs.size()),
                                                                &returned, perfs.data()));
  auto [algo, bytes] = pick_algorithm(
      perfs, returned, s.conv.d, s.dt,
      [&](cudnnConvolutionBwdDataAlgo_t a, size_t* b) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, s.w.d, s.y.d, s.conv.d, s.x.d, a, b);
      },
      "backward (input gradient)", geometry_str(grad_x.sizes(), weight.sizes(), p), half_compute(p));
  Workspace ws(bytes, dev);
  EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(h, kOne.ptr(s.dt), s.w.d, weight.raw_data(), s.y.d,
                                                 grad_out.raw_data(), s.conv.d, algo, ws.ptr, bytes, kZero.ptr(s.dt),
                                                 s.x.d, grad_x.raw_data()));
  widen_into(grad_x, grad_x_out);
}

void conv2d_backward_weight(const Tensor& grad_out_in, const Tensor& x_in, const Conv2dParams& p,
                            const Tensor& grad_weight_out) {
  if (grad_weight_out.numel() == 0) return;
  if (grad_out_in.numel() == 0 || x_in.numel() == 0) {  // empty batch or planes: the sum over them is zero
    kernels::fill(grad_weight_out.device())(grad_weight_out, 0.0);
    return;
  }
  const int dev = grad_weight_out.device().index;
  DeviceGuard g(dev);
  cudnnHandle_t h = cudnn_handle(dev);
  const Tensor grad_out = operand(grad_out_in, p), x = operand(x_in, p), grad_weight = result(grad_weight_out, p);
  ConvSetup s(x.dtype(), x.sizes(), grad_weight.sizes(), grad_out.sizes(), p);
  int max_algos = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_algos));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(size_t(std::max(max_algos, 1)));
  int returned = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, s.x.d, s.y.d, s.conv.d, s.w.d, int(perfs.size()),
                                                                  &returned, perfs.data()));
  auto [algo, bytes] = pick_algorithm(
      perfs, returned, s.conv.d, s.dt,
      [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* b) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, s.x.d, s.y.d, s.conv.d, s.w.d, a, b);
      },
      "backward (weight gradient)", geometry_str(x.sizes(), grad_weight.sizes(), p), half_compute(p));
  Workspace ws(bytes, dev);
  EMBER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, kOne.ptr(s.dt), s.x.d, x.raw_data(), s.y.d, grad_out.raw_data(),
                                                   s.conv.d, algo, ws.ptr, bytes, kZero.ptr(s.dt), s.w.d,
                                                   grad_weight.raw_data()));
  widen_into(grad_weight, grad_weight_out);
}

#else  // !EMBER_WITH_CUDNN

[[noreturn]] void no_cudnn() {
  throw NotImplementedError("conv2d on CUDA needs cuDNN, and this ember was built without it (CMake found no "
                            "cudnn.h / libcudnn)",
                            "install cuDNN 9 and reconfigure with -DCUDNN_ROOT=<its prefix>, or run the model on "
                            "the CPU");
}
void conv2d_forward(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&, const Tensor&) { no_cudnn(); }
void conv2d_backward_data(const Tensor&, const Tensor&, const Conv2dParams&, const Tensor&) { no_cudnn(); }
void conv2d_backward_weight(const Tensor&, const Tensor&, const Conv2dParams&, const Tensor&) { no_cudnn(); }

#endif

}  // namespace

void register_nn_conv_kernels() {
  kernels::conv2d_forward.set(DeviceType::CUDA, &conv2d_forward);
  kernels::conv2d_backward_data.set(DeviceType::CUDA, &conv2d_backward_data);
  kernels::conv2d_backward_weight.set(DeviceType::CUDA, &conv2d_backward_weight);
}

}  // namespace ember::cuda

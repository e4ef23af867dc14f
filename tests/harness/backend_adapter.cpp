// The op harness's adapter to the dispatch table (src/core/dispatch.h, src/kernels/*kernels.h) and the
// CPU reference kernels (src/cpu/reference/): wraps every kernel slot with a sentinel-filling
// trampoline, switches CPU slots to reference or alternative kernels, and lists the backends.
#include "harness/backend_adapter.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "cpu/nn_conv.h"
#include "cpu/reference/core.h"
#include "cpu/reference/nn.h"
#include "cpu/reference/tensor.h"
#include "kernels/kernels.h"
#include "kernels/nn_kernels.h"
#include "backends/registry.h"
#include "kernels/tensor_kernels.h"
#include "support/gpu.h"

namespace ember::test::ops {
namespace {

// The values a poisoned output holds before its kernel runs.
struct Sentinel {
  double floating, integer, byte, boolean;
};
constexpr Sentinel kUnderTest{std::numeric_limits<double>::quiet_NaN(), -7, 7, 0};
constexpr Sentinel kReference{1e30, -9, 9, 1};

Sentinel g_sentinel = kUnderTest;
std::set<std::string>* g_called = nullptr;
kernels::FillFn g_raw_fill[kNumDeviceTypes] = {};  // the unwrapped fill kernels, to poison with

void poison(const Tensor& t) {
  if (!t.defined() || t.numel() == 0) return;
  const DType dt = t.dtype();
  const double v = is_floating(dt) ? g_sentinel.floating
                   : dt == DType::Bool ? g_sentinel.boolean
                   : dt == DType::UInt8 ? g_sentinel.byte
                                        : g_sentinel.integer;
  g_raw_fill[int(t.device().type)](t, v);
}

template <class T>
bool shares_storage(const Tensor& out, const T& arg) {
  if constexpr (std::is_same_v<std::decay_t<T>, Tensor>)
    return arg.defined() && out.defined() && arg.storage().get() == out.storage().get();
  else
    return false;
}

// Slot's kernels, wrapped: outputs (argument positions Outs) are poisoned unless an input shares
// their storage (in-place calls), then the saved kernel runs.
template <auto& Slot, class Fn, size_t... Outs>
struct Wrap;
template <auto& Slot, class R, class... A, size_t... Outs>
struct Wrap<Slot, R (*)(A...), Outs...> {
  using Fn = R (*)(A...);
  static inline Fn registered[kNumDeviceTypes] = {};  // what the backends put there
  static inline Fn inner[kNumDeviceTypes] = {};       // what the wrapper calls (registered or override)
  static inline const char* name = "";

  template <size_t O, class Tup, size_t... I>
  static bool aliased(const Tup& args, std::index_sequence<I...>) {
    const Tensor& out = std::get<O>(args);
    return ((I != O && shares_storage(out, std::get<I>(args))) || ...);
  }
  static R call(A... a) {
    auto args = std::forward_as_tuple(a...);
    if (g_called) g_called->insert(name);
    constexpr size_t first = std::get<0>(std::make_tuple(Outs...));
    const int dev = int(std::get<first>(args).device().type);
    auto poison_one = [&]<size_t O>() {
      // An undefined output (max pooling's indices without autograd) is not written.
      if (std::get<O>(args).defined() && !aliased<O>(args, std::index_sequence_for<A...>{})) poison(std::get<O>(args));
    };
    (poison_one.template operator()<Outs>(), ...);
    return inner[dev](a...);
  }
  static void install(const char* slot_name) {
    name = slot_name;
    for (int t = 0; t < kNumDeviceTypes; ++t) {
      registered[t] = Slot.has(DeviceType(t)) ? Slot(Device{DeviceType(t), 0}) : nullptr;
      inner[t] = registered[t];
      if (registered[t]) Slot.set(DeviceType(t), &call);
    }
  }
  // Replaces the CPU kernel (nullptr: the slot is left empty, as for a backend without it).
  static void override_cpu(Fn f) {
    inner[0] = f;
    Slot.set(DeviceType::CPU, f ? &call : nullptr);
  }
  static void restore() {
    for (int t = 0; t < kNumDeviceTypes; ++t) Slot.set(DeviceType(t), registered[t]);
  }
};

// Output positions follow the signatures in kernels/kernels.h and kernels/nn_kernels.h.
using WBinary = Wrap<kernels::binary, kernels::BinaryFn, 3>;
using WUnary = Wrap<kernels::unary, kernels::UnaryFn, 2>;
using WCopy = Wrap<kernels::copy, kernels::CopyFn, 1>;
using WFill = Wrap<kernels::fill, kernels::FillFn, 0>;
using WWhere = Wrap<kernels::where, kernels::WhereFn, 3>;
using WReduce = Wrap<kernels::reduce, kernels::ReduceFn, 3>;
using WGemm = Wrap<kernels::batched_gemm, kernels::BatchedGemmFn, 2>;
using WRandom = Wrap<kernels::random, kernels::RandomFn, 1>;
using WReluBackward = Wrap<kernels::relu_backward, kernels::ReluBackwardFn, 2>;
using WActF = Wrap<kernels::activation_forward, kernels::ActivationForwardFn, 2>;
using WActB = Wrap<kernels::activation_backward, kernels::ActivationBackwardFn, 3>;
using WLinearInference = Wrap<kernels::linear_inference, kernels::LinearInferenceFn, 3>;
using WLinearBackwardWeights = Wrap<kernels::linear_backward_weights, kernels::LinearBackwardWeightsFn, 2, 3>;
using WLinearBackwardData = Wrap<kernels::linear_backward_data, kernels::LinearBackwardDataFn, 2>;
using WConvF = Wrap<kernels::conv2d_forward, kernels::Conv2dForwardFn, 4>;
using WConvFused = Wrap<kernels::conv2d_forward_fused, kernels::Conv2dForwardFusedFn, 5>;
using WConvBD = Wrap<kernels::conv2d_backward_data, kernels::Conv2dBackwardDataFn, 3>;
using WConvBW = Wrap<kernels::conv2d_backward_weight, kernels::Conv2dBackwardWeightFn, 3>;
using WConvBWB = Wrap<kernels::conv2d_backward_weight_bias, kernels::Conv2dBackwardWeightBiasFn, 3, 4>;
using WMaxF = Wrap<kernels::max_pool2d_forward, kernels::MaxPool2dForwardFn, 2, 3>;
using WMaxB = Wrap<kernels::max_pool2d_backward, kernels::MaxPool2dBackwardFn, 2>;
using WAvgF = Wrap<kernels::avg_pool2d_forward, kernels::AvgPool2dForwardFn, 2>;
using WAvgB = Wrap<kernels::avg_pool2d_backward, kernels::AvgPool2dBackwardFn, 2>;
using WAdaF = Wrap<kernels::adaptive_avg_pool2d_forward, kernels::AdaptiveAvgPool2dForwardFn, 1>;
using WAdaB = Wrap<kernels::adaptive_avg_pool2d_backward, kernels::AdaptiveAvgPool2dBackwardFn, 1>;
using WBnS = Wrap<kernels::batch_norm_stats, kernels::BatchNormStatsFn, 1, 2>;
using WBnF = Wrap<kernels::batch_norm_forward, kernels::BatchNormForwardFn, 5>;
using WBnB = Wrap<kernels::batch_norm_backward, kernels::BatchNormBackwardFn, 6, 7, 8>;
using WBnFA = Wrap<kernels::batch_norm_forward_act, kernels::BatchNormForwardActFn, 7>;
using WBnBA = Wrap<kernels::batch_norm_backward_act, kernels::BatchNormBackwardActFn, 9, 10, 11, 12>;
using WSmF = Wrap<kernels::softmax_forward, kernels::SoftmaxForwardFn, 3>;
using WSmB = Wrap<kernels::softmax_backward, kernels::SoftmaxBackwardFn, 4>;
using WNllF = Wrap<kernels::nll_loss_forward, kernels::NllLossForwardFn, 3>;
using WNllB = Wrap<kernels::nll_loss_backward, kernels::NllLossBackwardFn, 3>;
using WMathUnary = Wrap<kernels::math_unary, kernels::MathUnaryFn, 2>;
using WMathBinary = Wrap<kernels::math_binary, kernels::MathBinaryFn, 3>;
using WScan = Wrap<kernels::scan, kernels::ScanFn, 4>;
using WGather = Wrap<kernels::gather, kernels::GatherFn, 3>;
using WScatter = Wrap<kernels::scatter, kernels::ScatterFn, 5>;

template <class... W>
struct All {
  static void install(std::initializer_list<const char*> names) {
    auto it = names.begin();
    ((W::install(*it++)), ...);
  }
  static void restore() { (W::restore(), ...); }
};
// device_copy (cross-device transfers) is not wrapped: it is how inputs reach the device under test.
using Everything = All<WBinary, WUnary, WCopy, WFill, WWhere, WReduce, WGemm, WRandom, WReluBackward, WActF, WActB,
                       WLinearInference, WLinearBackwardWeights, WLinearBackwardData, WConvF, WConvFused, WConvBD, WConvBW, WConvBWB, WMaxF, WMaxB,
                       WAvgF, WAvgB, WAdaF, WAdaB, WBnS, WBnF, WBnB, WBnFA, WBnBA, WSmF, WSmB, WNllF, WNllB,
                       WMathUnary, WMathBinary, WScan, WGather, WScatter>;
const std::initializer_list<const char*> kNames = {
    "binary", "unary", "copy", "fill", "where", "reduce", "batched_gemm", "random", "relu_backward",
    "activation_forward", "activation_backward",
    "linear_inference", "linear_backward_weights", "linear_backward_data", "conv2d_forward", "conv2d_forward_fused",
    "conv2d_backward_data", "conv2d_backward_weight", "conv2d_backward_weight_bias", "max_pool2d_forward",
    "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward", "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward",
    "batch_norm_stats", "batch_norm_forward", "batch_norm_backward", "batch_norm_forward_act",
    "batch_norm_backward_act", "softmax_forward", "softmax_backward", "nll_loss_forward", "nll_loss_backward",
    "math_unary", "math_binary", "scan", "gather", "scatter"};

// ---- reference kernels with the slot signatures -------------------------------------------------
void reference_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  NoGradGuard g;
  Tensor o = out;
  o.copy_(cpu::reference::batched_matmul(a.contiguous(), b.contiguous()));
}
// Float sums through reference::sum_dim, dim by dim; everything else by the registered kernel.
void reference_reduce(kernels::ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  if (op != kernels::ReduceOp::Sum || !is_floating(in.dtype()) || in.dtype() != out.dtype() || in.numel() == 0)
    return WReduce::registered[0](op, in, dims, out);
  NoGradGuard g;
  Tensor r = in.contiguous();
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) r = cpu::reference::sum_dim(r, *it);
  Tensor o = out;
  o.copy_(r.reshape(out.sizes()));
}

// The broken unary kernels of broken_backend().
void unary_writes_nothing(kernels::UnaryOp, const Tensor&, const Tensor&, double, double) {}
void unary_off(kernels::UnaryOp op, const Tensor& a, const Tensor& out, double p0, double p1) {
  WUnary::registered[0](op, a, out, p0, p1);
  WUnary::registered[0](kernels::UnaryOp::AddScalar, out, out, 1e-3, 0);
}

}  // namespace

std::vector<std::string> kernel_slots() { return {kNames.begin(), kNames.end()}; }

Backend broken_backend(const std::string& which) { return {"selftest:" + which, Device::cpu(), {"unary"}}; }

struct BackendScope::State {
  std::set<std::string> called;
};

std::vector<Backend> cpu_backends() {
  return {{"cpu", Device::cpu(), {}},
          {"cpu:conv-im2col", Device::cpu(), {"conv2d_forward", "conv2d_forward_fused", "conv2d_backward_data", "conv2d_backward_weight", "conv2d_backward_weight_bias"}},
          {"cpu:conv-dnnl", Device::cpu(), {"conv2d_forward", "conv2d_forward_fused", "conv2d_backward_data", "conv2d_backward_weight", "conv2d_backward_weight_bias"}}};
}

Backend reference_backend() {
  return {"reference", Device::cpu(),
          {"batched_gemm", "reduce", "relu_backward", "activation_forward", "activation_backward", "linear_inference", "linear_backward_weights",
           "conv2d_forward", "conv2d_forward_fused", "conv2d_backward_data", "conv2d_backward_weight",
           "conv2d_backward_weight_bias", "max_pool2d_forward",
           "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward", "adaptive_avg_pool2d_forward",
           "adaptive_avg_pool2d_backward", "batch_norm_stats", "batch_norm_forward", "batch_norm_backward",
           "batch_norm_forward_act", "batch_norm_backward_act", "softmax_forward", "softmax_backward", "nll_loss_forward", "nll_loss_backward",
           "math_unary", "math_binary", "scan", "gather", "scatter"}};
}

Backend cuda_backend(std::string* why) {
  if (std::string reason = gpu_unavailable_reason(); !reason.empty()) {
    if (why) *why = reason;
    return {};
  }
  return {"cuda", Device::cuda(0), {}};
}

BackendScope::BackendScope(const Backend& b) : state_(std::make_unique<State>()) {
  ensure_backends();
  Everything::install(kNames);
  for (int t = 0; t < kNumDeviceTypes; ++t) g_raw_fill[t] = WFill::registered[t];
  g_called = &state_->called;
  g_sentinel = b.name == "reference" ? kReference : kUnderTest;
  namespace ref = cpu::reference;
  if (b.name == "reference") {
    // Slots without a reference kernel of their own (relu_backward, the linear fast paths) are
    // left empty: the front-ends then compose them from the kernels above, as a backend without them.
    WGemm::override_cpu(&reference_gemm);
    WReduce::override_cpu(&reference_reduce);
    WReluBackward::override_cpu(nullptr);
    WActF::override_cpu(&ref::activation_forward);
    WActB::override_cpu(&ref::activation_backward);
    WLinearInference::override_cpu(nullptr);
    WLinearBackwardWeights::override_cpu(nullptr);
    WLinearBackwardData::override_cpu(nullptr);
    WConvF::override_cpu(&ref::conv2d_forward);
    WConvFused::override_cpu(nullptr);  // conv2d_activation then runs the reference conv and activation
    WConvBD::override_cpu(&ref::conv2d_backward_data);
    WConvBW::override_cpu(&ref::conv2d_backward_weight);
    WConvBWB::override_cpu(nullptr);  // the reference weight gradient and a reference sum
    WMaxF::override_cpu(&ref::max_pool2d_forward);
    WMaxB::override_cpu(&ref::max_pool2d_backward);
    WAvgF::override_cpu(&ref::avg_pool2d_forward);
    WAvgB::override_cpu(&ref::avg_pool2d_backward);
    WAdaF::override_cpu(&ref::adaptive_avg_pool2d_forward);
    WAdaB::override_cpu(&ref::adaptive_avg_pool2d_backward);
    WBnS::override_cpu(&ref::batch_norm_stats);
    WBnF::override_cpu(&ref::batch_norm_forward);
    WBnB::override_cpu(&ref::batch_norm_backward);
    WBnFA::override_cpu(nullptr);  // batch_norm_activation then runs the reference batch norm and activation
    WBnBA::override_cpu(nullptr);
    WSmF::override_cpu(&ref::softmax_forward);
    WSmB::override_cpu(&ref::softmax_backward);
    WNllF::override_cpu(&ref::nll_loss_forward);
    WNllB::override_cpu(&ref::nll_loss_backward);
    WMathUnary::override_cpu(&ref::math_unary);
    WMathBinary::override_cpu(&ref::math_binary);
    WScan::override_cpu(&ref::scan);
    WGather::override_cpu(&ref::gather);
    WScatter::override_cpu(&ref::scatter);
  } else if (b.name == "selftest:unary-writes-nothing") {
    WUnary::override_cpu(&unary_writes_nothing);
  } else if (b.name == "selftest:unary-off-by-1e-3") {
    WUnary::override_cpu(&unary_off);
  } else if (b.name == "cpu:conv-im2col") {
    WConvF::override_cpu(&cpu::conv2d_forward_im2col);
    WConvFused::override_cpu(nullptr);
    WConvBD::override_cpu(&cpu::conv2d_backward_data_im2col);
    WConvBW::override_cpu(&cpu::conv2d_backward_weight_im2col);
    WConvBWB::override_cpu(nullptr);
  } else if (b.name == "cpu:conv-dnnl") {
    WConvF::override_cpu(&cpu::conv2d_forward_dnnl);
    WConvFused::override_cpu(&cpu::conv2d_forward_fused_dnnl);
    WConvBD::override_cpu(&cpu::conv2d_backward_data_dnnl);
    WConvBW::override_cpu(&cpu::conv2d_backward_weight_dnnl);
    WConvBWB::override_cpu(&cpu::conv2d_backward_weight_bias_dnnl);
  }
}

BackendScope::~BackendScope() {
  Everything::restore();
  g_called = nullptr;
  g_sentinel = kUnderTest;
}

const std::set<std::string>& BackendScope::kernels_called() const { return state_->called; }

}  // namespace ember::test::ops

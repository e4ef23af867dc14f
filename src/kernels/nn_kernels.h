// The kernel contract for the neural-network ops of ember::nn::functional (conv, pooling, batch
// norm, softmax, nll). Same pattern as kernels/kernels.h: front-ends (src/ops/nn_*.cpp) check the
// arguments, make inputs contiguous and allocate outputs; kernels only compute.
//
// Every kernel OVERWRITES its outputs (never accumulates) and receives contiguous tensors of one
// floating dtype (float32 or float64) on one device; index tensors are int64.
//
// Half precision: only the conv2d kernels. With Conv2dParams::compute == BFloat16 (set by the
// front-end under ember::autocast; Float16 too on CUDA, whose autocast also lowers to float16) their
// multiplicands (x, weight, grad_out) are rounded to the compute dtype — the weight may already
// arrive as a tensor of it, the others are float32 — and the products are summed in float32;
// outputs and gradients (bias included) are float32 (CUDA rounds cuDNN's result to half once
// before widening it, src/cuda/nn_conv.cpp). The
// reference kernels compute exactly that in float32 from the rounded values. Every other kernel
// here stays float32: softmax, losses and batch-norm statistics are unsafe in half (the autocast
// policy table says why), pooling runs on the float32 outputs.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  DType compute = DType::Float32;  // BFloat16 / Float16 (CUDA): multiply in half, accumulate and write float32
  // The output may be left in the backend's own layout (no autograd node keeps it); the CPU then
  // holds it in oneDNN's blocked layout until something reads its plain bytes (cpu/dnnl_form.h).
  bool out_any_layout = false;
  // Training (an autograd node keeps the output): the output, and backward the input gradient, may
  // be held in the backend's layout at float32 -- the plain tensor's values exactly -- for the
  // batch norm after it and the convolution before it to read as they are (cpu/nn_norm_held.cpp).
  bool keep_layout = false;
};
// The element-wise function a fused convolution applies to its output (after the bias): out =
// act(conv(x) + bias). The same formulas as ember::relu / relu6 / silu / hardswish.
enum class ConvEpilogue : uint8_t { None, Relu, Relu6, Silu, Hardswish };
struct Pool2dParams {
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  // avg only
};

// x (N, C_in, H, W), weight (C_out, C_in/groups, kH, kW), bias (C_out) or undefined,
// out (N, C_out, OH, OW).
using Conv2dForwardFn = void (*)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                 const Conv2dParams& p, const Tensor& out);
// grad_x (N, C_in, H, W) = d out / d x applied to grad_out (N, C_out, OH, OW).
using Conv2dBackwardDataFn = void (*)(const Tensor& grad_out, const Tensor& weight,
                                      const Conv2dParams& p, const Tensor& grad_x);
// grad_weight (C_out, C_in/groups, kH, kW), summed over the batch.
using Conv2dBackwardWeightFn = void (*)(const Tensor& grad_out, const Tensor& x,
                                        const Conv2dParams& p, const Tensor& grad_weight);
// Optional (the CPU fills it, oneDNN's backward-weights primitive with its bias): grad_weight as
// conv2d_backward_weight and grad_bias (C_out) = grad_out summed over N, OH, OW, in the one pass
// over grad_out the weight gradient makes anyway. Returns false, writing nothing, where it does not
// apply (ember::deterministic(), float64, a geometry without a primitive); the front-end then runs
// conv2d_backward_weight and a sum.
using Conv2dBackwardWeightBiasFn = bool (*)(const Tensor& grad_out, const Tensor& x, const Conv2dParams& p,
                                            const Tensor& grad_weight, const Tensor& grad_bias);

// Optional (the CPU fills it, through oneDNN post-ops): out = act(conv2d(x, weight, bias)) in one
// pass over the output, as conv2d_forward followed by the activation. Returns false, writing
// nothing, for a case it does not fuse (a geometry served by im2col, float64); the front-end then
// runs the two ops.
using Conv2dForwardFusedFn = bool (*)(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      const Conv2dParams& p, ConvEpilogue act, const Tensor& out);

// Optional (the CPU fills it): the output gradient a fused ReLU / ReLU6 convolution's backward
// hands to its bfloat16 primitives, made in one pass -- grad_out masked by the activation from its
// output (0 < out, and out < 6 for ReLU6: ReluBackward's mask) and rounded to bf16 as those
// primitives would round it, grad_x (a fresh float32 tensor of out's shape) then holding the
// rounded values in the layout they read. Returns false, writing nothing, where it does not apply
// (out not held in bf16, ember::deterministic(), a convolution whose backward reads the float32
// gradient: the CPU's depthwise input gradient); the front-end then masks in float32 and the
// primitives convert.
using ConvActivationGradBf16Fn = bool (*)(ConvEpilogue act, const Tensor& grad_out, const Tensor& out,
                                          const Conv2dParams& p, const Tensor& grad_x);

// x (N, C, H, W) -> out (N, C, OH, OW); indices (int64, out's shape) hold the flat h*W+w position
// of each maximum inside its (n, c) plane (the first one on ties). Padding counts as -inf.
// The CPU kernel takes undefined indices (no backward will need them): values only, and out may
// then be left in oneDNN's blocked layout when x is held in it (cpu/dnnl_form.h).
using MaxPool2dForwardFn = void (*)(const Tensor& x, const Pool2dParams& p, const Tensor& out,
                                    const Tensor& indices);
// grad_x (N, C, H, W): grad_out scattered (added) to the recorded positions, zeros elsewhere.
using MaxPool2dBackwardFn = void (*)(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x);
// Optional (the CPU fills them): training's 2x2 / stride-2 max pooling that keeps its input
// instead of indices. The forward returns false, writing nothing, where it does not apply (the
// CPU: x not held in a convolution's channel-blocked layout); otherwise out has the values and the
// backward receives x (the same tensor, unmodified) and leaves grad_x as max_pool2d_backward's
// values -- the CPU lazily, for the consumer to write in the layout it reads (cpu/pool_grad.h).
using MaxPool2dForwardKeepInputFn = bool (*)(const Tensor& x, const Pool2dParams& p, const Tensor& out);
using MaxPool2dBackwardFromInputFn = void (*)(const Tensor& grad_out, const Tensor& x, const Pool2dParams& p,
                                              const Tensor& grad_x);
// Average over each window as PyTorch: the window may extend into the padding and (ceil_mode)
// past it; the divisor counts the padding when count_include_pad, never the part past it.
using AvgPool2dForwardFn = void (*)(const Tensor& x, const Pool2dParams& p, const Tensor& out);
using AvgPool2dBackwardFn = void (*)(const Tensor& grad_out, const Pool2dParams& p, const Tensor& grad_x);
// Window i of n over a length L: [floor(i*L/n), ceil((i+1)*L/n)).
using AdaptiveAvgPool2dForwardFn = void (*)(const Tensor& x, const Tensor& out);
using AdaptiveAvgPool2dBackwardFn = void (*)(const Tensor& grad_out, const Tensor& grad_x);

// x (N, C, S) -> mean (C), var (C) biased (divided by N*S).
using BatchNormStatsFn = void (*)(const Tensor& x, const Tensor& mean, const Tensor& var);
// out = (x - mean[c]) * invstd[c] * weight[c] + bias[c]; all of mean, invstd, weight, bias are (C).
using BatchNormForwardFn = void (*)(const Tensor& x, const Tensor& mean, const Tensor& invstd,
                                    const Tensor& weight, const Tensor& bias, const Tensor& out);
// Gradients of the above. training: mean/invstd are the batch statistics of x, so they depend on
// x too; eval: they are constants. grad_weight = sum(g * x_hat), grad_bias = sum(g), both (C).
using BatchNormBackwardFn = void (*)(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                     const Tensor& invstd, const Tensor& weight, bool training,
                                     const Tensor& grad_x, const Tensor& grad_weight,
                                     const Tensor& grad_bias);
// Batch norm followed by ReLU or ReLU6 (act Relu / Relu6 only) in one pass, a residual added
// before the activation where `residual` is defined (x's shape, contiguous): out = act(the forward
// above [+ residual]), the values of the separate ops (the batch norm's value rounded before the
// add). Optional slots: the front-end composes the ops where a backend has none.
using BatchNormForwardActFn = void (*)(const Tensor& x, const Tensor& mean, const Tensor& invstd,
                                       const Tensor& weight, const Tensor& bias, const Tensor& residual,
                                       ConvEpilogue act, const Tensor& out);
// Its gradients: grad_out masked by the activation (0 < t, and t < 6 for ReLU6, t its input) inside
// the batch-norm passes, the values of the activation's backward followed by BatchNormBackwardFn's;
// grad_residual (with a residual) receives the masked grad_out. The backend may recompute t from x
// (and the residual), as the CPU does, so the output need not be kept.
using BatchNormBackwardActFn = void (*)(const Tensor& grad_out, const Tensor& x, const Tensor& residual,
                                        const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                        const Tensor& bias, bool training, ConvEpilogue act,
                                        const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                        const Tensor& grad_residual);

// softmax (or log_softmax when `log`) of x along `dim`; out has x's shape.
using SoftmaxForwardFn = void (*)(const Tensor& x, int64_t dim, bool log, const Tensor& out);
// grad_x from grad_out and the forward output `out`.
using SoftmaxBackwardFn = void (*)(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log,
                                   const Tensor& grad_x);

// log_probs (N, C), target (N) int64 with every value in [0, C) or == ignore_index (checked by the
// front-end); out (N): -log_probs[i, target[i]], 0 where ignored.
using NllLossForwardFn = void (*)(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                                  const Tensor& out);
// grad_log_probs (N, C): -grad_out[i] at (i, target[i]), 0 elsewhere and on ignored rows.
using NllLossBackwardFn = void (*)(const Tensor& grad_out, const Tensor& target, int64_t ignore_index,
                                   const Tensor& grad_log_probs);

inline KernelSlot<Conv2dForwardFn> conv2d_forward("conv2d_forward");
inline KernelSlot<Conv2dForwardFusedFn> conv2d_forward_fused("conv2d_forward_fused");
inline KernelSlot<Conv2dBackwardDataFn> conv2d_backward_data("conv2d_backward_data");
inline KernelSlot<Conv2dBackwardWeightFn> conv2d_backward_weight("conv2d_backward_weight");
inline KernelSlot<Conv2dBackwardWeightBiasFn> conv2d_backward_weight_bias("conv2d_backward_weight_bias");
inline KernelSlot<ConvActivationGradBf16Fn> conv_activation_grad_bf16("conv_activation_grad_bf16");
inline KernelSlot<MaxPool2dForwardFn> max_pool2d_forward("max_pool2d_forward");
inline KernelSlot<MaxPool2dBackwardFn> max_pool2d_backward("max_pool2d_backward");
inline KernelSlot<MaxPool2dForwardKeepInputFn> max_pool2d_forward_keep_input("max_pool2d_forward_keep_input");
inline KernelSlot<MaxPool2dBackwardFromInputFn> max_pool2d_backward_from_input("max_pool2d_backward_from_input");
inline KernelSlot<AvgPool2dForwardFn> avg_pool2d_forward("avg_pool2d_forward");
inline KernelSlot<AvgPool2dBackwardFn> avg_pool2d_backward("avg_pool2d_backward");
inline KernelSlot<AdaptiveAvgPool2dForwardFn> adaptive_avg_pool2d_forward("adaptive_avg_pool2d_forward");
inline KernelSlot<AdaptiveAvgPool2dBackwardFn> adaptive_avg_pool2d_backward("adaptive_avg_pool2d_backward");
inline KernelSlot<BatchNormStatsFn> batch_norm_stats("batch_norm_stats");
inline KernelSlot<BatchNormForwardFn> batch_norm_forward("batch_norm_forward");
inline KernelSlot<BatchNormBackwardFn> batch_norm_backward("batch_norm_backward");
inline KernelSlot<BatchNormForwardActFn> batch_norm_forward_act("batch_norm_forward_act");
inline KernelSlot<BatchNormBackwardActFn> batch_norm_backward_act("batch_norm_backward_act");
inline KernelSlot<SoftmaxForwardFn> softmax_forward("softmax_forward");
inline KernelSlot<SoftmaxBackwardFn> softmax_backward("softmax_backward");
inline KernelSlot<NllLossForwardFn> nll_loss_forward("nll_loss_forward");
inline KernelSlot<NllLossBackwardFn> nll_loss_backward("nll_loss_backward");

// The (outer, D, inner) split of a contiguous tensor around `dim`, as the softmax kernels of
// every backend walk it.
struct DimSplit {
  int64_t outer = 1, d = 1, inner = 1;
};
inline DimSplit split_at(const Tensor& t, int64_t dim) {
  DimSplit s;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i < dim) s.outer *= t.size(i);
    else if (i == dim) s.d = t.size(i);
    else s.inner *= t.size(i);
  }
  return s;
}

}  // namespace ember::kernels

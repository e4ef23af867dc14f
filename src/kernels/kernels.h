// The kernel contract between op front-ends (src/ops) and backends (src/cpu, src/cuda): one slot
// per kernel in the dispatch table. Front-ends have already checked arguments, broadcast inputs to
// the output shape (stride-0 views) and allocated outputs; kernels only compute. Same device for all.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min, Eq, Ne, Lt, Le, Gt, Ge };
inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }
enum class UnaryOp : uint8_t {
  Neg, Exp, Log, Sqrt, Rsqrt, Abs, Relu, Gelu, Sigmoid, Tanh, Sign,
  PowScalar,   // x ^ p0
  Clamp,       // clamp(x, p0, p1); use +-inf for a missing side
  AddScalar,   // x + p0
  MulScalar,   // x * p0
  ReluGrad,    // (x > 0) ? 1 : 0   (x is the forward input)
  GeluGrad,    // d gelu / dx
  Reciprocal,  // 1 / x
};
enum class ReduceOp : uint8_t { Sum, Max, Min, ArgMax, ArgMin };
enum class RandomDist : uint8_t { Uniform, Normal, RandInt, Bernoulli };

// out = a (op) (alpha * b) for Add/Sub; a (op) b otherwise. a, b, out have out's shape; a and b
// have the same dtype; out is Bool for comparisons.
using BinaryFn = void (*)(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, double alpha);
using UnaryFn = void (*)(UnaryOp op, const Tensor& a, const Tensor& out, double p0, double p1);
using FillFn = void (*)(const Tensor& dst, double value);
using WhereFn = void (*)(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// Reduces `in` over the sorted `dims`; out has in's rank with those dims of size 1.
using ReduceFn = void (*)(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out);
// out[b] = a[b] @ b[b] for 3-D tensors (B, M, K) x (B, K, N) -> (B, M, N). Inputs may be
// transposed views in their last two dims (either unit stride); out is contiguous.
using BatchedGemmFn = void (*)(const Tensor& a, const Tensor& b, const Tensor& out);
// Fills `out` from the Philox stream at (seed, offset); p0/p1: (low, high), (mean, std), (low, high), (p, -).
using RandomFn = void (*)(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double p0, double p1);
// Dropout in one pass each way, float32, contiguous x / out / grad tensors of one numel n. Forward:
// out = x * (kept ? scale : 0) where element i is kept when the Bernoulli(keep) draw of
// random(Bernoulli, ..., seed, offset, keep, scale) at i keeps it -- the same products as that fill
// followed by mul -- and bit i % 8 of bits[i / 8] records it (bits: UInt8, ceil(n / 64) * 8 bytes).
// Backward: grad_x = grad_out * (bit ? scale : 0). A backend may leave both empty (dropout then
// fills a float32 mask and multiplies).
using DropoutForwardFn = void (*)(const Tensor& x, const Tensor& out, const Tensor& bits, uint64_t seed,
                                  uint64_t offset, double keep, double scale);
using DropoutBackwardFn = void (*)(const Tensor& grad_out, const Tensor& bits, double scale, const Tensor& grad_x);

// ReLU's backward from its forward output: grad_x = out > 0 ? grad_out : 0 (0, not NaN, where
// out <= 0 or is NaN, as PyTorch's threshold_backward). out and grad_x are contiguous, of one
// floating dtype and out's shape; grad_out has that dtype and shape, any strides (broadcast views
// included). One pass instead of ReluGrad + mul; a backend may leave it empty (the front-end then
// composes those two kernels).
using ReluBackwardFn = void (*)(const Tensor& grad_out, const Tensor& out, const Tensor& grad_x);
// The activations of MobileNet V2/V3 and EfficientNet (definitions, and their derivatives at the
// kinks, in ember/ops.h), float32 and float64. Forward: out = f(x), x any strides of out's shape,
// out contiguous. Backward, one pass: grad_x = grad_out * f'(x) from the forward input x; x and
// grad_x contiguous, grad_out of their dtype and shape, any strides (broadcast views included).
// Both overwrite their output. Reference: cpu/reference/activation.cpp.
enum class Activation : uint8_t { Relu6, Hardsigmoid, Hardswish, Silu };
using ActivationForwardFn = void (*)(Activation f, const Tensor& x, const Tensor& out);
using ActivationBackwardFn = void (*)(Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x);
// linear without autograd: out (N, O) = x (N, I) @ w (O, I)^T + b (b may be undefined). Returns
// false, writing nothing, when it does not handle the case (dtype, layout); the front-end then
// uses batched_gemm. Optional: the CPU fills it (oneDNN, weights kept packed between calls).
//
// Half precision (the three linear slots): x and w may be bfloat16 (autocast casts them; float16
// too on CUDA), b, out and every gradient are float32; products are summed in float32 (CPU: oneDNN,
// CUDA: cuBLAS on the tensor cores, src/cuda/linear_half.cpp). bfloat16 is also why the
// forward slot serves training under autocast (the weight is cast once per step anyway). A
// backend that returns false for bfloat16 makes the front-end compute the same thing in float32
// from the bfloat16-rounded inputs (the reference).
// x float32 with w bfloat16 is allowed when x's storage holds a backend form (core/storage.h): the
// CPU then reads a flattened activation held in bfloat16 where it is (cpu/dnnl_form.h) and returns
// false for anything else, so the front-end casts x as usual.
using LinearInferenceFn = bool (*)(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out);
// linear's forward while autograd records (training): the same contract as linear_inference, x and
// w both bfloat16 (autocast) or both float32, but the weight changes every step (a new cast, or the
// optimizer's update) and is used once, so a backend should not pack and cache it. Optional; false
// sends the front-end to linear_inference (bfloat16) or batched_gemm and a bias add (float32).
using LinearForwardTrainingFn = LinearInferenceFn;
// linear's weight (and bias) gradient: grad_w (O, I) = grad_out (N, O)^T @ x (N, I), and
// grad_b (O) = sum over N of grad_out when grad_b is defined. Returns false, writing nothing, when it
// does not handle the case; the front-end then uses batched_gemm and a sum. Optional (CPU: oneDNN).
using LinearBackwardWeightsFn = bool (*)(const Tensor& grad_out, const Tensor& x, const Tensor& grad_w,
                                         const Tensor& grad_b);
// linear's input gradient: grad_x (N, I) = grad_out (N, O) @ w (O, I), grad_out and grad_x float32,
// w bfloat16 or float32. Returns false when it does not handle the case (grad_x is then written by
// batched_gemm). Optional (CPU: oneDNN).
using LinearBackwardDataFn = bool (*)(const Tensor& grad_out, const Tensor& w, const Tensor& grad_x);

// copy and device_copy, the data-movement slots, are declared with the table (core/dispatch.h):
// core's own copies (core/tensor_raw.h) go through them.
inline KernelSlot<BinaryFn> binary("binary");
inline KernelSlot<UnaryFn> unary("unary");
inline KernelSlot<FillFn> fill("fill");
inline KernelSlot<WhereFn> where("where");
inline KernelSlot<ReduceFn> reduce("reduce");
inline KernelSlot<BatchedGemmFn> batched_gemm("batched_gemm");
inline KernelSlot<RandomFn> random("random");
inline KernelSlot<DropoutForwardFn> dropout_forward("dropout_forward");
inline KernelSlot<DropoutBackwardFn> dropout_backward("dropout_backward");
inline KernelSlot<ReluBackwardFn> relu_backward("relu_backward");
inline KernelSlot<ActivationForwardFn> activation_forward("activation_forward");
inline KernelSlot<ActivationBackwardFn> activation_backward("activation_backward");
inline KernelSlot<LinearInferenceFn> linear_inference("linear_inference");
inline KernelSlot<LinearForwardTrainingFn> linear_forward_training("linear_forward_training");
inline KernelSlot<LinearBackwardWeightsFn> linear_backward_weights("linear_backward_weights");
inline KernelSlot<LinearBackwardDataFn> linear_backward_data("linear_backward_data");

}  // namespace ember::kernels

// Op front-ends: each checks its arguments (shapes, dtypes, devices), infers the output shape,
// allocates, dispatches to the kernel of the tensors' device and records autograd history.
// Shapes are written as (N, C, H, W). Ops never mix devices: they throw DeviceError naming both.
// The rest of torch.nn.functional (more activations, norms, losses, resampling) is ember/ops_nn.h.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/core/tensor.h"

namespace ember {

// ---- elementwise, broadcasting (NumPy rules) ----------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a);  // exact (erf) form, as PyTorch's default
Tensor sigmoid(const Tensor& a);
// MobileNet / EfficientNet activations, float32 and float64, any shape; not in place. Forward and
// backward as PyTorch 1.13's CPU kernels (its vectorised loop, which serves all but a tensor's tail),
// kinks included; NaN propagates forward.
//   relu6(x)       = min(max(x, 0), 6);    d/dx = 1 for 0 < x < 6, else 0 (0 at x = 0 and x = 6)
//   hardsigmoid(x) = relu6(x + 3) / 6;     d/dx = 1/6 for -3 < x < 3, else 0
//   hardswish(x)   = x * relu6(x + 3) / 6; d/dx = 0 for x < -3, 1 for x >= 3, (2x + 3) / 6 between
//                                          (-0.5 at x = -3; PyTorch's scalar tail and CUDA give 1.5 at 3)
//   silu(x)        = x * sigmoid(x);       d/dx = s * (1 + x * (1 - s)), s = sigmoid(x)
Tensor relu6(const Tensor& a);
Tensor hardsigmoid(const Tensor& a);
Tensor hardswish(const Tensor& a);
Tensor silu(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max);
Tensor sign(const Tensor& a);
// Comparisons return Bool tensors and are not differentiable.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions over dims (empty dims = all) -------------------------------------------------
Tensor sum(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor var(const Tensor& a, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& a, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);  // int64
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim = false);
// Sums `grad` down to `shape` (undoes broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

// ---- linear algebra --------------------------------------------------------------------------
// matmul: 1-D/2-D/batched with broadcasting batch dims, as torch.matmul.
Tensor matmul(const Tensor& a, const Tensor& b);
// linear: x (*, in) @ weight (out, in)^T + bias (out)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- shape ops -------------------------------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
// pad: (left, right) pairs starting from the last dim, as F.pad; mode "constant" | "reflect"
Tensor pad(const Tensor& a, std::vector<int64_t> pads, double value = 0.0);
Tensor one_hot(const Tensor& labels, int64_t num_classes);  // int64 labels -> int64 (..., C)

// ---- random (Philox; see generator.h for the stream layout) ----------------------------------
Tensor rand(Shape shape, TensorOptions opt = {}, Generator* gen = nullptr);    // U[0,1)
Tensor randn(Shape shape, TensorOptions opt = {}, Generator* gen = nullptr);   // N(0,1)
Tensor randint(int64_t low, int64_t high, Shape shape, TensorOptions opt = {.dtype = DType::Int64},
               Generator* gen = nullptr);
Tensor& uniform_(Tensor& t, double low, double high, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen = nullptr);
Tensor randperm(int64_t n, Generator* gen = nullptr);  // int64, Fisher–Yates on Philox draws

// ---- neural-network ops ----------------------------------------------------------------------
namespace nn::functional {
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};
// x (N, C_in, H, W), weight (C_out, C_in/groups, kH, kW), bias (C_out) or undefined
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Conv2dOptions opt = {});
// act(conv2d(x, weight, bias)): the values and gradients of the two ops, run as one where the
// backend fuses the activation into the convolution's output pass (the CPU, through oneDNN
// post-ops: one write of the output instead of a write, a read and a write). ReLU and ReLU6 fuse
// in training too (the backward takes the mask from the output); SiLU and Hardswish fuse without
// autograd (inference) and run as the two ops when gradients are recorded. ReLU and ReLU6 give
// the unfused values exactly; SiLU and Hardswish come from oneDNN's formulas, within a few float32
// ulps of ember::silu / hardswish (tests/unit/test_conv_fusion.cpp).
enum class ConvActivation : uint8_t { None, Relu, Relu6, Silu, Hardswish };
// act(y) by the op of that name (None: y itself).
Tensor apply_activation(ConvActivation act, const Tensor& y);
Tensor conv2d_activation(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dOptions opt,
                         ConvActivation act);
struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2}, stride{0, 0} /* 0: = kernel */, padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg only
};
Tensor max_pool2d(const Tensor& x, Pool2dOptions opt);
Tensor avg_pool2d(const Tensor& x, Pool2dOptions opt);
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);
// training: normalises with batch statistics and updates running_mean/var in place (momentum as
// PyTorch: running = (1 - momentum) * running + momentum * batch, unbiased var for the update).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
// act(batch_norm(...)): ReLU and ReLU6 in the batch norm's own passes where the backend has them
// (the CPU: one pass over the output fewer forward and backward), the same values as the two
// ops; the other activations as the two ops.
Tensor batch_norm_activation(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                             ConvActivation act);
// act(batch_norm(...) + residual): a residual block's tail. ReLU and ReLU6 with a residual of x's
// shape and dtype run in the batch norm's passes where the backend has them (the CPU), the values
// of the three ops (the batch norm rounded before the add); otherwise the three ops.
Tensor batch_norm_add_activation(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                 const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                                 const Tensor& residual, ConvActivation act);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);
// torchvision.ops.stochastic_depth: in training, mode "row" keeps each sample of x (N, ...) with
// probability 1 - p (one Bernoulli draw per sample from the Philox stream, as dropout) and scales the
// kept ones by 1 / (1 - p); mode "batch" keeps or drops the whole batch with one draw. The identity
// when not training or p == 0; zeros (and zero gradient) when p == 1.
Tensor stochastic_depth(const Tensor& x, double p, const std::string& mode, bool training,
                        Generator* gen = nullptr);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// BatchMean ("batchmean") is kl_div's alone; the other losses refuse it (ValueError).
enum class Reduction { Mean, Sum, None, BatchMean };
struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  // A rescaling weight per class (C), or undefined. Not differentiated.
  Tensor weight{};
};
// logits (N, C), (N, C, d1, ...) or unbatched (C); target int64 class indices (N), (N, d1, ...) or
// () — or, for cross_entropy, class probabilities of the logits' shape (float). As PyTorch: a mean
// over class indices divides by the summed weights of the targets that are not ignore_index (their
// count without a weight; 0/0 = NaN when all are ignored), a mean over probabilities by the number
// of samples; label smoothing mixes eps / C of every class into the target, weight included.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, CrossEntropyOptions opt = {});
// log_probs as cross_entropy's logits (label_smoothing must be 0); int64 class targets only.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, CrossEntropyOptions opt = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
}  // namespace nn::functional

// Threads used by CPU kernels (OpenMP). Default: the cores this process may use.
void set_num_threads(int n);
int get_num_threads();

}  // namespace ember

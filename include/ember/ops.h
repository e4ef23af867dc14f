// Op front-ends: each checks its arguments (shapes, dtypes, devices), infers the output shape,
// allocates, dispatches to the kernel of the tensors' device and records autograd history.
// Shapes are written as (N, C, H, W). Ops never mix devices: they throw DeviceError naming both.
// The rest of torch.nn.functional (more activations, norms, losses, resampling) is ember/ops_nn.h.
#pragma once

#include <array>
#include <functional>
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

// ---- element-wise math (src/ops/math.cpp) ------------------------------------------------------
// PyTorch's result dtypes: sin, cos, log1p, expm1 and reciprocal of an integer or bool tensor are
// float32; floor, ceil, trunc and round of an integer tensor are a copy (bool: DTypeError). Not in
// place. Gradients: sin, cos, log1p, expm1, reciprocal as calculus; floor, ceil, trunc, round give
// zero (PyTorch's); floor_divide records none (PyTorch's backward is not implemented).
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor log1p(const Tensor& a);
Tensor expm1(const Tensor& a);
Tensor reciprocal(const Tensor& a);
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
Tensor trunc(const Tensor& a);
// Half to even; decimals as torch.round: x * 10^d rounded, then / 10^d (d < 0: / 10^-d, * 10^-d).
Tensor round(const Tensor& a, int64_t decimals = 0);
// Python's a // b and a % b (the quotient rounded towards -inf; the remainder has the divisor's
// sign), broadcasting and promoting as add. Bool: DTypeError; an integer divisor 0: ValueError
// (one host read for integer tensors); a float divisor 0 gives inf / nan. remainder's gradient:
// g for a, -g * floor(a / b) for b.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
// start + weight * (end - start), PyTorch's two-sided formula (exact at both ends); floating
// tensors of one dtype (weight's too), broadcasting.
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor lerp(const Tensor& start, const Tensor& end, double weight);
// Integer and bool tensors (promoted as add); floats are a DTypeError. Not differentiable.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_not(const Tensor& a);  // bool: logical not
Tensor logical_not(const Tensor& a);  // any dtype -> Bool
// Bool results; integer and bool tensors are never NaN or infinite.
Tensor isnan(const Tensor& a);
Tensor isinf(const Tensor& a);
Tensor isfinite(const Tensor& a);
Tensor operator%(const Tensor& a, const Tensor& b);  // remainder
Tensor operator&(const Tensor& a, const Tensor& b);  // bitwise_and
Tensor operator|(const Tensor& a, const Tensor& b);  // bitwise_or
Tensor operator^(const Tensor& a, const Tensor& b);  // bitwise_xor
Tensor operator~(const Tensor& a);                   // bitwise_not

// ---- more reductions and scans (src/ops/reduce_scan.cpp) -----------------------------------------
// Integer and bool inputs give int64 (prod, cumsum, cumprod, count_nonzero), as PyTorch. cumsum's
// gradient is the reverse cumsum; cumprod's and prod's are exact with zeros in the input.
Tensor cumsum(const Tensor& a, int64_t dim);
Tensor cumprod(const Tensor& a, int64_t dim);
Tensor prod(const Tensor& a);  // every element, 0-d
Tensor prod(const Tensor& a, int64_t dim, bool keepdim = false);
// Bool results (uint8 for a uint8 input, as PyTorch); empty dims = every dim. Not differentiable.
Tensor all(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor any(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& a, std::vector<int64_t> dims = {});
// log(sum(exp(a))) over dims, shifted by the max so it never overflows; integer inputs give
// float32. Empty dims = every dim.
Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
// The vector p-norm over dims (empty = every dim) of a floating tensor: p = 2, 1, 0 (the count of
// non-zeros), inf (max |x|), -inf (min |x|), any other p (sum |x|^p)^(1/p); "fro" is p = 2 over at
// most two dims ("nuc": NotImplementedError). Gradients as PyTorch's norm_backward (zero where the
// norm is zero; inf norms share the gradient among the tied maxima).
Tensor norm(const Tensor& a, double p = 2.0, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor norm(const Tensor& a, const std::string& p, std::vector<int64_t> dims = {}, bool keepdim = false);
// torch.max(x, dim) / torch.min(x, dim): the values and their int64 indices (the first index among
// ties, the first NaN where there is one, as PyTorch on the CPU). The gradient flows to that index
// only. A reduced dim of size 0 is an IndexError.
ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& a);  // amax over every dim (ties share the gradient)
Tensor min(const Tensor& a);

// ---- rearranging shape ops (src/ops/rearrange.cpp) -------------------------------------------------
// Composed from views, cat and index_select: differentiable, on every device. repeat, tril, triu,
// flip and roll return new tensors; split, split_with_sizes, chunk, unflatten, squeeze, unsqueeze and
// movedim return views where a view can express them.
Tensor repeat(const Tensor& a, const Shape& repeats);  // torch.Tensor.repeat (tiles; repeats.size() >= a.dim())
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);  // the last piece may be shorter
std::vector<Tensor> split_with_sizes(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);  // pieces of ceil(n / chunks)
Tensor unflatten(const Tensor& a, int64_t dim, const Shape& sizes);  // one size may be -1
Tensor squeeze(const Tensor& a);                                     // every dim of size 1
Tensor squeeze(const Tensor& a, const std::vector<int64_t>& dims);   // those of dims that have size 1
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor movedim(const Tensor& a, const std::vector<int64_t>& source, const std::vector<int64_t>& destination);
Tensor movedim(const Tensor& a, int64_t source, int64_t destination);
// The last two dims' lower / upper triangle (col - row <= diagonal / >= diagonal), the rest zeroed.
Tensor tril(const Tensor& a, int64_t diagonal = 0);
Tensor triu(const Tensor& a, int64_t diagonal = 0);
Tensor flip(const Tensor& a, const std::vector<int64_t>& dims);
// Rolls by shifts[i] along dims[i]; without dims, one shift rolls the flattened tensor.
Tensor roll(const Tensor& a, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims = {});

// ---- indexing (src/ops/index.cpp) ----------------------------------------------------------------
// Indices are int64 (int32 accepted); an index out of range is an IndexError naming it, the dim and
// the size (checked with one host read per index tensor). Gradients pair up: gather's is a
// scatter_add, index_select's an index_add, index's an index_put with accumulate.
//   gather:  out[i][j][k] = a[index[i][j][k]][j][k] (dim 0); index has a's rank, sizes <= a's but in dim.
//   scatter: a copy of a with out[index[i][j][k]][j][k] = src[i][j][k] (dim 0); index's sizes <= src's
//            and <= a's but in dim; src of a's dtype. Indices written twice keep one of the writes.
//   scatter_add: the same with +=, every write summed (bool: or, as PyTorch's).
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, double value);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce);  // "add"
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
// The slices of a along dim at the (1-D or 0-d) index; index_add adds alpha * source's slices at
// them (source: a's shape with index.numel() along dim; repeated indices add up).
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1.0);
// where(mask, value, a): mask Bool, broadcast with a; a value tensor must be 0-d (cast to a's dtype,
// differentiable).
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value);
Tensor masked_select(const Tensor& a, const Tensor& mask);  // 1-D, row-major order of the broadcast shape
Tensor nonzero(const Tensor& a);  // (count, a.dim()) int64 coordinates, row-major; one host read
// Python's advanced indexing, t[i0, i1, ...]: one entry per leading dim, an undefined Tensor for a
// full slice (:), an int64 / int32 index tensor (negative counts from the end), or a bool / uint8 mask
// covering as many dims as it has. Index tensors broadcast together to B; consecutive indexed dims
// are replaced by B in place, otherwise B leads (NumPy's rule). Always a copy.
Tensor index(const Tensor& a, const std::vector<Tensor>& indices);
// t[i0, i1, ...] = values (accumulate: +=, repeated positions summed) on a copy of a: values of a's
// dtype, broadcastable to the shape index() would return. Differentiable in a and values.
Tensor index_put(const Tensor& a, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

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

// In place on a tensor that requires grad while grad mode is on, as PyTorch allows it for a non-leaf:
// `out_of_place(value)`, given a differentiable copy of self, computes the new values (same shape;
// cast to self's dtype); they are written into self's memory and self takes their history, so
// backward differentiates through the change. AutogradError with PyTorch's words for a leaf ("a leaf
// Variable that requires grad is being used in an in-place operation."), and for a tensor whose
// memory another tensor shares (a view, its base, a tensor saved for backward): ember keeps no link
// between views to rewrite their histories, so it refuses rather than give wrong gradients.
Tensor& in_place_with_history(Tensor& self, const std::function<Tensor(const Tensor& value)>& out_of_place,
                              const char* op);

// Threads used by CPU kernels (OpenMP). Default: the cores this process may use.
void set_num_threads(int n);
int get_num_threads();

}  // namespace ember

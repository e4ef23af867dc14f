// torch.nn.functional beyond ember/ops.h's core set: activations, normalisation, embedding, 1-D and
// transposed convolutions, 1-D pooling, channel dropout, resampling, padding modes, distances, and
// the losses with PyTorch's options. Signatures, defaults and semantics are PyTorch 2.x's (the
// Python package binds these one to one); each op is differentiable in its floating inputs, float32
// and float64, on every device (most are compositions of ember's ops; see each comment).
// ember/ember.h includes it; shapes written as (N, C, H, W).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/core/tensor.h"
#include "ember/ops.h"

namespace ember::nn::functional {

// PyTorch's reduction strings: "none", "mean", "sum", and "batchmean" (which only kl_div accepts).
// ValueError naming the string otherwise.
Reduction reduction_from_string(const std::string& reduction);
const char* reduction_name(Reduction reduction);

// ---- activations (element-wise, any shape, not in place) ----------------------------------------
// Gradients at the kinks are PyTorch's: leaky_relu and elu take the negative side's slope at 0,
// hardtanh passes no gradient at min_val and max_val, softplus is linear where beta * x > threshold.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);  // x > 0 ? x : alpha * (exp(x) - 1)
// selu(x) = scale * elu(x, alpha), alpha = 1.6732632423543772, scale = 1.0507009873554805
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1.0);  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
// approximate: "none" (the erf form, = ember::gelu) or "tanh" (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
// No default here: ember::gelu(x) is the one-argument form.
Tensor gelu(const Tensor& x, const std::string& approximate);
// log(1 + exp(beta x)) / beta; x itself where beta * x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor logsigmoid(const Tensor& x);  // log(sigmoid(x)), stable for large |x|
Tensor mish(const Tensor& x);        // x * tanh(softplus(x))
Tensor softsign(const Tensor& x);    // x / (1 + |x|)
// glu(x, dim) = a * sigmoid(b) with (a, b) the two halves of x along dim (its size must be even).
Tensor glu(const Tensor& x, int64_t dim = -1);
// prelu(x, weight) = x > 0 ? x : weight * x; weight has 1 or C = x.size(1) values (one per channel).
Tensor prelu(const Tensor& x, const Tensor& weight);

// ---- normalisation -------------------------------------------------------------------------------
// Normalises over the trailing dims named by normalized_shape (which must equal x's last dims):
// (x - mean) / sqrt(var + eps) * weight + bias, var biased; weight and bias of normalized_shape or
// undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// x (N, C, *): C split into num_groups groups, each normalised over its channels and *;
// weight and bias (C) or undefined.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// x / max(||x||_p along dim, eps)
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// ---- embedding -------------------------------------------------------------------------------------
// weight (V, D), int64 indices of any shape -> (*indices.shape, D). Indices out of [0, V) throw
// IndexError (CPU tensors; checked where they live). padding_idx (negative counts from V): that
// row is looked up as usual but receives no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// ---- convolutions --------------------------------------------------------------------------------
// conv2d with PyTorch's string padding: "same" (stride 1; an odd total padding puts the extra
// element on the right / bottom, as PyTorch pads) or "valid" (none). x (N, C_in, H, W). A name of
// its own: an overload of conv2d would make conv2d(x, w, b, {}) ambiguous.
Tensor conv2d_padding(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::string& padding,
                      std::array<int64_t, 2> stride = {1, 1}, std::array<int64_t, 2> dilation = {1, 1},
                      int64_t groups = 1);
struct Conv1dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
};
// x (N, C_in, L) or unbatched (C_in, L), weight (C_out, C_in/groups, K), bias (C_out) or undefined;
// conv2d on (N, C_in, 1, L).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Conv1dOptions opt = {});
Tensor conv1d_padding(const Tensor& x, const Tensor& weight, const Tensor& bias, const std::string& padding,
                      int64_t stride = 1, int64_t dilation = 1, int64_t groups = 1);
struct ConvTranspose2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, output_padding{0, 0};
  int64_t groups = 1;
  std::array<int64_t, 2> dilation{1, 1};
};
// The adjoint of conv2d (PyTorch's conv_transpose2d, argument order as PyTorch's):
// x (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out/groups, kH, kW), bias (C_out) or undefined
// -> (N, C_out, OH, OW), OH = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1.
// output_padding must be smaller than stride or dilation. Runs on conv2d's input-gradient kernels
// (cuDNN on CUDA); its gradients are conv2d and conv2d's weight gradient.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ConvTranspose2dOptions opt = {});
struct ConvTranspose1dOptions {
  int64_t stride = 1, padding = 0, output_padding = 0, groups = 1, dilation = 1;
};
// x (N, C_in, L) or (C_in, L), weight (C_in, C_out/groups, K): conv_transpose2d with H = 1.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, ConvTranspose1dOptions opt = {});

// ---- 1-D pooling (pool2d with H = 1): x (N, C, L) or (C, L) ------------------------------------------
struct Pool1dOptions {
  int64_t kernel = 2, stride = 0 /* 0: = kernel */, padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg only
};
Tensor max_pool1d(const Tensor& x, Pool1dOptions opt);
Tensor avg_pool1d(const Tensor& x, Pool1dOptions opt);
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);

// ---- channel dropout ---------------------------------------------------------------------------------
// In training, zeroes whole channels: each (n, c) is kept with probability 1 - p (one Bernoulli draw
// per channel from the Philox stream) and kept channels are scaled by 1 / (1 - p). dropout1d takes
// (N, C, L) or (C, L); dropout2d (N, C, H, W) or (N, C, L) (PyTorch's 3-D reading); dropout3d
// (N, C, D, H, W) or (C, D, H, W). The identity when not training or p == 0.
Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

// ---- resampling ----------------------------------------------------------------------------------------
// F.interpolate for x (N, C, L) or (N, C, H, W): exactly one of size (one value per spatial dim, or
// one for all) and scale_factor. Modes: "nearest" (PyTorch's floor rule), "nearest-exact",
// "linear" (3-D) and "bilinear" (4-D), the last two with align_corners (default false). The source
// coordinates are computed as PyTorch computes them (from 1 / scale_factor unless
// recompute_scale_factor, else from the sizes); the op runs as products with the interpolation
// matrices along each spatial dim (so it is differentiable and runs on every device).
struct InterpolateOptions {
  std::vector<int64_t> size{};
  std::vector<double> scale_factor{};
  std::string mode = "nearest";
  std::optional<bool> align_corners{};
  std::optional<bool> recompute_scale_factor{};
};
Tensor interpolate(const Tensor& x, const InterpolateOptions& opt);

// ---- padding -------------------------------------------------------------------------------------------
// F.pad: pads = (left, right) pairs from the last dim backwards. mode "constant" (value), "reflect"
// (mirror without the edge; pads < the dim's size), "replicate" (repeat the edge), "circular"
// (wrap; pads <= the dim's size). Non-constant modes pad the last 1, 2 or 3 dims of a 2-D to 5-D
// input, as PyTorch. No default mode: ember::pad(x, pads, value) is the constant form.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value = 0.0);

// ---- distances -----------------------------------------------------------------------------------------
// sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps)) with x1, x2 broadcast together.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// ||x1 - x2 + eps||_p over the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

// ---- losses (reduction as PyTorch: None keeps the element-wise loss, Mean averages, Sum sums) ---------
// cross_entropy / nll_loss (ember/ops.h) take input (N, C), (N, C, d1, ...) or (C,) with int64
// targets (N), (N, d1, ...) or () — or, for cross_entropy, class probabilities of input's shape.
// Regression losses: input and target of one shape.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta (beta = 0: l1_loss)
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
// |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// -weight * (t log x + (1 - t) log(1 - x)), each log clamped to >= -100 as PyTorch; input in [0, 1]
// (checked on CPU tensors); weight broadcasts to input's shape or is undefined.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);
// -weight * (pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), computed from log-sigmoid
// (no overflow for large |x|); pos_weight broadcasts along the last (class) dim.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        Reduction reduction = Reduction::Mean, const Tensor& pos_weight = {});
// input holds log-probabilities; target probabilities (or log-probabilities when log_target):
// target * (log target - input), 0 where target == 0. Reduction::BatchMean divides the sum by
// input.size(0) (the mathematically correct KL divergence; Mean divides by every element, as PyTorch).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);

}  // namespace ember::nn::functional

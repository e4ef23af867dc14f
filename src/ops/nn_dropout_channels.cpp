// Channel dropout (dropout1d / dropout2d / dropout3d, ATen's feature_dropout): one Bernoulli(1 - p)
// draw per (sample, channel) from the Philox stream, scaled by 1 / (1 - p) and broadcast over the
// channel's positions by mul (whose backward is the same mask), so every device draws the same mask.
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "kernels/kernels.h"

namespace ember::nn::functional {

namespace {

void check_p(double p, const char* op) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, ValueError, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

// x (N, C, *): zeroes whole channels.
Tensor feature_dropout(const Tensor& x, double p, Generator* gen, const char* op) {
  EMBER_CHECK(is_floating(x.dtype()), DTypeError, op, ": input must be floating point, got ", dtype_name(x.dtype()));
  if (p == 1.0) return mul(x, 0.0);  // every channel dropped; keeps the graph (zero gradient)
  Shape noise_shape(size_t(x.dim()), 1);
  noise_shape[0] = x.size(0);
  noise_shape[1] = x.size(1);
  Generator& g = gen ? *gen : default_generator();
  Tensor noise = empty(noise_shape, {.dtype = x.dtype(), .device = x.device()});
  const uint64_t offset = g.reserve(uint64_t(noise.numel()));
  kernels::random(x.device())(kernels::RandomDist::Bernoulli, noise, g.seed(), offset, 1.0 - p, 1.0 / (1.0 - p));
  return mul(x, noise);
}

// batched: x is (N, C, *) as it is; else one sample (C, *), given a batch dim for the draw.
Tensor channel_dropout(const Tensor& x, double p, bool training, Generator* gen, bool batched, const char* op) {
  if (!training || p == 0.0) return x;
  if (batched) return feature_dropout(x, p, gen, op);
  return feature_dropout(x.unsqueeze(0), p, gen, op).squeeze(0);
}

}  // namespace

Tensor dropout1d(const Tensor& x, double p, bool training, Generator* gen) {
  check_p(p, "dropout1d");
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape ",
              shape_str(x.sizes()), " (dropout1d drops channels of inputs with one spatial dim)");
  return channel_dropout(x, p, training, gen, x.dim() == 3, "dropout1d");
}

Tensor dropout2d(const Tensor& x, double p, bool training, Generator* gen) {
  check_p(p, "dropout2d");
  // PyTorch reads a 3-D input as (N, C, L) (channel-wise 1-D dropout), not as one (C, H, W) image.
  EMBER_CHECK(x.dim() >= 2, ShapeError, "dropout2d: expected a 4-D (N, C, H, W) input, got shape ", shape_str(x.sizes()));
  return channel_dropout(x, p, training, gen, true, "dropout2d");
}

Tensor dropout3d(const Tensor& x, double p, bool training, Generator* gen) {
  check_p(p, "dropout3d");
  EMBER_CHECK(x.dim() >= 1, ShapeError, "dropout3d: expected a 5-D (N, C, D, H, W) or 4-D (C, D, H, W) input, got shape ",
              shape_str(x.sizes()));
  return channel_dropout(x, p, training, gen, x.dim() == 5, "dropout3d");
}

}  // namespace ember::nn::functional

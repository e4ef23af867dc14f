// batch_norm and dropout front-ends. batch_norm reduces every layout to (N, C, S) with S the
// product of the spatial dims; dropout draws its keep-mask from the Philox stream (generator.h),
// so one seed gives the same mask on every device.
#include <tuple>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "kernels/nn_kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {
void check_channel_vector(const Tensor& t, const Tensor& x, const char* name) {
  if (!t.defined()) return;
  check_same_device(x, t, "batch_norm");
  EMBER_CHECK(t.dim() == 1 && t.size(0) == x.size(1), ShapeError, "batch_norm: ", name, " has shape ",
              shape_str(t.sizes()), " but the input ", shape_str(x.sizes()), " has ", x.size(1), " channels");
  EMBER_CHECK(t.dtype() == x.dtype(), DTypeError, "batch_norm: ", name, " is ", dtype_name(t.dtype()),
              " but the input is ", dtype_name(x.dtype()));
}

// Backward front-end: gradients of x (x_shape), weight and bias (C) from the saved x3 (N, C, S).
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_out, const Tensor& x3, const Tensor& mean,
                                                       const Tensor& invstd, const Tensor& weight, bool training,
                                                       const Shape& x_shape) {
  const int64_t N = x3.size(0), C = x3.size(1), S = x3.size(2);
  const TensorOptions copt{.dtype = x3.dtype(), .device = x3.device()};
  Tensor gx = empty(x_shape, copt), gw = empty({C}, copt), gb = empty({C}, copt);
  kernels::batch_norm_backward(gx.device())(grad_out.contiguous().view({N, C, S}), x3, mean, invstd, weight, training,
                                            gx.view({N, C, S}), gw, gb);
  return {gx, gw, gb};
}
// The same with the activation's mask applied to grad_out (batch_norm_backward_act), and the
// residual's gradient (the masked grad_out) where r3 is defined.
struct BatchNormActGrads {
  Tensor gx, gw, gb, gr;
};
BatchNormActGrads batch_norm_activation_backward(const Tensor& grad_out, const Tensor& x3, const Tensor& r3,
                                                 const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                                 const Tensor& bias, bool training, kernels::ConvEpilogue act,
                                                 const Shape& x_shape) {
  const int64_t N = x3.size(0), C = x3.size(1), S = x3.size(2);
  const TensorOptions copt{.dtype = x3.dtype(), .device = x3.device()};
  BatchNormActGrads r{empty(x_shape, copt), empty({C}, copt), empty({C}, copt),
                      r3.defined() ? empty(x_shape, copt) : Tensor()};
  kernels::batch_norm_backward_act(r.gx.device())(grad_out.expand(x_shape).contiguous().view({N, C, S}), x3, r3, mean,
                                                  invstd, weight, bias, training, act, r.gx.view({N, C, S}), r.gw,
                                                  r.gb, r3.defined() ? r.gr.view({N, C, S}) : Tensor());
  return r;
}

// batch_norm, and with act Relu / Relu6 batch_norm_activation's fused path (the backend's
// batch_norm_forward_act / _backward_act: the activation's pass gone each way; its mask is
// recomputed from x in the backward, so the output is not kept).
Tensor batch_norm_impl(const Tensor& x_in, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, double momentum, double eps, ConvActivation act,
                       const Tensor& residual = Tensor()) {
  const Tensor x = autocast_detail::to_float32(AutocastOp::BatchNorm, x_in);
  EMBER_CHECK(x.dim() >= 2, ShapeError, "batch_norm: input must be (N, C) or (N, C, ...), got shape ",
              shape_str(x.sizes()));
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError,
              "batch_norm: input must be float32 or float64, got ", dtype_name(x.dtype()));
  check_channel_vector(running_mean, x, "running_mean");
  check_channel_vector(running_var, x, "running_var");
  check_channel_vector(weight, x, "weight");
  check_channel_vector(bias, x, "bias");
  EMBER_CHECK(eps > 0, ValueError, "batch_norm: eps must be > 0, got ", eps);
  EMBER_CHECK(running_mean.defined() == running_var.defined(), ValueError,
              "batch_norm: running_mean and running_var must both be given or both be undefined");
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(N * C, 1);
  const TensorOptions copt{.dtype = x.dtype(), .device = x.device()};
  Tensor x3 = x.detach().contiguous().view({N, C, S});
  Tensor mean, invstd;
  {
    NoGradGuard ng;
    if (training) {
      EMBER_CHECK(N * S > 1, ValueError, "batch_norm: training needs more than one value per channel, got input ",
                  shape_str(x.sizes()));
      mean = empty({C}, copt);
      Tensor var = empty({C}, copt);
      kernels::batch_norm_stats(x.device())(x3, mean, var);
      invstd = rsqrt(add(var, eps));
      if (running_mean.defined()) {
        // PyTorch's update: the running variance takes the unbiased batch variance.
        Tensor rm = running_mean, rv = running_var;
        const double n = double(N * S);
        rm.mul_(1.0 - momentum).add_(mean, momentum);
        rv.mul_(1.0 - momentum).add_(mul(var, n / (n - 1.0)), momentum);
      }
    } else {
      EMBER_CHECK(running_mean.defined(), ValueError,
                  "batch_norm: eval mode (training=false) needs running_mean and running_var");
      mean = running_mean.detach().clone();
      invstd = rsqrt(add(running_var.detach(), eps));
    }
  }
  Tensor w = weight.defined() ? weight.detach().contiguous() : ones({C}, copt);
  Tensor b = bias.defined() ? bias.detach().contiguous() : zeros({C}, copt);
  Tensor out = empty(x.sizes(), copt);
  const auto epi = kernels::ConvEpilogue(act);
  const Tensor r3 = residual.defined() ? residual.detach().contiguous().view({N, C, S}) : Tensor();
  if (act == ConvActivation::None)
    kernels::batch_norm_forward(x.device())(x3, mean, invstd, w, b, out.view({N, C, S}));
  else
    kernels::batch_norm_forward_act(x.device())(x3, mean, invstd, w, b, r3, epi, out.view({N, C, S}));

  if (autograd::any_requires_grad({&x, &weight, &bias, &residual})) {
    const bool need_w = weight.defined() && weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    const bool need_r = residual.defined() && residual.requires_grad();
    // weight is saved too: an in-place update of it before backward must fail loudly.
    autograd::SavedTensor sx(x3), sw(w);
    // The fused backward recomputes the activation's mask from x, w, b and the residual (not the
    // output).
    autograd::SavedTensor sb(act == ConvActivation::None ? Tensor() : b), sr(r3);
    Shape xs = x.sizes();
    const char* name = act == ConvActivation::None ? "BatchNormBackward"
                       : r3.defined() ? (act == ConvActivation::Relu ? "BatchNormAddReluBackward" : "BatchNormAddRelu6Backward")
                                      : (act == ConvActivation::Relu ? "BatchNormReluBackward" : "BatchNormRelu6Backward");
    autograd::record(autograd::make_node(name, [=](const std::vector<Tensor>& g) {
                       if (act == ConvActivation::None) {
                         auto [gx, gw, gb] = batch_norm_backward(g[0], sx.unpack(name), mean, invstd, sw.unpack(name),
                                                                 training, xs);
                         return std::vector<Tensor>{gx, need_w ? gw : Tensor(), need_b ? gb : Tensor(), Tensor()};
                       }
                       BatchNormActGrads r = batch_norm_activation_backward(
                           g[0], sx.unpack(name), sr.unpack(name), mean, invstd, sw.unpack(name), sb.unpack(name),
                           training, epi, xs);
                       return std::vector<Tensor>{r.gx, need_w ? r.gw : Tensor(), need_b ? r.gb : Tensor(),
                                                  need_r ? r.gr : Tensor()};
                     }),
                     {x, weight, bias, residual}, {out});
  }
  return out;
}
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, ConvActivation::None);
}

Tensor batch_norm_activation(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                             ConvActivation act) {
  const bool fusable = act == ConvActivation::Relu || act == ConvActivation::Relu6;
  if (fusable && x.defined() && kernels::batch_norm_forward_act.has(x.device().type) &&
      kernels::batch_norm_backward_act.has(x.device().type))
    return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, act);
  return apply_activation(act, batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps));
}

Tensor batch_norm_add_activation(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                 const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                                 const Tensor& residual, ConvActivation act) {
  EMBER_CHECK(residual.defined(), ValueError,
              "batch_norm_add_activation: the residual is an undefined tensor (pass the shortcut's value, or call "
              "batch_norm_activation for no residual)");
  const bool fusable = (act == ConvActivation::Relu || act == ConvActivation::Relu6) && x.defined() &&
                       residual.defined() && residual.sizes() == x.sizes() && residual.dtype() == x.dtype() &&
                       residual.device() == x.device() && !is_half(x.dtype()) &&
                       kernels::batch_norm_forward_act.has(x.device().type) &&
                       kernels::batch_norm_backward_act.has(x.device().type);
  if (fusable)
    return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps, act, residual);
  return apply_activation(act, add(batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps),
                                   residual));
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: probability p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);  // everything dropped; keeps the graph (zero gradient)
  EMBER_CHECK(is_floating(x.dtype()), DTypeError, "dropout: input must be floating point, got ",
              dtype_name(x.dtype()));
  Generator& g = gen ? *gen : default_generator();
  const double keep = 1.0 - p, scale = 1.0 / (1.0 - p);
  if (x.dtype() == DType::Float32 && kernels::dropout_forward.has(x.device().type) &&
      kernels::dropout_backward.has(x.device().type)) {
    // One pass each way: the keep decisions as bits instead of a float32 mask, the products those of
    // the mask path below (mul(x, mask), mul(grad, mask)), so either path gives the same values.
    // mnistnet's two dropouts had been a mask fill and a strided mul forward and another mul
    // backward, each over 4-byte masks (docs/benchmarks.md, issue 24).
    const Tensor xc = x.contiguous();
    Tensor out = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
    const Tensor bits = empty({(x.numel() + 63) / 64 * 8}, {.dtype = DType::UInt8, .device = x.device()});
    const uint64_t offset = g.reserve(uint64_t(x.numel()));
    kernels::dropout_forward(x.device())(xc, out, bits, g.seed(), offset, keep, scale);
    if (autograd::any_requires_grad({&x}))
      autograd::record(autograd::make_node("DropoutBackward",
                                           [bits, scale](const std::vector<Tensor>& gr) {
                                             const Tensor go = gr[0].to(DType::Float32).contiguous();
                                             Tensor gx = empty(go.sizes(), {.dtype = go.dtype(), .device = go.device()});
                                             kernels::dropout_backward(go.device())(go, bits, scale, gx);
                                             return std::vector<Tensor>{gx};
                                           }),
                       {x}, {out});
    return out;
  }
  Tensor mask = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  const uint64_t offset = g.reserve(uint64_t(mask.numel()));
  // Keep with probability 1 - p; survivors are scaled by 1 / (1 - p) so the expectation is x (the
  // mask holds the scale where kept: one pass fewer than a 0/1 mask scaled after).
  kernels::random(x.device())(kernels::RandomDist::Bernoulli, mask, g.seed(), offset, keep, scale);
  return mul(x, mask);
}

// torchvision's stochastic_depth: a keep/drop draw per sample (row) or per batch, broadcast over
// the rest of x by mul (whose backward sums the gradient of the mask's broadcast dims, unused here).
Tensor stochastic_depth(const Tensor& x, double p, const std::string& mode, bool training, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, ValueError, "stochastic_depth: drop probability p must be in [0, 1], got ", p);
  EMBER_CHECK(mode == "row" || mode == "batch", ValueError, "stochastic_depth: mode must be \"row\" or \"batch\", got \"",
              mode, "\"");
  if (!training || p == 0.0) return x;
  EMBER_CHECK(is_floating(x.dtype()), DTypeError, "stochastic_depth: input must be floating point, got ",
              dtype_name(x.dtype()));
  EMBER_CHECK(x.dim() >= 1, ShapeError, "stochastic_depth: input must have a batch dim, got a 0-d tensor");
  Shape noise_shape(size_t(x.dim()), 1);
  if (mode == "row") noise_shape[0] = x.size(0);
  Generator& g = gen ? *gen : default_generator();
  Tensor noise = empty(noise_shape, {.dtype = x.dtype(), .device = x.device()});
  const uint64_t offset = g.reserve(uint64_t(noise.numel()));
  // Kept samples are scaled by 1 / (1 - p) (torchvision divides only when a sample can survive).
  kernels::random(x.device())(kernels::RandomDist::Bernoulli, noise, g.seed(), offset, 1.0 - p,
                              p < 1.0 ? 1.0 / (1.0 - p) : 1.0);
  return mul(x, noise);
}

}  // namespace ember::nn::functional

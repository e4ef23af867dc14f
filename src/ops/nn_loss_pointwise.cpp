// Element-wise losses: l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
// binary_cross_entropy_with_logits, kl_div. Each is the element-wise loss composed of ember ops (a
// backward node with ATen's derivative where the composition's would differ: BCE at its clamp,
// BCE-with-logits at 0), then the reduction; input and target broadcast as in PyTorch.
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "ops/loss_util.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

// input and target floating, on one device, broadcastable; target converted to input's dtype.
Tensor checked_target(const Tensor& input, const Tensor& target, const char* op) {
  check_same_device(input, target, op);
  EMBER_CHECK(input.dtype() == DType::Float32 || input.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(input.dtype()));
  EMBER_CHECK(is_floating(target.dtype()), DTypeError, op, ": target must be floating point, got ", dtype_name(target.dtype()));
  (void)broadcast_shapes(input.sizes(), target.sizes(), op);
  return target.dtype() == input.dtype() ? target : target.to(input.dtype());
}

// For the BCE losses (PyTorch refuses to broadcast their target).
void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  EMBER_CHECK(input.sizes() == target.sizes(), ShapeError, op, ": target shape ", shape_str(target.sizes()),
              " must be the input's ", shape_str(input.sizes()));
}

// An optional weight broadcast to the input's shape, in its dtype, without gradient.
Tensor checked_weight(const Tensor& input, const Tensor& w, const char* op, const char* name) {
  if (!w.defined()) return w;
  check_same_device(input, w, op);
  EMBER_CHECK(is_floating(w.dtype()), DTypeError, op, ": ", name, " must be floating point, got ", dtype_name(w.dtype()));
  bool fits = false;
  try {
    fits = broadcast_shapes(input.sizes(), w.sizes(), op) == input.sizes();
  } catch (const ShapeError&) {
  }
  EMBER_CHECK(fits, ShapeError, op, ": ", name, " shape ", shape_str(w.sizes()), " does not broadcast to the input's ",
              shape_str(input.sizes()));
  return w.detach().to(input.dtype());
}

Tensor clamped_log(const Tensor& t) { return clamp(log(t), -100.0, std::nullopt); }

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target_in, Reduction reduction) {
  const Tensor target = checked_target(input, target_in, "l1_loss");
  return reduce_loss(abs(sub(input, target)), reduction, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target_in, Reduction reduction, double beta) {
  const Tensor target = checked_target(input, target_in, "smooth_l1_loss");
  EMBER_CHECK(beta >= 0.0, ValueError, "smooth_l1_loss: beta must be >= 0, got ", beta);
  if (beta == 0.0) return l1_loss(input, target, reduction);
  // |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta; where() hands each branch its own gradient
  // (d / beta inside, sign(d) outside), which is ATen's.
  Tensor d = sub(input, target);
  Tensor z = abs(d);
  Tensor loss = where(lt(z, beta), mul(mul(d, d), 0.5 / beta), add(z, -0.5 * beta));
  return reduce_loss(loss, reduction, "smooth_l1_loss");
}

Tensor huber_loss(const Tensor& input, const Tensor& target_in, Reduction reduction, double delta) {
  const Tensor target = checked_target(input, target_in, "huber_loss");
  EMBER_CHECK(delta > 0.0, ValueError, "huber_loss: delta must be > 0, got ", delta);
  Tensor d = sub(input, target);
  Tensor z = abs(d);
  Tensor loss = where(lt(z, delta), mul(mul(d, d), 0.5), mul(add(z, -0.5 * delta), delta));
  return reduce_loss(loss, reduction, "huber_loss");
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target_in, const Tensor& weight_in, Reduction reduction) {
  const char* op = "binary_cross_entropy";
  const Tensor target = checked_target(input, target_in, op);
  check_same_shape(input, target, op);
  const Tensor weight = checked_weight(input, weight_in, op, "weight");
  // Checked where the values already live in host memory (as cross_entropy's targets).
  if (input.is_cpu()) {
    const Tensor xv = input.detach().to(DType::Float64).contiguous();
    const double* xp = xv.data_ptr<double>();
    for (int64_t i = 0; i < xv.numel(); ++i)
      EMBER_CHECK(xp[i] >= 0.0 && xp[i] <= 1.0, ValueError, op, ": all elements of input should be between 0 and 1, got ",
                  xp[i], " at element ", i, " (probabilities; for logits use binary_cross_entropy_with_logits)");
  }
  // ATen: (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100), times the weight.
  Tensor loss;
  {
    NoGradGuard ng;
    const Tensor x = input.detach(), t = target.detach();
    loss = sub(mul(add(t, -1.0), clamped_log(add(neg(x), 1.0))), mul(t, clamped_log(x)));
    if (weight.defined()) loss = mul(loss, weight);
  }
  if (autograd::any_requires_grad({&input, &target})) {
    autograd::SavedTensor sx(input), st(target);
    const Tensor w = weight;
    autograd::record(autograd::make_node("BinaryCrossEntropyBackward",
                                         [sx, st, w](const std::vector<Tensor>& g) {
                                           const Tensor x = sx.unpack("BinaryCrossEntropyBackward");
                                           const Tensor t = st.unpack("BinaryCrossEntropyBackward");
                                           Tensor gw = w.defined() ? mul(g[0], w) : g[0];
                                           // d/dx: (x - t) / max((1 - x) x, 1e-12); d/dt: log(1 - x) - log(x).
                                           Tensor denom = clamp(mul(add(neg(x), 1.0), x), 1e-12, std::nullopt);
                                           Tensor gx = mul(gw, div(sub(x, t), denom));
                                           Tensor g_target = mul(gw, sub(log(add(neg(x), 1.0)), log(x)));
                                           return std::vector<Tensor>{gx, g_target};
                                         }),
                     {input, target}, {loss});
  }
  return reduce_loss(loss, reduction, op);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target_in, const Tensor& weight_in,
                                        Reduction reduction, const Tensor& pos_weight_in) {
  const char* op = "binary_cross_entropy_with_logits";
  const Tensor target = checked_target(input, target_in, op);
  check_same_shape(input, target, op);
  const Tensor weight = checked_weight(input, weight_in, op, "weight");
  const Tensor pos_weight = checked_weight(input, pos_weight_in, op, "pos_weight");
  // ATen: (1 - t) x - lw * log_sigmoid(x), lw = 1 + (pos_weight - 1) t; log_sigmoid(x) =
  // min(x, 0) - log(1 + exp(-|x|)) never overflows.
  auto log_sigmoid = [](const Tensor& x) {
    return sub(minimum(x, scalar_like(x, 0.0)), log(add(exp(neg(abs(x))), 1.0)));
  };
  Tensor loss;
  {
    NoGradGuard ng;
    const Tensor x = input.detach(), t = target.detach();
    Tensor ls = log_sigmoid(x);
    if (pos_weight.defined()) ls = mul(ls, add(mul(add(pos_weight, -1.0), t), 1.0));
    loss = sub(mul(add(neg(t), 1.0), x), ls);
    if (weight.defined()) loss = mul(loss, weight);
  }
  if (autograd::any_requires_grad({&input, &target})) {
    autograd::SavedTensor sx(input), st(target);
    const Tensor w = weight, pw = pos_weight;
    autograd::record(autograd::make_node("BinaryCrossEntropyWithLogitsBackward",
                                         [sx, st, w, pw, log_sigmoid](const std::vector<Tensor>& g) {
                                           const Tensor x = sx.unpack("BinaryCrossEntropyWithLogitsBackward");
                                           const Tensor t = st.unpack("BinaryCrossEntropyWithLogitsBackward");
                                           Tensor gw = w.defined() ? mul(g[0], w) : g[0];
                                           Tensor gx, g_target;
                                           if (pw.defined()) {
                                             // ATen: (pw t + 1 - t) sigmoid(x) - pw t; d/dt: log_sigmoid(-x) - pw log_sigmoid(x).
                                             Tensor pt = mul(pw, t);
                                             gx = sub(mul(sub(add(pt, 1.0), t), sigmoid(x)), pt);
                                             g_target = sub(log_sigmoid(neg(x)), mul(pw, log_sigmoid(x)));
                                           } else {
                                             gx = sub(sigmoid(x), t);
                                             g_target = neg(x);
                                           }
                                           return std::vector<Tensor>{mul(gw, gx), mul(gw, g_target)};
                                         }),
                     {input, target}, {loss});
  }
  return reduce_loss(loss, reduction, op);
}

Tensor kl_div(const Tensor& input, const Tensor& target_in, Reduction reduction, bool log_target) {
  const Tensor target = checked_target(input, target_in, "kl_div");
  Tensor loss;
  if (log_target) {
    loss = mul(exp(target), sub(target, input));
  } else {
    // xlogy(t, t) - t * input: 0 where t == 0 (log taken of 1 there, so no 0 * -inf), NaN for t < 0.
    Tensor safe = where(eq(target, 0.0), ones_like(target), target);
    loss = sub(mul(target, log(safe)), mul(target, input));
  }
  if (reduction == Reduction::BatchMean) {
    Tensor s = sum(loss);
    return input.dim() == 0 ? s : div(s, scalar_like(s, double(input.size(0))));
  }
  return reduce_loss(loss, reduction, "kl_div");
}

}  // namespace ember::nn::functional

// Loss front-ends: nll_loss, cross_entropy (log_softmax + nll, with label smoothing) and mse_loss.
// Mean reductions over class targets divide by the number of targets that are not ignore_index,
// as PyTorch does (0/0 = NaN when every target is ignored).
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/nn_kernels.h"
#include "ops/autocast.h"
#include "ops/util.h"

namespace ember::nn::functional {

namespace {

void check_class_inputs(const Tensor& scores, const Tensor& target, const CrossEntropyOptions& opt,
                        const char* op, const char* scores_name) {
  check_same_device(scores, target, op);
  EMBER_CHECK(scores.dim() == 2, ShapeError, op, ": ", scores_name, " must be 2-D (N, C), got shape ",
              shape_str(scores.sizes()));
  EMBER_CHECK(scores.dtype() == DType::Float32 || scores.dtype() == DType::Float64, DTypeError, op, ": ",
              scores_name, " must be float32 or float64, got ", dtype_name(scores.dtype()));
  EMBER_CHECK(target.dtype() == DType::Int64, DTypeError, op, ": target must hold int64 class indices, got ",
              dtype_name(target.dtype()), " (shape ", shape_str(target.sizes()),
              "); class probabilities as targets are not supported");
  EMBER_CHECK(target.dim() == 1 && target.size(0) == scores.size(0), ShapeError, op, ": target shape ",
              shape_str(target.sizes()), " does not match ", scores_name, " ", shape_str(scores.sizes()),
              " (expected (", scores.size(0), "))");
  // Labels are range-checked here only where they already live in host memory (the CPU): reading
  // them from a GPU would cost a device->host synchronisation on every training step. The CUDA
  // kernels never read out of bounds instead: an out-of-range label gives a NaN loss and a zero
  // gradient, which the training engine's NaN guard reports.
  if (!target.device().is_cpu()) return;
  const int64_t C = scores.size(1);
  Tensor tc = target.contiguous();
  const int64_t* t = tc.data_ptr<int64_t>();
  for (int64_t i = 0; i < tc.numel(); ++i)
    EMBER_CHECK(t[i] == opt.ignore_index || (t[i] >= 0 && t[i] < C), ValueError, op, ": target[", i, "] = ", t[i],
                " is out of range for ", C, " classes (expected 0..", C - 1, " or ignore_index ", opt.ignore_index, ")");
}

// Backward front-end: the gradient (N, C) of the per-sample losses w.r.t. log_probs.
Tensor nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index, const Shape& lp_shape) {
  Tensor gl = empty(lp_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::nll_loss_backward(gl.device())(grad_out.contiguous(), target, ignore_index, gl);
  return gl;
}

// -log_probs[i, target[i]] per sample (N), 0 where ignored; differentiable in log_probs.
Tensor nll_per_sample(const Tensor& log_probs, const Tensor& target, int64_t ignore_index) {
  Tensor lp = log_probs.detach().contiguous(), tc = target.detach().contiguous();
  Tensor out = empty({lp.size(0)}, {.dtype = lp.dtype(), .device = lp.device()});
  kernels::nll_loss_forward(lp.device())(lp, tc, ignore_index, out);
  if (autograd::any_requires_grad({&log_probs})) {
    Shape s = lp.sizes();
    autograd::record(autograd::make_node("NllLossBackward", [tc, ignore_index, s](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{nll_loss_backward(g[0], tc, ignore_index, s)};
                     }),
                     {log_probs}, {out});
  }
  return out;
}

// 1 where the target counts, 0 where it is ignore_index; in `dtype`, no grad.
Tensor valid_mask(const Tensor& target, int64_t ignore_index, DType dtype) {
  return 1.0 - eq(target.detach(), double(ignore_index)).to(dtype);
}

Tensor reduce_class_loss(const Tensor& per_sample, const Tensor& valid, Reduction r) {
  switch (r) {
    case Reduction::None: return per_sample;
    case Reduction::Sum: return sum(per_sample);
    case Reduction::Mean: return div(sum(per_sample), sum(valid));
  }
  return per_sample;
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs_in, const Tensor& target, CrossEntropyOptions opt) {
  const Tensor log_probs = autocast_detail::to_float32(AutocastOp::NllLoss, log_probs_in);
  check_class_inputs(log_probs, target, opt, "nll_loss", "log_probs");
  Tensor per = nll_per_sample(log_probs, target, opt.ignore_index);
  return reduce_class_loss(per, valid_mask(target, opt.ignore_index, log_probs.dtype()), opt.reduction);
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, CrossEntropyOptions opt) {
  const Tensor logits = autocast_detail::to_float32(AutocastOp::CrossEntropy, logits_in);
  check_class_inputs(logits, target, opt, "cross_entropy", "logits");
  EMBER_CHECK(opt.label_smoothing >= 0.0 && opt.label_smoothing <= 1.0, ValueError,
              "cross_entropy: label_smoothing must be in [0, 1], got ", opt.label_smoothing);
  Tensor logp = log_softmax(logits, 1);
  Tensor per = nll_per_sample(logp, target, opt.ignore_index);
  Tensor valid = valid_mask(target, opt.ignore_index, logits.dtype());
  if (opt.label_smoothing > 0.0) {
    // The smoothed target puts eps/C on every class: add eps/C * (-sum_c log p_c), 0 on ignored rows.
    const double eps = opt.label_smoothing, C = double(logits.size(1));
    Tensor smooth = mul(neg(sum(logp, {1})), valid);
    per = add(mul(per, 1.0 - eps), mul(smooth, eps / C));
  }
  return reduce_class_loss(per, valid, opt.reduction);
}

Tensor mse_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction) {
  const Tensor input = autocast_detail::to_float32(AutocastOp::MseLoss, input_in);
  const Tensor target = autocast_detail::to_float32(AutocastOp::MseLoss, target_in);
  check_same_device(input, target, "mse_loss");
  EMBER_CHECK(input.sizes() == target.sizes(), ShapeError, "mse_loss: input shape ", shape_str(input.sizes()),
              " and target shape ", shape_str(target.sizes()), " differ");
  EMBER_CHECK(is_floating(input.dtype()) && is_floating(target.dtype()), DTypeError,
              "mse_loss: input and target must be floating point, got ", dtype_name(input.dtype()), " and ",
              dtype_name(target.dtype()));
  Tensor d = sub(input, target);
  Tensor sq = mul(d, d);
  switch (reduction) {
    case Reduction::None: return sq;
    case Reduction::Sum: return sum(sq);
    case Reduction::Mean: return mean(sq);
  }
  return sq;
}

}  // namespace ember::nn::functional

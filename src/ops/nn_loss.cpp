// Class-target loss front-ends: nll_loss and cross_entropy (log_softmax + nll; class weights,
// ignore_index, label smoothing, K-dimensional inputs, class probabilities as targets), mse_loss,
// and the reduction names shared by every loss (reduction_from_string). The structure is ATen's
// (LossNLL.cpp), so each reduction divides what PyTorch divides: a mean over class indices by the
// summed weights of the targets that are not ignore_index (0/0 = NaN when every one is ignored).
#include <string>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "kernels/nn_kernels.h"
#include "ops/autocast.h"
#include "ops/loss_util.h"
#include "ops/util.h"

namespace ember::nn::functional {

Reduction reduction_from_string(const std::string& r) {
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  if (r == "batchmean") return Reduction::BatchMean;
  throw ValueError("'" + r + "' is not a valid value for reduction (expected 'none', 'mean' or 'sum'; "
                   "'batchmean' for kl_div)");
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::None: return "none";
    case Reduction::BatchMean: return "batchmean";
  }
  return "?";
}

Tensor reduce_loss(const Tensor& loss, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return mean(loss);
    case Reduction::BatchMean: break;
  }
  throw ValueError(std::string(op) + ": reduction 'batchmean' is only for kl_div (use 'mean', 'sum' or 'none')");
}

namespace {

// The class scores seen as rows: (M, C) with the class dim last, M = N * d1 * ... (1 unbatched),
// and the shape of one loss per row (the target's shape).
struct ClassRows {
  Tensor rows;       // (M, C)
  Shape loss_shape;  // (N, d1, ...), (N) or ()
};

ClassRows class_rows(const Tensor& scores) {
  if (scores.dim() == 1) return {scores.reshape({1, scores.size(0)}), {}};
  if (scores.dim() == 2) return {scores, {scores.size(0)}};
  std::vector<int64_t> perm = {0};
  for (int64_t d = 2; d < scores.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  Shape loss_shape = {scores.size(0)};
  for (int64_t d = 2; d < scores.dim(); ++d) loss_shape.push_back(scores.size(d));
  return {scores.permute(perm).reshape({-1, scores.size(1)}), loss_shape};
}

void check_scores(const Tensor& scores, const char* op, const char* scores_name) {
  EMBER_CHECK(scores.dim() >= 1, ShapeError, op, ": ", scores_name, " must be (C), (N, C) or (N, C, d1, ...), got a 0-d tensor");
  EMBER_CHECK(scores.dtype() == DType::Float32 || scores.dtype() == DType::Float64, DTypeError, op, ": ",
              scores_name, " must be float32 or float64, got ", dtype_name(scores.dtype()));
}

void check_weight(const Tensor& scores, const Tensor& weight, const char* op) {
  if (!weight.defined()) return;
  check_same_device(scores, weight, op);
  const int64_t C = scores.dim() == 1 ? scores.size(0) : scores.size(1);
  EMBER_CHECK(weight.dim() == 1 && weight.size(0) == C, ShapeError, op, ": weight must hold one value per class (",
              C, "), got shape ", shape_str(weight.sizes()));
  EMBER_CHECK(is_floating(weight.dtype()), DTypeError, op, ": weight must be floating point, got ",
              dtype_name(weight.dtype()));
}

// Class-index targets: int64, the scores' shape without the class dim, each in [0, C) or ignore_index.
void check_class_target(const Tensor& scores, const Tensor& target, const CrossEntropyOptions& opt, const char* op,
                        const char* scores_name) {
  check_same_device(scores, target, op);
  EMBER_CHECK(target.dtype() == DType::Int64, DTypeError, op, ": target must hold int64 class indices, got ",
              dtype_name(target.dtype()), " (shape ", shape_str(target.sizes()), ")",
              is_floating(target.dtype()) ? std::string("; class probabilities as targets must have the ") + scores_name +
                                                "' shape " + shape_str(scores.sizes())
                                          : std::string());
  Shape expected;
  if (scores.dim() >= 2) {
    expected.push_back(scores.size(0));
    for (int64_t d = 2; d < scores.dim(); ++d) expected.push_back(scores.size(d));
  }
  EMBER_CHECK(target.sizes() == expected, ShapeError, op, ": target shape ", shape_str(target.sizes()),
              " does not match ", scores_name, " ", shape_str(scores.sizes()), " (expected ", shape_str(expected), ")");
  // Labels are range-checked here only where they already live in host memory (the CPU): reading
  // them from a GPU would cost a device->host synchronisation on every training step. The CUDA
  // kernels never read out of bounds instead: an out-of-range label gives a NaN loss and a zero
  // gradient, which the training engine's NaN guard reports.
  if (!target.device().is_cpu()) return;
  const int64_t C = scores.dim() == 1 ? scores.size(0) : scores.size(1);
  Tensor tc = target.contiguous();
  const int64_t* t = tc.data_ptr<int64_t>();
  for (int64_t i = 0; i < tc.numel(); ++i)
    EMBER_CHECK(t[i] == opt.ignore_index || (t[i] >= 0 && t[i] < C), ValueError, op, ": target[", i, "] = ", t[i],
                " is out of range for ", C, " classes (expected 0..", C - 1, " or ignore_index ", opt.ignore_index, ")");
}

// Backward front-end: the gradient (M, C) of the per-row losses w.r.t. log_probs.
Tensor nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index, const Shape& lp_shape) {
  Tensor gl = empty(lp_shape, {.dtype = grad_out.dtype(), .device = grad_out.device()});
  kernels::nll_loss_backward(gl.device())(grad_out.contiguous(), target, ignore_index, gl);
  return gl;
}

// -log_probs[i, target[i]] per row (M), 0 where ignored; differentiable in log_probs (M, C).
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

// weight[target[i]] per row (M), 0 where ignored (the class weight of each counted target): the nll
// kernel's pick of row i's target column, on the negated weight broadcast to every row.
Tensor target_weights(const Tensor& weight, const Tensor& target, int64_t ignore_index, int64_t rows, DType dtype) {
  NoGradGuard ng;
  Tensor w = neg(weight.detach().to(dtype)).reshape({1, -1}).expand({rows, weight.numel()});
  return nll_per_sample(w, target, ignore_index);
}

// 1 where the target counts, 0 where it is ignore_index; in `dtype`, no grad.
Tensor valid_mask(const Tensor& target, int64_t ignore_index, DType dtype) {
  return 1.0 - eq(target.detach(), double(ignore_index)).to(dtype);
}

// nll_loss on rows (M, C) of log-probabilities with flat targets (M): the reduced loss and the
// per-row weights of the counted targets (what a mean divides by).
struct RowsLoss {
  Tensor per;      // (M): weight[t] * -log_probs[i, t], 0 where ignored
  Tensor counted;  // (M): weight[t] (1 without a weight), 0 where ignored
};
RowsLoss nll_rows(const Tensor& log_probs, const Tensor& target, const CrossEntropyOptions& opt) {
  Tensor per = nll_per_sample(log_probs, target, opt.ignore_index);
  if (!opt.weight.defined()) return {per, valid_mask(target, opt.ignore_index, log_probs.dtype())};
  Tensor w = target_weights(opt.weight, target, opt.ignore_index, log_probs.size(0), log_probs.dtype());
  return {mul(per, w), w};
}

Tensor reduce_rows(const RowsLoss& l, const Shape& loss_shape, Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return l.per.reshape(loss_shape);
    case Reduction::Sum: return sum(l.per);
    case Reduction::Mean: return div(sum(l.per), sum(l.counted));
    case Reduction::BatchMean: break;
  }
  return reduce_loss(l.per, r, op);  // throws
}

// The weight as a view that broadcasts along the class dim of scores (C at dim 1, or dim 0 unbatched).
Tensor class_dim_view(const Tensor& weight, const Tensor& scores) {
  if (scores.dim() == 1) return weight;
  Shape s(size_t(scores.dim()), 1);
  s[1] = weight.numel();
  return weight.reshape(s);
}

// Class probabilities as targets (ATen's cross_entropy_loss_prob_target).
Tensor cross_entropy_probabilities(const Tensor& logits, const Tensor& target_in, const CrossEntropyOptions& opt) {
  const char* op = "cross_entropy";
  check_same_device(logits, target_in, op);
  EMBER_CHECK(opt.ignore_index < 0, ValueError, op, ": ignore_index (", opt.ignore_index,
              ") is not supported with class probabilities as targets");
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const double C = double(logits.size(class_dim));
  Tensor target = target_in.dtype() == logits.dtype() ? target_in : target_in.to(logits.dtype());
  if (opt.label_smoothing > 0.0) target = add(mul(target, 1.0 - opt.label_smoothing), opt.label_smoothing / C);
  Tensor logp = log_softmax(logits, class_dim);
  Tensor prod = mul(logp, target);
  if (opt.weight.defined()) prod = mul(prod, class_dim_view(opt.weight.detach().to(logits.dtype()), logits));
  switch (opt.reduction) {
    case Reduction::None: return neg(sum(prod, {class_dim}));
    case Reduction::Sum: return neg(sum(prod));
    case Reduction::Mean: return div(neg(sum(prod)), scalar_like(prod, double(logits.numel()) / C));
    case Reduction::BatchMean: break;
  }
  return reduce_loss(prod, opt.reduction, op);  // throws
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs_in, const Tensor& target, CrossEntropyOptions opt) {
  const Tensor log_probs = autocast_detail::to_float32(AutocastOp::NllLoss, log_probs_in);
  check_scores(log_probs, "nll_loss", "log_probs");
  check_class_target(log_probs, target, opt, "nll_loss", "log_probs");
  check_weight(log_probs, opt.weight, "nll_loss");
  EMBER_CHECK(opt.label_smoothing == 0.0, ValueError, "nll_loss: label_smoothing is cross_entropy's option, got ",
              opt.label_smoothing);
  ClassRows cr = class_rows(log_probs);
  return reduce_rows(nll_rows(cr.rows, target.reshape({-1}), opt), cr.loss_shape, opt.reduction, "nll_loss");
}

Tensor cross_entropy(const Tensor& logits_in, const Tensor& target, CrossEntropyOptions opt) {
  const Tensor logits = autocast_detail::to_float32(AutocastOp::CrossEntropy, logits_in);
  check_scores(logits, "cross_entropy", "logits");
  check_weight(logits, opt.weight, "cross_entropy");
  EMBER_CHECK(opt.label_smoothing >= 0.0 && opt.label_smoothing <= 1.0, ValueError,
              "cross_entropy: label_smoothing must be in [0, 1], got ", opt.label_smoothing);
  if (is_floating(target.dtype()) && target.sizes() == logits.sizes()) return cross_entropy_probabilities(logits, target, opt);
  check_class_target(logits, target, opt, "cross_entropy", "logits");
  ClassRows cr = class_rows(logits);
  Tensor logp = log_softmax(cr.rows, 1);
  Tensor flat_target = target.reshape({-1});
  RowsLoss nll = nll_rows(logp, flat_target, opt);
  Tensor loss = reduce_rows(nll, cr.loss_shape, opt.reduction, "cross_entropy");
  if (opt.label_smoothing == 0.0) return loss;
  // The smoothed target puts eps / C on every class: -sum_c weight_c log p_c per counted row,
  // reduced like the nll term (a mean by the same summed target weights), then mixed in.
  const double eps = opt.label_smoothing, C = double(logits.size(logits.dim() == 1 ? 0 : 1));
  Tensor weighted = opt.weight.defined() ? mul(logp, opt.weight.detach().to(logp.dtype()).reshape({1, -1})) : logp;
  Tensor smooth = mul(neg(sum(weighted, {1})), valid_mask(flat_target, opt.ignore_index, logp.dtype()));
  Tensor smooth_loss = reduce_rows({smooth, nll.counted}, cr.loss_shape, opt.reduction, "cross_entropy");
  return add(mul(loss, 1.0 - eps), mul(smooth_loss, eps / C));
}

Tensor mse_loss(const Tensor& input_in, const Tensor& target_in, Reduction reduction) {
  const Tensor input = autocast_detail::to_float32(AutocastOp::MseLoss, input_in);
  const Tensor target = autocast_detail::to_float32(AutocastOp::MseLoss, target_in);
  check_same_device(input, target, "mse_loss");
  // Shapes broadcast, as PyTorch's (which warns that this is rarely meant).
  try {
    (void)broadcast_shapes(input.sizes(), target.sizes(), "mse_loss");
  } catch (const ShapeError&) {
    throw ShapeError("mse_loss: input shape " + shape_str(input.sizes()) + " and target shape " +
                     shape_str(target.sizes()) + " differ and do not broadcast");
  }
  EMBER_CHECK(is_floating(input.dtype()) && is_floating(target.dtype()), DTypeError,
              "mse_loss: input and target must be floating point, got ", dtype_name(input.dtype()), " and ",
              dtype_name(target.dtype()));
  Tensor d = sub(input, target);
  return reduce_loss(mul(d, d), reduction, "mse_loss");
}

}  // namespace ember::nn::functional

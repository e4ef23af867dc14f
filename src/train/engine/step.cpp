// The stages of one optimizer step (step.h): micro-batches of forward, loss and backward, gradient
// hooks, unscale and check, the update; and the device-side running sums of loss and accuracy.
#include "ember/train/step.h"

#include "ember/autocast.h"

#include "ember/autograd/grad_hook.h"
#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::train {

Tensor LossFunction::operator()(const Tensor& logits, const Tensor& y, bool training, bool sum) const {
  nn::functional::CrossEntropyOptions o;
  o.label_smoothing = training ? label_smoothing : 0.0;
  o.reduction = sum ? nn::functional::Reduction::Sum : nn::functional::Reduction::Mean;
  return nn::functional::cross_entropy(logits, y, o);
}

void DeviceMetrics::add(const Tensor& loss, const Tensor& logits, const Tensor& y, bool loss_is_sum) {
  autograd::NoGradGuard no_grad;
  const int64_t n = y.numel();
  Tensor correct = sum(eq(argmax(logits.detach(), 1), y));  // int64
  if (!loss_sum_.defined()) {
    loss_sum_ = zeros({}, {.dtype = DType::Float64, .device = y.device()});
    correct_ = zeros({}, {.dtype = DType::Int64, .device = y.device()});
  }
  loss_sum_ = ember::add(loss_sum_, loss.detach(), loss_is_sum ? 1.0 : double(n));  // float64 + n x float32
  correct_ = ember::add(correct_, correct);
  samples_ += n;
}

DeviceMetrics::Values DeviceMetrics::read(const std::vector<Tensor>& weights) const {
  Values v;
  v.samples = samples_;
  if (!loss_sum_.defined() && weights.empty()) return v;
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> parts;
  if (loss_sum_.defined()) parts = {loss_sum_.view({1}), correct_.to(DType::Float64).view({1})};
  if (!weights.empty()) {
    // 0 x w is NaN exactly when w is inf or NaN; the sum of those zeros never overflows.
    Tensor probe;
    for (const Tensor& w : weights) {
      Tensor z = sum(mul(w.detach(), 0.0)).to(DType::Float64);
      probe = probe.defined() ? ember::add(probe, z) : z;
    }
    parts.push_back(probe.view({1}));
  }
  const std::vector<double> h = cat(parts).to_vector<double>();  // the one device->host read
  size_t i = 0;
  if (loss_sum_.defined()) v.loss_sum = h[i++], v.correct = int64_t(h[i++]);  // exact: counts below 2^53
  if (!weights.empty()) v.weights_finite = h[i] == 0.0;
  return v;
}

TrainStep::TrainStep(nn::Module& model, optim::Optimizer& opt, LossFunction loss)
    : model_(model), opt_(opt), loss_(loss), precision_(std::make_shared<PrecisionPolicy>()),
      scaler_(std::make_shared<LossScalePolicy>()) {}

void TrainStep::micro_batch(const data::Batch& b, int64_t step_samples, DeviceMetrics* metrics) {
  Tensor logits = precision_->forward(model_, b.x);             // forward under the precision policy
  Tensor loss = loss_(logits, b.y, /*training=*/true);         // mean over this micro-batch
  if (metrics) metrics->add(loss, logits, b.y);                // on the device, nothing read back
  const int64_t n = b.y.numel();
  Tensor share = n == step_samples ? loss : mul(loss, double(n) / double(step_samples));
  scaler_->scale(share).backward();                            // gradients add up in .grad
}

bool TrainStep::run(int64_t micro_batches, int64_t samples, const NextBatch& next, DeviceMetrics* metrics) {
  in_update_ = false;
  opt_.zero_grad();
  for (int64_t m = 0; m < micro_batches; ++m) {
    if (m + 1 == micro_batches && grad_ready_) {
      autograd::GradAccumulatedHook ready(grad_ready_);  // the last backward reports final gradients
      micro_batch(next(), samples, metrics);
    } else {
      micro_batch(next(), samples, metrics);
    }
  }
  for (auto& hook : hooks_) hook(model_, opt_);                // gradient hooks (all-reduce)
  const bool finite = scaler_->unscale_and_check(opt_);       // unscale + finiteness check
  in_update_ = true;
  if (finite) opt_.step();                                     // optimizer step
  in_update_ = false;
  scaler_->update(finite);
  return finite;
}

Tensor AutocastPolicy::forward(nn::Module& model, const Tensor& x) {
  autocast scope(device_, dtype_);
  return model(x);
}
std::string AutocastPolicy::name() const { return dtype_ == DType::BFloat16 ? "bfloat16" : "float16"; }

}  // namespace ember::train

// One optimizer step, stage by stage: the seams the training engine (fit.h) and the benchmarks
// share. For the micro-batches of one step:
//
//   zero grads
//   for each micro-batch:  forward under the precision policy -> loss -> metrics (on the device)
//                          -> backward of loss x (its samples / the step's samples), scaled
//   gradient hooks        (where a data-parallel all-reduce plugs in; its buckets may already have
//                          started during the last micro-batch's backward: GradReadyHook)
//   unscale + check       (the loss scaler: skip the update when a gradient is not finite)
//   optimizer step
//
// Weighting each micro-batch's mean loss by its share of the step's samples makes the summed
// gradients equal those of one big batch's mean loss, also when the micro-batches differ in size.
// Nothing here reads a value back from the device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/loader.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"

namespace ember::train {

// How the forward pass runs: float32 today (identity); mixed precision plugs an autocast in here.
class PrecisionPolicy {
 public:
  virtual ~PrecisionPolicy() = default;
  virtual Tensor forward(nn::Module& model, const Tensor& x) { return model(x); }
  virtual std::string name() const { return "float32"; }
};

// bfloat16 mixed precision: the forward runs inside ember::autocast (ember/autocast.h: conv, linear
// and matmul in bf16 with f32 accumulation, the rest in f32); parameters and gradients stay f32.
class AutocastPolicy final : public PrecisionPolicy {
 public:
  explicit AutocastPolicy(DeviceType device, DType dtype = DType::BFloat16) : device_(device), dtype_(dtype) {}
  Tensor forward(nn::Module& model, const Tensor& x) override;
  std::string name() const override;

 private:
  DeviceType device_;
  DType dtype_;
};

// The step's loss-scaling seam, for low-precision gradients (the scaler itself is
// optim::LossScaler). The default scales by 1 and finds every step finite without looking (no
// device->host read); DynamicLossScaler (loss_scaling.h, fp16) multiplies the loss, divides the
// gradients back and reports inf/NaN so the step is skipped.
class LossScalePolicy {
 public:
  virtual ~LossScalePolicy() = default;
  virtual Tensor scale(const Tensor& loss) { return loss; }
  // Unscales the gradients in place; false when one is not finite (the optimizer step is skipped).
  virtual bool unscale_and_check(optim::Optimizer&) { return true; }
  // Ends the step with what unscale_and_check returned: true, the gradients were finite.
  virtual void update(bool /*finite*/) {}
  // Whether the loss is scaled (the engine then logs the scale and the skipped steps), and by what.
  virtual bool scaling() const { return false; }
  virtual double current_scale() const { return 1.0; }
  // What a checkpoint keeps (named scalars: the manifest's fit_state.loss_scaler), and its restoration.
  virtual std::map<std::string, double> state() const { return {}; }
  virtual void load_state(const std::map<std::string, double>& /*state*/) {}
};

// The loss of a classification run, one object for training and evaluation: cross-entropy over
// logits (N, C) and int64 labels (N), label smoothing in training only (the evaluation loss is
// plain cross-entropy, comparable between runs). Returns the mean (or the sum) over the batch.
struct LossFunction {
  double label_smoothing = 0.0;
  Tensor operator()(const Tensor& logits, const Tensor& y, bool training, bool sum = false) const;
};

// Called after backward of the last micro-batch, before the optimizer step, in the order added.
using GradientHook = std::function<void(nn::Module&, optim::Optimizer&)>;
// Called during the backward of a step's LAST micro-batch, once per parameter whose gradient has
// just become final for the step (autograd::GradAccumulatedHook): a data-parallel all-reduce of
// the gradients ready so far starts here while backward computes the rest. Never called for the
// earlier micro-batches of an accumulated step, so they cost no communication.
using GradReadyHook = std::function<void(const Tensor& param)>;

// Running sums kept on the device: sum of loss x samples, correct predictions. add() launches a few
// small ops and reads nothing back; read() is the one device->host read (with a probe that is NaN
// when any parameter is not finite). Out-of-place adds, so a copy of the object is a snapshot.
class DeviceMetrics {
 public:
  // `loss` is the batch's mean loss (or, with loss_is_sum, its sum over the samples).
  void add(const Tensor& loss, const Tensor& logits, const Tensor& y, bool loss_is_sum = false);
  struct Values {
    double loss_sum = 0;
    int64_t correct = 0, samples = 0;  // correctly classified samples, samples
    bool weights_finite = true;
  };
  // Reads the sums (and, with `weights`, whether they are all finite) in one transfer.
  Values read(const std::vector<Tensor>& weights = {}) const;
  int64_t samples() const { return samples_; }
  void reset() { *this = DeviceMetrics(); }

 private:
  Tensor loss_sum_, correct_;  // float64 and int64 scalars on the batches' device
  int64_t samples_ = 0;        // known on the host: the batch sizes
};

// The stages of one optimizer step over model, optimizer and seams. Not thread-safe.
class TrainStep {
 public:
  TrainStep(nn::Module& model, optim::Optimizer& opt, LossFunction loss = {});
  void set_precision(std::shared_ptr<PrecisionPolicy> p) { precision_ = std::move(p); }
  void set_loss_scaler(std::shared_ptr<LossScalePolicy> s) { scaler_ = std::move(s); }
  LossScalePolicy& loss_scaler() { return *scaler_; }
  void add_gradient_hook(GradientHook h) { hooks_.push_back(std::move(h)); }
  void set_grad_ready_hook(GradReadyHook h) { grad_ready_ = std::move(h); }
  const LossFunction& loss() const { return loss_; }

  // Supplies the next micro-batch of the step.
  using NextBatch = std::function<data::Batch()>;
  // Runs `micro_batches` micro-batches holding `samples` samples in all, then the update. Adds
  // each micro-batch's loss and accuracy to `metrics` (when given). Returns false when the loss scaler found a
  // non-finite gradient and the update was skipped. An exception (OutOfMemoryError) leaves the
  // gradients partly accumulated: the next run() starts by clearing them.
  bool run(int64_t micro_batches, int64_t samples, const NextBatch& next, DeviceMetrics* metrics = nullptr);
  // The stage that runs one micro-batch (forward, loss, metrics, backward); run() calls it.
  void micro_batch(const data::Batch& b, int64_t step_samples, DeviceMetrics* metrics);
  // True while the optimizer step runs (an error there left the weights partly updated).
  bool in_update() const { return in_update_; }

 private:
  nn::Module& model_;
  optim::Optimizer& opt_;
  LossFunction loss_;
  std::shared_ptr<PrecisionPolicy> precision_;
  std::shared_ptr<LossScalePolicy> scaler_;
  std::vector<GradientHook> hooks_;
  GradReadyHook grad_ready_;
  bool in_update_ = false;
};

}  // namespace ember::train

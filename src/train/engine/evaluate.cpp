// Evaluation of a model on a dataset (evaluate.h): eval mode, no autograd, the run's loss function.
// With a confusion matrix the predictions are read back batch by batch (the final report); without,
// loss and accuracy are summed on the device and read once (the per-epoch evaluation). A stop
// signal ends it before the next batch.
#include "ember/train/evaluate.h"

#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::train {

EvalResult evaluate(nn::Module& model, const data::Dataset& test, const EvalOptions& o) {
  const bool was_training = model.is_training();
  model.eval();
  autograd::NoGradGuard no_grad;
  EvalResult r;
  if (o.confusion) r.confusion.assign(size_t(test.num_classes()), std::vector<int64_t>(size_t(test.num_classes()), 0));
  data::LoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.shuffle = false;
  lo.workers = o.workers;
  lo.device = o.device;
  lo.device_resident = o.device_resident;
  data::DataLoader loader(test, lo);
  loader.begin_epoch(0);
  DeviceMetrics sums;
  while (auto batch = loader.next()) {
    if (o.stop_signal && (r.interrupted = o.stop_signal->load()) != 0) break;  // honoured within a batch
    Tensor logits = model(batch->x);
    sums.add(o.loss(logits, batch->y, /*training=*/false, /*sum=*/true), logits, batch->y, /*loss_is_sum=*/true);
    if (!o.confusion) continue;
    auto pred = argmax(logits, 1).to_vector<int64_t>();
    auto truth = batch->y.to_vector<int64_t>();
    for (size_t i = 0; i < pred.size(); ++i) r.confusion[size_t(truth[i])][size_t(pred[i])]++;
  }
  if (r.interrupted) {
    model.train(was_training);
    r.loss = r.accuracy = NAN;
    r.confusion.clear();
    return r;
  }
  const DeviceMetrics::Values v = sums.read();
  r.samples = v.samples;  // the samples evaluated: a photo that cannot be decoded is left out, not counted wrong
  r.loss = r.samples ? v.loss_sum / double(r.samples) : NAN;
  r.accuracy = r.samples ? double(v.correct) / double(r.samples) : NAN;
  for (const auto& row : r.confusion) {
    int64_t total = 0;
    for (int64_t c : row) total += c;
    r.per_class_accuracy.push_back(total ? double(row[r.per_class_accuracy.size()]) / double(total) : NAN);
  }
  model.train(was_training);
  return r;
}

EvalResult evaluate(nn::Module& model, const data::Dataset& test, int64_t batch_size, Device device, int workers) {
  EvalOptions o;
  o.batch_size = batch_size;
  o.device = device;
  o.workers = workers;
  return evaluate(model, test, o);
}

}  // namespace ember::train

// Evaluating a model on a dataset: its loss, accuracy and (when asked) confusion matrix, in eval
// mode without autograd, batch by batch on a device. The engine (fit.h) runs it after each epoch;
// the end of a run (run_end.h), `ember eval` and the benchmarks call it directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "ember/core/device.h"
#include "ember/data/dataset.h"
#include "ember/nn/module.h"
#include "ember/train/step.h"

namespace ember::train {

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted]; empty without EvalOptions::confusion
  std::vector<double> per_class_accuracy;
  int interrupted = 0;  // the signal that stopped it before the last batch (EvalOptions::stop_signal); 0: complete
};

struct EvalOptions {
  int64_t batch_size = 256;
  Device device = Device::cpu();
  int workers = 1;
  bool device_resident = false;
  bool confusion = true;   // false: loss and accuracy summed on the device, one read at the end
  LossFunction loss = {};  // its evaluation form (no label smoothing)
  // Checked before each batch: non-zero stops the evaluation there (EvalResult::interrupted; the
  // loss and accuracy are then NAN), so a signal is honoured within one batch.
  const std::atomic<int>* stop_signal = nullptr;
};

// Evaluates in eval mode without autograd, batch by batch on `device`.
EvalResult evaluate(nn::Module& model, const data::Dataset& test, const EvalOptions& o);
EvalResult evaluate(nn::Module& model, const data::Dataset& test, int64_t batch_size, Device device, int workers = 1);

}  // namespace ember::train

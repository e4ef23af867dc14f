// The training engine's data-parallel side (fit.h with FitOptions::process_group): rank 0's
// parameters and buffers everywhere at the start, gradients summed in GradBucketer buckets that
// start during the last micro-batch's backward, and the small host-side exchanges the engine needs
// to make the same decision on every rank (metric sums, stop requests, RNG states).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ember/dist/bucketer.h"
#include "ember/dist/process_group.h"
#include "ember/nn/module.h"
#include "ember/train/step.h"

namespace ember::train::detail {

class DataParallel {
 public:
  // Gradients are SUMMED: the engine
  // weights each rank's micro-batch loss by its share of the GLOBAL step, so the sum is the mean
  // over the global batch, also when the ranks hold unequal shares (an epoch's last step).
  DataParallel(dist::ProcessGroup& pg, nn::Module& model, bool overlap, size_t first_bucket_bytes,
               size_t bucket_bytes);
  // DDP's start: rank 0's parameters and buffers on every rank.
  void broadcast_state();
  int rank() const { return pg_.rank(); }
  int size() const { return pg_.size(); }
  dist::ProcessGroup& group() { return pg_; }

  // Plugs the all-reduce into the step (once: the hooks stay with the step): buckets marked ready during backward (overlap) and a
  // gradient hook that waits for them (and gives a parameter without a gradient zeros first).
  void attach(TrainStep& step);
  // PyTorch's broadcast_buffers: rank 0's buffers (batch norm running statistics) everywhere.
  void broadcast_buffers();

  // Every rank's `words` (same length on every rank), rank by rank: a host-side all-gather.
  std::vector<std::vector<uint64_t>> all_gather(const std::vector<uint64_t>& words);

  // Seconds this rank waited on gradient all-reduces (after backward) and on the exchanges.
  double comm_seconds() const { return comm_seconds_; }

 private:
  void finish_step(nn::Module& model);
  dist::ProcessGroup& pg_;
  std::vector<Tensor> params_, buffers_;
  std::unique_ptr<dist::GradBucketer> buckets_;
  std::unordered_map<const void*, size_t> index_;  // parameter TensorImpl -> index
  bool overlap_;
  double comm_seconds_ = 0;
};

// Words <-> doubles, so float sums travel bit-exactly in all_gather.
uint64_t double_bits(double v);
double bits_double(uint64_t w);

}  // namespace ember::train::detail

// Gradient averaging the way PyTorch's DistributedDataParallel does it: parameters are grouped in
// reverse order (backward produces the last layer's gradients first) into buckets, a small first
// one (1 MiB) so communication starts early, then ~25 MiB each; a bucket's gradients are copied
// into one flat buffer and all-reduced (averaged) as soon as every gradient in it is ready, while
// backward computes the rest. finish() waits for every bucket and writes the averages back.
//
// Usage per step: after backward has produced params[i].grad() (e.g. from a gradient hook), call
// mark_ready(i); after backward, finish(). Every rank must hold the same parameters in the same
// order. Not thread-safe; the training engine calls it from its own thread.
#pragma once

#include <cstddef>
#include <vector>

#include <ember/core/tensor.h>
#include <ember/dist/process_group.h>

namespace ember::dist {

class GradBucketer {
 public:
  struct Options {
    size_t first_bucket_bytes = size_t(1) << 20;   // PyTorch: dist._DEFAULT_FIRST_BUCKET_BYTES
    size_t bucket_bytes = size_t(25) << 20;        // PyTorch: bucket_cap_mb = 25
    // avg: the mean over ranks (DDP). sum: for callers that already weighted each rank's loss by
    // its share of the global batch (the training engine, whose ranks may hold unequal shares in
    // an epoch's last step).
    ReduceOp op = ReduceOp::avg;
  };
  // params: float32 tensors of one device kind (the group's); their grads are filled by backward.
  GradBucketer(ProcessGroup& pg, std::vector<Tensor> params, Options options);
  GradBucketer(ProcessGroup& pg, std::vector<Tensor> params) : GradBucketer(pg, std::move(params), Options()) {}

  // params[i]'s gradient is final for this step. Launches its bucket's all-reduce when it was the
  // bucket's last one and every bucket before it has launched (then the ready ones after it). Throws ValueError for an index out of range, one marked twice in a step, or
  // a parameter without a gradient.
  void mark_ready(size_t i);
  // Marks what is left ready (in bucket order), waits for every bucket (each wait bounded by the
  // group's timeout) and copies the averaged gradients back into params[i].grad(). Resets for the
  // next step.
  void finish();

  // The index of `param` (the same tensor as one given to the constructor), or -1.
  int64_t index_of(const Tensor& param) const;
  // The buckets as parameter indices, in launch order (the first holds the last parameters).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }

 private:
  void launch(size_t b);
  ProcessGroup& pg_;
  std::vector<Tensor> params_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;     // param index -> bucket
  std::vector<size_t> offset_in_bucket_;  // param index -> element offset in its bucket's buffer
  std::vector<Tensor> buffers_;       // one flat float32 buffer per bucket
  std::vector<size_t> pending_;       // per bucket: gradients not yet ready
  std::vector<bool> ready_;
  std::vector<WorkPtr> works_;
  size_t next_launch_ = 0;            // buckets launch in order: the next one to launch
  ReduceOp op_ = ReduceOp::avg;
};

}  // namespace ember::dist

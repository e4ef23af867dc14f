// DataLoader: batches of a Dataset, shuffled per epoch, augmented, assembled by worker threads
// into a bounded prefetch queue and staged onto the target device.
//
// Determinism: batch `step` of epoch `epoch` depends only on (seed, epoch, step) and the options:
//   order   = randperm(N) from Generator(splitmix64(seed ^ splitmix64(epoch + 1))), or 0..N-1 when
//             shuffle is off; with shard_count W > 1 only every W-th entry from shard_rank on
//             (PyTorch's DistributedSampler without padding); batch `step` holds
//             order[step*B, min((step+1)*B, order.size()))
//   samples = SampleTransform with Philox keyed by seed, counter by (epoch, dataset index); see
//             transforms.h
// So worker count 0, 1 or 2 give identical batches, and begin_epoch(e, k) resumes exactly where a
// straight run would be at (e, k).
//
// Memory: the loader shares the dataset's uint8 tensor (never copies it); float batches are made on
// the fly: at most `prefetch` assembled or in assembly, plus the one the consumer holds.
//
// Threads: workers write each batch directly (no OpenMP inside a worker, so 2 cores are not
// oversubscribed). The DataLoader itself is used from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/tensor.h"
#include "ember/data/dataset.h"
#include "ember/data/transforms.h"

namespace ember::data {

struct Batch {
  Tensor x;            // float32 (B, C, H, W), transformed, on the loader's device
  Tensor y;            // int64 (B), on the loader's device
  int64_t epoch = 0;
  int64_t step = 0;    // index of this batch within its epoch
};

// Moves assembled batches to the target device. The CPU implementation allocates ordinary host
// tensors and stage() is a no-op; a CUDA implementation allocates pinned host buffers and copies
// asynchronously on its own stream (provided by the CUDA backend).
class BatchStager {
 public:
  virtual ~BatchStager() = default;
  virtual Device device() const = 0;
  // A host tensor the batch is assembled into (pinned on CUDA). Called from worker threads.
  virtual Tensor host_buffer(const Shape& shape, DType dtype) = 0;
  // Takes a batch assembled in host buffers and returns it on device(). Called on the consumer.
  virtual Batch stage(Batch host_batch) = 0;
};
// CPU stager for cpu; for a device whose backend registered a stager (CUDA: pinned host buffers, a
// copy stream, events; see docs/gpu.md) that one, keeping buffers for `ring_batches` batches;
// otherwise a plain synchronous `.to(device)` stager.
std::unique_ptr<BatchStager> make_batch_stager(Device device, int ring_batches = 4);

// `--workers` when the user gives none. Photo sets decode and augment every sample on the CPU, so
// they get the cores the compute threads leave (at least one): on a CUDA run every core but the one
// that drives the GPU, on a CPU run cores - compute_threads. Tensor datasets need one (their
// batches are a gather). cores: usable_cores() (core/threads.h).
int default_loader_workers(bool photos, bool cuda, int compute_threads, int cores);

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;
  int workers = 1;         // 0: batches are assembled in next() on the calling thread
  int prefetch = 2;        // batches assembled ahead of the consumer (>= 1)
  uint64_t seed = 0;
  TransformOptions transforms;
  Device device = Device::cpu();
  // Device-resident mode: put the uint8 dataset on `device` once (when it fits in resident_budget
  // bytes) and assemble whole batches there in one call, with no per-sample host work and no
  // workers. On the CPU the data is already resident, so this is the batched kernel path. On CUDA
  // one kernel gathers and normalises each batch; it applies no augmentation, so with crop, flip
  // or erase on (or over the budget) the loader uses the staged path instead: resident() says which.
  bool device_resident = false;
  int64_t resident_budget = int64_t(2) << 30;
  // Data-parallel training: this rank reads order[shard_rank], order[shard_rank + W], ... of each
  // epoch's order (W = shard_count), so W ranks with batch B see in step k exactly the samples of
  // one process's batch k of W x B. Ranks' shards differ by at most one sample; none is repeated.
  int shard_rank = 0, shard_count = 1;
};

// Accounting for one epoch: how long next() waited for data vs the whole epoch so far. A high
// wait fraction means the device is starving for data.
struct LoaderStats {
  int64_t epoch = 0;
  int64_t batches = 0;         // delivered this epoch
  int64_t samples = 0;
  double wait_seconds = 0;     // inside next(), waiting for a batch
  double total_seconds = 0;    // begin_epoch() to the latest next()
  double compute_seconds() const { return total_seconds - wait_seconds; }
  double wait_fraction() const { return total_seconds > 0 ? wait_seconds / total_seconds : 0.0; }
};

class DataLoader {
 public:
  // Throws ValueError for batch_size < 1, prefetch < 1, workers < 0, an empty dataset or bad
  // transform options.
  DataLoader(Dataset dataset, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts (or restarts) an epoch at batch start_step; any batches of the previous epoch still in
  // flight are dropped. start_step may equal steps_per_epoch() (an empty remainder).
  void begin_epoch(int64_t epoch, int64_t start_step = 0);
  // The next batch of the current epoch, or nullopt at its end. Rethrows a worker's exception.
  std::optional<Batch> next();
  int64_t steps_per_epoch() const;
  // Samples of an epoch this loader delivers: the dataset's size, or this rank's shard of it.
  int64_t epoch_size() const;

  // The sample order of an epoch (dataset indices), a pure function of (seed, epoch).
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  // Assembles one batch synchronously on the calling thread (the reference path; also what
  // workers run). Does not touch the epoch state.
  Batch make_batch(int64_t epoch, int64_t step) const;

  const LoaderStats& stats() const { return stats_; }
  const std::vector<LoaderStats>& history() const { return history_; }  // finished epochs
  const Dataset& dataset() const { return dataset_; }
  const LoaderOptions& options() const { return options_; }
  bool resident() const { return resident_; }  // device-resident mode active

  // Range-for over the rest of the current epoch (epoch 0 if none was begun):
  //   loader.begin_epoch(e); for (Batch& b : loader) ...
  class iterator;
  iterator begin();
  iterator end();

 private:
  struct State;
  Batch assemble(int64_t epoch, int64_t step, const std::vector<int64_t>& order) const;
  Batch assemble_resident(int64_t epoch, int64_t step, const std::vector<int64_t>& order) const;
  Batch assemble_resident_device(int64_t epoch, int64_t step, const std::vector<int64_t>& order) const;
  void stop_workers();
  void finish_stats();

  Dataset dataset_;
  LoaderOptions options_;
  SampleTransform transform_;
  std::unique_ptr<BatchStager> stager_;
  bool resident_ = false;
  Tensor resident_images_;  // the dataset on the device in resident mode
  Tensor resident_labels_;  // off the CPU only: the labels and the transform's (C, 256) table there
  Tensor resident_lut_;
  std::unique_ptr<State> state_;
  LoaderStats stats_;
  std::vector<LoaderStats> history_;
};

class DataLoader::iterator {
 public:
  iterator() = default;
  explicit iterator(DataLoader* loader) : loader_(loader) { ++*this; }
  Batch& operator*() { return *current_; }
  iterator& operator++() {
    current_ = loader_->next();
    if (!current_) loader_ = nullptr;
    return *this;
  }
  bool operator==(const iterator& o) const { return loader_ == o.loader_; }

 private:
  DataLoader* loader_ = nullptr;
  std::optional<Batch> current_;
};

}  // namespace ember::data

// The CUDA TensorStager of the data loader (kernels/data_kernels.h): workers assemble batches into
// pinned host blocks, upload() copies them with cudaMemcpyAsync on the device's copy stream (context.h) into
// device blocks the stager owns, records an event after the copies and makes the compute stream
// wait on it. So the upload of batch k+1 overlaps the kernels of batch k, and the host never waits.
//
// Reuse rules (the reason for own pools instead of the caching allocator):
//   - a pinned block goes back to the free list when its host tensor dies, but is handed out again
//     only once the event recorded after the copy that read it has completed;
//   - a device block goes back when its batch tensor dies; that moment an event is recorded on the
//     compute stream (all kernels that read the batch are queued by then), and the copy stream waits
//     on it before it writes the block again. The caching allocator assumes one stream per device,
//     so its blocks could not be written from the copy stream safely.
// Both pools keep about ring_batches batches' worth of blocks: past that, a worker waits for the
// oldest copy instead of pinning more memory; device blocks grow only while the user holds batches.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/tensor_raw.h"
#include "cuda/allocator.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/pinned.h"
#include "kernels/data_kernels.h"

namespace ember::cuda {

void register_resident_gather();  // data.cu

namespace {

struct Block {
  void* ptr = nullptr;
  size_t bytes = 0;
  cudaEvent_t event = nullptr;  // host: the copy that read it; device: its last user on the compute stream
  bool event_pending = false;   // the event was recorded since the block was last handed out
};

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

// A tensor over `block` whose storage returns the block to `pool` when the last view dies.
template <class Pool>
Tensor tensor_over(const std::shared_ptr<Pool>& pool, Block* block, const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage(new StorageImpl(block->ptr, block->bytes, device, nullptr),
                          [pool, block](StorageImpl* s) {
                            delete s;
                            pool->release(block);
                          });
  impl->strides = contiguous_strides(shape);
  impl->sizes = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

// Picks the smallest free block of at least `bytes` that `usable` accepts; nullptr when none.
template <class F>
Block* take_free(std::vector<Block*>& free, size_t bytes, F usable) {
  auto best = free.end();
  for (auto it = free.begin(); it != free.end(); ++it)
    if ((*it)->bytes >= bytes && (best == free.end() || (*it)->bytes < (*best)->bytes) && usable(*it)) best = it;
  if (best == free.end()) return nullptr;
  Block* b = *best;
  free.erase(best);
  return b;
}

class PinnedPool {
 public:
  PinnedPool(int device, size_t max_blocks) : device_(device), max_blocks_(max_blocks) {}
  ~PinnedPool() {
    // Every host tensor over a block is gone (each holds the pool), but the copy that read a block
    // may still run on the copy stream: freeing its pinned memory now would let the DMA read freed
    // (or reused) pages. Wait for each block's copy first. A destructor must not throw: a failed
    // wait falls back to synchronising the whole device.
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != device_) cudaSetDevice(device_);
    for (auto& b : blocks_)
      if (b->event_pending && b->event && cudaEventSynchronize(b->event) != cudaSuccess) {
        cudaGetLastError();
        cudaDeviceSynchronize();
        break;
      }
    for (auto& b : blocks_) {
      if (b->event) cudaEventDestroy(b->event);
      pinned_free(b->ptr);
    }
    if (prev != device_ && prev >= 0) cudaSetDevice(prev);
  }

  // Called from worker threads.
  Block* acquire(size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    // event_done: a copy still running must not leave cudaErrorNotReady for the next launch check.
    auto copied = [](Block* b) { return !b->event_pending || event_done(b->event); };
    if (Block* b = take_free(free_, bytes, copied)) return ready(b);
    if (blocks_.size() >= max_blocks_) {
      // The ring is full: wait (outside the lock) for the copy of a free block that fits.
      if (Block* b = take_free(free_, bytes, [](Block*) { return true; })) {
        lock.unlock();
        DeviceGuard g(device_);
        EMBER_CUDA_CHECK(cudaEventSynchronize(b->event));
        return ready(b);
      }
    }
    auto block = std::make_unique<Block>();
    block->bytes = bytes;
    block->ptr = pinned_allocate(bytes);
    {
      DeviceGuard g(device_);
      block->event = new_event();
    }
    blocks_.push_back(std::move(block));
    return blocks_.back().get();
  }
  void release(Block* b) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }
  // The block whose memory starts at `p`, or nullptr (a host tensor the pool did not hand out).
  Block* find(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : blocks_)
      if (b->ptr == p) return b.get();
    return nullptr;
  }

 private:
  static Block* ready(Block* b) {
    b->event_pending = false;
    return b;
  }
  int device_;
  size_t max_blocks_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<Block*> free_;
};

class DevicePool {
 public:
  explicit DevicePool(int device) : device_(device) {}
  ~DevicePool() {
    // Every tensor over a block is gone (each holds the pool); the last copies and kernels may
    // still run. A destructor must not throw: failures here only skip the wait.
    try {
      DeviceGuard g(device_);
      cudaStreamSynchronize(copy_stream(device_));
      cudaStreamSynchronize(stream(device_));
    } catch (...) {
    }
    for (auto& b : blocks_) {
      if (b->event) cudaEventDestroy(b->event);
      caching_allocator().deallocate(b->ptr, b->bytes, Device::cuda(device_));
    }
  }

  // Called on the consumer thread, with the device current. Orders the copy stream after the
  // block's previous readers.
  Block* acquire(size_t bytes) {
    Block* b = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      b = take_free(free_, bytes, [](Block*) { return true; });
    }
    if (b == nullptr) {
      auto block = std::make_unique<Block>();
      block->bytes = bytes;
      block->ptr = caching_allocator().allocate(bytes, Device::cuda(device_));
      block->event = new_event();
      // A cached block may still be read by queued kernels of its previous owner.
      EMBER_CUDA_CHECK(cudaEventRecord(block->event, stream(device_)));
      block->event_pending = true;
      std::lock_guard<std::mutex> lock(mu_);
      blocks_.push_back(std::move(block));
      b = blocks_.back().get();
    }
    if (b->event_pending) EMBER_CUDA_CHECK(cudaStreamWaitEvent(copy_stream(device_), b->event, 0));
    b->event_pending = false;
    return b;
  }
  // The batch tensor died on the host: everything that reads it is queued on the compute stream.
  void release(Block* b) noexcept {
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != device_) cudaSetDevice(device_);
    b->event_pending = cudaEventRecord(b->event, stream_noexcept()) == cudaSuccess;
    if (!b->event_pending) cudaStreamSynchronize(stream_noexcept());  // cannot order it: wait instead
    if (prev != device_ && prev >= 0) cudaSetDevice(prev);
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }

 private:
  cudaStream_t stream_noexcept() noexcept {
    try {
      return stream(device_);
    } catch (...) {
      return nullptr;
    }
  }
  int device_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<Block*> free_;
};

class CudaStager final : public kernels::TensorStager {
 public:
  CudaStager(Device device, int ring_batches) : device_(device), ring_blocks_(size_t(std::max(ring_batches, 1)) * 2) {}
  ~CudaStager() override {
    if (ready_) cudaEventDestroy(ready_);  // the event's device need not be current
  }

  Tensor host_buffer(const Shape& shape, DType dtype) override {
    init();
    const size_t bytes = std::max<size_t>(size_t(shape_numel(shape)) * dtype_size(dtype), 1);
    return tensor_over(pinned_, pinned_->acquire(bytes), shape, dtype, Device::cpu());
  }

  std::vector<Tensor> upload(const std::vector<Tensor>& host) override {
    init();
    DeviceGuard g(device_.index);
    const cudaStream_t copy = copy_stream(device_.index);
    std::vector<Tensor> out;
    out.reserve(host.size());
    for (const Tensor& t : host) out.push_back(upload(t, copy));
    // The compute stream starts on these tensors only after their copies; the host does not wait.
    EMBER_CUDA_CHECK(cudaEventRecord(ready_, copy));
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(stream(device_.index), ready_, 0));
    return out;  // the callers' pinned blocks return to the pool when released, marked with their copy events
  }

 private:
  void init() {
    std::call_once(init_once_, [&] {
      check_device(device_);
      DeviceGuard g(device_.index);
      pinned_ = std::make_shared<PinnedPool>(device_.index, ring_blocks_);
      device_pool_ = std::make_shared<DevicePool>(device_.index);
      ready_ = new_event();
    });
  }

  Tensor upload(const Tensor& host, cudaStream_t copy) {
    Tensor src = core::contiguous(core::to(host, Device::cpu()));
    const size_t bytes = std::max<size_t>(src.nbytes(), 1);
    Block* dst = device_pool_->acquire(bytes);
    Tensor out = tensor_over(device_pool_, dst, src.sizes(), src.dtype(), device_);
    if (src.nbytes() == 0) return out;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst->ptr, src.raw_data(), src.nbytes(), cudaMemcpyHostToDevice, copy));
    // Only our pinned blocks are read asynchronously; a pageable source was staged by the driver
    // before cudaMemcpyAsync returned.
    if (src.storage_offset() == 0)
      if (Block* hb = pinned_->find(src.raw_data())) {
        EMBER_CUDA_CHECK(cudaEventRecord(hb->event, copy));
        hb->event_pending = true;
      }
    return out;
  }

  Device device_;
  size_t ring_blocks_;
  std::once_flag init_once_;
  std::shared_ptr<PinnedPool> pinned_;
  std::shared_ptr<DevicePool> device_pool_;
  cudaEvent_t ready_ = nullptr;
};

std::unique_ptr<kernels::TensorStager> make_stager(Device device, int ring_batches) {
  return std::make_unique<CudaStager>(device, ring_batches);
}

}  // namespace

void register_data_hooks() {
  kernels::tensor_stager.set(DeviceType::CUDA, &make_stager);
  register_resident_gather();
}

}  // namespace ember::cuda

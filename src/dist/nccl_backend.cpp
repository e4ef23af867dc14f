// The GPU backend: NCCL, with rank 0's ncclUniqueId passed through the TcpStore. The communicator is
// non-blocking (ncclConfig_t::blocking = 0), so nothing ember asks of NCCL can block the host:
// init, every collective and every wait poll ncclCommGetAsyncError against a deadline, and a
// deadline or an error aborts the communicator (ncclCommAbort), NCCL's documented way out of a
// collective whose peer is gone. Collectives run on the group's own stream, ordered after the work
// already queued on ember's stream of the device (an event), so they overlap later kernels.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "cuda/check.h"
#include "cuda/context.h"
#include "dist/backends.h"
#include "dist/work_queue.h"

namespace ember::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') s += std::string(": ") + last;
  }
  return s;
}

class NcclGroup;

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclGroup> group, std::string what, cudaEvent_t done, std::vector<Tensor> keep)
      : group_(group), what_(std::move(what)), done_(done), keep_(std::move(keep)) {}
  ~NcclWork() override;
  void wait() override;
  void wait(std::chrono::milliseconds timeout) override;
  bool is_completed() override;

 private:
  std::shared_ptr<NcclGroup> group_;  // the communicator outlives every pending collective
  std::string what_;
  cudaEvent_t done_;
  std::vector<Tensor> keep_;  // the tensors stay allocated until the collective is done
  bool finished_ = false;
};

class NcclGroup : public ProcessGroup, public std::enable_shared_from_this<NcclGroup> {
 public:
  NcclGroup(int rank, int size, std::chrono::milliseconds timeout, std::shared_ptr<TcpStore> store,
            const std::string& prefix, int device)
      : ProcessGroup(rank, size, timeout, std::move(store)), device_(device) {
    cuda::check_device(Device::cuda(device));
    cuda::DeviceGuard guard(device_);
    int version = 0;
    ncclGetVersion(&version);  // loads libnccl: a CudaError naming the fix when it is missing
    ncclUniqueId id;
    const std::string key = prefix + "nccl_unique_id";
    if (rank == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store_->set(key, std::string(reinterpret_cast<const char*>(&id), sizeof id));
    } else {
      const std::string v = store_->get(key, timeout_);
      EMBER_ASSERT(v.size() == sizeof id, "the NCCL unique id in the store has ", v.size(), " bytes");
      std::memcpy(&id, v.data(), sizeof id);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) fail("ncclCommInitRankConfig", r, false);
    settle("creating the NCCL communicator");
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    EMBER_CUDA_CHECK(cudaMalloc(&barrier_buf_, sizeof(float)));
    // On the group's own stream (non-blocking, so the legacy stream's cudaMemset would not order
    // before the barrier's all-reduce on it), and finished before the first collective is queued.
    EMBER_CUDA_CHECK(cudaMemsetAsync(barrier_buf_, 0, sizeof(float), stream_));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream_));
    version_ = version;
  }

  ~NcclGroup() override {
    cuda::DeviceGuard guard(device_);
    if (comm_ != nullptr) {
      if (!broken_) {
        // Finalize flushes pending work; bounded like everything else, else abort.
        ncclResult_t st = ncclCommFinalize(comm_);
        const auto deadline = Clock::now() + timeout_;
        while (st == ncclInProgress && Clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          ncclCommGetAsyncError(comm_, &st);
        }
        if (st == ncclSuccess) ncclCommDestroy(comm_);
        else ncclCommAbort(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    if (barrier_buf_ != nullptr) cudaFree(barrier_buf_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  std::string backend() const override { return "nccl"; }

  WorkPtr all_reduce(Tensor& t, ReduceOp op) override {
    check_tensor(t, "all_reduce");
    EMBER_CHECK(t.dtype() == DType::Float32, DTypeError, "dist::all_reduce: float32 tensors only, got ",
                dtype_name(t.dtype()));
    void* p = t.raw_data();
    const size_t n = size_t(t.numel());
    return launch(detail::cat("all_reduce of ", n, " floats"), {t}, [&] {
      return ncclAllReduce(p, p, n, ncclFloat32, op == ReduceOp::avg ? ncclAvg : ncclSum, comm_, stream_);
    });
  }

  WorkPtr broadcast(Tensor& t, int root) override {
    check_tensor(t, "broadcast");
    EMBER_CHECK(root >= 0 && root < size_, ValueError, "dist::broadcast: root ", root, " is not a rank of a world of ",
                size_);
    void* p = t.raw_data();
    const size_t n = t.nbytes();
    return launch(detail::cat("broadcast of ", n, " bytes from rank ", root), {t},
                  [&] { return ncclBroadcast(p, p, n, ncclChar, root, comm_, stream_); });
  }

  WorkPtr all_gather(const Tensor& in, Tensor& out) override {
    check_tensor(in, "all_gather");
    check_tensor(out, "all_gather");
    EMBER_CHECK(out.dtype() == in.dtype() && out.nbytes() == in.nbytes() * size_t(size_), ShapeError,
                "dist::all_gather: the output must hold world size (", size_, ") x input (", in.numel(), " ",
                dtype_name(in.dtype()), "), got ", out.numel(), " ", dtype_name(out.dtype()));
    const void* src = in.raw_data();
    void* dst = out.raw_data();
    const size_t n = in.nbytes();
    return launch(detail::cat("all_gather of ", n, " bytes"), {in, out},
                  [&] { return ncclAllGather(src, dst, n, ncclChar, comm_, stream_); });
  }

  WorkPtr barrier() override {
    return launch("barrier", {},
                  [&] { return ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, stream_); });
  }

  // Polls until the event is done or the deadline; false on deadline. Throws (and aborts the
  // communicator) on an asynchronous NCCL error.
  bool poll_event(cudaEvent_t ev, Clock::time_point deadline, const std::string& what) {
    cuda::DeviceGuard guard(device_);
    auto next_watch = Clock::now() + std::chrono::seconds(1);
    for (auto pause = std::chrono::microseconds(20);; pause = std::min(pause * 2, std::chrono::microseconds(2000))) {
      if (broken_) std::rethrow_exception(broken_);
      if (cuda::event_done(ev)) return true;  // clears cudaErrorNotReady, throws on a real error
      ncclResult_t st = ncclSuccess;
      ncclCommGetAsyncError(comm_, &st);
      if (st != ncclSuccess && st != ncclInProgress) fail(what, st, false);
      if (Clock::now() >= deadline) return false;
      if (Clock::now() >= next_watch) {
        // As for Gloo: a rank the store saw die ends the wait now, not at the deadline.
        next_watch = Clock::now() + std::chrono::seconds(1);
        if (std::exception_ptr lost = lost_peer_failure(*this, what)) {
          ncclCommAbort(comm_);
          comm_ = nullptr;
          broken_ = lost;
          std::rethrow_exception(lost);
        }
      }
      std::this_thread::sleep_for(pause);
    }
  }

  [[noreturn]] void fail(const std::string& what, ncclResult_t r, bool timed_out) {
    const std::string raw = comm_ ? nccl_text(r, comm_) : std::string(ncclGetErrorString(r));
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);  // unblocks the GPU; the communicator is unusable from here on
      comm_ = nullptr;
    }
    broken_ = collective_failure(*this, what, raw, timed_out);
    std::rethrow_exception(broken_);
  }
  [[noreturn]] void fail_timeout(const std::string& what) { fail(what, ncclInProgress, true); }
  int device() const { return device_; }

 private:
  void check_tensor(const Tensor& t, const char* op) {
    EMBER_CHECK(t.defined(), ValueError, "dist::", op, ": undefined tensor");
    EMBER_CHECK(t.is_cuda() && t.device().index == device_, DeviceError, "dist::", op, " (nccl backend): the tensor is on ",
                t.device().str(), ", this group's device is cuda:", device_);
    EMBER_CHECK(t.is_contiguous(), ValueError, "dist::", op, ": the tensor must be contiguous (call .contiguous())");
  }

  void check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) fail(what, r, false);
  }

  // Waits (bounded) for a non-blocking call to leave ncclInProgress.
  void settle(const std::string& what) {
    const auto deadline = Clock::now() + timeout_;
    for (;;) {
      ncclResult_t st = ncclSuccess;
      ncclCommGetAsyncError(comm_, &st);
      if (st == ncclSuccess) return;
      if (st != ncclInProgress) fail(what, st, false);
      if (Clock::now() >= deadline) fail_timeout(what);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  template <class F>
  WorkPtr launch(const std::string& what, std::vector<Tensor> keep, F&& call) {
    if (broken_) std::rethrow_exception(broken_);
    cuda::DeviceGuard guard(device_);
    cudaEvent_t ready = nullptr, done = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(ready, cuda::stream(device_)));  // after the kernels that wrote the tensor
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
    cudaEventDestroy(ready);
    const ncclResult_t r = call();
    if (r == ncclInProgress) settle(what);
    else if (r != ncclSuccess) fail(what, r, false);
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(done, stream_));
    return std::make_shared<NcclWork>(shared_from_this(), what, done, std::move(keep));
  }

  int device_;
  int version_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* barrier_buf_ = nullptr;
  std::exception_ptr broken_;
};

NcclWork::~NcclWork() {
  if (done_ != nullptr) {
    // A collective still in flight keeps its tensors: wait for it (bounded) before freeing them.
    if (!finished_) {
      try {
        group_->poll_event(done_, Clock::now() + group_->timeout(), what_);
      } catch (...) {
      }
    }
    cudaEventDestroy(done_);
  }
}

void NcclWork::wait() { wait(group_->timeout()); }

void NcclWork::wait(std::chrono::milliseconds timeout) {
  if (finished_) return;
  if (!group_->poll_event(done_, Clock::now() + timeout, what_)) group_->fail_timeout(what_);
  finished_ = true;
}

bool NcclWork::is_completed() {
  if (finished_) return true;
  cuda::DeviceGuard guard(group_->device());
  return cuda::event_done(done_);
}

}  // namespace

std::shared_ptr<ProcessGroup> make_nccl_group(int rank, int size, std::chrono::milliseconds timeout,
                                              std::shared_ptr<TcpStore> store, const std::string& prefix,
                                              int device) {
  return std::make_shared<NcclGroup>(rank, size, timeout, std::move(store), prefix, device);
}

}  // namespace ember::dist

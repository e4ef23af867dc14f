// The CPU backend: Gloo (Debian libgloo-dev) over TCP. The ranks exchange their pair addresses
// through our TcpStore (an adapter to gloo::rendezvous::Store), then every collective runs on the
// group's worker thread with Gloo's per-operation timeout, so a stopped peer costs at most the
// timeout and a dead one a closed socket (seconds). Compiled only when Gloo is found.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <pthread.h>
#include <mutex>
#include <signal.h>

#include "dist/backends.h"
#include "dist/work_queue.h"

namespace ember::dist {
namespace {

// gloo's view of our store: keys under a prefix, blocking gets bounded by the group's timeout.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(TcpStore& store, std::string prefix, std::chrono::milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = store_.get(prefix_ + key, timeout_);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    store_.wait(full, timeout);
  }

 private:
  TcpStore& store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

void check_cpu_contiguous(const Tensor& t, const char* op, const char* arg) {
  EMBER_CHECK(t.defined(), ValueError, "dist::", op, ": ", arg, " is an undefined tensor");
  EMBER_CHECK(t.is_cpu(), DeviceError, "dist::", op, " (gloo backend): ", arg, " is on ", t.device().str(),
              "; gloo reduces CPU tensors (use the nccl backend for CUDA tensors)");
  EMBER_CHECK(t.is_contiguous(), ValueError, "dist::", op, ": ", arg, " must be contiguous (call .contiguous())");
}

// Gloo writes to its sockets without MSG_NOSIGNAL, so a write to a dead peer raises SIGPIPE, whose
// default action kills the whole process before gloo can throw (seen: the survivor of a killed rank
// exited 141 in 1 of ~6 runs). SIGPIPE is sent to the writing thread, so blocking it in the threads
// that do gloo's I/O — the caller while it connects (gloo's device thread inherits its mask) and the
// group's worker — turns it into the EPIPE gloo reports, without touching the process's handlers.
class BlockSigpipe {
 public:
  BlockSigpipe() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSigpipe() {
    // Drop a SIGPIPE raised while blocked, or restoring the mask would deliver it.
    sigset_t pending, pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    const timespec zero{0, 0};
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe, nullptr, &zero);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
};

// Keeps what a destroyed, broken group left behind reachable from a global (never freed), so leak
// checkers (LeakSanitizer in the ASan build) do not report it.
void abandon(std::shared_ptr<void> p) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::move(p));
}

class GlooGroup : public ProcessGroup {
 public:
  GlooGroup(int rank, int size, std::chrono::milliseconds timeout, std::shared_ptr<TcpStore> store,
            const std::string& prefix)
      : ProcessGroup(rank, size, timeout, std::move(store)) {
    gloo::transport::tcp::attr attr;
    // The address the other ranks reach us at: the interface that routes to rank 0's store.
    attr.hostname = store_->local_address();
    BlockSigpipe block;
    queue_ = std::make_unique<WorkQueue>();  // its thread inherits the blocked SIGPIPE
    try {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      GlooStore gs(*store_, prefix + "gloo/", timeout);
      context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context_->setTimeout(timeout);
      context_->connectFullMesh(gs, device);
      // Every rank's side of the mesh is connected only when all have returned from
      // connectFullMesh: until then a rank that went on and closed its group (a short job, a test
      // whose body ran no collective) made a peer still connecting fail with "Connection closed by
      // peer" (DistCollectives.BadArgumentsAreTypedErrors, once in a CI run). Meet at the store.
      store_->set(prefix + "gloo/connected/" + std::to_string(rank), "1");
      std::vector<std::string> all;
      for (int r = 0; r < size; ++r) all.push_back(prefix + "gloo/connected/" + std::to_string(r));
      store_->wait(all, timeout);
    } catch (const DistError&) {
      throw;
    } catch (const std::exception& e) {
      std::rethrow_exception(collective_failure(*this, "connecting the gloo mesh", e.what(),
                                                std::string(e.what()).find("Timed out") != std::string::npos));
    }
  }
  ~GlooGroup() override {
    if (broken()) {
      // The worker may still sit in a gloo call that only its timeout will end (the watchdog
      // failed the wait first). Joining it would hold the caller, usually a process on its way
      // out with the error, for up to the timeout: leave the thread and the context behind; the
      // guard keeps the worker from touching this object afterwards.
      {
        std::lock_guard<std::mutex> lock(guard_->mu);
        guard_->dead = true;
      }
      abandon(std::shared_ptr<void>(queue_.release(), [](void*) {}));  // its thread still runs
      abandon(context_);  // gloo may still use it
      return;
    }
    queue_.reset();
  }

  std::string backend() const override { return "gloo"; }

  WorkPtr all_reduce(Tensor& t, ReduceOp op) override {
    check_cpu_contiguous(t, "all_reduce", "the tensor");
    EMBER_CHECK(t.dtype() == DType::Float32, DTypeError, "dist::all_reduce: float32 tensors only, got ",
                dtype_name(t.dtype()));
    float* p = t.data_ptr<float>();
    const size_t n = size_t(t.numel());
    const uint32_t tag = next_tag_++;
    const int world = size_;
    return enqueue(detail::cat("all_reduce of ", n, " floats"), [this, p, n, tag, op, world] {
      gloo::AllreduceOptions o(context_);
      o.setInput(p, n);
      o.setOutput(p, n);
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::allreduce(o);
      if (op == ReduceOp::avg) {
        const float inv = 1.0f / float(world);
        for (size_t i = 0; i < n; ++i) p[i] *= inv;
      }
    }, t);
  }

  WorkPtr broadcast(Tensor& t, int root) override {
    check_cpu_contiguous(t, "broadcast", "the tensor");
    EMBER_CHECK(root >= 0 && root < size_, ValueError, "dist::broadcast: root ", root, " is not a rank of a world of ",
                size_);
    char* p = static_cast<char*>(t.raw_data());
    const size_t n = t.nbytes();
    const uint32_t tag = next_tag_++;
    return enqueue(detail::cat("broadcast of ", n, " bytes from rank ", root), [this, p, n, tag, root] {
      gloo::BroadcastOptions o(context_);
      if (rank_ == root) o.setInput(p, n);
      o.setOutput(p, n);
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::broadcast(o);
    }, t);
  }

  WorkPtr all_gather(const Tensor& in, Tensor& out) override {
    check_cpu_contiguous(in, "all_gather", "input");
    check_cpu_contiguous(out, "all_gather", "output");
    EMBER_CHECK(out.dtype() == in.dtype() && out.nbytes() == in.nbytes() * size_t(size_), ShapeError,
                "dist::all_gather: the output must hold world size (", size_, ") x input (", in.numel(), " ",
                dtype_name(in.dtype()), "), got ", out.numel(), " ", dtype_name(out.dtype()));
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const size_t n = in.nbytes();
    const uint32_t tag = next_tag_++;
    const int world = size_;
    return enqueue(detail::cat("all_gather of ", n, " bytes"), [this, src, dst, n, tag, world] {
      gloo::AllgatherOptions o(context_);
      o.setInput(const_cast<char*>(src), n);
      o.setOutput(dst, n * size_t(world));
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::allgather(o);
    }, in, out);
  }

  WorkPtr barrier() override {
    const uint32_t tag = next_tag_++;
    return enqueue("barrier", [this, tag] {
      gloo::BarrierOptions o(context_);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::barrier(o);
    });
  }

 private:
  // Runs fn on the worker thread; gloo's errors become typed errors naming the peer. Keeps the
  // tensors alive until the collective is done. Once one collective failed, the pairs are
  // unusable: later ones fail at once with the first error.
  template <class... Keep>
  WorkPtr enqueue(std::string what, std::function<void()> fn, Keep... keep) {
    auto work = std::make_shared<QueuedWork>(what, rank_, timeout_, [this, what]() -> std::exception_ptr {
      std::exception_ptr lost = lost_peer_failure(*this, what);
      if (lost) set_broken(lost);
      return lost;
    });
    if (size_ == 1) {
      // A world of one has nobody to wait for: no hand-off to the worker thread (measured: it cost
      // lenet5 2-7 ms per step on this loaded 2-core machine, for a no-op all-reduce).
      std::exception_ptr error;
      try {
        fn();
      } catch (...) {
        error = std::current_exception();
      }
      work->finish(error);
      return work;
    }
    queue_->push(work, [this, guard = guard_, what, fn = std::move(fn), keep...] {
      {
        std::lock_guard<std::mutex> lock(guard->mu);
        if (guard->dead) throw PeerFailureError("the process group was destroyed");
        if (std::exception_ptr b = broken()) std::rethrow_exception(b);
      }
      try {
        fn();  // touches only gloo's own copy of the context once inside gloo
      } catch (const gloo::Exception& e) {
        const std::string raw = e.what();
        // `this` may be gone if the group was destroyed while gloo blocked (see ~GlooGroup).
        std::lock_guard<std::mutex> lock(guard->mu);
        if (guard->dead) throw PeerFailureError("the process group was destroyed [" + raw + "]");
        if (std::exception_ptr b = broken()) std::rethrow_exception(b);  // the watchdog was first
        set_broken(collective_failure(*this, what, raw, raw.find("Timed out") != std::string::npos));
        std::rethrow_exception(broken());
      }
    });
    return work;
  }

  std::exception_ptr broken() {
    std::lock_guard<std::mutex> lock(broken_mu_);
    return broken_;
  }
  void set_broken(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(broken_mu_);
    if (!broken_) broken_ = std::move(e);
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t next_tag_ = 1;
  struct Guard {
    std::mutex mu;
    bool dead = false;
  };
  std::shared_ptr<Guard> guard_ = std::make_shared<Guard>();
  std::mutex broken_mu_;
  std::exception_ptr broken_;  // the first failure; later collectives fail with it at once
  std::unique_ptr<WorkQueue> queue_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_gloo_group(int rank, int size, std::chrono::milliseconds timeout,
                                              std::shared_ptr<TcpStore> store, const std::string& prefix) {
  return std::make_shared<GlooGroup>(rank, size, timeout, std::move(store), prefix);
}

}  // namespace ember::dist

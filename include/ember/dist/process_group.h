// The process group: the collectives data-parallel training needs (all_reduce, broadcast,
// all_gather, barrier) behind one interface, with a Gloo backend for CPU tensors and an NCCL
// backend for CUDA tensors. Every collective is asynchronous: it returns a Work handle at once and
// runs in issue order; Work::wait() blocks at most its timeout.
//
// Faults never hang. Each collective carries the group's timeout; a timeout throws
// DistTimeoutError, a peer that dies throws PeerFailureError naming that rank and its host (the
// rendezvous store tells which rank's connection dropped). After a failure the group is broken:
// every later call throws the same error at once. Call from one thread at a time; the
// tensors of a pending collective must stay alive and untouched until its wait() returns.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ember/core/tensor.h>
#include <ember/dist/env.h>
#include <ember/dist/error.h>
#include <ember/dist/store.h>

namespace ember::dist {

enum class ReduceOp { sum, avg };

// A pending collective.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until done; rethrows its error (PeerFailureError, DistTimeoutError). The backend bounds
  // each collective by the group's timeout; this waits up to twice that plus 10 s for its verdict.
  virtual void wait() = 0;
  // Blocks at most `timeout`; DistTimeoutError naming the rank and collective when not done.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  virtual std::string backend() const = 0;  // "gloo" or "nccl"
  // The store the ranks met at (host names, fingerprints).
  TcpStore& store() { return *store_; }

  // In place over every rank: t = sum (or mean) of the ranks' t. float32, contiguous, on the
  // group's device kind (CPU for gloo, CUDA for nccl); same shape on every rank.
  virtual WorkPtr all_reduce(Tensor& t, ReduceOp op = ReduceOp::sum) = 0;
  // t = root's t on every rank. Any dtype, contiguous.
  virtual WorkPtr broadcast(Tensor& t, int root = 0) = 0;
  // out (shape (size, *in.shape), contiguous, in's dtype) row r = rank r's `in`.
  virtual WorkPtr all_gather(const Tensor& in, Tensor& out) = 0;
  virtual WorkPtr barrier() = 0;

  // "rank 1 (host h, pid 123)" for messages; from the store (every rank posts it at start).
  std::string describe_rank(int r);

 protected:
  ProcessGroup(int rank, int size, std::chrono::milliseconds timeout, std::shared_ptr<TcpStore> store)
      : rank_(rank), size_(size), timeout_(timeout), store_(std::move(store)) {}
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<TcpStore> store_;
};

struct InitOptions {
  std::string backend = "auto";  // "auto" (nccl for a CUDA device, else gloo), "gloo", "nccl"
  Device device = Device::cpu();  // nccl: the CUDA device this rank uses (usually cuda:LOCAL_RANK)
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  // every collective and rendezvous
  WorldInfo world;               // usually world_from_env()
  // Optional: a store already connected (tests); by default rank 0 serves one at
  // world.master_addr:master_port and every rank connects to it.
  std::shared_ptr<TcpStore> store;
};

// Meets the other ranks at the store, posts this rank's host and pid, and connects the backend.
// Throws DistError for an unknown backend or one this build lacks (saying how to get it),
// DistTimeoutError when a rank does not arrive within the timeout.
std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options);

// Which backends this build carries ("gloo", "nccl").
std::vector<std::string> available_backends();

// DDP's start: every tensor (parameters and buffers, in the same order on every rank) takes
// root's values. The broadcasts are all issued, then waited for, so they pipeline.
void broadcast_tensors(ProcessGroup& pg, const std::vector<Tensor>& tensors, int root = 0);

// Refuses ranks that disagree: every rank gives `value` under `name` (a config hash, the dataset's
// checksum, the ember version); each gathers all ranks' values through the store and throws
// ConfigMismatchError on every rank when any differs, naming the ranks and both values (long
// values are cut to their first difference). Call it on every rank, in the same order.
void check_same(ProcessGroup& pg, const std::string& name, const std::string& value);

}  // namespace ember::dist

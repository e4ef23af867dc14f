// The asynchronous side of the CPU backends: collectives are closures run in issue order by one
// worker thread per process group (every rank must issue them in the same order), each with a
// Work handle the caller waits on with a timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ember/dist/process_group.h"

namespace ember::dist {

class QueuedWork : public Work {
 public:
  // Called about once a second while wait() blocks; returns the error to fail with when a peer is
  // known to be gone (see lost_peer_failure), null otherwise.
  using Watchdog = std::function<std::exception_ptr()>;
  QueuedWork(std::string what, int rank, std::chrono::milliseconds default_timeout, Watchdog watchdog = {})
      : what_(std::move(what)), rank_(rank), default_timeout_(default_timeout), watchdog_(std::move(watchdog)) {}
  // The backend bounds each collective by the group's timeout and reports why it failed; the
  // default wait gives it that long plus a margin (queued collectives start later), so its
  // message, naming the peer, is the one the caller sees.
  void wait() override { wait(default_timeout_ * 2 + std::chrono::seconds(10)); }
  void wait(std::chrono::milliseconds timeout) override;
  bool is_completed() override;
  void finish(std::exception_ptr error);
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  int rank_;
  std::chrono::milliseconds default_timeout_;
  Watchdog watchdog_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class WorkQueue {
 public:
  WorkQueue();
  ~WorkQueue();  // runs what is queued, then stops
  // Queues fn; the returned work finishes when fn returns (or with what it throws).
  void push(std::shared_ptr<QueuedWork> work, std::function<void()> fn);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<QueuedWork>, std::function<void()>>> items_;
  bool stop_ = false;
  std::thread thread_;
};

// The error to throw for a collective that failed with `raw` (the backend's own message): asks the
// store which ranks' connections dropped (waiting up to ~2 s for the server to notice) and names
// them with their hosts; a store that cannot be reached means rank 0 died. `timed_out`: the
// backend gave up waiting rather than seeing a closed connection.
std::exception_ptr collective_failure(ProcessGroup& pg, const std::string& what, const std::string& raw,
                                      bool timed_out);

// The watchdog's question, without waiting: has the store seen a rank's connection drop, or is the
// store (rank 0) itself gone? Returns the PeerFailureError to throw, or null. Gloo does not always
// notice a dead peer by itself: in ~1 of 20 runs a survivor whose send was pending waited out the
// whole timeout (gloo's "Timed out waiting 60000ms for send operation to complete").
std::exception_ptr lost_peer_failure(ProcessGroup& pg, const std::string& what);

}  // namespace ember::dist

// Work handles, the worker thread that runs a CPU group's collectives in order, and the failure
// report that turns a backend's "connection closed" into "rank 1 (host h, pid p) died".
#include "dist/work_queue.h"

#include <algorithm>
#include <thread>

#include "dist/socket.h"

namespace ember::dist {

void QueuedWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done_ && std::chrono::steady_clock::now() < deadline) {
    const auto slice = std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1),
                                                                     deadline - std::chrono::steady_clock::now());
    if (cv_.wait_for(lock, slice, [&] { return done_; })) break;
    if (watchdog_) {
      lock.unlock();
      std::exception_ptr lost = watchdog_();
      lock.lock();
      if (lost && !done_) std::rethrow_exception(lost);
    }
  }
  if (!done_) {
    throw DistTimeoutError(detail::cat("rank ", rank_, " (host ", net::hostname(), "): ", what_, " did not finish within ",
                                       timeout.count() / 1000.0, " s"),
                           "a peer is slow, stopped or stuck; raise the timeout only if the peers are known to be alive");
  }
  if (error_) std::rethrow_exception(error_);
}

bool QueuedWork::is_completed() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void QueuedWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

WorkQueue::WorkQueue() : thread_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WorkQueue::push(std::shared_ptr<QueuedWork> work, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.emplace_back(std::move(work), std::move(fn));
  }
  cv_.notify_all();
}

void WorkQueue::loop() {
  for (;;) {
    std::pair<std::shared_ptr<QueuedWork>, std::function<void()>> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !items_.empty(); });
      if (items_.empty()) return;
      item = std::move(items_.front());
      items_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.second();
    } catch (...) {
      error = std::current_exception();
    }
    item.first->finish(error);
  }
}

std::exception_ptr lost_peer_failure(ProcessGroup& pg, const std::string& what) {
  std::vector<int> lost;
  try {
    // Short: a store that cannot answer in 10 s belongs to a rank 0 that is stopped or gone.
    lost = pg.store().lost_ranks(std::min<std::chrono::milliseconds>(pg.timeout(), std::chrono::seconds(10)));
  } catch (const std::exception& e) {
    if (pg.rank() == 0) return nullptr;
    return collective_failure(pg, what, e.what(), false);
  }
  if (lost.empty()) return nullptr;
  return collective_failure(pg, what, "seen by the watchdog: the rank's store connection closed", false);
}

std::exception_ptr collective_failure(ProcessGroup& pg, const std::string& what, const std::string& raw,
                                      bool timed_out) {
  std::vector<int> lost;
  bool store_gone = false;
  std::string store_error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  try {
    // The server sees the dead rank's store connection close at about the time we saw its
    // collective socket close; give it a moment.
    for (;;) {
      lost = pg.store().lost_ranks(std::min<std::chrono::milliseconds>(pg.timeout(), std::chrono::seconds(10)));
      if (!lost.empty() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception& e) {
    store_gone = true;
    store_error = e.what();
  }
  const std::string head = detail::cat("rank ", pg.rank(), " (", pg.backend(), "): ", what, " failed");
  const char* hint = "the first error is in the named rank's output; every rank of the job must be restarted";
  if (store_gone && pg.rank() != 0) {
    return std::make_exception_ptr(PeerFailureError(
        detail::cat(head, ": rank 0 (the rendezvous store's host ", pg.store().host(),
                    ") does not answer: it has died or is stopped [", raw, "; ", store_error, "]"),
        hint));
  }
  if (!lost.empty()) {
    std::string names;
    for (size_t i = 0; i < lost.size(); ++i) {
      std::string d;
      try {
        d = pg.describe_rank(lost[i]);
      } catch (...) {
        d = detail::cat("rank ", lost[i]);
      }
      names.append(i ? ", " : "").append(d);
    }
    return std::make_exception_ptr(
        PeerFailureError(detail::cat(head, ": ", names, lost.size() > 1 ? " have" : " has",
                                     " died or closed its connections [", raw, "]"),
                         hint));
  }
  if (timed_out) {
    return std::make_exception_ptr(DistTimeoutError(
        detail::cat(head, ": no answer from a peer within ", pg.timeout().count() / 1000.0,
                    " s, and no rank has died (a peer is stopped, stuck or much slower) [", raw, "]"),
        "find the rank that is behind (a debugger, py-spy, or its last log line)"));
  }
  return std::make_exception_ptr(PeerFailureError(detail::cat(head, " [", raw, "]"), hint));
}

}  // namespace ember::dist

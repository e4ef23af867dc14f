// Thread starts that a resource limit can refuse (ember/core/threads.h): a probe that starts the
// threads and joins them, and one message for every failed start.
#include "ember/core/threads.h"

#include <sched.h>
#include <sys/resource.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "ember/core/error.h"

namespace ember {
namespace {

// The limits a failed thread start can come from, with their current values.
std::string limits_text() {
  // ulimit -v and -s count KiB; so do these.
  auto show = [](int resource, const char* name, unsigned long long unit) {
    rlimit r{};
    if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::string(name) + " unlimited";
    return std::string(name) + " " + std::to_string(static_cast<unsigned long long>(r.rlim_cur) / unit);
  };
  return show(RLIMIT_NPROC, "ulimit -u", 1) + ", " + show(RLIMIT_AS, "ulimit -v", 1024) + ", " +
         show(RLIMIT_STACK, "ulimit -s", 1024) + " (KiB of stack per thread)";
}

std::string limits_hint(const std::string& ask_fewer) {
  return ask_fewer + ", or raise the limit that stops them (now " + limits_text() +
         "; a container's pids.max counts too)";
}

}  // namespace

void check_can_start_threads(int n, const std::string& what, const std::string& ask_fewer) {
  if (n <= 0) return;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> started;
  started.reserve(size_t(n));
  std::string failure;
  for (int i = 0; i < n; ++i) {
    try {
      started.emplace_back([&] {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return release; });
      });
    } catch (const std::system_error& e) {
      failure = e.code().message();
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  const int could = int(started.size());
  for (auto& t : started) t.join();
  if (failure.empty()) return;
  throw ResourceError(detail::cat("cannot start ", what, ": only ", could, " more thread", could == 1 ? "" : "s",
                                  " could start (", failure, ")"),
                      limits_hint(ask_fewer));
}

void throw_thread_start_error(const std::system_error& e, const std::string& what, const std::string& limit_hint) {
  throw ResourceError(detail::cat("cannot start ", what, ": ", e.code().message()), limits_hint(limit_hint));
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1, int(std::thread::hardware_concurrency()));
}

}  // namespace ember

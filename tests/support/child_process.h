// Runs a piece of a test in a forked child with a wall-clock limit and a memory guard, so a
// regression that blocks (a FIFO opened for reading) or reads without end (/dev/zero) fails the
// test instead of hanging CI or exhausting the machine; also reports the child's peak RSS growth.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_UNDER_ASAN 1
#endif
#endif

namespace ember::test {

#ifdef EMBER_TEST_UNDER_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

struct ChildResult {
  bool timed_out = false;
  int exit_code = -1;      // the child's exit status when it exited
  int signal = 0;          // the signal that ended it, if any
  long rss_growth_kb = 0;  // peak resident memory during `body` minus the resident memory at fork
  std::string output;      // what `body` returned
};

// Forks; the child runs body() and sends back its return value; the parent waits at most
// timeout_s, then kills it. Without ASan (whose shadow memory needs a huge address space) the
// child's address space is capped at its size at fork plus max_extra_bytes, so a runaway read
// fails with bad_alloc in the child instead of taking the machine's memory.
inline ChildResult run_in_child(const std::function<std::string()>& body, double timeout_s,
                                unsigned long max_extra_bytes = 1ul << 30) {
  ChildResult r;
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe() failed";
    return r;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork() failed";
    return r;
  }
  if (pid == 0) {
    ::close(fds[0]);
#ifndef EMBER_TEST_UNDER_ASAN
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      unsigned long pages = 0;
      if (std::fscanf(f, "%lu", &pages) == 1) {
        const rlim_t limit = pages * static_cast<unsigned long>(::sysconf(_SC_PAGESIZE)) + max_extra_bytes;
        const struct rlimit rl{limit, limit};
        ::setrlimit(RLIMIT_AS, &rl);
      }
      std::fclose(f);
    }
#endif
    struct rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("uncaught exception: ") + e.what();
    } catch (...) {
      out = "uncaught non-std exception";
    }
    ::getrusage(RUSAGE_SELF, &after);
    const std::string msg = std::to_string(after.ru_maxrss - before.ru_maxrss) + "\n" + out;
    for (size_t done = 0; done < msg.size();) {
      const ssize_t n = ::write(fds[1], msg.data() + done, msg.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    struct pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) continue;  // timeout is checked at the top
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // the child closed its end: done (or died)
    raw.append(buf, size_t(n));
  }
  ::close(fds[0]);
  if (r.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  const size_t nl = raw.find('\n');
  if (nl != std::string::npos) {
    r.rss_growth_kb = std::stol(raw.substr(0, nl));
    r.output = raw.substr(nl + 1);
  }
  return r;
}

}  // namespace ember::test

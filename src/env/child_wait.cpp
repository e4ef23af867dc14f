// See child_wait.h.
#include "env/child_wait.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ember::env {

std::string last_line(const std::string& text) {
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t nl = s.rfind('\n');
  s = nl == std::string::npos ? s : s.substr(nl + 1);
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

ChildEnd wait_for_child(pid_t pid, int out_fd, int err_fd, int timeout_ms, bool group, size_t cap) {
  ChildEnd r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 2, int(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[8192];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        std::string& dst = i == 0 ? r.out : r.err;
        if (dst.size() < cap) dst.append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);
  if (timed_out) {
    if (group) kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string said = last_line(r.err);
  const std::string quote = said.empty() ? "" : "; it said: \"" + said + "\"";
  if (timed_out) {
    r.failure = "did not answer within " + std::to_string((timeout_ms + 999) / 1000) + " s (killed)" + quote;
  } else if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    r.failure = std::string("crashed (SIG") + (abbrev ? abbrev : std::to_string(sig).c_str()) + ", " +
                strsignal(sig) + ")" + quote;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.failure = "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + quote;
  } else {
    r.ok = true;
  }
  return r;
}

}  // namespace ember::env

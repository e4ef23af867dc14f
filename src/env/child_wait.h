// The parent's half of the doctor's forked probes (probe_nvidia.cpp runs vendor libraries in a
// child, probe_python.cpp runs interpreters): read the child's stdout and stderr until both close or
// the deadline passes, kill it then, reap it, and say in words how it ended.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace ember::env {

struct ChildEnd {
  bool ok = false;       // exited 0 within the time
  std::string out, err;  // what it wrote (each capped at `cap` bytes)
  std::string failure;   // otherwise: "did not answer within 20 s (killed)", "crashed (SIGSEGV, ...)",
                         // "exited with status 3", each with the last line it wrote to stderr
};

// Takes ownership of out_fd and err_fd (the read ends; the caller has closed the write ends).
// `group`: the child leads its own process group, which is killed whole on the deadline.
ChildEnd wait_for_child(pid_t pid, int out_fd, int err_fd, int timeout_ms, bool group, size_t cap = size_t(4) << 20);

// The last non-empty line of a child's stderr, at most 300 characters, for failure messages.
std::string last_line(const std::string& text);

}  // namespace ember::env

// Starting threads a user asked for (--threads, --workers) without dying on a resource limit: a
// thread that cannot start (RLIMIT_NPROC / `ulimit -u`, a cgroup's pids.max, the address space
// under RLIMIT_AS / `ulimit -v`: each thread reserves a stack) is a ResourceError that says how many
// could start and which limit to raise, never an "internal error" from std::system_error or
// libgomp's "Thread creation failed", which exits the process from inside an OpenMP region.
#pragma once

#include <string>
#include <system_error>

#include "ember/core/error.h"

namespace ember {

// A limit of the process or the machine refused what was asked (threads it may start): the user's
// to lift or to ask for less, not a bug. The CLI prints it with its hint and exits 1.
class ResourceError : public Error {
 public:
  using Error::Error;
};

// Checks that this process can start `n` more threads now, by starting them (each waits, with the
// default stack size) and joining them again; nothing of them remains. `what` names the request
// for the message ("--threads 1024 and --workers 1 (1024 threads beside this one)"), `ask_fewer`
// how to ask for fewer ("pass a smaller --threads or --workers"). ResourceError: "cannot start
// <what>: only K more threads could start (<errno text>)", with a hint naming the limits and their
// values. Thread-safe; n <= 0 does nothing.
void check_can_start_threads(int n, const std::string& what, const std::string& ask_fewer);

// The cores this process may run on: sched_getaffinity's count (a container's cpuset or taskset's
// share), else std::thread::hardware_concurrency(); at least 1.
int usable_cores();

// The ResourceError for a std::thread that failed to start (std::system_error from its
// constructor): `what` names the threads ("data-loading worker 12 of 1024"), `limit_hint` the flag
// that asks for fewer.
[[noreturn]] void throw_thread_start_error(const std::system_error& e, const std::string& what,
                                           const std::string& limit_hint);

}  // namespace ember

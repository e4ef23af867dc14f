// Blocking TCP helpers with deadlines for the rendezvous store (dist/store.cpp): connect with
// retries, and read/write that give up at a deadline instead of blocking forever.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace ember::dist::net {

using Clock = std::chrono::steady_clock;

// Connects to host:port, retrying refused connections until `deadline` (rank 0 may not be serving
// yet). Returns the fd, or -1 with `error` set.
int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string* error);
// Listens on every IPv4 interface at `port` (0: any free port); returns the fd and sets *bound_port.
// Throws DistError when the port is taken.
int listen_on(int port, int* bound_port);
// Writes/reads exactly n bytes before `deadline`. Return values: 1 done, 0 peer closed, -1 timed
// out, -2 another error (errno text in *error).
int write_all(int fd, const void* data, size_t n, Clock::time_point deadline, std::string* error);
int read_all(int fd, void* data, size_t n, Clock::time_point deadline, std::string* error);
// A free TCP port on this machine at the time of the call (the launcher's default MASTER_PORT).
int free_port();
std::string hostname();
// The numeric local address of a connected socket ("127.0.0.1", "10.0.0.5", "::1").
std::string local_address(int fd);

}  // namespace ember::dist::net

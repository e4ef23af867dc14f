// Runs an n-rank process group inside one test process, one thread per rank, each with its own
// store connection and backend (loopback), so collectives can be checked without a launcher.
#pragma once

#include <gtest/gtest.h>

#include <ember/dist/process_group.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ember::test {

inline bool have_gloo() {
  const auto b = dist::available_backends();
  return std::find(b.begin(), b.end(), "gloo") != b.end();
}

#define EMBER_REQUIRE_GLOO() \
  do {                       \
    if (!::ember::test::have_gloo()) GTEST_SKIP() << "this build has no gloo backend (apt-get install libgloo-dev)"; \
  } while (0)

// Calls body(pg) on n ranks at once; returns each rank's exception (null when it returned).
inline std::vector<std::exception_ptr> run_ranks(int n, const std::function<void(dist::ProcessGroup&)>& body,
                                                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  dist::TcpStore::Options so;
  so.is_server = true;
  so.rank = 0;
  so.timeout = timeout;
  auto server = std::make_shared<dist::TcpStore>(so);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<dist::TcpStore> store = server;
        if (r != 0) {
          dist::TcpStore::Options c;
          c.port = server->port();
          c.rank = r;
          c.timeout = timeout;
          store = std::make_shared<dist::TcpStore>(c);
        }
        dist::InitOptions o;
        o.backend = "gloo";
        o.timeout = timeout;
        o.world.rank = r;
        o.world.world_size = n;
        o.store = store;
        auto pg = dist::init_process_group(o);
        body(*pg);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline std::string what_of(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
  return "non-std exception";
}

}  // namespace ember::test

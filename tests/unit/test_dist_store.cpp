// The rendezvous store: set/get/wait/add across connections, timeouts that name the missing keys,
// an unreachable store, and the lost-rank report a failing collective relies on.
#include <gtest/gtest.h>

#include <chrono>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include <ember/dist/error.h>
#include <ember/dist/store.h>

#include "support/errors.h"

using namespace ember;
using namespace std::chrono_literals;
using ember::test::expect_error;

namespace {
dist::TcpStore::Options server_options() {
  dist::TcpStore::Options o;
  o.is_server = true;
  o.rank = 0;
  o.timeout = 5s;
  return o;
}
dist::TcpStore::Options client_options(int port, int rank) {
  dist::TcpStore::Options o;
  o.port = port;
  o.rank = rank;
  o.timeout = 5s;
  return o;
}
}  // namespace

TEST(DistStore, SetGetWaitAddAcrossClients) {
  dist::TcpStore server(server_options());
  ASSERT_GT(server.port(), 0);
  dist::TcpStore client(client_options(server.port(), 1));
  server.set("a", std::string("x\0y", 3));
  EXPECT_EQ(client.get("a"), std::string("x\0y", 3));
  std::string v;
  EXPECT_FALSE(client.try_get("missing", &v));
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    server.set("late", "here");
  });
  EXPECT_EQ(client.get("late", 5s), "here");
  later.join();
  EXPECT_EQ(server.add("n", 2), 2);
  EXPECT_EQ(client.add("n", 3), 5);
  client.wait({"a", "late", "n"}, 1s);
  server.set("big", std::string(3 << 20, 'z'));
  EXPECT_EQ(client.get("big").size(), size_t(3) << 20);
}

TEST(DistStore, WaitTimesOutNamingTheMissingKey) {
  dist::TcpStore server(server_options());
  const auto start = std::chrono::steady_clock::now();
  expect_error<dist::DistTimeoutError>([&] { server.wait({"never"}, 200ms); }, "never");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(DistStore, UnreachableStoreTimesOut) {
  int port;
  {
    dist::TcpStore probe(server_options());
    port = probe.port();
  }
  auto o = client_options(port, 1);
  o.timeout = 300ms;
  const std::string msg = expect_error<dist::DistTimeoutError>([&] { dist::TcpStore s(o); }, "could not reach");
  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
}

TEST(DistStore, RankClosingWithoutGoodbyeIsLost) {
  dist::TcpStore server(server_options());
  {
    dist::TcpStore polite(client_options(server.port(), 1));
  }
  EXPECT_TRUE(server.lost_ranks().empty());
  // A connection that closes without the goodbye (a crashed process) marks its rank lost: simulate
  // by leaking the goodbye through a forked child that _exits.
  const pid_t pid = ::fork();
  if (pid == 0) {
    dist::TcpStore rude(client_options(server.port(), 2));
    ::_exit(0);  // no destructor: no goodbye
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::vector<int> lost;
  for (int i = 0; i < 100 && lost.empty(); ++i) {
    lost = server.lost_ranks();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(lost, std::vector<int>{2});
}

TEST(DistStore, ServerGoneIsAPeerFailure) {
  auto server = std::make_unique<dist::TcpStore>(server_options());
  dist::TcpStore client(client_options(server->port(), 1));
  server.reset();
  expect_error<dist::PeerFailureError>([&] { client.set("k", "v"); }, "rank 0");
}

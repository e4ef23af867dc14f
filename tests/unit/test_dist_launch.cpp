// Multi-process tests with the local launcher and the tiny rank program tests/dist/dist_worker:
// the environment each rank gets, a failing rank stopping the others, collectives across real
// processes, and the fault cases — a rank killed mid-collective or stopped — that must end the
// other rank within seconds with a message naming the culprit, never hang.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <ember/dist/error.h>
#include <ember/dist/launch.h>
#include <ember/dist/store.h>

#include "support/dist.h"
#include "support/errors.h"

using namespace ember;
using namespace std::chrono_literals;
using ember::test::expect_error;

namespace {
// Runs dist_worker under launch_local, with each rank's stdout+stderr in a file; returns the result
// and (through out) every rank's output.
dist::LaunchResult launch(int n, std::vector<std::string> args, std::string* out, std::vector<std::string> env = {}) {
  const std::string log = ::testing::TempDir() + "dist_launch_" + std::to_string(::getpid()) + ".log";
  std::remove(log.c_str());
  dist::LaunchOptions o;
  o.nproc_per_node = n;
  o.argv = {"/bin/sh", "-c", std::string("exec \"$0\" \"$@\" >>") + log + " 2>&1", EMBER_DIST_WORKER};
  for (auto& a : args) o.argv.push_back(a);
  o.extra_env = std::move(env);
  o.kill_grace = 2s;
  auto r = dist::launch_local(o);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return r;
}
}  // namespace

TEST(DistLaunch, EachRankGetsTorchrunVariablesAndItsShareOfCores) {
  std::string out;
  dist::LaunchOptions o;
  const auto r = launch(2, {"env"}, &out);
  EXPECT_EQ(r.exit_code, 0) << r.message << "\n" << out;
  EXPECT_NE(out.find("rank=0 world=2 local_rank=0 local_world=2 addr=127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("rank=1 world=2 local_rank=1 local_world=2 addr=127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("source=torchrun"), std::string::npos) << out;
}

TEST(DistLaunch, CoresSplitAndGpuMapping) {
  const std::string log = ::testing::TempDir() + "dist_launch_map_" + std::to_string(::getpid()) + ".log";
  std::remove(log.c_str());
  dist::LaunchOptions o;
  o.nproc_per_node = 2;
  o.argv = {"/bin/sh", "-c", "exec \"$0\" env >>" + log + " 2>&1", EMBER_DIST_WORKER};
  o.cores = 8;
  ASSERT_EQ(dist::launch_local(o).exit_code, 0);
  o.cores = 0;
  o.gpus = 4;
  o.visible_devices = {"3", "0", "2"};
  ASSERT_EQ(dist::launch_local(o).exit_code, 0);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string out = ss.str();
  EXPECT_NE(out.find("rank=0 world=2 local_rank=0 local_world=2 addr=127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("threads=4 cuda="), std::string::npos) << out;  // 8 cores / 2 ranks
  EXPECT_NE(out.find("rank=0 world=2 local_rank=0 local_world=2 addr=127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("cuda=3\n"), std::string::npos) << out;  // rank 0: the first visible device
  EXPECT_NE(out.find("cuda=0\n"), std::string::npos) << out;  // rank 1: the second
  o.nproc_per_node = 4;
  expect_error<dist::DistError>([&] { dist::launch_local(o); }, "only 3 are visible");
}

TEST(DistLaunch, OneFailingRankStopsTheOthersAndIsNamed) {
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  const auto r = launch(3, {"fail-rank", "1"}, &out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.failed_rank, 1) << r.message;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.message.find("rank 1 (pid"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("exited with code 3"), std::string::npos) << r.message;
  EXPECT_LT(s, 10.0) << "the sleeping ranks were not stopped";
}

TEST(DistLaunch, CommandThatCannotStartIsAnError) {
  dist::LaunchOptions o;
  o.nproc_per_node = 2;
  o.argv = {"/nonexistent/ember-worker"};
  expect_error<dist::DistError>([&] { dist::launch_local(o); }, "cannot start rank 0");
  o.nproc_per_node = 0;
  expect_error<dist::DistError>([&] { dist::launch_local(o); }, "at least 1");
}

TEST(DistLaunch, CollectivesAcrossProcesses) {
  EMBER_REQUIRE_GLOO();
  std::string out;
  const auto r = launch(2, {"collectives"}, &out);
  EXPECT_EQ(r.exit_code, 0) << r.message << "\n" << out;
  EXPECT_NE(out.find("rank 0 of 2: collectives ok"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 of 2: collectives ok"), std::string::npos) << out;
}

TEST(DistFault, RankKilledMidCollectiveIsNamedWithinSeconds) {
  EMBER_REQUIRE_GLOO();
  std::string out;
  const auto start = std::chrono::steady_clock::now();
  // A 60 s collective timeout: the survivor must notice the death itself, long before that.
  const auto r = launch(2, {"die-mid-collective"}, &out, {"EMBER_DIST_TIMEOUT_MS=60000"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.failed_rank, 1) << r.message << "\n" << out;
  EXPECT_NE(r.message.find("signal 9"), std::string::npos) << r.message;
  EXPECT_LT(s, 30.0);
  // Rank 0's own report (it may also have been stopped by the launcher first: then the launcher's
  // message above names rank 1). Run rank 0 without the launcher's help: see the next test.
  std::printf("launcher: %s (%.1f s)\nranks:\n%s", r.message.c_str(), s, out.c_str());
}

namespace {
// Two ranks started by a shell (no launcher to stop the survivor), rank `victim` SIGKILLs itself in
// the middle of a loop of all-reduces; returns the survivor's output, its exit status and seconds.
struct Survivor {
  std::string out;
  int status = -1;
  double seconds = 0;
};
Survivor run_without_launcher(int victim) {
  int port;
  {
    dist::TcpStore::Options so;
    so.is_server = true;
    dist::TcpStore probe(so);
    port = probe.port();
  }
  const int survivor = 1 - victim;
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "dist_survivor" + std::to_string(survivor) + ".log";
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                          " EMBER_DIST_TIMEOUT_MS=60000 ";
  const std::string args = std::string(" die-mid-collective ") + std::to_string(victim);
  const std::string cmd = "(RANK=" + std::to_string(victim) + " " + env + EMBER_DIST_WORKER + args +
                          " >/dev/null 2>&1 &); RANK=" + std::to_string(survivor) + " " + env + EMBER_DIST_WORKER +
                          args + " >" + log + " 2>&1";
  Survivor s;
  const auto start = std::chrono::steady_clock::now();
  s.status = std::system(cmd.c_str());
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  s.out = ss.str();
  return s;
}
}  // namespace

// Without a launcher to stop it (the launcher SIGTERMs the others as soon as one rank dies), the
// surviving rank itself must end, naming the dead one.
TEST(DistFault, SurvivorThrowsNamingTheDeadRank) {
  EMBER_REQUIRE_GLOO();
  const Survivor s = run_without_launcher(1);
  EXPECT_TRUE(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 2) << s.status << "\n" << s.out;
  EXPECT_LT(s.seconds, 20.0) << s.out;
  EXPECT_NE(s.out.find("dist_worker error: rank 0 (gloo): all_reduce"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("rank 1 (host"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("has died"), std::string::npos) << s.out;
  std::printf("survivor ended after %.1f s:\n%s", s.seconds, s.out.c_str());
}

// Rank 0 also serves the store; when it dies, rank 1 cannot ask who died, and says rank 0 is gone.
TEST(DistFault, RankZeroKilledIsNamedByTheOthers) {
  EMBER_REQUIRE_GLOO();
  const Survivor s = run_without_launcher(0);
  EXPECT_TRUE(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 2) << s.status << "\n" << s.out;
  EXPECT_LT(s.seconds, 20.0) << s.out;
  EXPECT_NE(s.out.find("dist_worker error: rank 1 (gloo): all_reduce"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("rank 0 (the rendezvous store's host 127.0.0.1) does not answer"), std::string::npos) << s.out;
  std::printf("survivor ended after %.1f s:\n%s", s.seconds, s.out.c_str());
}

TEST(DistLaunch, SignalToTheLauncherStopsTheRanks) {
  std::thread killer([] {
    std::this_thread::sleep_for(500ms);
    ::kill(::getpid(), SIGTERM);  // caught by launch_local's handler while it runs
  });
  dist::LaunchOptions o;
  o.nproc_per_node = 2;
  o.argv = {EMBER_DIST_WORKER, "fail-rank", "9"};  // no rank 9: both sleep 120 s
  o.kill_grace = 2s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = dist::launch_local(o);
  killer.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.message;
  EXPECT_EQ(r.failed_rank, -1);
  EXPECT_NE(r.message.find("got signal 15"), std::string::npos) << r.message;
  EXPECT_LT(s, 10.0);
}

TEST(DistFault, StoppedRankTimesOutInsteadOfHanging) {
  EMBER_REQUIRE_GLOO();
  const std::string log = ::testing::TempDir() + "dist_stopped_" + std::to_string(::getpid()) + ".log";
  std::remove(log.c_str());
  dist::LaunchOptions o;
  o.nproc_per_node = 2;
  o.argv = {"/bin/sh", "-c", "exec \"$0\" stop-mid-collective >>" + log + " 2>&1", EMBER_DIST_WORKER};
  o.extra_env = {"EMBER_DIST_TIMEOUT_MS=3000"};
  o.kill_grace = 1s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = dist::launch_local(o);  // rank 0 fails; the launcher kills the stopped rank 1
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string out = ss.str();
  EXPECT_EQ(r.failed_rank, 0) << r.message << "\n" << out;
  EXPECT_EQ(r.exit_code, 2) << r.message;
  EXPECT_NE(out.find("no answer from a peer within 3 s"), std::string::npos) << out;
  EXPECT_LT(s, 20.0);
}

// Rank 0 stopped: it serves the store too, so rank 1 can neither finish the collective nor ask
// who died; it must still end, within its 3 s timeout plus the store's, naming rank 0.
TEST(DistFault, StoppedRankZeroTimesOutNamingIt) {
  EMBER_REQUIRE_GLOO();
  const std::string log = ::testing::TempDir() + "dist_stopped0_" + std::to_string(::getpid()) + ".log";
  std::remove(log.c_str());
  dist::LaunchOptions o;
  o.nproc_per_node = 2;
  o.argv = {"/bin/sh", "-c", "exec \"$0\" stop-mid-collective 0 >>" + log + " 2>&1", EMBER_DIST_WORKER};
  o.extra_env = {"EMBER_DIST_TIMEOUT_MS=3000"};
  o.kill_grace = 1s;
  const auto start = std::chrono::steady_clock::now();
  const auto r = dist::launch_local(o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string out = ss.str();
  EXPECT_EQ(r.failed_rank, 1) << r.message << "\n" << out;
  EXPECT_NE(out.find("dist_worker error: rank 1 (gloo)"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 0 (the rendezvous store's host 127.0.0.1) does not answer"), std::string::npos) << out;
  EXPECT_LT(s, 30.0);
  std::printf("ended after %.1f s:\n%s", s, out.c_str());
}

TEST(DistFault, MismatchedFingerprintsAreRefused) {
  EMBER_REQUIRE_GLOO();
  std::string out;
  auto r = launch(2, {"check", "model=lenet5"}, &out);
  EXPECT_EQ(r.exit_code, 0) << r.message << "\n" << out;
  r = launch(2, {"check", "model=lenet5", "1"}, &out);
  EXPECT_EQ(r.exit_code, 2) << r.message << "\n" << out;
  EXPECT_NE(out.find("disagree on config"), std::string::npos) << out;
  EXPECT_NE(out.find("'model=lenet5-changed'"), std::string::npos) << out;
}

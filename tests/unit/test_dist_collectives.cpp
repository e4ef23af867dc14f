// Gloo collectives on loopback with 1, 2 and 3 ranks (threads of this process): all_reduce sum and
// avg, broadcast, all_gather, barrier, asynchronous handles, argument errors, and check_same
// refusing ranks that disagree.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include <ember/dist/process_group.h>
#include <ember/ember.h>

#include "support/dist.h"
#include "support/errors.h"

using namespace ember;
using namespace std::chrono_literals;
using ember::test::expect_error;
using ember::test::run_ranks;
using ember::test::what_of;

namespace {
void expect_all_ok(const std::vector<std::exception_ptr>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_FALSE(errors[r]) << "rank " << r << ": " << what_of(errors[r]);
}
}  // namespace

TEST(DistCollectives, AllReduceSumAndAvg) {
  EMBER_REQUIRE_GLOO();
  for (int n : {1, 2, 3}) {  // 1: the inline path of a world of one
    expect_all_ok(run_ranks(n, [n](dist::ProcessGroup& pg) {
      // Integer-valued floats: the sums are exact whatever the reduction order.
      Tensor s = full({257, 3}, double(pg.rank() + 1));
      Tensor a = full({1000}, double(2 * pg.rank()));
      auto w1 = pg.all_reduce(s, dist::ReduceOp::sum);
      auto w2 = pg.all_reduce(a, dist::ReduceOp::avg);  // both in flight at once
      w2->wait();
      w1->wait(10s);
      EXPECT_TRUE(w1->is_completed());
      for (float v : s.to_vector<float>()) ASSERT_EQ(v, float(n * (n + 1) / 2));
      for (float v : a.to_vector<float>()) ASSERT_FLOAT_EQ(v, float(n - 1));
    }));
  }
}

TEST(DistCollectives, BroadcastAllGatherBarrier) {
  EMBER_REQUIRE_GLOO();
  expect_all_ok(run_ranks(2, [](dist::ProcessGroup& pg) {
    Tensor t = pg.rank() == 1 ? arange(6, {DType::Float64}).view({2, 3}) : zeros({2, 3}, {DType::Float64});
    pg.broadcast(t, 1)->wait();
    EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
    Tensor in = full({4}, double(pg.rank() + 7), {DType::Int32});
    Tensor out = zeros({2, 4}, {DType::Int32});
    pg.all_gather(in, out)->wait();
    EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{7, 7, 7, 7, 8, 8, 8, 8}));
    pg.barrier()->wait();
  }));
}

TEST(DistCollectives, LargeAllReduce) {
  EMBER_REQUIRE_GLOO();
  expect_all_ok(run_ranks(2, [](dist::ProcessGroup& pg) {
    Tensor t = full({(8 << 20) / 4}, pg.rank() == 0 ? 1.0 : 3.0);
    pg.all_reduce(t, dist::ReduceOp::avg)->wait();
    const float* p = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); i += 4099) ASSERT_EQ(p[i], 2.0f);
    ASSERT_EQ(p[t.numel() - 1], 2.0f);
  }));
}

TEST(DistCollectives, BadArgumentsAreTypedErrors) {
  EMBER_REQUIRE_GLOO();
  expect_all_ok(run_ranks(2, [](dist::ProcessGroup& pg) {
    Tensor i = zeros({4}, {DType::Int64});
    expect_error<DTypeError>([&] { pg.all_reduce(i); }, "float32 tensors only");
    Tensor nc = zeros({4, 4}).t();
    expect_error<ValueError>([&] { pg.all_reduce(nc); }, "contiguous");
    Tensor t = zeros({4});
    expect_error<ValueError>([&] { pg.broadcast(t, 2); }, "root 2");
    Tensor out = zeros({3, 4});
    expect_error<ShapeError>([&] { pg.all_gather(t, out); }, "world size (2)");
    EXPECT_EQ(pg.backend(), "gloo");
  }));
}

TEST(DistCollectives, CheckSamePassesAndRefusesWithTheDifference) {
  EMBER_REQUIRE_GLOO();
  expect_all_ok(run_ranks(2, [](dist::ProcessGroup& pg) { dist::check_same(pg, "config", "lr=0.1 batch=64"); }));
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    dist::check_same(pg, "ember version", "0.1.0");  // agrees
    dist::check_same(pg, "dataset", pg.rank() == 0 ? "fashion-mnist sha256 c59f" : "fashion-mnist sha256 0000");
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " accepted a different dataset";
    const std::string msg = what_of(errors[r]);
    EXPECT_NE(msg.find("disagree on dataset"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'fashion-mnist sha256 c59f'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'fashion-mnist sha256 0000'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 1 (host"), std::string::npos) << msg;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const dist::ConfigMismatchError&) {
    } catch (...) {
      ADD_FAILURE() << "not a ConfigMismatchError: " << msg;
    }
  }
}

TEST(DistCollectives, UnknownBackendSaysWhatTheBuildHas) {
  dist::InitOptions o;
  o.backend = "mpi";
  expect_error<dist::DistError>([&] { dist::init_process_group(o); }, "'mpi' is not in this build");
}

// Gloo does not always notice a dead peer (a pending send once waited out its whole timeout), so a
// waiting rank also asks the store every second whether a rank's connection dropped. Here rank 1
// is alive but never joins the all-reduce, and a process posing as rank 1 closes its store
// connection without a goodbye: rank 0's wait must fail naming rank 1 long before the 30 s timeout.
TEST(DistCollectives, WatchdogFailsAWaitWhenAPeerIsLost) {
  EMBER_REQUIRE_GLOO();
  std::atomic<bool> done{false};
  const auto errors = run_ranks(2, [&](dist::ProcessGroup& pg) {
    if (pg.rank() == 1) {
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      dist::TcpStore::Options o;
      o.port = pg.store().port();
      o.rank = 1;
      dist::TcpStore rude(o);
      ::_exit(0);  // no goodbye: the store marks rank 1 lost
    }
    ::waitpid(pid, nullptr, 0);
    Tensor t = ones({16});
    auto work = pg.all_reduce(t);
    const auto start = std::chrono::steady_clock::now();
    expect_error<dist::PeerFailureError>([&] { work->wait(); }, "rank 1");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    Tensor u = ones({16});
    expect_error<dist::PeerFailureError>([&] { pg.all_reduce(u)->wait(); }, "rank 1");  // broken from here on
    done = true;
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}

TEST(DistCollectives, BroadcastTensorsGivesEveryRankRootsValues) {
  EMBER_REQUIRE_GLOO();
  const auto errors = run_ranks(2, [](dist::ProcessGroup& pg) {
    std::vector<Tensor> ts = {full({3, 4}, double(pg.rank() + 1)), full({5}, double(10 * pg.rank()), {DType::Int64})};
    dist::broadcast_tensors(pg, ts, 1);
    for (float v : ts[0].to_vector<float>()) ASSERT_EQ(v, 2.0f);
    for (int64_t v : ts[1].to_vector<int64_t>()) ASSERT_EQ(v, 10);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << what_of(e);
}

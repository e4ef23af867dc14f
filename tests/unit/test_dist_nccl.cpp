// The NCCL backend (label gpu: the *_CUDA tests skip, printing why, without a GPU or without NCCL
// in the build): a world-size-1 job through the whole init path (store, unique id, communicator),
// then every collective; with two GPUs, two ranks as threads of this process.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include <ember/dist/process_group.h>
#include <ember/ember.h>

#include "support/errors.h"
#include "support/gpu.h"

using namespace ember;
using namespace std::chrono_literals;

namespace {
bool have_nccl() {
  const auto b = dist::available_backends();
  return std::find(b.begin(), b.end(), "nccl") != b.end();
}
#define EMBER_REQUIRE_NCCL()                                                                      \
  do {                                                                                            \
    if (!have_nccl()) GTEST_SKIP() << "this build has no nccl backend (a CUDA build with nccl.h)"; \
    EMBER_REQUIRE_GPU();                                                                          \
  } while (0)

void collectives_on(dist::ProcessGroup& pg, Device dev) {
  const int n = pg.size(), r = pg.rank();
  Tensor s = full({1000}, double(r + 1)).to(dev);
  Tensor a = full({1000}, double(2 * r)).to(dev);
  auto w1 = pg.all_reduce(s, dist::ReduceOp::sum);
  auto w2 = pg.all_reduce(a, dist::ReduceOp::avg);
  w1->wait();
  w2->wait(30s);
  for (float v : s.to_vector<float>()) ASSERT_EQ(v, float(n * (n + 1) / 2));
  for (float v : a.to_vector<float>()) ASSERT_FLOAT_EQ(v, float(n - 1));
  Tensor b = (r == 0 ? arange(6) : zeros({6})).to(dev);
  pg.broadcast(b, 0)->wait();
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor in = full({3}, double(r * 10)).to(dev);
  Tensor out = zeros({n, 3}).to(dev);
  pg.all_gather(in, out)->wait();
  const auto g = out.to_vector<float>();
  for (int q = 0; q < n; ++q) EXPECT_EQ(g[size_t(q) * 3], float(q * 10));
  pg.barrier()->wait();
  EXPECT_EQ(pg.backend(), "nccl");
}
}  // namespace

TEST(DistNccl, WorldOfOne_CUDA) {
  EMBER_REQUIRE_NCCL();
  dist::InitOptions o;
  o.device = Device::cuda(0);  // backend "auto" picks nccl for a CUDA device
  o.timeout = 60s;
  auto pg = dist::init_process_group(o);
  collectives_on(*pg, Device::cuda(0));
}

TEST(DistNccl, TwoGpusTwoRanks_CUDA) {
  EMBER_REQUIRE_NCCL();
  if (ember::test::gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << ember::test::gpu_count();
  dist::TcpStore::Options so;
  so.is_server = true;
  so.rank = 0;
  auto server = std::make_shared<dist::TcpStore>(so);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&, r] {
      try {
        auto store = server;
        if (r == 1) {
          dist::TcpStore::Options c;
          c.port = server->port();
          c.rank = 1;
          store = std::make_shared<dist::TcpStore>(c);
        }
        dist::InitOptions o;
        o.device = Device::cuda(r);
        o.timeout = 60s;
        o.world.rank = r;
        o.world.world_size = 2;
        o.store = store;
        auto pg = dist::init_process_group(o);
        collectives_on(*pg, Device::cuda(r));
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

TEST(DistNccl, CpuTensorIsRefused_CUDA) {
  EMBER_REQUIRE_NCCL();
  dist::InitOptions o;
  o.device = Device::cuda(0);
  auto pg = dist::init_process_group(o);
  Tensor t = zeros({4});
  ember::test::expect_error<DeviceError>([&] { pg->all_reduce(t); }, "this group's device is cuda:0");
}

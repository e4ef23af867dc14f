// A tiny rank program for the process-group and launcher tests (tests/unit/test_dist_*.cpp and
// tests/dist/*.sh): it joins the world its environment describes (torchrun or mpirun variables)
// and runs one scenario, printing what the test checks. Exit codes: 0 ok, 1 wrong result,
// 2 a dist error (its message printed on stderr), 3 a rank that fails on purpose.
//   dist_worker backends | collectives | die-mid-collective [R] | stop-mid-collective [R] | check VALUE [R] | env |
//               fail-rank R | sleep
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <ember/dist/process_group.h>
#include <ember/ember.h>

using namespace ember;
using namespace std::chrono_literals;

namespace {

int collectives(dist::ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.size();
  // all_reduce sum and avg on an odd size, so ring chunking meets a remainder.
  const int64_t len = 1001;
  Tensor a = zeros({len});
  for (int64_t i = 0; i < len; ++i) a.data_ptr<float>()[i] = float(i % 7 + r + 1);
  Tensor b = a.clone();
  pg.all_reduce(a, dist::ReduceOp::sum)->wait();
  pg.all_reduce(b, dist::ReduceOp::avg)->wait();
  const int rank_sum = n * (n + 1) / 2;  // sum of (r + 1)
  for (int64_t i = 0; i < len; ++i) {
    const float want = float(n * (i % 7) + rank_sum);
    if (a.data_ptr<float>()[i] != want || std::abs(b.data_ptr<float>()[i] - want / n) > 1e-5f) {
      std::fprintf(stderr, "rank %d: all_reduce[%lld] = %g / %g, want %g / %g\n", r, (long long)i,
                   a.data_ptr<float>()[i], b.data_ptr<float>()[i], want, want / n);
      return 1;
    }
  }
  Tensor c = r == 1 % n ? arange(5, {DType::Int64}) : zeros({5}, {DType::Int64});
  pg.broadcast(c, 1 % n)->wait();
  for (int64_t i = 0; i < 5; ++i)
    if (c.data_ptr<int64_t>()[i] != i) return std::fprintf(stderr, "rank %d: broadcast wrong\n", r), 1;
  Tensor in = full({3}, double(r * 10));
  Tensor out = zeros({n, 3});
  pg.all_gather(in, out)->wait();
  for (int q = 0; q < n; ++q)
    for (int j = 0; j < 3; ++j)
      if (out.data_ptr<float>()[q * 3 + j] != float(q * 10))
        return std::fprintf(stderr, "rank %d: all_gather wrong\n", r), 1;
  pg.barrier()->wait();
  std::printf("rank %d of %d: collectives ok\n", r, n);
  return 0;
}

// Both ranks loop on 4 MB all-reduces; rank `victim` kills itself (SIGKILL: no goodbye) after 0.5 s.
int die_mid_collective(dist::ProcessGroup& pg, int victim) {
  if (pg.rank() == victim) {
    std::thread([] {
      std::this_thread::sleep_for(500ms);
      ::raise(SIGKILL);
    }).detach();
  }
  Tensor t = ones({1 << 20});
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    pg.all_reduce(t, dist::ReduceOp::avg)->wait();
    if (std::chrono::steady_clock::now() - start > 120s) return 1;
  }
}

// Rank `victim` stops (SIGSTOP: alive but silent); the other must give up after the group's timeout.
int stop_mid_collective(dist::ProcessGroup& pg, int victim) {
  Tensor t = ones({1024});
  pg.all_reduce(t)->wait();
  if (pg.rank() == victim) ::raise(SIGSTOP);
  pg.all_reduce(t)->wait();
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  try {
    const dist::WorldInfo w = dist::world_from_env();
    if (what == "env") {
      std::printf("rank=%d world=%d local_rank=%d local_world=%d addr=%s port=%d source=%s threads=%s cuda=%s\n",
                  w.rank, w.world_size, w.local_rank, w.local_world_size, w.master_addr.c_str(), w.master_port,
                  w.source.c_str(), std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "-",
                  std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "-");
      return 0;
    }
    if (what == "backends") {
      for (const auto& b : dist::available_backends()) std::printf("%s\n", b.c_str());
      return 0;
    }
    if (what == "fail-rank") {
      if (w.rank == std::atoi(argv[2])) {
        std::this_thread::sleep_for(200ms);
        return 3;
      }
      std::this_thread::sleep_for(120s);
      return 0;
    }
    dist::InitOptions o;
    o.world = w;
    if (const char* t = std::getenv("EMBER_DIST_TIMEOUT_MS")) o.timeout = std::chrono::milliseconds(std::atoi(t));
    auto pg = dist::init_process_group(o);
    if (what == "collectives") return collectives(*pg);
    if (what == "die-mid-collective") return die_mid_collective(*pg, argc > 2 ? std::atoi(argv[2]) : 1);
    if (what == "stop-mid-collective") return stop_mid_collective(*pg, argc > 2 ? std::atoi(argv[2]) : 1);
    if (what == "check") {
      // check VALUE [R]: rank R (if given) says VALUE-changed instead.
      std::string value = argc > 2 ? argv[2] : "";
      if (argc > 3 && pg->rank() == std::atoi(argv[3])) value += "-changed";
      dist::check_same(*pg, "config", value);
      std::printf("rank %d: check_same passed\n", pg->rank());
      return 0;
    }
    std::fprintf(stderr, "dist_worker: unknown scenario '%s'\n", what.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_worker error: %s\n", e.what());
    return 2;
  }
}

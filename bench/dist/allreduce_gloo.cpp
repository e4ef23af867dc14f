// Loopback all-reduce timing with Gloo (TCP pairs, FileStore rendezvous): bench/dist/run.sh runs it
// with 2 ranks beside allreduce_mpi.cpp; docs/distributed.md has the figures.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main() {
  int rank = atoi(getenv("RANK")), size = atoi(getenv("SIZE"));
  gloo::transport::tcp::attr attr; attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fs(getenv("STOREDIR"));
  gloo::rendezvous::PrefixStore ps(getenv("PREFIX"), fs);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->connectFullMesh(ps, dev);
  for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 4) {
    size_t n = bytes / 4; std::vector<float> v(n, 1.0f);
    auto run = [&] { gloo::AllreduceOptions o(ctx); o.setInput(v.data(), n); o.setOutput(v.data(), n);
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>)); o.setTag(0); gloo::allreduce(o); };
    run(); run();
    int iters = bytes <= (1u << 20) ? 200 : (bytes <= (16u<<20) ? 10 : 4);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (rank == 0) printf("gloo %9zu B  %10.1f us  %8.3f GB/s (algbw)\n", bytes, s * 1e6, bytes / s / 1e9);
  }
}

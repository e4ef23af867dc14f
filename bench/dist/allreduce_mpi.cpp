// Loopback all-reduce timing with Open MPI (MPI_Allreduce in place): bench/dist/run.sh runs it with
// 2 ranks beside allreduce_gloo.cpp; docs/distributed.md has the figures.
#include <mpi.h>
#include <chrono>
#include <cstdio>
#include <vector>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv); int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 4) {
    size_t n = bytes / 4; std::vector<float> v(n, 1.0f);
    auto run = [&] { MPI_Allreduce(MPI_IN_PLACE, v.data(), (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
    run(); run();
    int iters = bytes <= (1u << 20) ? 200 : (bytes <= (16u<<20) ? 10 : 4);
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (rank == 0) printf("mpi  %9zu B  %10.1f us  %8.3f GB/s (algbw)\n", bytes, s * 1e6, bytes / s / 1e9);
  }
  MPI_Finalize();
}

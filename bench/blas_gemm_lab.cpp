// Issue 22's lab: the float32 GEMMs of ember's CPU training (the linear layers of mlp, lenet5,
// mnistnet and bncnn48_fc128 at batch 64: forward x @ W^T, input gradient g @ W, weight gradient
// g^T @ x) and one large square product, four ways on the same threads:
//   openblas   one cblas_sgemm with OpenBLAS's own threading (what ember did before: the OpenMP
//              build threads on ember's OpenMP runtime, the pthreads build on its own pool)
//   tiled      ember's driver: OpenBLAS single-threaded on shape-chosen tiles (src/cpu/gemm.cpp)
//   dnnl_sgemm oneDNN's BLAS-like sgemm, on the same OpenMP runtime
//   matmul     oneDNN's matmul primitive on the plain layouts, built once per shape
// Each figure: the median of 5 timed rounds of at least 0.2 s each, GFLOP/s. It prints the
// OpenBLAS build it found (run it once per build: scripts/blas-builds.sh bench).
//   ./build/bench/blas_gemm_lab [--threads 2] [--only openblas,tiled,...]
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu/gemm.h"

extern "C" int openblas_get_parallel(void);

namespace {

struct Shape {
  const char* name;
  bool ta, tb;
  int64_t M, N, K;
};

double gflops_of(const Shape& s, const std::function<void()>& f) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    int64_t calls = 0;
    auto t0 = clock::now();
    double sec = 0;
    do {
      f();
      ++calls;
      sec = std::chrono::duration<double>(clock::now() - t0).count();
    } while (sec < 0.2 || calls < 10);
    rounds.push_back(2.0 * double(s.M) * double(s.N) * double(s.K) * double(calls) / sec / 1e9);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = omp_get_max_threads();
  std::string only = "openblas,tiled,dnnl_sgemm,matmul";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--only") == 0) only = argv[++i];
  }
  omp_set_num_threads(threads);
  const int build = openblas_get_parallel();
  const char* build_name = build == 0 ? "serial" : build == 1 ? "pthreads" : build == 2 ? "openmp" : "unknown";
  std::printf("OpenBLAS %s build (%s), %d threads\n", build_name, openblas_get_config(), threads);

  std::vector<Shape> shapes;
  static std::vector<std::string> keep;
  keep.reserve(64);
  auto add = [&](const std::string& model, int64_t in, int64_t out) {
    keep.push_back(model + " " + std::to_string(in) + "->" + std::to_string(out));
    const char* n = keep.back().c_str();
    shapes.push_back({n, false, true, 64, out, in});
    shapes.push_back({n, false, false, 64, in, out});
    shapes.push_back({n, true, false, out, in, 64});
  };
  add("mlp", 784, 256);
  add("mlp", 256, 10);
  add("lenet5", 256, 120);
  add("lenet5", 120, 84);
  add("mnistnet", 9216, 128);
  add("bncnn48", 2352, 128);
  shapes.push_back({"square 1024", false, false, 1024, 1024, 1024});
  shapes.push_back({"square 2048", false, false, 2048, 2048, 2048});

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::printf("%-22s %-3s %5s %5s %5s", "shape", "op", "M", "N", "K");
  for (const char* v : {"openblas", "tiled", "dnnl_sgemm", "matmul"})
    if (only.find(v) != std::string::npos) std::printf(" %10s", v);
  std::printf("   (GFLOP/s)\n");
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.M * s.K)), b(size_t(s.K * s.N)), c(size_t(s.M * s.N));
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 13) * 0.01f;
    const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    const char* op = !s.ta && s.tb ? "NT" : s.ta ? "TN" : "NN";
    std::printf("%-22s %-3s %5ld %5ld %5ld", s.name, op, long(s.M), long(s.N), long(s.K));
    if (only.find("openblas") != std::string::npos) {
      if (build != 2) openblas_set_num_threads(threads);
      double g = gflops_of(s, [&] {
        cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, int(s.M),
                    int(s.N), int(s.K), 1.0f, a.data(), int(lda), b.data(), int(ldb), 0.0f, c.data(), int(s.N));
      });
      if (build != 2) openblas_set_num_threads(1);
      omp_set_num_threads(threads);
      std::printf(" %10.1f", g);
    }
    if (only.find("tiled") != std::string::npos) {
      ember::cpu::pin_blas_to_one_thread();
      std::printf(" %10.1f", gflops_of(s, [&] {
                    ember::cpu::sgemm_threads(s.ta, s.tb, s.M, s.N, s.K, a.data(), lda, b.data(), ldb, c.data(), s.N);
                  }));
    }
    if (only.find("dnnl_sgemm") != std::string::npos) {
      std::printf(" %10.1f", gflops_of(s, [&] {
                    dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, 1.0f, a.data(), lda, b.data(), ldb,
                               0.0f, c.data(), s.N);
                  }));
    }
    if (only.find("matmul") != std::string::npos) {
      using dnnl::memory;
      memory::desc ad({s.M, s.K}, memory::data_type::f32, s.ta ? memory::dims{1, s.M} : memory::dims{s.K, 1});
      memory::desc bd({s.K, s.N}, memory::data_type::f32, s.tb ? memory::dims{1, s.K} : memory::dims{s.N, 1});
      memory::desc cd({s.M, s.N}, memory::data_type::f32, memory::dims{s.N, 1});
      dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), eng));
      memory am(ad, eng, a.data()), bm(bd, eng, b.data()), cm(cd, eng, c.data());
      std::printf(" %10.1f", gflops_of(s, [&] {
                    prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
                    strm.wait();
                  }));
    }
    const ember::cpu::GemmTiling t = ember::cpu::plan_gemm_tiling(s.M, s.N, s.K);
    std::printf("   tiles %ldx%ld k%ld\n", long(t.m_tiles), long(t.n_tiles), long(t.k_slices));
    std::fflush(stdout);
  }
}

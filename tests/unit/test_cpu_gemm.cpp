// The CPU GEMM driver (src/cpu/gemm.cpp, issue 22): OpenBLAS single-threaded on tiles chosen from
// the shape alone. The tiled products must equal a float64 loop, whatever the tiling (row and
// column tiles with ragged edges, K slices, transposed and batched operands), and give the same
// bits for every thread count with or without --deterministic. The same products' bits under the
// other OpenBLAS build are compared by scripts/blas-builds.sh (EMBER_GEMM_FINGERPRINT below).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cpu/gemm.h"
#include "ember/ember.h"
#include "support/threads.h"

using namespace ember;

namespace {

struct Case {
  const char* name;
  int64_t B, M, N, K;
  bool ta, tb;  // the operand passed as a transposed view
};
// Each shape is big enough to be tiled (see the tiling test), with sizes that are not multiples
// of the tile alignment.
const Case kCases[] = {
    {"rows_and_columns", 1, 197, 301, 515, false, false},
    {"linear_forward_nt", 1, 64, 256, 784, false, true},
    {"weight_grad_tn", 1, 256, 784, 64, true, false},
    {"split_k", 1, 33, 47, 5000, false, false},
    {"split_k_nt", 1, 64, 128, 9216, false, true},
    {"batched", 3, 130, 150, 400, true, true},
    {"thin_n", 1, 4000, 3, 600, false, false},
};

Tensor operand(int64_t B, int64_t r, int64_t c, bool transposed) {
  return transposed ? randn({B, c, r}).transpose(1, 2) : randn({B, r, c});
}

std::vector<float> product(const Case& k, int threads, Tensor* a_out = nullptr, Tensor* b_out = nullptr) {
  set_num_threads(threads);
  manual_seed(5);
  Tensor a = operand(k.B, k.M, k.K, k.ta), b = operand(k.B, k.K, k.N, k.tb);
  if (a_out) *a_out = a;
  if (b_out) *b_out = b;
  return matmul(a, b).to_vector<float>();
}

}  // namespace

TEST(CpuGemm, TilingDependsOnTheShapeAndCoversIt) {
  // Small products stay one call; the training shapes of issue 22 are cut.
  cpu::GemmTiling one = cpu::plan_gemm_tiling(64, 10, 256);
  EXPECT_EQ(one.m_tiles * one.n_tiles * one.k_slices, 1);
  for (const Case& k : kCases) {
    cpu::GemmTiling t = cpu::plan_gemm_tiling(k.M, k.N, k.K);
    EXPECT_GT(t.m_tiles * t.n_tiles * t.k_slices, 1) << k.name << " is not tiled: the test would not test tiling";
    EXPECT_GE(t.m_tiles * t.tile_m, k.M) << k.name;
    EXPECT_GE(t.n_tiles * t.tile_n, k.N) << k.name;
    EXPECT_GE(t.k_slices * t.tile_k, k.K) << k.name;
    EXPECT_LT((t.m_tiles - 1) * t.tile_m, k.M) << k.name << ": an empty row tile";
    EXPECT_LT((t.n_tiles - 1) * t.tile_n, k.N) << k.name << ": an empty column tile";
    EXPECT_LT((t.k_slices - 1) * t.tile_k, k.K) << k.name << ": an empty K slice";
    EXPECT_TRUE(t.k_slices == 1 || t.m_tiles * t.n_tiles == 1) << k.name;
  }
  EXPECT_GT(cpu::plan_gemm_tiling(33, 47, 5000).k_slices, 1);
}

TEST(CpuGemm, TiledProductsMatchTheFloat64Loop) {
  test::ThreadsAndMode restore;
  for (const Case& k : kCases) {
    Tensor a, b;
    std::vector<float> got = product(k, 2, &a, &b);
    std::vector<double> ad = a.to(DType::Float64).contiguous().to_vector<double>();
    std::vector<double> bd = b.to(DType::Float64).contiguous().to_vector<double>();
    double worst = 0;
    for (int64_t i = 0; i < k.B; ++i)
      for (int64_t m = 0; m < k.M; ++m)
        for (int64_t n = 0; n < k.N; ++n) {
          double ref = 0;
          for (int64_t q = 0; q < k.K; ++q)
            ref += ad[size_t((i * k.M + m) * k.K + q)] * bd[size_t((i * k.K + q) * k.N + n)];
          const double err = std::abs(double(got[size_t((i * k.M + m) * k.N + n)]) - ref) / std::sqrt(double(k.K));
          worst = std::max(worst, err);
        }
    // float32 products of unit normals over K terms: error ~ sqrt(K) * 2^-24 per element.
    EXPECT_LT(worst, 1e-5) << k.name;
  }
}

TEST(CpuGemm, BitsDoNotDependOnTheThreadCountInEitherMode) {
  test::ThreadsAndMode restore;
  for (bool det : {false, true}) {
    set_deterministic(det);
    for (const Case& k : kCases) {
      std::vector<float> one = product(k, 1);
      for (int threads : {2, 3, 4}) {
        std::vector<float> many = product(k, threads);
        ASSERT_EQ(one.size(), many.size());
        EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
            << k.name << " with " << threads << " threads, deterministic " << det;
      }
    }
  }
}

// The bits of every case, hashed (FNV-1a) into the file EMBER_GEMM_FINGERPRINT names:
// scripts/blas-builds.sh runs this under each OpenBLAS build and requires the same file.
TEST(CpuGemm, Fingerprint) {
  const char* path = std::getenv("EMBER_GEMM_FINGERPRINT");
  if (path == nullptr) GTEST_SKIP() << "EMBER_GEMM_FINGERPRINT not set (scripts/blas-builds.sh sets it)";
  test::ThreadsAndMode restore;
  std::ofstream out(path);
  for (const Case& k : kCases) {
    std::vector<float> v = product(k, 2);
    uint64_t h = 1469598103934665603ull;
    for (float x : v) {
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      for (int byte = 0; byte < 4; ++byte) h = (h ^ ((bits >> (8 * byte)) & 0xff)) * 1099511628211ull;
    }
    out << k.name << " " << std::hex << h << std::dec << "\n";
  }
  ASSERT_TRUE(out.good()) << path;
}

// What was loaded, and that it was pinned (a pthreads build keeping its pool is issue 22's defect).
TEST(CpuGemm, OpenBlasIsPinnedUnlessItIsTheOpenMPBuild) {
  (void)zeros({1});  // registers the CPU backend, which pins OpenBLAS
  const cpu::BlasBuild b = cpu::blas_build();
  ASSERT_NE(b, cpu::BlasBuild::Unknown);
  if (b != cpu::BlasBuild::OpenMP) EXPECT_EQ(cpu::blas_threads(), 1);
}

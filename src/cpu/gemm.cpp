// Batched GEMM on the CPU through OpenBLAS (cblas_sgemm/dgemm), every call single-threaded: ember
// cuts each product into tiles chosen from its shape alone and runs them on its own OpenMP threads.
//
// Why (issue 22): Debian ships OpenBLAS as a pthreads, an OpenMP and a serial build, and the
// libopenblas.so.0 alternative picks whichever is installed with the highest priority (pthreads,
// wherever both are). The pthreads build's own thread pool spins beside ember's OpenMP workers —
// lenet5 training swung between 1.5k and 42k samples/s from run to run on 2 cores — and it is not
// serial inside an OpenMP region, so deterministic mode's bits followed the thread count. With
// OpenBLAS pinned to one thread and the tiling decided by the shape, every build runs the same
// serial kernels on the same tiles: the same speed, and the same bits for every thread count and
// every build (the tests compare them; scripts/blas-builds.sh runs them under each build).
#include "cpu/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <type_traits>
#include <vector>

#include "core/tensor_raw.h"
#include "kernels/kernels.h"

// OpenBLAS's threading model (0 serial, 1 pthreads, 2 OpenMP); in every build since 0.3.0, not
// declared by Debian 12's cblas.h.
extern "C" int openblas_get_parallel(void);

namespace ember::cpu {

BlasBuild blas_build() {
  static const BlasBuild b = [] {
    switch (openblas_get_parallel()) {
      case 0: return BlasBuild::Serial;
      case 1: return BlasBuild::Pthreads;
      case 2: return BlasBuild::OpenMP;
      default: return BlasBuild::Unknown;
    }
  }();
  return b;
}

// Debian's serial build (USE_THREAD=0) is not safe to call from two threads at once: its buffer
// allocation races, and tiles computed side by side came out wrong now and then (CI, 2026-12-01:
// CpuGemm.BitsDoNotDependOnTheThreadCountInEitherMode under LD_LIBRARY_PATH=.../openblas-serial).
// With it, every OpenBLAS call takes this lock and the tiles run one after another: slower on
// several cores (the doctor warns), the same bits (the tiling does not change).
bool blas_calls_may_overlap() { return blas_build() != BlasBuild::Serial; }

int blas_threads() { return openblas_get_num_threads(); }

void pin_blas_to_one_thread() {
  // The OpenMP build follows omp_get_max_threads() at every call (it cannot be pinned, and its
  // openblas_set_num_threads would set ember's own OpenMP thread count): serial_blas_call() below
  // keeps it serial instead. The others keep the count they are given.
  if (blas_build() != BlasBuild::OpenMP) openblas_set_num_threads(1);
}

namespace {

// Runs f with OpenBLAS serial whatever its build. Inside an active parallel region every build is
// serial already (the OpenMP build checks omp_in_parallel(), the others are pinned to one thread);
// outside one, the OpenMP build reads omp_get_max_threads(), so it is set to 1 for the call. This
// thread's OpenMP setting is restored afterwards.
template <class F>
void serial_blas_call(F&& f) {
  if (omp_in_parallel() || omp_get_max_threads() == 1) return f();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  f();
  omp_set_num_threads(saved);
}

struct Operand {
  Tensor t;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
Operand as_blas(const Tensor& m3) {
  int64_t r = m3.size(1), c = m3.size(2);
  int64_t s1 = m3.stride(1), s2 = m3.stride(2);
  if (s2 == 1 && (s1 >= std::max<int64_t>(c, 1) || r == 1)) return {m3, CblasNoTrans, std::max<int64_t>(r == 1 ? c : s1, 1)};
  if (s1 == 1 && (s2 >= std::max<int64_t>(r, 1) || c == 1)) return {m3, CblasTrans, std::max<int64_t>(c == 1 ? r : s2, 1)};
  Tensor cc = core::contiguous(m3);
  return {cc, CblasNoTrans, std::max<int64_t>(c, 1)};
}

// One serial GEMM: C (M, N) = op(A) (M, K) @ op(B) (K, N) + beta C.
std::mutex g_serial_build_lock;

template <class T>
void gemm_serial(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const T* a, int64_t lda,
                 const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  std::unique_lock<std::mutex> lock(g_serial_build_lock, std::defer_lock);
  if (!blas_calls_may_overlap()) lock.lock();
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// Where the tile (rows [m0, ..), columns [n0, ..), depth [k0, ..)) of op(A), op(B) starts.
template <class T>
const T* a_at(const T* a, CBLAS_TRANSPOSE ta, int64_t lda, int64_t m0, int64_t k0) {
  return ta == CblasNoTrans ? a + m0 * lda + k0 : a + k0 * lda + m0;
}
template <class T>
const T* b_at(const T* b, CBLAS_TRANSPOSE tb, int64_t ldb, int64_t k0, int64_t n0) {
  return tb == CblasNoTrans ? b + k0 * ldb + n0 : b + n0 * ldb + k0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
int64_t floor_pow2(int64_t v) { return v < 1 ? 1 : int64_t(std::bit_floor(uint64_t(v))); }

// A product of M*N*K < kMinTileWork multiply-adds (about 4 MFLOP, 25-40 us on one AVX-512 core)
// stays one call; bigger ones get one tile per kMinTileWork, a power of two (so 2, 4, 8 or 16
// threads share them evenly), at most kMaxTiles. The size was chosen by bench/blas_gemm_lab.cpp
// (docs/benchmarks.md, "OpenBLAS builds"): smaller tiles lost to the call and packing overhead on
// the training shapes, larger ones left a thread idle.
constexpr int64_t kMinTileWork = int64_t(1) << 21;
constexpr int64_t kMaxTiles = 64;
// Long-K, small-output products (mnistnet's fc1: M 64, N 128, K 9216) are split along K into
// slices of at least kMinSliceK, summed in slice order: tiles of such an output would be too thin.
constexpr int64_t kMinSliceK = 1024;
// Tile edges are multiples of 16 (the AVX-512 micro-kernels' width): only the last tile of a row
// or column goes through OpenBLAS's edge kernels.
constexpr int64_t kTileAlign = 16;

}  // namespace

GemmTiling plan_gemm_tiling(int64_t M, int64_t N, int64_t K) {
  GemmTiling t{1, 1, 1, std::max<int64_t>(M, 1), std::max<int64_t>(N, 1), std::max<int64_t>(K, 1)};
  const double work = double(M) * double(N) * double(K);
  if (work < 2.0 * double(kMinTileWork)) return t;
  const int64_t tiles = floor_pow2(std::min<int64_t>(kMaxTiles, int64_t(work / double(kMinTileWork))));
  if (K >= 2 * kMinSliceK && K >= 8 * std::max(M, N) && M * N <= (int64_t(1) << 16)) {
    t.k_slices = floor_pow2(std::min(tiles, K / kMinSliceK));
    t.tile_k = round_up(ceil_div(K, t.k_slices), kTileAlign);
    t.k_slices = ceil_div(K, t.tile_k);
    return t;
  }
  // As square as the output allows: n_tiles / m_tiles ~ N / M.
  int64_t n_tiles = 1;
  while (n_tiles < tiles && (n_tiles * 2) * (n_tiles * 2) * M <= 4 * tiles * N) n_tiles *= 2;
  n_tiles = std::min(n_tiles, std::max<int64_t>(1, floor_pow2(N / kTileAlign)));
  int64_t m_tiles = std::min(tiles / n_tiles, std::max<int64_t>(1, floor_pow2(M / kTileAlign)));
  t.tile_n = round_up(ceil_div(N, n_tiles), kTileAlign);
  t.n_tiles = ceil_div(N, t.tile_n);
  t.tile_m = round_up(ceil_div(M, m_tiles), kTileAlign);
  t.m_tiles = ceil_div(M, t.tile_m);
  return t;
}

namespace {

// C_i (M, N) = op(A_i) @ op(B_i) for i < batch, tiled by plan_gemm_tiling and shared out among
// `threads` OpenMP threads. The tiles and the order of every sum depend on the shape only.
template <class T>
void gemm_tiled(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t batch, int64_t M, int64_t N, int64_t K, const T* a,
                int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T* c, int64_t ldc,
                int64_t stride_c, int threads) {
  const GemmTiling p = plan_gemm_tiling(M, N, K);
  if (!blas_calls_may_overlap()) threads = 1;
  if (p.k_slices > 1) {
    // Slice s writes partial[s]; the partials are summed into C in slice order, each thread a
    // range of C's elements.
    std::vector<T> partial(size_t(p.k_slices) * size_t(M * N));
    for (int64_t i = 0; i < batch; ++i) {
      const T* ai = a + i * stride_a;
      const T* bi = b + i * stride_b;
      T* ci = c + i * stride_c;
#pragma omp parallel num_threads(threads) if (threads > 1)
      {
#pragma omp for schedule(static)
        for (int64_t s = 0; s < p.k_slices; ++s) {
          const int64_t k0 = s * p.tile_k, k = std::min(p.tile_k, K - k0);
          serial_blas_call([&] {
            gemm_serial<T>(ta, tb, M, N, k, a_at(ai, ta, lda, 0, k0), lda, b_at(bi, tb, ldb, k0, 0), ldb, T(0),
                           partial.data() + size_t(s) * size_t(M * N), N);
          });
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < M; ++r) {
          T* row = ci + r * ldc;
          const T* p0 = partial.data() + r * N;
          std::copy(p0, p0 + N, row);
          for (int64_t s = 1; s < p.k_slices; ++s) {
            const T* ps = partial.data() + size_t(s) * size_t(M * N) + r * N;
            for (int64_t j = 0; j < N; ++j) row[j] += ps[j];
          }
        }
      }
    }
    return;
  }
  const int64_t per = p.m_tiles * p.n_tiles, jobs = batch * per;
  auto run = [&](int64_t job) {
    const int64_t i = job / per, mt = (job % per) / p.n_tiles, nt = job % p.n_tiles;
    const int64_t m0 = mt * p.tile_m, n0 = nt * p.tile_n;
    const int64_t m = std::min(p.tile_m, M - m0), n = std::min(p.tile_n, N - n0);
    gemm_serial<T>(ta, tb, m, n, K, a_at(a + i * stride_a, ta, lda, m0, 0), lda, b_at(b + i * stride_b, tb, ldb, 0, n0),
                   ldb, T(0), c + i * stride_c + m0 * ldc + n0, ldc);
  };
  if (threads > 1 && jobs > 1) {
#pragma omp parallel for schedule(static) num_threads(int(std::min<int64_t>(threads, jobs)))
    for (int64_t job = 0; job < jobs; ++job) serial_blas_call([&] { run(job); });
  } else {
    serial_blas_call([&] {
      for (int64_t job = 0; job < jobs; ++job) run(job);
    });
  }
}

void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  if (out.numel() == 0) return;
  if (K == 0) {
    kernels::fill(Device::cpu())(out, 0.0);
    return;
  }
  Operand A = as_blas(a), Bm = as_blas(b);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (a.dtype() == DType::Float32)
    gemm_tiled<float>(A.trans, Bm.trans, B, M, N, K, A.t.data_ptr<float>(), A.ld, A.t.stride(0),
                      Bm.t.data_ptr<float>(), Bm.ld, Bm.t.stride(0), out.data_ptr<float>(), N, M * N, threads);
  else if (a.dtype() == DType::Float64)
    gemm_tiled<double>(A.trans, Bm.trans, B, M, N, K, A.t.data_ptr<double>(), A.ld, A.t.stride(0),
                       Bm.t.data_ptr<double>(), Bm.ld, Bm.t.stride(0), out.data_ptr<double>(), N, M * N, threads);
  else
    throw DTypeError(detail::cat("matmul: unsupported dtype ", dtype_name(a.dtype())));
}
}  // namespace

void sgemm_threads(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float* c, int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  gemm_tiled<float>(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, 1, M, N, K, a, lda, 0, b,
                    ldb, 0, c, ldc, 0, threads);
}

void sgemm_serial(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  serial_blas_call([&] {
    gemm_serial<float>(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, a, lda, b, ldb,
                       beta, c, ldc);
  });
}

void register_gemm_kernels() {
  pin_blas_to_one_thread();
  kernels::batched_gemm.set(DeviceType::CPU, &batched_gemm);
}

}  // namespace ember::cpu

// Batched GEMM on the CPU through OpenBLAS (cblas_sgemm/dgemm). Transposed operands are passed
// as transposes, never copied; only layouts BLAS cannot express are made contiguous first.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"

namespace ember::cpu {

// OpenBLAS sizes its own thread count once, from OMP_NUM_THREADS at load time; omp_set_num_threads
// (ember::set_num_threads, --threads) does not reach it. Keep the two equal before every call, or a
// 1-thread run still runs 2-thread GEMMs (and on a busy machine each one waits for a time slice).
void sync_blas_threads() {
  static std::atomic<int> current{-1};
  const int want = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (current.load(std::memory_order_relaxed) != want && !omp_in_parallel()) {
    openblas_set_num_threads(want);
    current.store(want, std::memory_order_relaxed);
  }
}

namespace {
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
  Tensor cc = m3.contiguous();
  return {cc, CblasNoTrans, std::max<int64_t>(c, 1)};
}

// Long-K, small-output GEMMs (mnistnet's fc1: M 64, N 128, K 9216) are split along K: each OpenMP
// thread multiplies its slice of K single-threaded (OpenBLAS runs serially inside a parallel
// region) and the partial outputs are summed. OpenBLAS parallelises over M and N only; at this
// shape its 2-thread NT path ran 126 GFLOP/s, while one thread on half of K ran 89 GFLOP/s
// (2026-11-29, /tmp probe). The result depends on the thread count (summation order), but is
// deterministic for a fixed count, like everything else on the CPU.
bool use_split_k(int64_t M, int64_t N, int64_t K, int threads) {
  return threads >= 2 && K >= 2048 && K >= 8 * std::max(M, N) && M * N <= (int64_t(1) << 16);
}
template <class T>
void split_k_gemm(const Operand& A, const Operand& Bm, int64_t M, int64_t N, int64_t K, T* out, int threads) {
  // Slice t covers k in [t*K/threads, (t+1)*K/threads), rounded to 16; thread 0 writes `out`,
  // the others a scratch buffer each, summed into `out` afterwards in thread order.
  std::vector<T> partial(size_t(threads - 1) * size_t(M * N));
  const T* a = A.t.template data_ptr<T>();
  const T* b = Bm.t.template data_ptr<T>();
  auto a_at = [&](int64_t k0) { return A.trans == CblasNoTrans ? a + k0 : a + k0 * A.ld; };
  auto b_at = [&](int64_t k0) { return Bm.trans == CblasNoTrans ? b + k0 * Bm.ld : b + k0; };
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t per = ((K + nt - 1) / nt + 15) / 16 * 16;
    const int64_t k0 = std::min(K, t * per), k1 = std::min(K, k0 + per);
    T* c = t == 0 ? out : partial.data() + size_t(t - 1) * size_t(M * N);
    if (k1 > k0) {
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, A.trans, Bm.trans, int(M), int(N), int(k1 - k0), 1.0f, a_at(k0), int(A.ld),
                    b_at(k0), int(Bm.ld), 0.0f, c, int(N));
      else
        cblas_dgemm(CblasRowMajor, A.trans, Bm.trans, int(M), int(N), int(k1 - k0), 1.0, a_at(k0), int(A.ld),
                    b_at(k0), int(Bm.ld), 0.0, c, int(N));
    } else {
      std::fill(c, c + M * N, T(0));
    }
#pragma omp barrier
    // Sum the partials into out, each thread a slice of the output.
    const int64_t n = M * N, per_o = (n + nt - 1) / nt;
    const int64_t o0 = std::min(n, t * per_o), o1 = std::min(n, o0 + per_o);
    for (int j = 1; j < nt; ++j) {
      const T* pj = partial.data() + size_t(j - 1) * size_t(n);
      for (int64_t i = o0; i < o1; ++i) out[i] += pj[i];
    }
  }
}

void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  if (out.numel() == 0) return;
  if (K == 0) {
    kernels::fill(Device::cpu())(out, 0.0);
    return;
  }
  sync_blas_threads();
  Operand A = as_blas(a), Bm = as_blas(b);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (B == 1 && use_split_k(M, N, K, threads) && (a.dtype() == DType::Float32 || a.dtype() == DType::Float64)) {
    if (a.dtype() == DType::Float32) split_k_gemm<float>(A, Bm, M, N, K, out.data_ptr<float>(), threads);
    else split_k_gemm<double>(A, Bm, M, N, K, out.data_ptr<double>(), threads);
    return;
  }
  for (int64_t i = 0; i < B; ++i) {
    if (a.dtype() == DType::Float32) {
      cblas_sgemm(CblasRowMajor, A.trans, Bm.trans, int(M), int(N), int(K), 1.0f,
                  A.t.data_ptr<float>() + i * A.t.stride(0), int(A.ld),
                  Bm.t.data_ptr<float>() + i * Bm.t.stride(0), int(Bm.ld), 0.0f,
                  out.data_ptr<float>() + i * M * N, int(N));
    } else if (a.dtype() == DType::Float64) {
      cblas_dgemm(CblasRowMajor, A.trans, Bm.trans, int(M), int(N), int(K), 1.0,
                  A.t.data_ptr<double>() + i * A.t.stride(0), int(A.ld),
                  Bm.t.data_ptr<double>() + i * Bm.t.stride(0), int(Bm.ld), 0.0,
                  out.data_ptr<double>() + i * M * N, int(N));
    } else {
      throw DTypeError(detail::cat("matmul: unsupported dtype ", dtype_name(a.dtype())));
    }
  }
}
}  // namespace

void register_gemm_kernels() { kernels::batched_gemm.set(DeviceType::CPU, &batched_gemm); }

}  // namespace ember::cpu

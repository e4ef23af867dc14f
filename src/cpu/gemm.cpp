// Batched GEMM on the CPU through OpenBLAS (cblas_sgemm/dgemm). Transposed operands are passed
// as transposes, never copied; only layouts BLAS cannot express are made contiguous first.
#include <cblas.h>
#include <omp.h>

#include <atomic>

#include "ops/kernels.h"

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

void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  if (out.numel() == 0) return;
  if (K == 0) {
    kernels::fill(Device::cpu())(out, 0.0);
    return;
  }
  sync_blas_threads();
  Operand A = as_blas(a), Bm = as_blas(b);
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

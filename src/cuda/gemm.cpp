// Batched GEMM on CUDA through cuBLAS (cublasSgemmStridedBatched / cublasDgemmStridedBatched), the
// twin of src/cpu/gemm.cpp. cuBLAS is column-major: a row-major (M, N) C is a column-major
// (N, M) C^T, so we compute C^T = B^T A^T by passing B first. Transposed views are passed as
// transposes, never copied; only layouts BLAS cannot express are made contiguous first.
// Float32 uses cuBLAS's default math mode (full fp32, no TF32), so results compare to the CPU's,
// unless ember::set_allow_tf32(true): then CUBLAS_TF32_TENSOR_OP_MATH (the handle's mode is set
// before every float32 call, so the setting takes effect at the next matmul).
// bfloat16 / float16 operands go through cublasGemmStridedBatchedEx with float32 accumulation
// (CUBLAS_COMPUTE_32F: the tensor cores), writing float32 or the operands' dtype (gemm.h).
#include "cuda/gemm.h"

#include <algorithm>
#include <climits>

#include "core/tensor_raw.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "ember/core/settings.h"
#include "kernels/kernels.h"

namespace ember::cuda {

namespace {
struct Operand {
  Tensor t;
  cublasOperation_t trans;  // how cuBLAS must read the row-major storage (see the header comment)
  int64_t ld;
};
Operand as_blas(const Tensor& m3) {
  int64_t r = m3.size(1), c = m3.size(2);
  int64_t s1 = m3.stride(1), s2 = m3.stride(2);
  if (s2 == 1 && (s1 >= std::max<int64_t>(c, 1) || r == 1)) return {m3, CUBLAS_OP_N, std::max<int64_t>(r == 1 ? c : s1, 1)};
  if (s1 == 1 && (s2 >= std::max<int64_t>(r, 1) || c == 1)) return {m3, CUBLAS_OP_T, std::max<int64_t>(c == 1 ? r : s2, 1)};
  Tensor cc = core::contiguous(m3);
  return {cc, CUBLAS_OP_N, std::max<int64_t>(c, 1)};
}

int to_int(int64_t v, const char* what) {
  EMBER_CHECK(v <= INT_MAX, NotImplementedError, "matmul on CUDA: ", what, " = ", v,
              " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::BFloat16: return CUDA_R_16BF;
    case DType::Float16: return CUDA_R_16F;
    case DType::Float32: return CUDA_R_32F;
    default: throw DTypeError(::ember::detail::cat("half matmul on CUDA: unexpected dtype ", dtype_name(t)));
  }
}
}  // namespace

void gemm_half(const Tensor& a, const Tensor& b, const Tensor& out, float beta) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  EMBER_ASSERT(is_half(a.dtype()) && b.dtype() == a.dtype() && (out.dtype() == DType::Float32 || out.dtype() == a.dtype()),
               "gemm_half: operands ", dtype_name(a.dtype()), " x ", dtype_name(b.dtype()), " -> ", dtype_name(out.dtype()));
  EMBER_ASSERT(out.is_contiguous(), "gemm_half: out must be contiguous");
  if (out.numel() == 0) return;
  if (K == 0) {
    if (beta == 0.0f) kernels::fill(out.device())(out, 0.0);
    return;
  }
  Operand A = as_blas(a), Bm = as_blas(b);
  const int dev = out.device().index;
  DeviceGuard g(dev);
  cublasHandle_t h = cublas_handle(dev);
  const int m = to_int(M, "M"), n = to_int(N, "N"), k = to_int(K, "K"), batch = to_int(B, "batch");
  const int lda = to_int(A.ld, "lda"), ldb = to_int(Bm.ld, "ldb");
  const long long sa = A.t.stride(0), sb = Bm.t.stride(0), sc = M * N;
  const float one = 1.0f;
  const cudaDataType_t ht = cuda_type(a.dtype());
  // The default math mode lets cuBLAS use the tensor cores for half operands; float32 sums.
  EMBER_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, Bm.trans, A.trans, n, m, k, &one, Bm.t.raw_data(), ht, ldb, sb,
                                                A.t.raw_data(), ht, lda, sa, &beta, out.raw_data(),
                                                cuda_type(out.dtype()), n, sc, batch, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT));
}

namespace {
void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  if (out.numel() == 0) return;
  if (is_half(a.dtype())) return gemm_half(a, b, out);  // half in, half out, float32 sums
  if (K == 0) {
    kernels::fill(out.device())(out, 0.0);
    return;
  }
  EMBER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, DTypeError,
              "matmul: unsupported dtype ", dtype_name(a.dtype()));
  Operand A = as_blas(a), Bm = as_blas(b);
  const int dev = out.device().index;
  DeviceGuard g(dev);
  cublasHandle_t h = cublas_handle(dev);
  const int m = to_int(M, "M"), n = to_int(N, "N"), k = to_int(K, "K"), batch = to_int(B, "batch");
  const int lda = to_int(A.ld, "lda"), ldb = to_int(Bm.ld, "ldb");
  // Broadcast batches have stride 0, which cuBLAS accepts.
  const long long sa = A.t.stride(0), sb = Bm.t.stride(0), sc = M * N;
  if (a.dtype() == DType::Float32) {
    const float one = 1.0f, zero = 0.0f;
    EMBER_CUBLAS_CHECK(cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    EMBER_CUBLAS_CHECK(cublasSgemmStridedBatched(h, Bm.trans, A.trans, n, m, k, &one, Bm.t.data_ptr<float>(), ldb, sb,
                                                 A.t.data_ptr<float>(), lda, sa, &zero, out.data_ptr<float>(), n, sc,
                                                 batch));
  } else {
    const double one = 1.0, zero = 0.0;
    EMBER_CUBLAS_CHECK(cublasDgemmStridedBatched(h, Bm.trans, A.trans, n, m, k, &one, Bm.t.data_ptr<double>(), ldb, sb,
                                                 A.t.data_ptr<double>(), lda, sa, &zero, out.data_ptr<double>(), n, sc,
                                                 batch));
  }
}
}  // namespace

void register_gemm_kernels() { kernels::batched_gemm.set(DeviceType::CUDA, &batched_gemm); }

}  // namespace ember::cuda

// The CPU backend's GEMM driver over OpenBLAS (src/cpu/gemm.cpp): which OpenBLAS build is loaded,
// how a product is tiled, and the float32 entry points the im2col convolution shares.
// OpenBLAS is always called single-threaded; ember's OpenMP threads run the tiles.
#pragma once

#include <cstdint>

namespace ember::cpu {

// The threading model of the libopenblas.so.0 this process loaded (openblas_get_parallel()).
enum class BlasBuild { Serial, Pthreads, OpenMP, Unknown };
BlasBuild blas_build();
// False for the serial build, which is not safe to call from several threads at once: ember then
// runs its OpenBLAS calls one at a time (under a lock), on the same tiles.
bool blas_calls_may_overlap();
// The thread count OpenBLAS reports (openblas_get_num_threads()).
int blas_threads();

// Called once at registration: a pthreads or serial build is told to use one thread (its pool
// then never runs); the OpenMP build is kept serial per call instead.
void pin_blas_to_one_thread();

// How plan_gemm_tiling cuts C (M, N) = A (M, K) @ B (K, N): m_tiles x n_tiles output tiles of at
// most tile_m x tile_n, or (k_slices > 1, then one output tile) K slices of tile_k summed in order.
// A function of the shape alone, never of the thread count: that is what keeps the bits fixed.
struct GemmTiling {
  int64_t m_tiles, n_tiles, k_slices;
  int64_t tile_m, tile_n, tile_k;
};
GemmTiling plan_gemm_tiling(int64_t M, int64_t N, int64_t K);

// C (M, N) = op(A) @ op(B), row-major, tiled over this thread's OpenMP threads (serial inside a
// parallel region). Overwrites C.
void sgemm_threads(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float* c, int64_t ldc);
// C = op(A) @ op(B) + beta C as one serial OpenBLAS call, whatever the build.
void sgemm_serial(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace ember::cpu

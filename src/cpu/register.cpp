// Fills the dispatch table with the CPU kernels and registers the CPU libraries' facts with core.
#include "cpu/register.h"

#include <omp.h>
#include <sched.h>

#include <cstdlib>

#include "core/runtime.h"
#include "cpu/libraries.h"

namespace ember::cpu {
// One registration function per op family, defined in the file named beside it: the family's own
// file, except linear and conv2d, whose slots are registered from their oneDNN files (the im2col
// conv of nn_conv.cpp and the bf16 matmuls of linear_matmul.cpp are reached from there).
// src/cpu/README.md maps the files; src/cuda/register.cpp is the CUDA twin (its linear family is
// linear_half.cpp, and device copies are a family of their own there).
void register_elementwise_kernels();  // elementwise.cpp
void register_activation_kernels();   // activation.cpp
void register_reduce_kernels();       // reduce.cpp
void register_gemm_kernels();         // gemm.cpp
void register_linear_kernels();       // linear_dnnl.cpp
void register_nn_conv_kernels();      // nn_conv_dnnl.cpp (oneDNN; im2col and reference fallbacks)
void register_nn_pool_kernels();      // nn_pool.cpp
void register_nn_norm_kernels();      // nn_norm.cpp
void register_nn_softmax_kernels();   // nn_softmax.cpp
void register_nn_loss_kernels();      // nn_loss.cpp
void register_optim_kernels();        // optim.cpp
void register_math_kernels();         // math.cpp
void register_scan_kernels();         // scan.cpp
void register_index_kernels();        // index.cpp

void register_kernels() {
  // Default thread count: the cores this process may use (affinity), unless OMP_NUM_THREADS says.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) omp_set_num_threads(CPU_COUNT(&set));
  }
  register_elementwise_kernels();
  register_activation_kernels();
  register_reduce_kernels();
  register_gemm_kernels();
  register_linear_kernels();
  register_nn_conv_kernels();
  register_nn_pool_kernels();
  register_nn_norm_kernels();
  register_nn_softmax_kernels();
  register_nn_loss_kernels();
  register_optim_kernels();
  register_math_kernels();
  register_scan_kernels();
  register_index_kernels();
  register_cpu_libraries(library_facts);
}
}  // namespace ember::cpu

// Fills the dispatch table with the CPU kernels.
#include <omp.h>
#include <sched.h>

#include <cstdlib>

namespace ember::cpu {
void register_elementwise_kernels();
void register_reduce_kernels();
void register_gemm_kernels();
void register_nn_kernels();
void register_optim_kernels();  // optim.cpp
void register_linear_kernels();  // linear_dnnl.cpp

void register_kernels() {
  // Default thread count: the cores this process may use (affinity), unless OMP_NUM_THREADS says.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) omp_set_num_threads(CPU_COUNT(&set));
  }
  register_elementwise_kernels();
  register_reduce_kernels();
  register_gemm_kernels();
  register_nn_kernels();
  register_optim_kernels();
  register_linear_kernels();
}
}  // namespace ember::cpu

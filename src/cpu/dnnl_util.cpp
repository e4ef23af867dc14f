// The process's oneDNN CPU engine, shared by the oneDNN kernels (nn_conv_dnnl.cpp, linear_dnnl.cpp).
#include "cpu/dnnl_util.h"

namespace ember::cpu {

dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

}  // namespace ember::cpu

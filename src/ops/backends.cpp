// The one place that knows which backends were compiled: registers them on first use (the first
// empty(), set_num_threads() or data loader) and tells core's dispatch table it is filled.
#include "ops/backends.h"

#include <omp.h>

#include "core/dispatch.h"
#include "ember/ops.h"

namespace ember {
namespace cpu { void register_kernels(); }
#ifdef EMBER_WITH_CUDA
namespace cuda { void register_kernels(); }
#endif

void ensure_backends() {
  static const bool done = [] {
    cpu::register_kernels();
#ifdef EMBER_WITH_CUDA
    cuda::register_kernels();
#endif
    detail::mark_backends_registered();
    return true;
  }();
  (void)done;
}

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, ValueError, "set_num_threads: n must be >= 1, got ", n);
  // Registration sets the default thread count; run it first, or a set_num_threads() made
  // before the first op would be overwritten by that default when the first op registers.
  ensure_backends();
  omp_set_num_threads(n);
}
int get_num_threads() {
  ensure_backends();
  return omp_get_max_threads();
}

}  // namespace ember

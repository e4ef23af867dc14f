// set_num_threads / get_num_threads (ember/ops.h): the OpenMP team every CPU kernel runs on. The
// backends register first, because the CPU backend's registration sets the default thread count.
#include <omp.h>

#include "backends/registry.h"
#include "ember/ops.h"

namespace ember {

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

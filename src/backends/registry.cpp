// The one place that knows which backends were compiled: registers them on first use (the first
// empty(), runtime query or data loader) and tells core's dispatch table it is filled.
#include "backends/registry.h"

#include "core/dispatch.h"
#include "cpu/register.h"
#ifdef EMBER_WITH_CUDA
#include "cuda/register.h"
#endif

namespace ember {

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

}  // namespace ember

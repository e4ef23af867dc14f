// The tables of core/runtime.h. Written once, inside the backends' registration (ensure_backends()
// runs it under a function-local static's guard), and read only after it, so plain globals suffice.
#include "core/runtime.h"

namespace ember {

namespace {
CudaRuntime g_cuda_runtime;
bool g_cuda_registered = false;
CpuLibraryQuery g_cpu_libraries = nullptr;
}  // namespace

void register_cuda_runtime(const CudaRuntime& runtime) {
  g_cuda_runtime = runtime;
  g_cuda_registered = true;
}
const CudaRuntime* registered_cuda_runtime() { return g_cuda_registered ? &g_cuda_runtime : nullptr; }

void register_cpu_libraries(CpuLibraryQuery query) { g_cpu_libraries = query; }
CpuLibraryQuery registered_cpu_libraries() { return g_cpu_libraries; }

}  // namespace ember

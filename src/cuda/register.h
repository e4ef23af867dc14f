// The CUDA backend's one entry point for the registry (src/backends/registry.cpp): fills the
// dispatch table and the CUDA allocator, and registers the CUDA runtime's queries with core.
#pragma once

namespace ember::cuda {
void register_kernels();  // once, from ensure_backends(); GPU or not
}  // namespace ember::cuda

// The CPU backend's one entry point for the registry (src/backends/registry.cpp): fills the
// dispatch table with the CPU kernels and registers the CPU libraries' facts with core.
#pragma once

namespace ember::cpu {
void register_kernels();  // once, from ensure_backends()
}  // namespace ember::cpu

// The OS layer's part of the verdict (verdict_os.cpp): the kernel module against libcuda, modules
// holding the GPU, Secure Boot, the device nodes, a container without GPUs. Pure functions of the facts.
#pragma once

#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// What keeps the nvidia module from loading, first: nouveau holding the GPU, Secure Boot refusing
// an unsigned module; else `modprobe` and the kernel log.
std::string module_not_loaded_fix(const EnvFacts& f);
// Appends the OS layer's checks ("kernel module", "nouveau", "device files", "container").
// Returns false when one of them keeps CUDA from every GPU.
bool judge_os(const EnvFacts& f, std::vector<Check>& checks);

}  // namespace ember::env::detail

// The parts of the doctor's verdict, one file per subject, called in order by diagnose()
// (verdict.cpp): the host (verdict_host.cpp), the driver and the CUDA libraries ember loads
// (verdict_nvidia.cpp), the devices (verdict_devices.cpp); the OS layer, library provenance, NVML and
// the Python frameworks have their own headers. Each appends its checks and says whether what it
// found keeps CUDA from every GPU. Pure functions of the facts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// True when this machine has no NVIDIA GPU for sure: the PCI bus lists none and CUDA shows none.
// Never on WSL2 or in a container without /sys (there one cannot be ruled out: nvidia_pci_gpus unset).
bool no_nvidia_gpu(const EnvFacts& f);
// The CUDA ember needs a driver for: the loaded runtime's, else the one it was built with.
std::optional<Version> wanted_cuda(const EnvFacts& f);
// "the NVIDIA driver 550.54.14" or, when /proc/driver/nvidia/version could not be read, words that
// say so (never "driver supports ..." with a hole where the version goes).
std::string driver_label(const EnvFacts& f);
// The GPUs CUDA shows whose last driver branch is older than the one CUDA `cuda` needs, in words:
// "Tesla K80 (Kepler, sm_37: its last driver is R470, CUDA 11.4 at most)"; "" when none is.
std::string past_support(const EnvFacts& f, const Version& cuda);

// "cpu", "build", "blas". Returns whether the CPU can train (its smoke test passed).
bool judge_host(const EnvFacts& f, std::vector<Check>& checks);
// "nvidia gpu" (none in the machine), "driver". Returns false when the driver keeps CUDA from every GPU.
bool judge_driver(const EnvFacts& f, std::vector<Check>& checks);
// "cuda runtime", "cudnn", "cublas". Returns false when one keeps CUDA from every GPU.
bool judge_cuda_libraries(const EnvFacts& f, std::vector<Check>& checks);
// "visible devices", "devices", "device N", "cudnn device N". Returns false when no device is
// visible; sets any_gpu_ok when one GPU can run ember's kernels.
bool judge_devices(const EnvFacts& f, std::vector<Check>& checks, bool& any_gpu_ok);

}  // namespace ember::env::detail

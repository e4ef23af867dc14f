// The verdict on what NVML reports of each GPU (verdict_nvml.cpp): memory held by other processes,
// MIG, ECC errors, retired pages and remapped rows, Xid errors, clocks held down, persistence.
#pragma once

#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// Appends the "nvml" check (when NVML did not answer) and one "nvml gpu N" check per GPU, in
// nvidia-smi's order: the worst finding of each GPU, with its fix. Pure.
void judge_nvml(const EnvFacts& f, std::vector<Check>& checks);

}  // namespace ember::env::detail

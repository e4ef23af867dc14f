// Library provenance's part of the verdict (verdict_libraries.cpp): NCCL, and the same NVIDIA library
// found in several places with different versions. Pure functions of the facts.
#pragma once

#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// Appends "nccl" and one check per library found with different versions ("libcudnn.so.9").
void judge_libraries(const EnvFacts& f, std::vector<Check>& checks);

}  // namespace ember::env::detail

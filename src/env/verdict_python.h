// The framework audit's verdict (verdict_python.cpp): each audited interpreter's torch,
// tensorflow, jax and onnxruntime judged against the driver and the GPUs, as checks with fixes.
#pragma once

#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

void judge_pythons(const EnvFacts& f, std::vector<Check>& checks);

// "9.1.0" from cuDNN's integer version (90100 for 9.x, 8902 for 8.x).
std::string cudnn_int_str(int v);

}  // namespace ember::env::detail

// `ember doctor --smoke`: the shortest proof that training on a GPU will work, in seconds. On one
// device it creates the CUDA context, copies 64 MiB host->device->host (checked byte for byte, with
// the bandwidth of each direction), and runs one of ember's own kernels, one cuBLAS GEMM and one
// cuDNN convolution, each checked against the CPU on integer-valued inputs (exact in float32 and
// TF32). Without a usable GPU it runs nothing and says why (skipped).
#pragma once

#include <string>
#include <vector>

namespace ember::env {

struct SmokeStep {
  std::string name;    // "context", "copy 64 MiB", "ember kernel", "cublas gemm", "cudnn conv"
  bool ok = false;
  std::string detail;  // what was checked and measured, or what went wrong
  double seconds = 0;
};

struct GpuSmokeResult {
  int device = 0;
  std::string device_name;
  std::string skipped;           // non-empty: no usable GPU, nothing ran (the reason)
  std::vector<SmokeStep> steps;  // in order; a failed step stops the rest
  double h2d_gbps = 0, d2h_gbps = 0;
  bool passed() const;           // ran, and every step passed
};

// Runs the smoke test on cuda:`device`. Never throws: a CUDA error is a failed step.
GpuSmokeResult gpu_smoke_test(int device = 0);

// One line per step within 80 columns and a last "smoke:" line (PASS / FAIL / SKIP).
std::string format_smoke(const GpuSmokeResult& r);
// {"device", "device_name", "skipped", "passed", "h2d_gbps", "d2h_gbps",
//  "steps": [{"name", "ok", "detail", "seconds"}]} (docs/doctor.md).
std::string smoke_json(const GpuSmokeResult& r);

}  // namespace ember::env

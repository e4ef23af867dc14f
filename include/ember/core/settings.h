// Process-wide numeric settings. Thread-safe (atomics); read by backends when they pick algorithms.
#pragma once

namespace ember {

// When true, backends use only algorithms whose results are bit-for-bit reproducible from run to
// run on the same device (e.g. cuDNN convolutions without atomics); this may be slower, and a
// backend with no deterministic algorithm for an op throws NotImplementedError. Default false.
// Affects ops launched after the call.
void set_deterministic(bool on);
bool deterministic();

// When true, float32 matrix multiplies on CUDA may use TF32 tensor cores (cuBLAS
// CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to a 10-bit mantissa, accumulation in float32),
// several times faster on A100/H100 but no longer comparable to the CPU at float32 tolerances.
// Default false (PyTorch's torch.backends.cuda.matmul.allow_tf32 default). float64 and the CPU
// are unaffected; cuDNN convolutions keep FMA math either way. Affects matmuls launched after the call.
void set_allow_tf32(bool on);
bool allow_tf32();

}  // namespace ember

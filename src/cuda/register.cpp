// CUDA backend registration. The device probe (runtime.cpp) is built; the CUDA kernels, allocator
// and copies land with the CUDA backend issue, and until then a CUDA build computes on the CPU.
namespace ember::cuda {
void register_kernels() {}
}  // namespace ember::cuda

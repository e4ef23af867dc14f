// Placeholder registration hook for the neural-network kernels (conv, pool, norm, softmax);
// replaced by src/cpu/nn_register.cpp when those kernels land.
namespace ember::cpu {
void register_nn_kernels() {}
}  // namespace ember::cpu

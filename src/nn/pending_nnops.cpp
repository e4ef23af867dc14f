// TEMPORARY: throwing stand-ins for the nn::functional ops that branch `nnops` implements, so the
// nn modules link before it lands. Deleted in the merge that brings the real ops in.
#include "ember/ops.h"

namespace ember::nn::functional {
namespace {
[[noreturn]] void pending(const char* op) {
  throw NotImplementedError(std::string(op) + ": not available yet (waiting for the nnops branch)");
}
}  // namespace
Tensor conv2d(const Tensor&, const Tensor&, const Tensor&, Conv2dOptions) { pending("conv2d"); }
Tensor max_pool2d(const Tensor&, Pool2dOptions) { pending("max_pool2d"); }
Tensor avg_pool2d(const Tensor&, Pool2dOptions) { pending("avg_pool2d"); }
Tensor adaptive_avg_pool2d(const Tensor&, std::array<int64_t, 2>) { pending("adaptive_avg_pool2d"); }
Tensor batch_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                  double, double) {
  pending("batch_norm");
}
Tensor dropout(const Tensor&, double, bool, Generator*) { pending("dropout"); }
Tensor cross_entropy(const Tensor&, const Tensor&, CrossEntropyOptions) { pending("cross_entropy"); }
}  // namespace ember::nn::functional

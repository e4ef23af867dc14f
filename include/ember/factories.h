// Factories PyTorch has beyond those of ember/core/tensor.h (which holds arange, full, ...):
// torch.linspace and torch.eye. Computed on the host in float64, then converted to the dtype and
// moved to the device of `opt` (as arange).
#pragma once

#include "ember/core/tensor.h"

namespace ember {

// torch.linspace: `steps` values from start to end, both included; the first half counted up from
// start and the second down from end (PyTorch's formula, so both ends are exact). steps >= 0.
Tensor linspace(double start, double end, int64_t steps, TensorOptions opt = {});
// torch.eye: an (n, m) tensor with ones on the main diagonal (m < 0: m = n).
Tensor eye(int64_t n, int64_t m = -1, TensorOptions opt = {});

}  // namespace ember

// Golden records as ember tensors (the reader itself, golden_file.h, depends on std only).
#pragma once

#include <ember/ember.h>

#include "golden/golden_file.h"

namespace ember::test {
inline Tensor to_tensor(const GoldenRecord& r) {
  DType dt = r.dtype == kGoldenInt64 ? DType::Int64 : r.dtype == kGoldenFloat64 ? DType::Float64 : DType::Float32;
  return from_blob_copy(r.bytes.data(), Shape(r.dims.begin(), r.dims.end()), dt);
}
}  // namespace ember::test

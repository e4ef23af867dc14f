// PyTorch's type promotion for the Python API (and any front-end that takes Python-like numbers):
// which dtype a binary op over a tensor and another tensor or a number computes in, and whether an
// in-place op may write that dtype into its tensor. The lattice itself is promote_types (dtype.h).
#pragma once

#include <cstdint>

#include "ember/core/dtype.h"

namespace ember {

// PyTorch's result_type: the dtype of a binary op over two operands, where a tensor with dims
// outranks a 0-d tensor, which outranks a Python number, unless the lower one is of a higher
// category (bool < integer < floating): int32 tensor + int64 0-d -> int32, int32 tensor + 2.5 ->
// default_float, float16 tensor + float64 0-d -> float16, bool tensor + 1 -> int64. A Python number
// arrives as bool, int64 or float64 (its category); a Python float counts as default_float.
enum class OperandRank : uint8_t { Dimensioned, ZeroDim, Number };
struct Operand {
  DType dtype;
  OperandRank rank;
};
DType result_type(Operand a, Operand b, DType default_float = DType::Float32);
// Whether an in-place op may write a `from` result into a `to` tensor (PyTorch's canCast): never a
// floating result into an integer or bool tensor, nor an integer result into a bool one.
bool can_cast(DType from, DType to);

}  // namespace ember

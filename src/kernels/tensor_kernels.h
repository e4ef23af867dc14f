// The kernel contract of the tensor-op families added for PyTorch's API (issue 46): element-wise
// math beyond kernels.h's (rounding, trigonometry, Python's // and %, bitwise and predicates), scans
// along a dim (cumsum, cumprod) and gather / scatter along a dim (which index_select, index_add,
// advanced indexing, masked_select, nonzero and flip are composed from). Front-ends (src/ops) have
// checked every argument -- dtypes, shapes, dims, and that every index is in range and no integer
// divisor is zero -- and allocated the outputs; kernels only compute and never allocate.
// Reference kernels: src/cpu/reference/tensor.cpp. Same device for every tensor of a call.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

enum class MathUnaryOp : uint8_t {
  Sin, Cos, Log1p, Expm1,     // float32 / float64 -> the same dtype
  Floor, Ceil, Trunc, Round,  // float32 / float64; Round: half to even, at `decimals` decimal places
  IsNan, IsInf, IsFinite,     // float32 / float64 -> Bool
  BitwiseNot,                 // integer dtypes and Bool (Bool: logical not) -> the same dtype
  LogicalNot,                 // every numeric dtype -> Bool (x == 0)
};
// out = f(a): a has out's shape, any strides (broadcast views included); out any strides, written
// whole. decimals is read by Round only (PyTorch's torch.round(x, decimals=d): for d >= 0
// nearbyint(x * 10^d) / 10^d, for d < 0 nearbyint(x / 10^-d) * 10^-d, in the element type).
using MathUnaryFn = void (*)(MathUnaryOp op, const Tensor& a, const Tensor& out, int64_t decimals);

enum class MathBinaryOp : uint8_t {
  FloorDivide,  // Python's a // b: the quotient rounded towards -inf (PyTorch's div_floor)
  Remainder,    // Python's a % b: a - floor(a / b) * b, the sign of the divisor (PyTorch's remainder)
  BitwiseAnd, BitwiseOr, BitwiseXor,  // integer dtypes and Bool
};
// out = a (op) b: a, b and out share one dtype and out's shape (a, b any strides, broadcast views
// included). FloorDivide and Remainder take every numeric dtype but Bool; an integer divisor is
// never zero (the front-end refused it). A float divisor of zero gives IEEE's result (inf, nan).
using MathBinaryFn = void (*)(MathBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);

enum class ScanOp : uint8_t { Sum, Prod };
// The inclusive scan of `in` along dim `dim` into `out` (out[..., i, ...] = in[..., 0, ...] (op) ...
// (op) in[..., i, ...]), or from the end when `reverse` (out[i] = in[i] (op) ... (op) in[n - 1]).
// in and out: one shape and one dtype (float32, float64 or int64: the front-end converts the
// narrower integers), any strides, never overlapping. Floats accumulate in double (the CPU) or in
// double per thread and in a fixed tree across a block's threads (CUDA), integers in int64.
using ScanFn = void (*)(ScanOp op, const Tensor& in, int64_t dim, bool reverse, const Tensor& out);

// out[p] = self[p with p[dim] replaced by index[p]] for every position p of out. index (Int64) has
// out's shape and any strides (broadcast views included: index_select passes its index expanded);
// self has out's rank, a size >= out's in every dim but `dim`, any strides, and the same dtype as
// out (any dtype but the two 16-bit storage types). Every index is in [0, self.size(dim)).
using GatherFn = void (*)(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);

enum class ScatterMode : uint8_t { Assign, Add };
// out = self, then for every position p of index: out[p with p[dim] replaced by index[p]] = src[p]
// (Assign) or += src[p] (Add). self and out: one shape and dtype (out may BE self: in place); index
// (Int64) and src (out's dtype) share index's shape, any strides (a value scattered is a broadcast
// 0-d src); index's sizes are <= out's in every dim but `dim`, every index in [0, out.size(dim)).
// Under Assign, positions written twice keep one of the writes (which one is unspecified, as
// PyTorch's). Add sums every write (CUDA: atomically, in no fixed order); on Bool, Add is an or.
using ScatterFn = void (*)(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           const Tensor& out);

inline KernelSlot<MathUnaryFn> math_unary("math_unary");
inline KernelSlot<MathBinaryFn> math_binary("math_binary");
inline KernelSlot<ScanFn> scan("scan");
inline KernelSlot<GatherFn> gather("gather");
inline KernelSlot<ScatterFn> scatter("scatter");

}  // namespace ember::kernels

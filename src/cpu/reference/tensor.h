// Plain-loop reference kernels of the tensor-op slots (kernels/tensor_kernels.h), with the slots'
// signatures: the oracles of cpu/math.cpp, cpu/scan.cpp, cpu/index.cpp and their CUDA twins. One
// element at a time in index order, no threads; float math in double, rounded once.
#pragma once

#include "kernels/tensor_kernels.h"

namespace ember::cpu::reference {
void math_unary(kernels::MathUnaryOp op, const Tensor& a, const Tensor& out, int64_t decimals);
void math_binary(kernels::MathBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void scan(kernels::ScanOp op, const Tensor& in, int64_t dim, bool reverse, const Tensor& out);
void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out);
void scatter(kernels::ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
             const Tensor& out);
}  // namespace ember::cpu::reference

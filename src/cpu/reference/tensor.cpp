// Reference kernels of the tensor-op slots (reference/tensor.h): every element visited in
// row-major order by one odometer over the shape, no threads, no vector paths. Transcendental
// float math runs in double and rounds once; the formulas PyTorch defines in the element type
// (//, %, round at decimals) run in it, from kernels/math_formulas.h.
#include "cpu/reference/tensor.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/math_formulas.h"

namespace ember::cpu::reference {

using kernels::MathBinaryOp;
using kernels::MathUnaryOp;
using kernels::ScanOp;
using kernels::ScatterMode;

namespace {

// Element offset of the position `pos` in a tensor with these strides.
int64_t offset_of(const std::vector<int64_t>& pos, const Shape& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < pos.size(); ++d) off += pos[d] * strides[d];
  return off;
}
// Calls f(pos) for every position of shape, row-major.
template <class F>
void each_position(const Shape& shape, F&& f) {
  if (shape_numel(shape) == 0) return;
  std::vector<int64_t> pos(shape.size(), 0);
  while (true) {
    f(pos);
    int64_t d = int64_t(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++pos[size_t(d)] < shape[size_t(d)]) break;
      pos[size_t(d)] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

void math_unary(MathUnaryOp op, const Tensor& a, const Tensor& out, int64_t decimals) {
  dispatch_numeric(a.dtype(), "reference math_unary", [&]<class T>() {
    const T* x = a.data_ptr<T>();
    each_position(out.sizes(), [&](const std::vector<int64_t>& p) {
      const T v = x[offset_of(p, a.strides())];
      const int64_t o = offset_of(p, out.strides());
      if (op == MathUnaryOp::LogicalNot) {
        out.data_ptr<bool>()[o] = v == T(0);
        return;
      }
      if constexpr (std::is_floating_point_v<T>) {
        const double d = double(v);
        switch (op) {
          case MathUnaryOp::Sin: out.data_ptr<T>()[o] = T(std::sin(d)); break;
          case MathUnaryOp::Cos: out.data_ptr<T>()[o] = T(std::cos(d)); break;
          case MathUnaryOp::Log1p: out.data_ptr<T>()[o] = T(std::log1p(d)); break;
          case MathUnaryOp::Expm1: out.data_ptr<T>()[o] = T(std::expm1(d)); break;
          case MathUnaryOp::Floor: out.data_ptr<T>()[o] = T(std::floor(d)); break;
          case MathUnaryOp::Ceil: out.data_ptr<T>()[o] = T(std::ceil(d)); break;
          case MathUnaryOp::Trunc: out.data_ptr<T>()[o] = T(std::trunc(d)); break;
          case MathUnaryOp::Round: {
            const bool neg = decimals < 0;
            const T scale = T(std::pow(10.0, double(neg ? -decimals : decimals)));
            out.data_ptr<T>()[o] = decimals == 0 ? T(std::nearbyint(d)) : math_formulas::round_decimals(v, scale, neg);
            break;
          }
          case MathUnaryOp::IsNan: out.data_ptr<bool>()[o] = std::isnan(d); break;
          case MathUnaryOp::IsInf: out.data_ptr<bool>()[o] = std::isinf(d); break;
          case MathUnaryOp::IsFinite: out.data_ptr<bool>()[o] = std::isfinite(d); break;
          default: throw DTypeError("reference math_unary: this op takes no floating tensor");
        }
      } else if (op == MathUnaryOp::BitwiseNot) {
        if constexpr (std::is_same_v<T, bool>) out.data_ptr<T>()[o] = !v;
        else out.data_ptr<T>()[o] = T(~v);
      } else {
        throw DTypeError("reference math_unary: this op takes no integer tensor");
      }
    });
  });
}

void math_binary(MathBinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_numeric(a.dtype(), "reference math_binary", [&]<class T>() {
    const T* x = a.data_ptr<T>();
    const T* y = b.data_ptr<T>();
    T* o = out.data_ptr<T>();
    each_position(out.sizes(), [&](const std::vector<int64_t>& p) {
      const T u = x[offset_of(p, a.strides())], v = y[offset_of(p, b.strides())];
      T r{};
      if constexpr (std::is_same_v<T, bool>) {
        if (op == MathBinaryOp::BitwiseAnd) r = u && v;
        else if (op == MathBinaryOp::BitwiseOr) r = u || v;
        else if (op == MathBinaryOp::BitwiseXor) r = u != v;
        else throw DTypeError("reference math_binary: // and % take no bool tensor");
      } else {
        switch (op) {
          case MathBinaryOp::FloorDivide: r = math_formulas::floor_divide(u, v); break;
          case MathBinaryOp::Remainder: r = math_formulas::remainder(u, v); break;
          default:
            if constexpr (std::is_integral_v<T>) {
              r = op == MathBinaryOp::BitwiseAnd ? T(u & v) : op == MathBinaryOp::BitwiseOr ? T(u | v) : T(u ^ v);
            } else {
              throw DTypeError("reference math_binary: bitwise ops take no floating tensor");
            }
        }
      }
      o[offset_of(p, out.strides())] = r;
    });
  });
}

void scan(ScanOp op, const Tensor& in, int64_t dim, bool reverse, const Tensor& out) {
  dispatch_numeric(in.dtype(), "reference scan", [&]<class T>() {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T* x = in.data_ptr<T>();
    T* o = out.data_ptr<T>();
    if (in.dim() == 0) {
      o[0] = x[0];
      return;
    }
    const int64_t n = in.sizes()[dim];
    Shape lines = in.sizes();
    lines[dim] = 1;
    each_position(lines, [&](std::vector<int64_t> p) {
      Acc acc = op == ScanOp::Sum ? Acc(0) : Acc(1);
      for (int64_t k = 0; k < n; ++k) {
        p[dim] = reverse ? n - 1 - k : k;
        const Acc v = Acc(x[offset_of(p, in.strides())]);
        acc = op == ScanOp::Sum ? acc + v : acc * v;
        o[offset_of(p, out.strides())] = T(acc);
      }
    });
  });
}

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  dispatch_numeric(self.dtype(), "reference gather", [&]<class T>() {
    const T* s = self.data_ptr<T>();
    const int64_t* idx = index.data_ptr<int64_t>();
    T* o = out.data_ptr<T>();
    each_position(out.sizes(), [&](std::vector<int64_t> p) {
      const int64_t at = offset_of(p, out.strides());
      if (!p.empty()) p[dim] = idx[offset_of(p, index.strides())];
      o[at] = s[offset_of(p, self.strides())];
    });
  });
}

void scatter(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
             const Tensor& out) {
  dispatch_numeric(out.dtype(), "reference scatter", [&]<class T>() {
    const T* x = self.data_ptr<T>();
    const T* s = src.data_ptr<T>();
    const int64_t* idx = index.data_ptr<int64_t>();
    T* o = out.data_ptr<T>();
    // out = self first, unless they are the same elements (in place).
    const bool in_place = self.storage() == out.storage() && self.storage_offset() == out.storage_offset() &&
                          self.strides() == out.strides();
    if (!in_place) each_position(out.sizes(), [&](const std::vector<int64_t>& p) { o[offset_of(p, out.strides())] = x[offset_of(p, self.strides())]; });
    each_position(index.sizes(), [&](std::vector<int64_t> p) {
      const T v = s[offset_of(p, src.strides())];
      if (!p.empty()) p[dim] = idx[offset_of(p, index.strides())];
      T& d = o[offset_of(p, out.strides())];
      if (mode == ScatterMode::Assign) {
        d = v;
      } else if constexpr (std::is_same_v<T, bool>) {
        d = d || v;
      } else {
        d = T(d + v);
      }
    });
  });
}

}  // namespace ember::cpu::reference

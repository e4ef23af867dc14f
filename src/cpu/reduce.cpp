// CPU reductions. The reduced dims are moved innermost (a copy only when the layout needs it), so
// each output element reduces one contiguous run; float sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu/loops.h"
#include "ops/kernels.h"

namespace ember::cpu {

using kernels::ReduceOp;

namespace {
template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  // Permute: kept dims first (in order), reduced dims last; then make contiguous.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < in.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) perm.push_back(i);
  int64_t inner = 1;
  for (int64_t d : dims) {
    perm.push_back(d);
    inner *= in.sizes()[d];
  }
  Tensor src = in.dim() == 0 ? in.reshape({1}) : in.permute(perm).contiguous();
  Tensor dst = out.is_contiguous() ? out : empty_like(out);
  const int64_t outer = dst.numel();
  dispatch_numeric(in.dtype(), "reduce", [&]<class T>() {
    const T* s = src.data_ptr<T>();
#pragma omp parallel for schedule(static) if (outer * inner > kParallelGrain && outer > 1)
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = s + o * inner;
      switch (op) {
        case ReduceOp::Sum: {
          if constexpr (std::is_floating_point_v<T>) {
            double acc = 0;
            for (int64_t i = 0; i < inner; ++i) acc += row[i];
            dst.data_ptr<T>()[o] = T(acc);
          } else {
            int64_t acc = 0;
            for (int64_t i = 0; i < inner; ++i) acc += int64_t(row[i]);
            dst.data_ptr<int64_t>()[o] = acc;
          }
          break;
        }
        case ReduceOp::Max:
        case ReduceOp::Min: {
          T best = row[0];
          for (int64_t i = 1; i < inner; ++i) {
            T v = row[i];
            if constexpr (std::is_floating_point_v<T>) {
              if (std::isnan(v)) { best = v; break; }
            }
            if (op == ReduceOp::Max ? v > best : v < best) best = v;
          }
          dst.data_ptr<T>()[o] = best;
          break;
        }
        case ReduceOp::ArgMax:
        case ReduceOp::ArgMin: {
          int64_t bi = 0;
          T best = row[0];
          for (int64_t i = 1; i < inner; ++i) {
            T v = row[i];
            if constexpr (std::is_floating_point_v<T>) {
              if (std::isnan(best)) break;
              if (std::isnan(v)) { bi = i; best = v; break; }
            }
            if (op == ReduceOp::ArgMax ? v > best : v < best) { best = v; bi = i; }
          }
          dst.data_ptr<int64_t>()[o] = bi;
          break;
        }
      }
    }
  });
  if (!dst.is_same(out)) kernels::copy(Device::cpu())(dst, out);
}
}  // namespace

void register_reduce_kernels() { kernels::reduce.set(DeviceType::CPU, &reduce); }

}  // namespace ember::cpu

// CPU reductions. The reduced dims are moved innermost (a copy only when the layout needs it), so
// each output element reduces one contiguous run; float sums accumulate in double. Sums whose
// kept dims are one middle block (bias gradients) read the input in place instead.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/tensor_raw.h"
#include "cpu/loops.h"
#include "kernels/kernels.h"

namespace ember::cpu {

using kernels::ReduceOp;

namespace {
template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Sum of a contiguous float tensor viewed as (A, K, B) over A and B, when the kept dims form the
// one middle block K (a bias gradient: (N, C, H, W) over {0, 2, 3}, or (N, F) over {0}). Reads the
// input in place instead of permuting a copy of it. Sums in double, in a fixed order (eight
// interleaved partial sums along b), so results do not depend on the thread count.
template <class T>
bool sum_outer_inner(const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  if (!in.is_contiguous() || !out.is_contiguous() || dims.empty() || in.dim() == 0) return false;
  // kept dims must be one contiguous run [k0, k1)
  int64_t k0 = -1, k1 = -1;
  for (int64_t i = 0; i < in.dim(); ++i) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), i);
    if (!reduced && k0 < 0) k0 = i;
    if (!reduced) {
      if (k1 >= 0 && k1 != i) return false;
      k1 = i + 1;
    }
  }
  if (k0 < 0) return false;  // everything reduced: the generic path needs no copy
  int64_t A = 1, K = 1, B = 1;
  for (int64_t i = 0; i < in.dim(); ++i) (i < k0 ? A : i < k1 ? K : B) *= in.sizes()[i];
  const T* s = in.data_ptr<T>();
  T* d = out.data_ptr<T>();
  if (B == 1) {
    // Rows of K: accumulate row after row, which keeps the a-order per output and vectorises.
#pragma omp parallel if (A * K > kParallelGrain && K >= 64)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t lo = K * t / nt, hi = K * (t + 1) / nt;
      std::vector<double> acc(size_t(hi - lo), 0.0);
      for (int64_t a = 0; a < A; ++a) {
        const T* row = s + a * K;
        for (int64_t k = lo; k < hi; ++k) acc[size_t(k - lo)] += row[k];
      }
      for (int64_t k = lo; k < hi; ++k) d[k] = T(acc[size_t(k - lo)]);
    }
    return true;
  }
#pragma omp parallel for schedule(static) if (A * K * B > kParallelGrain && K > 1)
  for (int64_t k = 0; k < K; ++k) {
    // Eight interleaved double accumulators: one chain of dependent adds would cap this at one
    // add per FP-add latency. The order is fixed, so results do not depend on the thread count.
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double tail = 0;
    for (int64_t a = 0; a < A; ++a) {
      const T* run = s + (a * K + k) * B;
      int64_t b = 0;
      for (; b + 8 <= B; b += 8)
        for (int l = 0; l < 8; ++l) acc[l] += double(run[b + l]);
      for (; b < B; ++b) tail += run[b];
    }
    d[k] = T(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail);
  }
  return true;
}

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  if (op == ReduceOp::Sum) {
    if (in.dtype() == DType::Float32 && sum_outer_inner<float>(in, dims, out)) return;
    if (in.dtype() == DType::Float64 && sum_outer_inner<double>(in, dims, out)) return;
  }
  // Permute: kept dims first (in order), reduced dims last; then make contiguous.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < in.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) perm.push_back(i);
  int64_t inner = 1;
  for (int64_t d : dims) {
    perm.push_back(d);
    inner *= in.sizes()[d];
  }
  Tensor src = in.dim() == 0 ? core::reshape(in, {1}) : core::contiguous(core::permute(in, perm));
  Tensor dst = out.is_contiguous() ? out : core::empty_like(out);
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

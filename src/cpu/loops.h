// Strided N-ary loops for CPU kernels. Operands share one shape; each has its own strides (0 for
// broadcast dims). Adjacent dims that are contiguous for every operand are merged, the innermost
// dim becomes a tight loop, and outer rows are spread over OpenMP threads when the work is large.
#pragma once

#include <omp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::cpu {

inline constexpr int64_t kParallelGrain = 32768;  // elements below which we stay single-threaded

template <int N>
struct StridedLayout {
  std::vector<int64_t> sizes;                      // merged dims, outermost first
  std::array<std::vector<int64_t>, N> strides;     // in elements
};

template <int N>
StridedLayout<N> make_layout(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  StridedLayout<N> L;
  // Drop size-1 dims, then merge dim i into i+1 when contiguous for all operands.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    L.sizes.push_back(shape[d]);
    for (int k = 0; k < N; ++k) L.strides[k].push_back(ops[k]->strides()[d]);
  }
  if (L.sizes.empty()) {
    L.sizes.push_back(1);
    for (int k = 0; k < N; ++k) L.strides[k].push_back(1);
    return L;
  }
  std::vector<int64_t> ms{L.sizes[0]};
  std::array<std::vector<int64_t>, N> mst;
  for (int k = 0; k < N; ++k) mst[k].push_back(L.strides[k][0]);
  for (size_t d = 1; d < L.sizes.size(); ++d) {
    bool mergeable = true;
    for (int k = 0; k < N; ++k)
      if (mst[k].back() != L.strides[k][d] * L.sizes[d]) mergeable = false;
    if (mergeable) {
      ms.back() *= L.sizes[d];
      for (int k = 0; k < N; ++k) mst[k].back() = L.strides[k][d];
    } else {
      ms.push_back(L.sizes[d]);
      for (int k = 0; k < N; ++k) mst[k].push_back(L.strides[k][d]);
    }
  }
  L.sizes = std::move(ms);
  L.strides = std::move(mst);
  return L;
}

// Calls inner(ptrs, inner_strides, n) for every innermost row. ptrs are typed per operand via
// the element sizes given. Rows are independent, so this parallelises over rows.
template <int N, class Inner>
void strided_loop(const Shape& shape, std::array<const Tensor*, N> ops, Inner&& inner) {
  StridedLayout<N> L = make_layout<N>(shape, ops);
  const int64_t nd = int64_t(L.sizes.size());
  const int64_t inner_n = L.sizes.back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) rows *= L.sizes[d];
  std::array<char*, N> base;
  std::array<int64_t, N> esize, istride;
  for (int k = 0; k < N; ++k) {
    base[k] = static_cast<char*>(ops[k]->raw_data());
    esize[k] = int64_t(ops[k]->itemsize());
    istride[k] = L.strides[k].back();
  }
  // Pointers to the start of outer row r.
  auto row_start = [&](int64_t r) {
    std::array<char*, N> p = base;
    for (int64_t d = nd - 2; d >= 0; --d) {
      int64_t i = r % L.sizes[d];
      r /= L.sizes[d];
      for (int k = 0; k < N; ++k) p[k] += i * L.strides[k][d] * esize[k];
    }
    return p;
  };
  auto run_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) inner(row_start(r), istride, inner_n);
  };
  int64_t total = rows * inner_n;
  if (total >= kParallelGrain && omp_get_max_threads() > 1 && !omp_in_parallel()) {
    if (rows >= omp_get_max_threads()) {
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) run_rows(r, r + 1);
    } else {
      // Few long rows: split each row into chunks instead.
      int64_t chunks = omp_get_max_threads();
      int64_t chunk = (inner_n + chunks - 1) / chunks;
      for (int64_t r = 0; r < rows; ++r) {
        std::array<char*, N> p = row_start(r);
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < chunks; ++c) {
          int64_t s = c * chunk, e = std::min(inner_n, s + chunk);
          if (s >= e) continue;
          std::array<char*, N> q = p;
          for (int k = 0; k < N; ++k) q[k] += s * istride[k] * esize[k];
          inner(q, istride, e - s);
        }
      }
    }
  } else {
    run_rows(0, rows);
  }
}

}  // namespace ember::cpu

// Loops over the lines of a shape along one dim, for the kernels that walk a dim as a whole (scans,
// gather, scatter): each line is every position that shares all coordinates but `dim`. Lines never
// share an element of an operand indexed by those coordinates, so they run on OpenMP threads in
// parallel (a scatter-add's writes along a line stay on one thread).
#pragma once

#include <omp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "cpu/loops.h"
#include "ember/core/tensor.h"

namespace ember::cpu {

// Calls line(base) for every line of `shape` along `dim`, base[k] the element offset of the line's
// first position in operand k (strides[k] are operand k's strides, one per dim of shape). A 0-d
// shape is one line of one element.
template <int N, class Line>
void for_each_line(const Shape& shape, int64_t dim, const std::array<const Shape*, N>& strides, Line&& line) {
  const int64_t nd = int64_t(shape.size());
  std::vector<int64_t> outer_sizes;
  std::array<std::vector<int64_t>, N> outer_strides;
  int64_t lines = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) continue;
    outer_sizes.push_back(shape[d]);
    for (int k = 0; k < N; ++k) outer_strides[k].push_back((*strides[k])[d]);
    lines *= shape[d];
  }
  const int64_t len = nd == 0 ? 1 : shape[dim];
  if (lines == 0 || len == 0) return;
  const int64_t no = int64_t(outer_sizes.size());
  auto base_of = [&](int64_t l) {
    std::array<int64_t, N> base{};
    for (int64_t d = no - 1; d >= 0 && l > 0; --d) {
      const int64_t i = l % outer_sizes[d];
      l /= outer_sizes[d];
      for (int k = 0; k < N; ++k) base[k] += i * outer_strides[k][d];
    }
    return base;
  };
  if (lines * len >= kParallelGrain && lines > 1 && omp_get_max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
    for (int64_t l = 0; l < lines; ++l) line(base_of(l));
  } else {
    for (int64_t l = 0; l < lines; ++l) line(base_of(l));
  }
}

}  // namespace ember::cpu

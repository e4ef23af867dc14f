// Helpers the tensor-op front-ends (math.cpp, reduce_scan.cpp, rearrange.cpp, index.cpp) share: recording
// a backward node, checking an index tensor, and the unchecked integer division the indexing ops
// use on values they made themselves (no zero divisor, no host read).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/autograd/node.h"
#include "ember/core/tensor.h"

namespace ember::ops_detail {

// Records `name` on out when `in` requires grad (and grad mode is on); fn maps d out to d in.
inline void record_one(const char* name, const Tensor& in, const Tensor& out, std::function<Tensor(const Tensor&)> fn) {
  if (!autograd::any_requires_grad({&in})) return;
  autograd::record(autograd::make_node(name, [fn = std::move(fn)](const std::vector<Tensor>& g) {
                     return std::vector<Tensor>{fn(g[0])};
                   }),
                   {in}, {out});
}

// Records `name` on out for several inputs; fn maps d out to one gradient per input (undefined for
// an input that needs none).
inline void record_many(const char* name, const std::vector<Tensor>& ins, const Tensor& out,
                        std::function<std::vector<Tensor>(const Tensor&)> fn) {
  bool any = false;
  for (const Tensor& t : ins) any = any || autograd::any_requires_grad({&t});
  if (!any) return;
  autograd::record(autograd::make_node(name, [fn = std::move(fn)](const std::vector<Tensor>& g) { return fn(g[0]); }),
                   ins, {out});
}

// Records `name` on out for a broadcasting binary op: fn maps d out (out's shape) to full-shape
// gradients of a and b, which are summed down to each input's shape and cast to its dtype here.
void record_pair(const char* name, const Tensor& a, const Tensor& b, const Tensor& out,
                 std::function<std::pair<Tensor, Tensor>(const Tensor&)> fn);

// An index tensor for `op` as the kernels take it: Int64 (Int32 is converted, as PyTorch accepts
// both); any other dtype is a DTypeError naming the op and the argument.
Tensor index_as_int64(const Tensor& index, const char* op, const char* arg);

// Throws IndexError naming op when an element of the Int64 `index` is outside [0, size) -- or
// outside [-size, size) with allow_negative (then returned wrapped to [0, size)). One host read.
Tensor checked_index(const Tensor& index, int64_t size, const char* op, int64_t dim, bool allow_negative);

// a // b and a % b for Int64 tensors whose divisors are known to be positive (no check, no host read).
Tensor floor_divide_unchecked(const Tensor& a, const Tensor& b);
Tensor remainder_unchecked(const Tensor& a, const Tensor& b);

// The in-place rule of every in-place op (elementwise.cpp's): refused on a tensor that requires
// grad while grad mode is on.
void check_inplace(const Tensor& self, const char* op);

}  // namespace ember::ops_detail

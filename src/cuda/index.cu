// CUDA gather and scatter along a dim, the twin of src/cpu/index.cpp: one thread per element of
// the index, through the strided launch of cuda/loops.cuh over a view of self (gather) or out
// (scatter) whose stride along `dim` is 0, so the launch gives the line's base and the index picks
// the element. scatter's Add is an atomic add: its float sums come in no fixed order (PyTorch's
// CUDA index_add / scatter_add are nondeterministic the same way).
#include <type_traits>

#include "core/tensor_util.h"
#include "cuda/loops.cuh"
#include "kernels/kernels.h"
#include "kernels/tensor_kernels.h"

namespace ember::cuda {

using kernels::ScatterMode;

namespace {

// A view of t with `sizes`, t's strides and offset, and stride 0 along dim (0-d: t itself).
Tensor line_view(const Tensor& t, const Shape& sizes, int64_t dim) {
  Shape st = t.strides();
  if (!st.empty()) st[size_t(dim)] = 0;
  return make_view(t, sizes, st, t.storage_offset());
}

template <class T>
struct GatherFunctor {
  T* out;
  const int64_t* index;
  const T* self;
  int64_t dim_stride;
  __device__ void operator()(const int64_t (&o)[3]) const { out[o[0]] = self[o[2] + index[o[1]] * dim_stride]; }
};

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const Tensor base = line_view(self, out.sizes(), dim);
  const int64_t ds = self.dim() == 0 ? 0 : self.strides()[size_t(dim)];
  dispatch_numeric(self.dtype(), "gather", [&]<class T>() {
    launch_elementwise<3>(out.sizes(), {&out, &index, &base},
                          GatherFunctor<T>{out.data_ptr<T>(), index.data_ptr<int64_t>(), self.data_ptr<T>(), ds});
  });
}

// *p += v atomically. One-byte types go through a compare-and-swap of their aligned 32-bit word.
template <class T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    static_assert(sizeof(T) == 1, "scatter add: a one-byte type");
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned int shift = unsigned((addr & 3) * 8);
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T cur = T((assumed >> shift) & 0xffu);
      const unsigned int sum = unsigned(uint8_t(cur + v));
      old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (sum << shift));
    } while (assumed != old);
  }
}

template <class T>
struct ScatterFunctor {
  bool add;
  T* out;
  const int64_t* index;
  const T* src;
  int64_t dim_stride;
  __device__ void operator()(const int64_t (&o)[3]) const {
    T* d = out + o[0] + index[o[1]] * dim_stride;
    if (!add) {
      *d = src[o[2]];
    } else if constexpr (std::is_same_v<T, bool>) {
      if (src[o[2]]) *d = true;  // an or: every writer writes the same value, no atomic needed
    } else {
      atomic_add(d, src[o[2]]);
    }
  }
};

void scatter(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
             const Tensor& out) {
  const bool in_place = self.storage() == out.storage() && self.storage_offset() == out.storage_offset() &&
                        self.strides() == out.strides();
  if (!in_place) kernels::copy(out.device())(self, out);
  const Tensor base = line_view(out, index.sizes(), dim);
  const int64_t ds = out.dim() == 0 ? 0 : out.strides()[size_t(dim)];
  dispatch_numeric(out.dtype(), "scatter", [&]<class T>() {
    launch_elementwise<3>(index.sizes(), {&base, &index, &src},
                          ScatterFunctor<T>{mode == ScatterMode::Add, out.data_ptr<T>(), index.data_ptr<int64_t>(),
                                            src.data_ptr<T>(), ds});
  });
}

}  // namespace

void register_index_kernels() {
  kernels::gather.set(DeviceType::CUDA, &gather);
  kernels::scatter.set(DeviceType::CUDA, &scatter);
}

}  // namespace ember::cuda

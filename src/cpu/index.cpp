// CPU gather and scatter along a dim, the two kernels every indexing op is composed from (gather,
// index_select, advanced indexing, masked_select read through gather; scatter, scatter_add,
// index_add, index_put write through scatter). One line along `dim` per OpenMP iteration
// (cpu/lines.h): a scatter's writes from one line land in one line of out, so lines never race.
// Twin: cuda/index.cu.
#include <type_traits>

#include "cpu/lines.h"
#include "kernels/kernels.h"
#include "kernels/tensor_kernels.h"

namespace ember::cpu {

using kernels::ScatterMode;

namespace {

int64_t dim_size(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.sizes()[dim]; }
int64_t dim_stride(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 0 : t.strides()[dim]; }

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const int64_t n = dim_size(out, dim);
  const int64_t ss = dim_stride(self, dim), is = dim_stride(index, dim), os = dim_stride(out, dim);
  // A gather only copies elements, so the half types take it too (a bfloat16 TensorDataset's batch).
  dispatch_all(self.dtype(), "gather", [&]<class T>() {
    const T* src = self.data_ptr<T>();
    const int64_t* idx = index.data_ptr<int64_t>();
    T* dst = out.data_ptr<T>();
    for_each_line<3>(out.sizes(), dim, {&out.strides(), &index.strides(), &self.strides()},
                     [&](std::array<int64_t, 3> b) {
                       for (int64_t i = 0; i < n; ++i) dst[b[0] + i * os] = src[b[2] + idx[b[1] + i * is] * ss];
                     });
  });
}

void scatter(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
             const Tensor& out) {
  // In place (out is self, or the same elements of the same storage): nothing to copy.
  const bool in_place = self.storage() == out.storage() && self.storage_offset() == out.storage_offset() &&
                        self.strides() == out.strides();
  if (!in_place) kernels::copy(Device::cpu())(self, out);
  const int64_t n = dim_size(index, dim);
  const int64_t os = dim_stride(out, dim), is = dim_stride(index, dim), ss = dim_stride(src, dim);
  dispatch_numeric(out.dtype(), "scatter", [&]<class T>() {
    const T* s = src.data_ptr<T>();
    const int64_t* idx = index.data_ptr<int64_t>();
    T* dst = out.data_ptr<T>();
    for_each_line<3>(index.sizes(), dim, {&out.strides(), &index.strides(), &src.strides()},
                     [&](std::array<int64_t, 3> b) {
                       if (mode == ScatterMode::Assign) {
                         for (int64_t i = 0; i < n; ++i) dst[b[0] + idx[b[1] + i * is] * os] = s[b[2] + i * ss];
                       } else {
                         for (int64_t i = 0; i < n; ++i) {
                           T& d = dst[b[0] + idx[b[1] + i * is] * os];
                           if constexpr (std::is_same_v<T, bool>) d = d || s[b[2] + i * ss];  // PyTorch: an or
                           else d = T(d + s[b[2] + i * ss]);
                         }
                       }
                     });
  });
}

}  // namespace

void register_index_kernels() {
  kernels::gather.set(DeviceType::CPU, &gather);
  kernels::scatter.set(DeviceType::CPU, &scatter);
}

}  // namespace ember::cpu

// CPU scans along a dim (cumsum, cumprod; the reverse scans of their gradients): one line per
// OpenMP iteration (cpu/lines.h), floats accumulated in double as PyTorch's CPU kernels do, so
// float32 results round once per element. Twin: cuda/scan.cu.
#include <type_traits>

#include "cpu/lines.h"
#include "kernels/tensor_kernels.h"

namespace ember::cpu {

using kernels::ScanOp;

namespace {

void scan(ScanOp op, const Tensor& in, int64_t dim, bool reverse, const Tensor& out) {
  const int64_t n = in.dim() == 0 ? 1 : in.sizes()[dim];
  const int64_t si = in.dim() == 0 ? 0 : in.strides()[dim], so = out.dim() == 0 ? 0 : out.strides()[dim];
  dispatch_numeric(in.dtype(), "scan", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int32_t>) {
      throw DTypeError("scan: expected float32, float64 or int64 (the front-end converts)");
    } else {
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      const T* src = in.data_ptr<T>();
      T* dst = out.data_ptr<T>();
      for_each_line<2>(in.sizes(), dim, {&in.strides(), &out.strides()}, [&](std::array<int64_t, 2> base) {
        Acc acc = op == ScanOp::Sum ? Acc(0) : Acc(1);
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = reverse ? n - 1 - k : k;
          const Acc v = Acc(src[base[0] + i * si]);
          acc = op == ScanOp::Sum ? acc + v : acc * v;
          dst[base[1] + i * so] = T(acc);
        }
      });
    }
  });
}

}  // namespace

void register_scan_kernels() { kernels::scan.set(DeviceType::CPU, &scan); }

}  // namespace ember::cpu

// The dispatch table: one slot per kernel, one function pointer per device type. Backends fill it
// in an explicit registration call, never through static initialisers. Core does not know the
// backends (they sit above it): the registry (src/backends/registry.h, ensure_backends) registers
// them before the ops layer allocates the first tensor, so every lookup through a tensor finds the
// table filled.
#pragma once

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"

namespace ember {

namespace detail {
// Set once by the registry's ensure_backends() when every compiled backend has registered.
bool backends_registered();
void mark_backends_registered();
}  // namespace detail

template <class Fn>
class KernelSlot {
 public:
  explicit constexpr KernelSlot(const char* name) : name_(name) {}
  void set(DeviceType t, Fn f) { fns_[int(t)] = f; }
  Fn operator()(Device d) const {
    Fn f = fns_[int(d.type)];
    if (f == nullptr) {
      EMBER_ASSERT(detail::backends_registered(), "kernel '", name_,
                   "' looked up before the backends were registered (ensure_backends(), src/backends/registry.h)");
      throw NotImplementedError(detail::cat("op '", name_, "' has no kernel for device ", d.str(), " in this build"));
    }
    return f;
  }
  bool has(DeviceType t) const { return fns_[int(t)] != nullptr; }

 private:
  const char* name_;
  Fn fns_[kNumDeviceTypes] = {};
};

class Tensor;
// The two data-movement slots, declared here rather than with the kernel contract (kernels/kernels.h)
// because core's own copies use them (core/tensor_raw.h: contiguous copies, conversions, copies
// between devices for the backends and the ops layer's Tensor methods). Every backend fills both.
namespace kernels {
// dst = src converted to dst's dtype; src already broadcast to dst's shape; one device.
using CopyFn = void (*)(const Tensor& src, const Tensor& dst);
// Raw copy between devices (cpu <-> cuda:N, cuda:M <-> cuda:N): src and dst are contiguous, of one
// dtype and numel, on different devices. Registered under the non-CPU side's device type (the
// source's when both are non-CPU); returns when dst holds the data.
using DeviceCopyFn = void (*)(const Tensor& src, const Tensor& dst);
inline KernelSlot<CopyFn> copy("copy");
inline KernelSlot<DeviceCopyFn> device_copy("device_copy");
}  // namespace kernels

// Calls f.template operator()<T>() with T the C++ type of dtype, over the listed groups.
//   dispatch_floating           float, double (ops that are unsafe or not written in half: they say so)
//   dispatch_floating_and_half  float, double, bfloat16, float16 (kernels that store half and
//                               accumulate in acc_t<T> = float)
//   dispatch_numeric            the computed types; dispatch_all adds bfloat16 and float16
namespace detail {
[[noreturn]] inline void throw_half_unsupported(DType t, const char* op) {
  throw DTypeError(detail::cat(op, ": no ", dtype_name(t), " kernel: this op runs in float32 (the "
                               "mixed-precision policy keeps it there, see ember/autocast.h); convert with "
                               ".to(DType::Float32) or run it under ember::autocast, which does"));
}
}  // namespace detail
template <class F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16:
    case DType::Float16: detail::throw_half_unsupported(t, op);
    default:
      throw DTypeError(detail::cat(op, ": expected a float32 or float64 tensor, got ", dtype_name(t)));
  }
}
template <class F>
decltype(auto) dispatch_floating_and_half(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<bfloat16>();
    case DType::Float16: return f.template operator()<float16>();
    default:
      throw DTypeError(detail::cat(op, ": expected a floating tensor (float32, float64, bfloat16, float16), got ",
                                   dtype_name(t)));
  }
}
template <class F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Bool: return f.template operator()<bool>();
    default:
      throw DTypeError(detail::cat(op, ": ", dtype_name(t),
                                   " is a storage type; convert with .to(DType::Float32) first"));
  }
}
template <class F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::BFloat16: return f.template operator()<bfloat16>();
    case DType::Float16: return f.template operator()<float16>();
    default: return dispatch_numeric(t, op, std::forward<F>(f));
  }
}

}  // namespace ember

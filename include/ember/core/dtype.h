// Element types. float32/float64/int64/int32/uint8/bool are computed on; bfloat16 and float16 are
// storage types: the kernels that take them (conv2d, linear; see src/kernels/) accumulate in
// float32, every other op wants to(DType::Float32) first. ember::autocast (ember/autocast.h) does
// those casts for you, following one policy table.
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string_view>

namespace ember {

enum class DType : uint8_t { Float32, Float64, Int64, Int32, UInt8, Bool, BFloat16, Float16 };
inline constexpr int kNumDTypes = 8;

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Int32: return 4;
    case DType::UInt8: return 1;
    case DType::Bool: return 1;
    case DType::BFloat16: return 2;
    case DType::Float16: return 2;
  }
  return 0;
}
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
  }
  return "?";
}
constexpr bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16 || t == DType::Float16;
}
constexpr bool is_integral(DType t) { return !is_floating(t) && t != DType::Bool; }
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

// The dtype both operands of a binary op are converted to (PyTorch's promotion lattice, simplified:
// bool < uint8 < int32 < int64 < float16/bfloat16 < float32 < float64; f16 with bf16 gives float32).
DType promote_types(DType a, DType b);

// IEEE-754 half and bfloat16 conversions (round to nearest even).
inline float bf16_to_float(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

constexpr bool is_half(DType t) { return t == DType::BFloat16 || t == DType::Float16; }

// The C++ element types of the two storage dtypes: 16 bits, converted through float (round to
// nearest even). Kernels that take them compute in acc_t<T> (float).
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(float_to_bf16(f)) {}
  explicit operator float() const { return bf16_to_float(bits); }
};
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(float_to_half(f)) {}
  explicit operator float() const { return half_to_float(bits); }
};
static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2);

}  // namespace ember

namespace ember {
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<float16>() { return DType::Float16; }

// The type a kernel accumulates T in: float for the 16-bit storage types, T itself otherwise.
template <class T> struct acc_type { using type = T; };
template <> struct acc_type<bfloat16> { using type = float; };
template <> struct acc_type<float16> { using type = float; };
template <class T> using acc_t = typename acc_type<T>::type;
}  // namespace ember

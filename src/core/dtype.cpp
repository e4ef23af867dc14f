// dtype promotion and IEEE half-precision conversion.
#include "ember/core/dtype.h"

#include "ember/core/promotion.h"

#include <cmath>
#include <optional>

namespace ember {

namespace {
int rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::UInt8: return 1;
    case DType::Int32: return 2;
    case DType::Int64: return 3;
    case DType::Float16: return 4;
    case DType::BFloat16: return 4;
    case DType::Float32: return 5;
    case DType::Float64: return 6;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  return rank(a) >= rank(b) ? a : b;
}

namespace {
int category(DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; }
// torch's combine_categories: the higher-ranked operands' dtype, unless the lower rank's is of a
// higher category (then the two promote). `higher` may be absent.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

DType result_type(Operand a, Operand b, DType default_float) {
  std::optional<DType> by_rank[3];
  for (Operand o : {a, b}) {
    DType t = o.rank == OperandRank::Number && is_floating(o.dtype) ? default_float : o.dtype;
    auto& slot = by_rank[int(o.rank)];
    slot = slot ? promote_types(*slot, t) : t;
  }
  return *combine(by_rank[0], combine(by_rank[1], by_rank[2]));
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      float f = std::ldexp(float(mant), -24);
      std::memcpy(&u, &f, 4);
      u |= sign;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00;  // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // overflow (rounds to >= 65520) -> inf
  if (abs < 0x38800000u) {                       // subnormal or zero in half
    float a;
    std::memcpy(&a, &abs, 4);
    // round to nearest even at 2^-24 granularity
    float scaled = a * 16777216.0f;  // 2^24
    uint32_t m = uint32_t(std::nearbyint(scaled));
    return sign | uint16_t(m);
  }
  uint32_t exp = ((abs >> 23) - 112) << 10;
  uint32_t mant = (abs >> 13) & 0x3ff;
  uint32_t rest = abs & 0x1fff;
  uint32_t h = exp | mant;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h += 1;
  return sign | uint16_t(h);
}

}  // namespace ember

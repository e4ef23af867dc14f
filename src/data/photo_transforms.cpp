// torchvision's photo transforms on interleaved 8-bit images; see photo_transforms.h.
//
// resize() is written here rather than taken from a library because the point is Pillow's exact
// output (what torchvision's Resize gives on the PIL images its users feed it, and so what a
// pretrained model saw): stb_image_resize, libswscale and OpenCV's INTER_AREA all filter
// differently. The arithmetic follows Pillow's libImaging/Resample.c: the triangle filter's support
// widened by the scale factor when shrinking, each output's weights normalised to sum 1 in double,
// rounded to integers of 22 fraction bits, accumulated from a half in int32 and clipped to 8 bits
// after each of the two passes (horizontal first, over only the rows the vertical pass reads).
// The passes have AVX2 forms (8 outputs at a time, the same int32 products and sums: every weight
// is >= 0 and a sum never exceeds 255 * 2^22 + 2^21, so the order of the additions cannot change a
// bit), chosen at run time; the plain loops are the reference they are tested against.
#include "ember/data/photo_transforms.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include "core/isa.h"
#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/data/decode.h"
#include "ember/io/user_file.h"

namespace ember::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

// Integer weights of one pass: output i reads `count[i]` inputs from `first[i]` with weights
// w[i * taps .. i * taps + count[i]).
struct Coeffs {
  int64_t taps = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> w;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs + normalize_coeffs_8bpc for in_size inputs -> out_size outputs.
Coeffs coefficients(int64_t in_size, int64_t out_size) {
  const double scale = double(in_size) / double(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  Coeffs c;
  c.taps = int64_t(std::ceil(support)) * 2 + 1;
  c.first.resize(size_t(out_size));
  c.count.resize(size_t(out_size));
  c.w.assign(size_t(out_size * c.taps), 0);
  std::vector<double> k(size_t(c.taps));
  for (int64_t o = 0; o < out_size; ++o) {
    const double center = (double(o) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // (int) truncates toward zero as in C; a negative start is then clamped to 0 either way.
    int64_t xmin = int64_t(center - support + 0.5);
    xmin = std::max<int64_t>(xmin, 0);
    int64_t xmax = std::min<int64_t>(int64_t(center + support + 0.5), in_size) - xmin;
    xmax = std::clamp<int64_t>(xmax, 0, c.taps);
    double sum = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      k[size_t(x)] = triangle((double(x + xmin) - center + 0.5) * ss);
      sum += k[size_t(x)];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      double v = sum != 0.0 ? k[size_t(x)] / sum : k[size_t(x)];
      c.w[size_t(o * c.taps + x)] =
          v < 0 ? int32_t(-0.5 + v * (1 << kPrecisionBits)) : int32_t(0.5 + v * (1 << kPrecisionBits));
    }
    c.first[size_t(o)] = xmin;
    c.count[size_t(o)] = xmax;
  }
  return c;
}

inline uint8_t clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;
  return uint8_t(std::clamp(v, 0, 255));
}

// One horizontal pass over rows [y0, y0 + rows) of src's columns [x0, x0 + ...), into dst rows
// 0..rows of out_w pixels.
template <int C>
void horizontal(const Image& src, int64_t y0, int64_t rows, int64_t x0, const Coeffs& k, int64_t out_w,
                int64_t channels, uint8_t* dst) {
  const int64_t ch = C > 0 ? C : channels;
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* in = src.row(y0 + y) + x0 * ch;
    uint8_t* out = dst + y * out_w * ch;
    for (int64_t o = 0; o < out_w; ++o) {
      const int32_t* w = k.w.data() + o * k.taps;
      const uint8_t* p = in + k.first[size_t(o)] * ch;
      const int64_t n = k.count[size_t(o)];
      for (int64_t c = 0; c < ch; ++c) {
        int32_t acc = 1 << (kPrecisionBits - 1);
        for (int64_t x = 0; x < n; ++x) acc += int32_t(p[x * ch + c]) * w[x];
        out[o * ch + c] = clip8(acc);
      }
    }
  }
}

// The vertical pass: out row o reads rows first[o].. of `in` (row length `row_len` bytes).
void vertical(const uint8_t* in, int64_t row_len, const Coeffs& k, int64_t out_h, uint8_t* out) {
  std::vector<int32_t> acc(static_cast<size_t>(row_len));
  for (int64_t o = 0; o < out_h; ++o) {
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const int32_t* w = k.w.data() + o * k.taps;
    const int64_t first = k.first[size_t(o)], n = k.count[size_t(o)];
    for (int64_t y = 0; y < n; ++y) {
      const uint8_t* r = in + (first + y) * row_len;
      const int32_t wy = w[y];
      for (int64_t i = 0; i < row_len; ++i) acc[size_t(i)] += int32_t(r[i]) * wy;
    }
    uint8_t* dst = out + o * row_len;
    for (int64_t i = 0; i < row_len; ++i) dst[i] = clip8(acc[size_t(i)]);
  }
}

// The horizontal pass's table for the AVX2 form: outputs in blocks of 8; for block b and tap x,
// the byte offset of the input pixel (first + x, clamped to the box: its weight is 0 past count)
// and its weight, at [(b * taps + x) * 8 + lane].
struct Gathers {
  int64_t taps = 0, blocks = 0;
  std::vector<int32_t> offset, weight;
};

Gathers gathers(const Coeffs& k, int64_t in_w, int64_t out_w, int64_t ch) {
  Gathers g;
  g.taps = k.taps;
  g.blocks = (out_w + 7) / 8;
  g.offset.assign(size_t(g.blocks * g.taps * 8), 0);
  g.weight.assign(size_t(g.blocks * g.taps * 8), 0);
  for (int64_t o = 0; o < out_w; ++o)
    for (int64_t x = 0; x < k.taps; ++x) {
      const size_t at = size_t(((o / 8) * k.taps + x) * 8 + o % 8);
      g.offset[at] = int32_t(std::min(k.first[size_t(o)] + x, in_w - 1) * ch);
      g.weight[at] = x < k.count[size_t(o)] ? k.w[size_t(o * k.taps + x)] : 0;
    }
  return g;
}

// clip8 on 8 lanes.
__attribute__((target("avx2"))) inline __m256i clip8_avx2(__m256i acc) {
  return _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(acc, kPrecisionBits), _mm256_setzero_si256()),
                          _mm256_set1_epi32(255));
}

// One RGB row of the horizontal pass, 8 outputs per step: a 32-bit gather per tap fetches R, G, B
// (and one byte past, which must be readable: the caller keeps the image's last byte out of reach).
__attribute__((target("avx2"))) void horizontal_rgb_avx2(const uint8_t* in, const Gathers& g, int64_t out_w,
                                                        uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m256i byte = _mm256_set1_epi32(0xff);
  const __m128i pack3 = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const int* base = reinterpret_cast<const int*>(in);
  for (int64_t b = 0; b < g.blocks; ++b) {
    __m256i r = half, gr = half, bl = half;
    const int32_t* off = g.offset.data() + b * g.taps * 8;
    const int32_t* wt = g.weight.data() + b * g.taps * 8;
    for (int64_t x = 0; x < g.taps; ++x) {
      const __m256i v =
          _mm256_i32gather_epi32(base, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + x * 8)), 1);
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wt + x * 8));
      r = _mm256_add_epi32(r, _mm256_mullo_epi32(_mm256_and_si256(v, byte), w));
      gr = _mm256_add_epi32(gr, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(v, 8), byte), w));
      bl = _mm256_add_epi32(bl, _mm256_mullo_epi32(_mm256_and_si256(_mm256_srli_epi32(v, 16), byte), w));
    }
    const __m256i px =
        _mm256_or_si256(clip8_avx2(r), _mm256_or_si256(_mm256_slli_epi32(clip8_avx2(gr), 8),
                                                    _mm256_slli_epi32(clip8_avx2(bl), 16)));
    alignas(32) uint8_t packed[32];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed), _mm_shuffle_epi8(_mm256_castsi256_si128(px), pack3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + 12),
                     _mm_shuffle_epi8(_mm256_extracti128_si256(px, 1), pack3));
    const int64_t n = std::min<int64_t>(8, out_w - b * 8);
    std::memcpy(out + b * 24, packed, size_t(n * 3));
  }
}

// vertical() 16 bytes at a time.
__attribute__((target("avx2"))) void vertical_avx2(const uint8_t* in, int64_t row_len, const Coeffs& k,
                                                  int64_t out_h, uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  for (int64_t o = 0; o < out_h; ++o) {
    const int32_t* w = k.w.data() + o * k.taps;
    const int64_t first = k.first[size_t(o)], n = k.count[size_t(o)];
    uint8_t* dst = out + o * row_len;
    int64_t i = 0;
    for (; i + 16 <= row_len; i += 16) {
      __m256i lo = half, hi = half;
      for (int64_t y = 0; y < n; ++y) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + (first + y) * row_len + i));
        const __m256i wy = _mm256_set1_epi32(w[y]);
        lo = _mm256_add_epi32(lo, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(v), wy));
        hi = _mm256_add_epi32(hi, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), wy));
      }
      // int32 -> uint16 (negatives to 0) -> uint8 (above 255 to 255), lanes put back in order.
      const __m256i words = _mm256_permute4x64_epi64(
          _mm256_packus_epi32(_mm256_srai_epi32(lo, kPrecisionBits), _mm256_srai_epi32(hi, kPrecisionBits)), 0xD8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)));
    }
    for (; i < row_len; ++i) {
      int32_t acc = 1 << (kPrecisionBits - 1);
      for (int64_t y = 0; y < n; ++y) acc += int32_t(in[(first + y) * row_len + i]) * w[y];
      dst[i] = clip8(acc);
    }
  }
}

void check_image(const Image& src, const char* what) {
  EMBER_CHECK(src.width >= 1 && src.height >= 1 && (src.channels == 1 || src.channels == 3) &&
                  int64_t(src.pixels.size()) == src.width * src.height * src.channels,
              ValueError, what, ": needs a non-empty grey or RGB image, got ", src.width, "x", src.height, "x",
              src.channels, " with ", src.pixels.size(), " bytes");
}

// Python's round() on a double: half to even.
int64_t round_half_even(double v) {
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(v);
  std::fesetround(saved);
  return int64_t(r);
}

}  // namespace

std::pair<int64_t, int64_t> shorter_side_size(int64_t height, int64_t width, int64_t size, int64_t max_size) {
  EMBER_CHECK(height >= 1 && width >= 1 && size >= 1, ValueError, "resize: needs a positive size, got ", size,
              " for a ", width, "x", height, " image");
  const bool tall = width <= height;
  const int64_t short_side = tall ? width : height, long_side = tall ? height : width;
  int64_t new_short = size, new_long = int64_t(double(size) * double(long_side) / double(short_side));
  if (max_size > 0) {
    EMBER_CHECK(max_size > size, ValueError, "resize: max_size ", max_size, " must be larger than the size ", size);
    if (new_long > max_size) {
      new_short = int64_t(double(max_size) * double(new_short) / double(new_long));
      new_long = max_size;
    }
  }
  return tall ? std::pair{new_long, new_short} : std::pair{new_short, new_long};
}

Image resize(const Image& src, int64_t out_height, int64_t out_width, Box box) {
  check_image(src, "resize");
  if (box.height == 0 && box.width == 0) box = {0, 0, src.height, src.width};
  EMBER_CHECK(box.top >= 0 && box.left >= 0 && box.height >= 1 && box.width >= 1 &&
                  box.top + box.height <= src.height && box.left + box.width <= src.width,
              ValueError, "resize: the box (top ", box.top, ", left ", box.left, ", ", box.width, "x", box.height,
              ") is not inside the ", src.width, "x", src.height, " image");
  EMBER_CHECK(out_height >= 1 && out_width >= 1, ValueError, "resize: the output size must be positive, got ",
              out_width, "x", out_height);
  const int64_t ch = src.channels;
  const bool vector = cpu::have_avx2();
  Image out(out_width, out_height, ch);
  const bool need_h = out_width != box.width, need_v = out_height != box.height;
  const Coeffs kv = coefficients(box.height, out_height);
  // The rows the vertical pass reads, relative to the box.
  const int64_t y_first = kv.first.front();
  const int64_t y_last = kv.first.back() + kv.count.back();
  // Horizontal pass into a buffer of (y_last - y_first) rows; or the box's rows as they are.
  std::vector<uint8_t> tmp;
  const uint8_t* rows = nullptr;
  int64_t row_len = out_width * ch;
  if (need_h) {
    const Coeffs kh = coefficients(box.width, out_width);
    const int64_t n = need_v ? y_last - y_first : box.height;
    const int64_t y0 = box.top + (need_v ? y_first : 0);
    tmp.resize(size_t(n * row_len));
    if (ch == 3 && vector) {
      const Gathers g = gathers(kh, box.width, out_width, ch);
      // A gather reads one byte past its pixel: past the image's end only on the last row, when the
      // box reaches the right edge; that row takes the plain loop.
      const bool last_row_plain = y0 + n == src.height && box.left + box.width == src.width;
      const int64_t simd_rows = last_row_plain ? n - 1 : n;
      for (int64_t y = 0; y < simd_rows; ++y)
        horizontal_rgb_avx2(src.row(y0 + y) + box.left * ch, g, out_width, tmp.data() + y * row_len);
      if (simd_rows < n) horizontal<3>(src, y0 + simd_rows, 1, box.left, kh, out_width, ch, tmp.data() + simd_rows * row_len);
    } else if (ch == 3) {
      horizontal<3>(src, y0, n, box.left, kh, out_width, ch, tmp.data());
    } else {
      horizontal<0>(src, y0, n, box.left, kh, out_width, ch, tmp.data());
    }
    rows = tmp.data();
  } else {
    // Same width: copy the box's rows (contiguous per row) so the vertical pass reads one layout.
    const int64_t n = need_v ? y_last - y_first : box.height;
    const int64_t y0 = box.top + (need_v ? y_first : 0);
    tmp.resize(size_t(n * row_len));
    for (int64_t y = 0; y < n; ++y)
      std::memcpy(tmp.data() + y * row_len, src.row(y0 + y) + box.left * ch, size_t(row_len));
    rows = tmp.data();
  }
  if (!need_v) {
    std::memcpy(out.pixels.data(), rows, out.pixels.size());
    return out;
  }
  Coeffs shifted = kv;
  for (auto& f : shifted.first) f -= y_first;
  if (vector)
    vertical_avx2(rows, row_len, shifted, out_height, out.pixels.data());
  else
    vertical(rows, row_len, shifted, out_height, out.pixels.data());
  return out;
}

Image center_crop(const Image& src, int64_t out_height, int64_t out_width) {
  check_image(src, "center_crop");
  EMBER_CHECK(out_height >= 1 && out_width >= 1, ValueError, "center_crop: the size must be positive, got ",
              out_width, "x", out_height);
  const int64_t ch = src.channels;
  // torchvision pads first (left/top (crop - size) // 2, the rest right/bottom) with zeros, then
  // crops the padded image at round((H' - h) / 2).
  const int64_t pad_left = out_width > src.width ? (out_width - src.width) / 2 : 0;
  const int64_t pad_top = out_height > src.height ? (out_height - src.height) / 2 : 0;
  const int64_t padded_w = std::max(src.width, out_width), padded_h = std::max(src.height, out_height);
  const int64_t top = round_half_even(double(padded_h - out_height) / 2.0);
  const int64_t left = round_half_even(double(padded_w - out_width) / 2.0);
  Image out(out_width, out_height, ch);  // zero-filled: the padding
  for (int64_t y = 0; y < out_height; ++y) {
    const int64_t sy = y + top - pad_top;
    if (sy < 0 || sy >= src.height) continue;
    const int64_t x_begin = std::max<int64_t>(0, pad_left - left);
    const int64_t x_end = std::min<int64_t>(out_width, src.width + pad_left - left);
    if (x_end <= x_begin) continue;
    std::memcpy(out.row(y) + x_begin * ch, src.row(sy) + (x_begin + left - pad_left) * ch,
                size_t((x_end - x_begin) * ch));
  }
  return out;
}

Image hflip(const Image& src) {
  check_image(src, "hflip");
  const int64_t ch = src.channels;
  Image out(src.width, src.height, ch);
  for (int64_t y = 0; y < src.height; ++y) {
    const uint8_t* in = src.row(y);
    uint8_t* o = out.row(y);
    for (int64_t x = 0; x < src.width; ++x) std::memcpy(o + x * ch, in + (src.width - 1 - x) * ch, size_t(ch));
  }
  return out;
}

Box random_resized_crop_box(int64_t height, int64_t width, uint64_t seed, int64_t epoch, int64_t index,
                            std::array<double, 2> scale, std::array<double, 2> ratio) {
  EMBER_CHECK(height >= 1 && width >= 1, ValueError, "random_resized_crop: empty image ", width, "x", height);
  EMBER_CHECK(scale[0] > 0 && scale[0] <= scale[1], ValueError,
              "random_resized_crop: scale must satisfy 0 < lo <= hi, got (", scale[0], ", ", scale[1], ")");
  EMBER_CHECK(ratio[0] > 0 && ratio[0] <= ratio[1], ValueError,
              "random_resized_crop: ratio must satisfy 0 < lo <= hi, got (", ratio[0], ", ", ratio[1], ")");
  // Philox blocks tagged apart from transforms.h's (0x7E......): block a for try a.
  constexpr uint32_t kTag = 0x7C000000u;
  const uint64_t i = uint64_t(index);
  const auto unit53 = [](uint32_t hi, uint32_t lo) {
    return double((uint64_t(hi) << 21) ^ (uint64_t(lo) >> 11)) * (1.0 / 9007199254740992.0);
  };
  const double area = double(height) * double(width);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (uint32_t a = 0; a < 10; ++a) {
    const auto w = philox4x32_10({uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), kTag | a},
                                 {uint32_t(seed), uint32_t(seed >> 32)});
    const double target = area * (scale[0] + unit53(w[0], w[1]) * (scale[1] - scale[0]));
    const double aspect = std::exp(log_lo + unit53(w[2], w[3]) * (log_hi - log_lo));
    const int64_t cw = round_half_even(std::sqrt(target * aspect));
    const int64_t chh = round_half_even(std::sqrt(target / aspect));
    if (cw > 0 && cw <= width && chh > 0 && chh <= height) {
      const auto p = philox4x32_10({uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), kTag | 0x800000u | a},
                                   {uint32_t(seed), uint32_t(seed >> 32)});
      const uint64_t top = ((uint64_t(p[0]) << 32) | p[1]) % uint64_t(height - chh + 1);
      const uint64_t left = ((uint64_t(p[2]) << 32) | p[3]) % uint64_t(width - cw + 1);
      return {int64_t(top), int64_t(left), chh, cw};
    }
  }
  // The centre fallback, as torchvision.
  const double in_ratio = double(width) / double(height);
  int64_t cw = width, chh = height;
  if (in_ratio < ratio[0]) {
    chh = round_half_even(double(cw) / ratio[0]);
  } else if (in_ratio > ratio[1]) {
    cw = round_half_even(double(chh) * ratio[1]);
  }
  return {(height - chh) / 2, (width - cw) / 2, chh, cw};
}

int64_t resize_for_crop(int64_t crop) {
  EMBER_CHECK(crop >= 1, ValueError, "the crop size must be positive, got ", crop);
  return crop * 256 / 224;
}

Image eval_resize_crop(const Image& src, int64_t crop) {
  check_image(src, "eval_resize_crop");
  const auto [h, w] = shorter_side_size(src.height, src.width, resize_for_crop(crop));
  return center_crop(resize(src, h, w), crop, crop);
}

void to_planes(const Image& src, const std::vector<float>& mean, const std::vector<float>& std, float* dst) {
  check_image(src, "to_planes");
  const int64_t ch = src.channels, n = src.width * src.height;
  EMBER_CHECK(int64_t(mean.size()) == ch && int64_t(std.size()) == ch, ValueError,
              "to_planes: needs one mean and one std per channel (", ch, "), got ", mean.size(), " and ", std.size());
  for (int64_t c = 0; c < ch; ++c) {
    // The 256 possible outputs of the channel, computed as torchvision computes each one.
    float lut[256];
    for (int v = 0; v < 256; ++v) lut[v] = (float(v) / 255.0f - mean[size_t(c)]) / std[size_t(c)];
    const uint8_t* p = src.pixels.data() + c;
    float* out = dst + c * n;
    for (int64_t i = 0; i < n; ++i) out[i] = lut[p[i * ch]];
  }
}

Image read_rgb_image(const std::filesystem::path& file, int64_t max_pixels) {
  const std::vector<uint8_t> bytes = io::read_user_file(file, io::kImageFile);
  DecodeOptions opt;
  opt.channels = 3;
  opt.max_pixels = max_pixels;
  return decode_image(bytes, opt, file.string());
}

}  // namespace ember::data

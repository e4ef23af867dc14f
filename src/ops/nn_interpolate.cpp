// F.interpolate (nearest, nearest-exact, linear, bilinear): each spatial dim resampled by a product
// with its interpolation matrix (out_size, in_size), built on the host with ATen's source-index
// arithmetic (upsample kernels' area_pixel_compute_source_index, guard_index_and_lambda, nearest_idx)
// in the input's precision. A matrix row holds one weight (nearest) or two (linear), so each output
// is the same weighted sum ATen forms; the W dim is summed first, as ATen's bilinear kernel. The
// products carry the gradient and run on every device.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/autocast.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"

namespace ember::nn::functional {

namespace {

enum class Mode { Nearest, NearestExact, Linear };

// ATen's compute_scales_value: 1 / scale_factor when one was given, else in / out.
template <class T>
T scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return (scale && *scale > 0.0) ? T(1.0 / *scale) : T(in) / T(out);
}

// The (out, in) matrix of one dim, in float64 holding values computed in T (the input's precision).
template <class T>
std::vector<double> resample_matrix(Mode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  std::vector<double> m(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double* row = m.data() + o * in;
    if (mode == Mode::Nearest || mode == Mode::NearestExact) {
      int64_t src;
      if (mode == Mode::Nearest && out == in) src = o;
      else if (mode == Mode::Nearest && out == 2 * in) src = o >> 1;
      else {
        // Always float, as ATen's nearest_neighbor_compute_source_index.
        const float s = scales_value<float>(scale, in, out);
        const float pos = mode == Mode::Nearest ? float(o) * s : (float(o) + 0.5f) * s;
        src = std::min(int64_t(std::floor(pos)), in - 1);
      }
      row[src] = 1.0;
      continue;
    }
    if (out == in) {  // ATen copies when the size does not change
      row[o] = 1.0;
      continue;
    }
    T ratio;
    if (align_corners) ratio = out > 1 ? T(in - 1) / T(out - 1) : T(0);
    else ratio = scales_value<T>(scale, in, out);
    T real;
    if (align_corners) {
      real = ratio * T(o);
    } else {
      real = ratio * (T(o) + T(0.5)) - T(0.5);
      if (real < T(0)) real = T(0);
    }
    const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
    const T lambda1 = std::min(std::max(real - T(i0), T(0)), T(1));
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const T lambda0 = T(1) - lambda1;
    row[i0] += double(lambda0);
    row[i1] += double(lambda1);
  }
  return m;
}

Tensor matrix_for(Mode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale, const Tensor& x) {
  std::vector<double> m = x.dtype() == DType::Float32 ? resample_matrix<float>(mode, in, out, align_corners, scale)
                                                      : resample_matrix<double>(mode, in, out, align_corners, scale);
  return tensor(m, {out, in}).to(x.device(), x.dtype());
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& opt) {
  const char* op = "interpolate";
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op, ": input must be 3-D (N, C, L) or 4-D (N, C, H, W), got shape ",
              shape_str(x.sizes()), " (volumetric modes are not implemented)");
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": input must be float32 or float64, got ", dtype_name(x.dtype()));
  const int64_t dims = x.dim() - 2;
  Mode mode;
  if (opt.mode == "nearest") mode = Mode::Nearest;
  else if (opt.mode == "nearest-exact") mode = Mode::NearestExact;
  else if (opt.mode == "linear" || opt.mode == "bilinear") mode = Mode::Linear;
  else throw NotImplementedError(std::string(op) + ": mode \"" + opt.mode +
                                 "\" is not implemented (nearest, nearest-exact, linear and bilinear are)");
  if (mode == Mode::Linear) {
    const bool fits = (opt.mode == "linear" && dims == 1) || (opt.mode == "bilinear" && dims == 2);
    EMBER_CHECK(fits, NotImplementedError, op, ": got ", x.dim(), "-D input, but ", opt.mode, " mode needs ",
                opt.mode == "linear" ? "3-D" : "4-D", " input");
  } else {
    EMBER_CHECK(!opt.align_corners.has_value(), ValueError, op,
                ": align_corners can only be set with the interpolating modes linear and bilinear, not \"", opt.mode, "\"");
  }
  const bool align_corners = opt.align_corners.value_or(false);
  EMBER_CHECK(opt.size.empty() != opt.scale_factor.empty(), ValueError, op,
              opt.size.empty() ? ": either size or scale_factor should be defined" : ": only one of size or scale_factor should be defined");
  EMBER_CHECK(!(opt.recompute_scale_factor.value_or(false) && !opt.size.empty()), ValueError, op,
              ": recompute_scale_factor is not meaningful with an explicit size");
  auto per_dim = [&](const auto& v, const char* what) {
    EMBER_CHECK(v.size() == 1 || int64_t(v.size()) == dims, ValueError, op, ": ", what, " has ", v.size(),
                " values for an input with ", dims, " spatial dims (shape ", shape_str(x.sizes()), ")");
    std::vector<std::decay_t<decltype(v[0])>> out(static_cast<size_t>(dims));
    for (int64_t i = 0; i < dims; ++i) out[size_t(i)] = v.size() == 1 ? v[0] : v[size_t(i)];
    return out;
  };
  std::vector<int64_t> out_size(static_cast<size_t>(dims));
  std::vector<std::optional<double>> scales(static_cast<size_t>(dims));
  if (!opt.size.empty()) {
    out_size = per_dim(opt.size, "size");
  } else {
    const std::vector<double> sf = per_dim(opt.scale_factor, "scale_factor");
    for (int64_t i = 0; i < dims; ++i) {
      EMBER_CHECK(sf[size_t(i)] > 0.0 && std::isfinite(sf[size_t(i)]), ValueError, op, ": scale_factor must be > 0, got ",
                  sf[size_t(i)]);
      // ATen's output size: the input size times the factor, truncated.
      out_size[size_t(i)] = int64_t(double(x.size(2 + i)) * sf[size_t(i)]);
      if (!opt.recompute_scale_factor.value_or(false)) scales[size_t(i)] = sf[size_t(i)];
    }
  }
  for (int64_t i = 0; i < dims; ++i)
    EMBER_CHECK(out_size[size_t(i)] > 0 && x.size(2 + i) > 0, ValueError, op, ": input ", shape_str(x.sizes()),
                " and output sizes must be > 0, got output size ", out_size[size_t(i)], " for dim ", 2 + i);
  // The interpolation weights multiply in x's dtype even under autocast.
  autocast no_autocast(x.device().type, DType::BFloat16, false);
  const int64_t W = x.size(-1), OW = out_size.back();
  Tensor y = matmul(x, matrix_for(mode, W, OW, align_corners, scales.back(), x).t());
  if (dims == 2) {
    const int64_t H = x.size(2), OH = out_size[0];
    y = matmul(matrix_for(mode, H, OH, align_corners, scales[0], x), y);
  }
  return y;
}

}  // namespace ember::nn::functional

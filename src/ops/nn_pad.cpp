// F.pad's modes: "constant" (ember::pad), and "reflect", "replicate", "circular" composed from views
// of the input (narrow, expand) joined by cat, so the gradient of each padded element flows back to
// the element it copies (summed where one element is copied several times).
#include <string>
#include <vector>

#include "ember/ops.h"
#include "ember/ops_nn.h"

namespace ember::nn::functional {

namespace {

// x padded along dim d by (left, right) in one of the three non-constant modes.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t left, int64_t right, const std::string& mode) {
  if (left == 0 && right == 0) return x;
  const int64_t n = x.size(d);
  std::vector<Tensor> parts;
  if (mode == "reflect") {
    // The mirror without the edge element: x[left], ..., x[1] | x | x[n-2], ..., x[n-1-right].
    for (int64_t i = left; i >= 1; --i) parts.push_back(x.narrow(d, i, 1));
    parts.push_back(x);
    for (int64_t i = n - 2; i >= n - 1 - right; --i) parts.push_back(x.narrow(d, i, 1));
  } else if (mode == "replicate") {
    Shape s = x.sizes();
    if (left > 0) {
      s[size_t(d)] = left;
      parts.push_back(x.narrow(d, 0, 1).expand(s));
    }
    parts.push_back(x);
    if (right > 0) {
      s[size_t(d)] = right;
      parts.push_back(x.narrow(d, n - 1, 1).expand(s));
    }
  } else {  // circular
    if (left > 0) parts.push_back(x.narrow(d, n - left, left));
    parts.push_back(x);
    if (right > 0) parts.push_back(x.narrow(d, 0, right));
  }
  return cat(parts, d);
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
  EMBER_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular", ValueError,
              "pad: mode must be \"constant\", \"reflect\", \"replicate\" or \"circular\", got \"", mode, "\"");
  EMBER_CHECK(pads.size() % 2 == 0, ValueError, "pad: padding length must be divisible by 2, got ", pads.size());
  EMBER_CHECK(int64_t(pads.size()) <= 2 * x.dim(), ValueError, "pad: padding length should be at most twice the input's ",
              x.dim(), " dims, got ", pads.size(), " values for shape ", shape_str(x.sizes()));
  if (mode == "constant") return ember::pad(x, pads, value);
  EMBER_CHECK(value == 0.0, ValueError, "pad: mode \"", mode, "\" takes no value (got ", value, ")");
  const int64_t np = int64_t(pads.size()) / 2;
  EMBER_CHECK(np >= 1 && np <= 3 && (x.dim() == np + 1 || x.dim() == np + 2), ShapeError, "pad: mode \"", mode,
              "\" pads the last 1, 2 or 3 dims of a 2-D to 5-D input (", np + 1, "-D or ", np + 2, "-D for ", pads.size(),
              " padding values), got shape ", shape_str(x.sizes()));
  Tensor y = x;
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = x.dim() - 1 - i, left = pads[size_t(2 * i)], right = pads[size_t(2 * i + 1)], n = x.size(d);
    EMBER_CHECK(left >= 0 && right >= 0, ValueError, "pad: mode \"", mode, "\" needs padding >= 0, got (", left, ", ",
                right, ") at dim ", d);
    if (mode == "reflect")
      EMBER_CHECK(left < n && right < n, ValueError, "pad: reflect padding must be smaller than the padded dim, got (",
                  left, ", ", right, ") at dim ", d, " of shape ", shape_str(x.sizes()));
    else if (mode == "circular")
      EMBER_CHECK(left <= n && right <= n, ValueError, "pad: circular padding may wrap around at most once, got (", left,
                  ", ", right, ") at dim ", d, " of shape ", shape_str(x.sizes()));
    else
      EMBER_CHECK(n > 0, ShapeError, "pad: replicate padding needs a non-empty dim ", d, " (shape ", shape_str(x.sizes()), ")");
    y = pad_dim(y, d, left, right, mode);
  }
  return y;
}

}  // namespace ember::nn::functional

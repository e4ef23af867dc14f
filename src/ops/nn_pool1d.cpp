// 1-D pooling (max_pool1d, avg_pool1d, adaptive_avg_pool1d): the 2-D poolings on (N, C, 1, L), so
// every backend's pooling kernels and backward serve them.
#include "ember/ops.h"
#include "ember/ops_nn.h"

namespace ember::nn::functional {

namespace {
Tensor as_2d(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, op, ": input must be 3-D (N, C, L) or 2-D (C, L), got shape ",
              shape_str(x.sizes()));
  return x.unsqueeze(x.dim() - 1);  // (N, C, 1, L) or (C, 1, L): the 2-D ops take both
}
// The 1-D arguments checked here, so a message names the op the user called.
Pool2dOptions pool2d_options(const Pool1dOptions& o, const Tensor& x, const char* op) {
  EMBER_CHECK(o.kernel >= 1, ValueError, op, ": kernel_size must be >= 1, got ", o.kernel);
  EMBER_CHECK(o.stride >= 0, ValueError, op, ": stride must be >= 1 (or 0 for the kernel size), got ", o.stride);
  EMBER_CHECK(o.padding >= 0 && 2 * o.padding <= o.kernel, ValueError, op, ": padding must be in [0, kernel_size / 2], got ",
              o.padding, " for kernel_size ", o.kernel);
  EMBER_CHECK(o.kernel <= x.size(-1) + 2 * o.padding, ShapeError, op, ": kernel_size ", o.kernel,
              " is larger than the padded input length ", x.size(-1) + 2 * o.padding, " (input shape ", shape_str(x.sizes()), ")");
  return {.kernel = {1, o.kernel}, .stride = {1, o.stride == 0 ? o.kernel : o.stride}, .padding = {0, o.padding},
          .ceil_mode = o.ceil_mode, .count_include_pad = o.count_include_pad};
}
}  // namespace

Tensor max_pool1d(const Tensor& x, Pool1dOptions opt) {
  const Tensor x2 = as_2d(x, "max_pool1d");
  return max_pool2d(x2, pool2d_options(opt, x, "max_pool1d")).squeeze(x.dim() - 1);
}

Tensor avg_pool1d(const Tensor& x, Pool1dOptions opt) {
  const Tensor x2 = as_2d(x, "avg_pool1d");
  return avg_pool2d(x2, pool2d_options(opt, x, "avg_pool1d")).squeeze(x.dim() - 1);
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  EMBER_CHECK(output_size >= 1, ValueError, "adaptive_avg_pool1d: output_size must be >= 1, got ", output_size);
  return adaptive_avg_pool2d(as_2d(x, "adaptive_avg_pool1d"), {1, output_size}).squeeze(x.dim() - 1);
}

}  // namespace ember::nn::functional

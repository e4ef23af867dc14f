// torch.nn.init equivalents on the Philox stream; the formulas are PyTorch's.
#include "ember/nn/init.h"

#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  EMBER_CHECK(t.dim() >= 2, ValueError, "init: fan in and fan out need a tensor with at least 2 "
              "dims, this one has shape ", shape_str(t.sizes()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "sigmoid") return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  throw ValueError("init: unsupported nonlinearity '" + nl + "'");
}

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard g;
  return ember::uniform_(t, low, high, gen);
}
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard g;
  return ember::normal_(t, mean, std, gen);
}
Tensor& constant_(Tensor& t, double value) { return t.fill_(value); }
Tensor& zeros_(Tensor& t) { return t.fill_(0.0); }
Tensor& ones_(Tensor& t) { return t.fill_(1.0); }

namespace {
int64_t pick_fan(const Tensor& t, const std::string& mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, "init: mode must be 'fan_in' or "
              "'fan_out', got '", mode, "'");
  return mode == "fan_in" ? fan_in : fan_out;
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nl,
                         Generator* gen) {
  double sd = calculate_gain(nl, a) / std::sqrt(double(pick_fan(t, mode)));
  double bound = std::sqrt(3.0) * sd;
  return init::uniform_(t, -bound, bound, gen);
}
Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nl,
                        Generator* gen) {
  double sd = calculate_gain(nl, a) / std::sqrt(double(pick_fan(t, mode)));
  return init::normal_(t, 0.0, sd, gen);
}
Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return init::uniform_(t, -bound, bound, gen);
}

}  // namespace ember::nn::init

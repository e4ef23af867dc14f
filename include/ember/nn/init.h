// Weight initialisation, as torch.nn.init, drawing from ember's Philox stream (`gen`, or the
// default generator when null). All fills are in place, without autograd history.
#pragma once

#include <string>
#include <utility>

#include "ember/core/generator.h"
#include "ember/core/tensor.h"

namespace ember::nn::init {

// (fan_in, fan_out) of a weight: (out, in) for 2-D, (out, in/groups, kH, kW) for conv weights
// (fan = channels * receptive field). Needs at least 2 dims (ValueError otherwise).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// torch.nn.init.calculate_gain: "linear", "conv2d", "sigmoid", "relu", "tanh", "leaky_relu".
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen = nullptr);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& constant_(Tensor& t, double value);
// U(-bound, bound), bound = gain * sqrt(3 / fan); gain = calculate_gain(nonlinearity, a).
// PyTorch's layer default is kaiming_uniform_(w, a = sqrt(5)), which gives bound = 1/sqrt(fan_in).
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ember::nn::init

// Weight initialisation, as torch.nn.init, drawing from ember's Philox stream (`gen`, or the
// default generator when null). All fills are in place, without autograd history. The fan-based
// fills leave a tensor without elements as it is (PyTorch warns and does nothing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ember/core/generator.h"
#include "ember/core/tensor.h"

namespace ember::nn::init {

// (fan_in, fan_out) of a weight: (out, in) for 2-D, (out, in/groups, kH, kW) for conv weights
// (fan = channels * receptive field). Needs at least 2 dims (ValueError otherwise).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// torch.nn.init.calculate_gain: "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d/2d/3d",
// "sigmoid" (1), "tanh" (5/3), "relu" (sqrt 2), "leaky_relu" (sqrt(2 / (1 + param^2))), "selu" (3/4).
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
// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// N(mean, std^2) truncated to [a, b], by PyTorch's method: U(2 cdf(a') - 1, 2 cdf(b') - 1) through
// the inverse error function (computed in float64 on the host), scaled, shifted and clamped.
Tensor& trunc_normal_(Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                      Generator* gen = nullptr);
// A (semi-)orthogonal matrix of t viewed as (rows, numel / rows), times gain: the Q of a QR
// decomposition (Householder, float64 on the host) of a N(0, 1) matrix, its columns signed so R's
// diagonal is positive (PyTorch's rule). t needs at least 2 dims (ValueError).
Tensor& orthogonal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// The identity matrix; t must be 2-D (ValueError).
Tensor& eye_(Tensor& t);

// PyTorch's layers' default parameters, so a layer built in Python starts where PyTorch's does.
// Linear, Conv1d/2d and ConvTranspose1d/2d: kaiming_uniform_(weight, a = sqrt(5)), then the bias
// (undefined: none) U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in of the weight as stored (for a
// transposed convolution's (C_in, C_out/groups, k...) weight that is C_out/groups * k..., as PyTorch).
void reset_weight_and_bias_(Tensor& weight, Tensor& bias, Generator* gen = nullptr);
// Embedding: N(0, 1), and the padding_idx row (negative counts from the end) zeroed.
void reset_embedding_(Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt, Generator* gen = nullptr);

}  // namespace ember::nn::init

// Case tables shared by the nn tests: the conv2d geometries (groups, depthwise, dilation, padding,
// stride that leaves rows unread) and the pooling windows (ceil mode, padding, overlap), with helpers
// to turn them into kernel parameters or nn::functional options.
#pragma once

#include <ember/ember.h>

#include <string>
#include <vector>

namespace ember::test {

namespace F = ember::nn::functional;

// Conv2d attributes in the order stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups.
struct ConvGeometry {
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
};

struct ConvCase {
  std::string label;
  Shape x, w;
  ConvGeometry p;
  bool bias;
};

inline const std::vector<ConvCase> kConvCases = {
    {"mnistnet_conv2_small", {4, 32, 10, 10}, {64, 32, 3, 3}, {}, true},
    {"one_input_channel", {3, 1, 28, 28}, {8, 1, 3, 3}, {}, true},
    {"batch1_nonsquare_stride_pad_dilation", {1, 6, 9, 11}, {4, 6, 3, 2}, {2, 1, 1, 0, 1, 2, 1}, false},
    {"groups2", {2, 8, 7, 7}, {6, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 2}, true},
    {"depthwise_stride2", {2, 4, 6, 5}, {4, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 4}, false},
    // MobileNet's depthwise 3x3 (groups == C_in == C_out, padding 1), with a channel multiplier of 2
    // (C_out = 2 C_in), and at a MobileNet width where oneDNN's depthwise kernels take over.
    {"depthwise_3x3_pad1", {1, 4, 6, 6}, {4, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 4}, true},
    {"depthwise_multiplier2", {1, 3, 5, 5}, {6, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 3}, true},
    {"depthwise_32ch_14x14", {2, 32, 14, 14}, {32, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 32}, false},
    {"pointwise", {3, 16, 5, 6}, {8, 16, 1, 1}, {}, true},
    {"large_padding", {2, 6, 8, 8}, {4, 6, 5, 5}, {1, 1, 2, 2, 1, 1, 1}, true},
    {"large_padding_dilation2", {2, 6, 8, 8}, {4, 6, 5, 5}, {1, 1, 2, 2, 2, 2, 1}, true},
    {"stride_leaves_a_row_unread", {2, 3, 8, 8}, {4, 3, 3, 3}, {2, 2, 0, 0, 1, 1, 1}, true},
};

inline F::Conv2dOptions conv_options(const ConvGeometry& p) {
  return {{p.stride_h, p.stride_w}, {p.pad_h, p.pad_w}, {p.dilation_h, p.dilation_w}, p.groups};
}

struct PoolCase {
  std::string label;
  Shape x;
  F::Pool2dOptions opt;
};

inline const std::vector<PoolCase> kPoolCases = {
    {"mnistnet_2x2", {4, 8, 26, 26}, {{2, 2}, {0, 0}, {0, 0}}},
    {"nonsquare_padded", {2, 3, 9, 8}, {{3, 2}, {2, 1}, {1, 1}}},
    {"3x3_stride2", {1, 2, 7, 7}, {{3, 3}, {2, 2}, {0, 0}}},
    {"3x3_stride2_pad1_ceil", {1, 2, 7, 7}, {{3, 3}, {2, 2}, {1, 1}, true}},
    {"ceil_padding_not_counted", {2, 2, 8, 6}, {{2, 2}, {2, 2}, {1, 0}, true, false}},
    {"windows_mostly_padding", {1, 3, 5, 5}, {{5, 5}, {1, 1}, {2, 2}, false, false}},
};

inline Tensor transposed(const Tensor& t) { return t.t(); }

}  // namespace ember::test

// Op table, nn::functional: conv2d (every CPU conv kernel set, groups, depthwise, dilation), the
// three poolings (ties, NaN, ceil mode, padding), batch norm, softmax/log_softmax, the losses,
// dropout, stochastic depth. One entry per op, with its PyTorch golden cases from golden/ops_v1.bin.
#include "harness/harness.h"

#include <gtest/gtest.h>

#include "support/nn_cases.h"

namespace ember::test::ops {
namespace {

namespace F = ember::nn::functional;
using test::kConvCases;
using test::kPoolCases;

const DType F32 = DType::Float32, F64 = DType::Float64;
const std::vector<DType> kFloats = {F32, F64};

// (N, C, H, W) seen through a transposed (N, C, W, H) storage.
Input nchw_transposed(const Shape& s) {
  return in({s[0], s[1], s[3], s[2]}).as([](const Tensor& t) { return t.transpose(2, 3); });
}

F::Reduction reduction(int64_t r) { return r == 0 ? F::Reduction::None : r == 1 ? F::Reduction::Mean : F::Reduction::Sum; }

const bool registered = [] {
  // ---- conv2d -----------------------------------------------------------------------------------------
  {
    // float32: OpenBLAS/oneDNN/cuDNN sum in their own order: relative to the largest output.
    OpEntry e{"Conv2d", {}, {1e-4, 1e-11}};
    for (const auto& c : kConvCases) {
      std::vector<Input> ins = {in(c.x), in(c.w)};
      if (c.bias) ins.push_back(in({c.w[0]}));
      const F::Conv2dOptions opt = test::conv_options(c.p);
      e.cases.push_back({c.label, ins, [opt](auto& v) { return F::conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), opt); },
                         kFloats, shape_numel(c.x) < 200});
      // The same geometry on non-contiguous input and weight.
      std::vector<Input> nc = {nchw_transposed(c.x), nchw_transposed(c.w)};
      if (c.bias) nc.push_back(in({c.w[0]}));
      e.cases.push_back({c.label + "_noncontiguous", nc,
                         [opt](auto& v) { return F::conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), opt); }, kFloats, false});
    }
    // Input stored as (N, H, W, C) and permuted; stride, padding and dilation differ per axis.
    e.cases.push_back({"nhwc_input_stride_pad_dilation",
                       {in({2, 7, 6, 3}).as([](const Tensor& t) { return t.permute({0, 3, 1, 2}); }), in({4, 3, 3, 2}), in({4})},
                       [](auto& v) { return F::conv2d(v[0], v[1], v[2], {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}}); }});
    e.cases.push_back({"groups_batch1_no_bias", {in({1, 4, 5, 6}), in({6, 2, 2, 3})},
                       [](auto& v) { return F::conv2d(v[0], v[1], {}, {.padding = {1, 1}, .groups = 2}); }});
    e.cases.push_back({"depthwise_transposed_weight",
                       {in({2, 4, 5, 5}), in({4, 1, 1, 3}).as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::conv2d(v[0], v[1], {}, {.stride = {1, 2}, .groups = 4}); }});
    // bfloat16 under autocast (oneDNN's bf16 primitives; im2col on the rounded values) against the
    // reference kernels on the bf16-rounded values: the same products summed in another order.
    for (const auto& c : kConvCases) {
      std::vector<Input> ins = {in(c.x), in(c.w)};
      if (c.bias) ins.push_back(in({c.w[0]}));
      const F::Conv2dOptions opt = test::conv_options(c.p);
      Case ac{c.label + "_autocast", ins, [opt](auto& v) { return F::conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), opt); },
              {DType::BFloat16}, false};
      ac.autocast = true;
      e.cases.push_back(ac);
    }
    e.golden = Golden{"conv2d", 7, [](const GoldenCase& c) {
                        auto p = c.params();
                        F::Conv2dOptions opt{.stride = {p[0], p[1]}, .padding = {p[2], p[3]}, .dilation = {p[4], p[5]}, .groups = p[6]};
                        std::vector<std::string> leaves = {"input", "weight"};
                        if (p[7]) leaves.push_back("bias");
                        c.check(leaves, [&](auto& in) { return F::conv2d(in["input"], in["weight"], p[7] ? in["bias"] : Tensor(), opt); });
                      }};
    register_op(std::move(e));
  }

  // ---- conv2d with a fused activation ------------------------------------------------------------------
  {
    // cpu / cpu:conv-dnnl run the oneDNN post-op (forward, and the backward from ReLU's / ReLU6's
    // output); the reference and im2col backends leave conv2d_forward_fused empty, so the op runs
    // as conv2d then the activation. float64 always runs unfused (the fused slot is float32 only):
    // the Gradcheck checks the op's definition, Conv2dFusion.* (test_conv_fusion.cpp) the fused
    // backward against the unfused one.
    OpEntry e{"Conv2dActivation", {}, {1e-4, 1e-11}};
    const std::pair<const char*, F::ConvActivation> acts[] = {{"relu", F::ConvActivation::Relu},
                                                              {"relu6", F::ConvActivation::Relu6},
                                                              {"silu", F::ConvActivation::Silu},
                                                              {"hardswish", F::ConvActivation::Hardswish}};
    // ReLU over every geometry; the other three (the same post-op path, another formula) over the
    // MobileNet / EfficientNet shapes they meet, keeping the entry's time small.
    auto covers = [](F::ConvActivation a, const std::string& label) {
      return a == F::ConvActivation::Relu || label == "one_input_channel" || label == "groups2" ||
             label == "depthwise_3x3_pad1" || label == "pointwise" || label == "batch1_nonsquare_stride_pad_dilation";
    };
    for (const auto& [name, act] : acts)
      for (const auto& c : kConvCases) {
        if (!covers(act, c.label)) continue;
        std::vector<Input> ins = {in(c.x).uniform(-2, 2), in(c.w).uniform(-2, 2)};
        if (c.bias) ins.push_back(in({c.w[0]}));
        const F::Conv2dOptions opt = test::conv_options(c.p);
        const F::ConvActivation a = act;
        auto run = [opt, a](auto& v) { return F::conv2d_activation(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), opt, a); };
        e.cases.push_back({c.label + "_" + name, ins, run, kFloats, shape_numel(c.x) < 200});
        Case ac{c.label + "_" + name + "_autocast", ins, run, {DType::BFloat16}, false};
        ac.autocast = true;
        e.cases.push_back(ac);
      }
    register_op(std::move(e));
  }

  // ---- pooling ---------------------------------------------------------------------------------------------
  {
    OpEntry e{"MaxPool2d", {}, {1e-6, 1e-12}};
    for (const auto& c : kPoolCases) {
      const F::Pool2dOptions opt = c.opt;
      e.cases.push_back({c.label, {nchw_transposed(c.x)}, [opt](auto& v) { return F::max_pool2d(v[0], opt); }, kFloats, false});
      // Integer values in [0, 3): most windows hold several maxima and the first must win.
      e.cases.push_back({c.label + "_ties", {in(c.x).ints(0, 3)}, [opt](auto& v) { return F::max_pool2d(v[0], opt); }, kFloats, false});
      e.cases.push_back({c.label + "_nan", {in(c.x).nans(11)}, [opt](auto& v) { return F::max_pool2d(v[0], opt); }, kFloats, false});
    }
    e.cases.push_back({"mnistnet_64x32x26x26", {in({64, 32, 26, 26})}, [](auto& v) { return F::max_pool2d(v[0], {.kernel = {2, 2}}); },
                       kFloats, false});
    // The 2x2/2 fast path on ties and NaNs: odd sizes; LeNet-5's rows of 14 and 5 outputs; rows of
    // 16, 17 and 40 outputs (one, two and three 16-wide vector steps, the last one partial).
    for (Shape s : std::vector<Shape>{{3, 4, 9, 7}, {2, 3, 28, 28}, {2, 3, 10, 10}, {2, 2, 6, 32}, {1, 2, 5, 35}, {1, 1, 4, 81}})
      e.cases.push_back({"2x2_ties_nan_" + shape_str(s), {in(s).ints(0, 3).nans(13)},
                         [](auto& v) { return F::max_pool2d(v[0], {.kernel = {2, 2}}); }, kFloats, false});
    // Other windows on rows wide enough for the vector kernel's 16 outputs per step (strides 1, 2
    // and 3: loads, even-lane picks and gathers), with borders, ceil mode, ties and NaNs: ResNet's
    // stem pool (3x3/2 pad 1), 3x3/1 pad 1, 2x3/(1,3), 5x5/2 pad 2, 3x2/(2,2) with ceil.
    const std::vector<std::pair<std::string, F::Pool2dOptions>> wide_windows = {
        {"3x3s2p1", {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},
        {"3x3s1p1", {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}}},
        {"2x3s1x3", {.kernel = {2, 3}, .stride = {1, 3}}},
        {"5x5s2p2", {.kernel = {5, 5}, .stride = {2, 2}, .padding = {2, 2}}},
        {"3x2s2_ceil", {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 0}, .ceil_mode = true}}};
    for (const auto& [label, opt] : wide_windows)
      for (Shape s : std::vector<Shape>{{2, 3, 9, 40}, {1, 2, 6, 67}})
        e.cases.push_back({label + "_ties_nan_" + shape_str(s), {in(s).ints(0, 3).nans(13)},
                           [opt](auto& v) { return F::max_pool2d(v[0], opt); }, kFloats, false});
    e.cases.push_back({"3x3s2p1_distinct", {in({2, 3, 11, 37}).distinct()},
                       [](auto& v) { return F::max_pool2d(v[0], {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}); }});
    // Gradients: distinct values (no ties within eps), ceil mode, a transposed view, a 3-D input.
    e.cases.push_back({"distinct_ceil_padded", {in({2, 3, 7, 6}).distinct()},
                       [](auto& v) { return F::max_pool2d(v[0], {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = true}); }});
    e.cases.push_back({"distinct_transposed", {in({2, 3, 7, 6}).distinct().as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::max_pool2d(v[0], {.kernel = {2, 2}}); }});
    e.cases.push_back({"distinct_3d_input", {in({3, 7, 6}).distinct()}, [](auto& v) { return F::max_pool2d(v[0], {.kernel = {2, 3}}); }});
    e.golden = Golden{"max_pool2d", 0, [](const GoldenCase& c) {
                        auto p = c.params();
                        ASSERT_EQ(p[6], 1);  // dilation is not an option of ours
                        ASSERT_EQ(p[7], 1);
                        F::Pool2dOptions opt{.kernel = {p[0], p[1]}, .stride = {p[2], p[3]}, .padding = {p[4], p[5]}, .ceil_mode = p[8] != 0};
                        c.check({"input"}, [&](auto& in) { return F::max_pool2d(in["input"], opt); });
                      }};
    register_op(std::move(e));
  }
  {
    OpEntry e{"AvgPool2d", {}, {1e-6, 1e-12}};
    for (auto c : kPoolCases)
      for (bool include_pad : {true, false}) {
        c.opt.count_include_pad = include_pad;
        const F::Pool2dOptions opt = c.opt;
        e.cases.push_back({c.label + (include_pad ? "" : "_exclude_pad"), {nchw_transposed(c.x)},
                           [opt](auto& v) { return F::avg_pool2d(v[0], opt); }, kFloats, false});
      }
    for (bool include : {true, false})
      for (bool ceil : {true, false}) {
        F::Pool2dOptions ap{.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = ceil, .count_include_pad = include};
        e.cases.push_back({std::string("grad_") + (include ? "include_pad" : "exclude_pad") + (ceil ? "_ceil" : ""), {in({1, 2, 7, 5})},
                           [ap](auto& v) { return F::avg_pool2d(v[0], ap); }});
      }
    e.cases.push_back({"grad_transposed", {in({1, 2, 7, 5}).as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::avg_pool2d(v[0], {.kernel = {2, 3}, .stride = {1, 1}}); }});
    e.golden = Golden{"avg_pool2d", 3, [](const GoldenCase& c) {
                        auto p = c.params();
                        F::Pool2dOptions opt{.kernel = {p[0], p[1]}, .stride = {p[2], p[3]}, .padding = {p[4], p[5]},
                                             .ceil_mode = p[6] != 0, .count_include_pad = p[7] != 0};
                        c.check({"input"}, [&](auto& in) { return F::avg_pool2d(in["input"], opt); });
                      }};
    register_op(std::move(e));
  }
  {
    OpEntry e{"AdaptiveAvgPool2d", {}, {1e-6, 1e-12}};
    struct A { Shape x; int64_t oh, ow; };
    for (const A& a : std::vector<A>{{{2, 4, 8, 8}, 1, 1},     // global average (resnet_small's head)
                                     {{2, 3, 10, 7}, 3, 4},    // windows of different sizes that overlap
                                     {{1, 2, 5, 5}, 5, 5},     // identity
                                     {{1, 2, 3, 4}, 6, 7},     // larger output: inputs feed several outputs
                                     {{2, 3, 5, 7}, 2, 3},
                                     {{2, 4, 7, 7}, 3, 3},     // 7 -> 3: windows of 3, overlapping by one
                                     {{1, 3, 9, 6}, 4, 4}}) {  // 9 -> 4 and 6 -> 4 at once
      const int64_t oh = a.oh, ow = a.ow;
      e.cases.push_back({shape_str(a.x) + "_to_" + std::to_string(oh) + "x" + std::to_string(ow), {in(a.x)},
                         [oh, ow](auto& v) { return F::adaptive_avg_pool2d(v[0], {oh, ow}); }, kFloats, shape_numel(a.x) < 300});
    }
    e.cases.push_back({"transposed_to_4x3", {in({2, 3, 5, 7}).as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::adaptive_avg_pool2d(v[0], {4, 3}); }});
    e.golden = Golden{"adaptive_avg_pool2d", 0, [](const GoldenCase& c) {
                        auto p = c.params();
                        c.check({"input"}, [&](auto& in) { return F::adaptive_avg_pool2d(in["input"], {p[0], p[1]}); });
                      }};
    register_op(std::move(e));
  }

  // ---- batch norm (running stats are inputs the op updates: compared after the op too) ------------------
  {
    // In training the input gradient is a difference of nearly equal terms: a looser bound.
    OpEntry e{"BatchNorm", {}, {1e-4, 5e-11}};
    auto stats = [](int64_t c) { return std::vector<Input>{in({c}).no_grad(), in({c}).uniform(0.5, 1.5).no_grad()}; };
    for (bool training : {true, false}) {
      const std::string mode = training ? "training" : "eval";
      // One image, one channel with one element per plane, planes longer than the CPU kernel's
      // summation block (4096), and bncnn's first layer at a small batch (over OpenMP threads).
      for (Shape s : std::vector<Shape>{{3, 4, 2, 3}, {8, 4, 36}, {3, 5, 1}, {2, 3, 700}, {6, 3, 5, 4}, {1, 3, 1, 5},
                                        {7, 1, 1, 1}, {2, 2, 70, 70}, {4, 16, 28, 28}}) {
        std::vector<Input> ins = {s.size() == 4 ? nchw_transposed(s) : in(s).uniform(2, 4)};
        for (auto& i : stats(s[1])) ins.push_back(i);
        ins.push_back(in({s[1]}));
        ins.push_back(in({s[1]}));
        e.cases.push_back({mode + "_" + shape_str(s), ins,
                           [training](auto& v) { return F::batch_norm(v[0], v[1], v[2], v[3], v[4], training, 0.1, 1e-5); },
                           kFloats, shape_numel(s) <= 72});
      }
    }
    // Large means over a small spread: the variance must not cancel (E[x^2] - E[x]^2 in float would).
    for (bool training : {true, false})
      e.cases.push_back({std::string(training ? "training" : "eval") + "_large_mean",
                         {in({4, 3, 50}).uniform(1000, 1000.5), in({3}).no_grad(), in({3}).uniform(0.5, 1.5).no_grad(),
                          in({3}), in({3})},
                         [training](auto& v) { return F::batch_norm(v[0], v[1], v[2], v[3], v[4], training, 0.1, 1e-5); },
                         kFloats, false});
    // 2-D (N, C) input as a transposed view, weight and bias undefined; no running stats at all.
    e.cases.push_back({"2d_transposed_no_affine", {in({5, 4}).as(test::transposed), in({5}).no_grad(), in({5}).uniform(0.5, 1.5).no_grad()},
                       [](auto& v) { return F::batch_norm(v[0], v[1], v[2], {}, {}, true); }});
    e.cases.push_back({"no_running_stats_bias_only", {in({3, 4, 2, 3}), in({4})},
                       [](auto& v) { return F::batch_norm(v[0], {}, {}, {}, v[1], true, 0.1, 1e-3); }});
    e.golden = Golden{"batch_norm", 3, [](const GoldenCase& c) {
                        const bool training = c.params()[0] != 0;
                        auto s = c.scalars();
                        Tensor rm = c.get("running_mean"), rv = c.get("running_var");
                        c.check({"input", "weight", "bias"}, [&](auto& in) {
                          return F::batch_norm(in["input"], rm, rv, in["weight"], in["bias"], training, s[0], s[1]);
                        });
                        c.expect_close(rm, "running_mean_after");
                        c.expect_close(rv, "running_var_after");
                      }};
    register_op(std::move(e));
  }

  // ---- batch norm + ReLU / ReLU6 in one op (the CPU's fused passes; the others compose) -------------------------
  {
    OpEntry e{"BatchNormActivation", {}, {1e-4, 5e-11}};
    const std::pair<const char*, F::ConvActivation> acts[] = {{"relu", F::ConvActivation::Relu},
                                                              {"relu6", F::ConvActivation::Relu6},
                                                              {"silu", F::ConvActivation::Silu}};
    for (const auto& [name, act] : acts)
      for (bool training : {true, false})
        // A small plane (finite differences), planes longer than the summation block, resnet's
        // first block at a small batch. Inputs in [-4, 8): ReLU6 meets both of its kinks.
        for (Shape s : std::vector<Shape>{{3, 4, 2, 3}, {2, 3, 70, 70}, {4, 16, 14, 14}}) {
          if (act == F::ConvActivation::Silu && s[2] > 2) continue;
          std::vector<Input> ins = {in(s).uniform(-4, 8), in({s[1]}).no_grad(), in({s[1]}).uniform(0.5, 1.5).no_grad(),
                                    in({s[1]}).uniform(0.5, 4), in({s[1]}).uniform(-1, 3)};
          const F::ConvActivation a = act;
          e.cases.push_back({std::string(name) + (training ? "_training_" : "_eval_") + shape_str(s), ins,
                             [training, a](auto& v) {
                               return F::batch_norm_activation(v[0], v[1], v[2], v[3], v[4], training, 0.1, 1e-5, a);
                             },
                             kFloats, shape_numel(s) <= 72});
          if (act == F::ConvActivation::Silu) continue;
          // With a residual added before the activation (a residual block's tail).
          ins.push_back(in(s).uniform(-3, 3));
          e.cases.push_back({std::string(name) + "_add" + (training ? "_training_" : "_eval_") + shape_str(s), ins,
                             [training, a](auto& v) {
                               return F::batch_norm_add_activation(v[0], v[1], v[2], v[3], v[4], training, 0.1, 1e-5,
                                                                   v[5], a);
                             },
                             kFloats, shape_numel(s) <= 72});
        }
    register_op(std::move(e));
  }

  // ---- softmax ------------------------------------------------------------------------------------------------
  for (bool log : {false, true}) {
    OpEntry e{log ? "LogSoftmax" : "Softmax", {}, {2e-6, 1e-12}};
    auto op = [log](const Tensor& x, int64_t d) { return log ? F::log_softmax(x, d) : F::softmax(x, d); };
    for (int64_t dim : {0, 1, 2, -1})
      e.cases.push_back({"3x4x5_dim" + std::to_string(dim), {in({3, 4, 5})}, [op, dim](auto& v) { return op(v[0], dim); }});
    e.cases.push_back({"transposed_dim1", {in({3, 4, 5}).as([](const Tensor& t) { return t.transpose(0, 2); })},
                       [op](auto& v) { return op(v[0], 1); }});
    // Large logits (x 30, one of 800): the row maximum must be subtracted before exp().
    for (Shape s : std::vector<Shape>{{4, 10}, {3, 5, 7}, {2, 1000}, {1, 1}})
      for (int64_t dim = 0; dim < int64_t(s.size()); ++dim)
        e.cases.push_back({"large_logits_" + shape_str(s) + "_dim" + std::to_string(dim), {in(s)},
                           [op, dim](auto& v) {
                             Tensor x = mul(v[0], 30.0);
                             x = cat({full({1}, 800.0, {.dtype = x.dtype(), .device = x.device()}), x.flatten().narrow(0, 1, x.numel() - 1)}).view(x.sizes());
                             return op(x, dim);
                           },
                           kFloats, false, 1e-6, true});
    e.golden = Golden{log ? "log_softmax" : "softmax", 2, [op](const GoldenCase& c) {
                        const int64_t dim = c.params()[0];
                        c.check({"input"}, [&](auto& in) { return op(in["input"], dim); });
                      }};
    register_op(std::move(e));
  }

  // ---- losses -----------------------------------------------------------------------------------------------------
  {
    const std::vector<int64_t> target = {0, 3, -100, 1, 2, 3};
    OpEntry ce{"CrossEntropy", {}, {2e-6, 1e-12}}, nll{"NllLoss", {}, {2e-6, 1e-12}};
    for (auto r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None})
      for (double ls : {0.0, 0.2}) {
        const F::CrossEntropyOptions opt{.reduction = r, .label_smoothing = ls};
        const std::string label = std::string(r == F::Reduction::Mean ? "mean" : r == F::Reduction::Sum ? "sum" : "none") +
                                  (ls > 0 ? "_smoothing0.2" : "");
        ce.cases.push_back({label, {in({6, 4}), index(target)}, [opt](auto& v) { return F::cross_entropy(v[0], v[1], opt); }});
        ce.cases.push_back({label + "_transposed", {in({4, 6}).as(test::transposed), index(target)},
                            [opt](auto& v) { return F::cross_entropy(v[0], v[1], opt); }, kFloats, ls > 0});
        if (ls == 0) nll.cases.push_back({label, {in({6, 4}), index(target)}, [opt](auto& v) { return F::nll_loss(v[0], v[1], opt); }});
      }
    ce.cases.push_back({"ignore_index3_transposed", {in({4, 6}).as(test::transposed), index({0, 3, 2, 1, 3, 3})},
                        [](auto& v) { return F::cross_entropy(v[0], v[1], {.ignore_index = 3}); }});
    nll.cases.push_back({"log_softmax_sum_transposed", {in({6, 8}).as(test::transposed), index({0, 5, 2, -100, 3, 3, 1, 4})},
                         [](auto& v) { return F::nll_loss(F::log_softmax(v[0], 1), v[1], {.reduction = F::Reduction::Sum}); }});
    nll.cases.push_back({"ignored_rows_none", {in({9, 5}), index({0, 4, -100, 2, 2, 1, -100, 3, 0})},
                         [](auto& v) { return F::nll_loss(v[0], v[1], {.reduction = F::Reduction::None}); }});
    ce.golden = Golden{"cross_entropy", 7, [](const GoldenCase& c) {
                         auto p = c.params();
                         F::CrossEntropyOptions opt{.reduction = reduction(p[0]), .ignore_index = p[1], .label_smoothing = c.scalars()[0]};
                         Tensor t = c.get("target");
                         c.check({"input"}, [&](auto& in) { return F::cross_entropy(in["input"], t, opt); });
                       }};
    nll.golden = Golden{"nll_loss", 3, [](const GoldenCase& c) {
                          auto p = c.params();
                          F::CrossEntropyOptions opt{.reduction = reduction(p[0]), .ignore_index = p[1]};
                          Tensor t = c.get("target");
                          c.check({"input"}, [&](auto& in) { return F::nll_loss(in["input"], t, opt); });
                        }};
    register_op(std::move(ce));
    register_op(std::move(nll));
  }
  {
    OpEntry e{"MseLoss", {}, {2e-6, 1e-12}};
    for (auto r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None})
      e.cases.push_back({r == F::Reduction::Mean ? "mean" : r == F::Reduction::Sum ? "sum" : "none", {in({3, 5}), in({3, 5}).as(test::transposed)},
                         [r](auto& v) { return F::mse_loss(v[0], v[1].t(), r); }});
    e.golden = Golden{"mse_loss", 2, [](const GoldenCase& c) {
                        auto r = reduction(c.params()[0]);
                        std::vector<std::string> leaves = {"input"};
                        if (c.has("grad_target")) leaves.push_back("target");
                        Tensor fixed = c.get("target");
                        c.check(leaves, [&](auto& in) { return F::mse_loss(in["input"], in.count("target") ? in["target"] : fixed, r); });
                      }};
    register_op(std::move(e));
  }
  {
    // A fresh generator per call: the same mask every time the op runs (and on every device).
    OpEntry e{"Dropout", {}, {1e-6, 1e-12}};
    e.cases.push_back({"p0.3", {in({4, 5})}, [](auto& v) { Generator g(5); return F::dropout(v[0], 0.3, true, &g); }});
    e.cases.push_back({"p1_all_dropped", {in({4, 5})}, [](auto& v) { return F::dropout(v[0], 1.0, true); }, kFloats, true, 1e-6, true});
    register_op(std::move(e));
  }
  {
    // One Bernoulli draw per sample (row) or per batch, the same on every device (Philox).
    OpEntry e{"StochasticDepth", {}, {1e-6, 1e-12}};
    e.cases.push_back({"row_p0.5", {in({16, 3, 2, 2})}, [](auto& v) { Generator g(5); return F::stochastic_depth(v[0], 0.5, "row", true, &g); }});
    e.cases.push_back({"batch_p0.3", {in({4, 3, 2})}, [](auto& v) { Generator g(8); return F::stochastic_depth(v[0], 0.3, "batch", true, &g); }});
    e.cases.push_back({"row_p1_all_dropped", {in({4, 5})}, [](auto& v) { return F::stochastic_depth(v[0], 1.0, "row", true); },
                       kFloats, true, 1e-6, true});
    register_op(std::move(e));
  }
  return true;
}();

}  // namespace
}  // namespace ember::test::ops

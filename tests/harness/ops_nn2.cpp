// Op table, the rest of nn::functional (include/ember/ops_nn.h): activations, layer / group norm,
// distances, embedding, conv1d / conv_transpose / string padding, 1-D pooling, channel dropout,
// interpolate, pad modes, and the losses with PyTorch's options. One entry per op: parity of every
// backend against the reference kernels, float64 gradient checks, and PyTorch's values from
// golden/ops_nn2_v1.bin (tests/golden/make_golden_nn2.py; params / scalars documented there).
#include "harness/harness.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/nn_cases.h"

namespace ember::test::ops {
namespace {

namespace F = ember::nn::functional;

const DType F32 = DType::Float32, F64 = DType::Float64;
const std::vector<DType> kFloats = {F32, F64};
const char* kFile = "ops_nn2_v1.bin";  // under tests/golden/

F::Reduction reduction(int64_t r) {
  switch (r) {
    case 0: return F::Reduction::None;
    case 1: return F::Reduction::Mean;
    case 2: return F::Reduction::Sum;
    default: return F::Reduction::BatchMean;
  }
}
const std::vector<std::pair<std::string, F::Reduction>> kReductions = {
    {"mean", F::Reduction::Mean}, {"sum", F::Reduction::Sum}, {"none", F::Reduction::None}};

Golden golden(std::string op, size_t cases, std::function<void(const GoldenCase&)> run) {
  return Golden{std::move(op), cases, std::move(run), kFile};
}

// An element-wise activation: a few shapes (one a transposed view), values spread over the kinks'
// both sides; the golden cases take scalars from the file.
OpEntry activation(std::string name, std::function<Tensor(const Tensor&)> f, double scale = 2.0) {
  OpEntry e{std::move(name), {}, {1e-6, 1e-12}};
  e.cases.push_back({"4x5", {in({4, 5}).uniform(-2 * scale, 2 * scale)}, [f](auto& v) { return f(v[0]); }});
  e.cases.push_back({"transposed_3x7", {in({7, 3}).uniform(-2 * scale, 2 * scale).as(test::transposed)},
                     [f](auto& v) { return f(v[0]); }});
  e.cases.push_back({"2x3x2x2", {in({2, 3, 2, 2})}, [f](auto& v) { return f(v[0]); }});
  return e;
}

const bool registered = [] {
  // ---- activations ---------------------------------------------------------------------------------
  {
    OpEntry e = activation("LeakyRelu", [](const Tensor& x) { return F::leaky_relu(x, 0.2); });
    e.cases.push_back({"default_slope", {in({3, 4})}, [](auto& v) { return F::leaky_relu(v[0]); }});
    e.golden = golden("leaky_relu", 2, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::leaky_relu(in["input"], c.scalars()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Elu", [](const Tensor& x) { return F::elu(x, 0.7); });
    e.cases.push_back({"large_positive_no_overflow", {in({2, 3}).uniform(80, 800)}, [](auto& v) { return F::elu(v[0]); }});
    e.golden = golden("elu", 2, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::elu(in["input"], c.scalars()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Selu", [](const Tensor& x) { return F::selu(x); });
    e.golden = golden("selu", 1, [](const GoldenCase& c) { c.check({"input"}, [&](auto& in) { return F::selu(in["input"]); }); });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Celu", [](const Tensor& x) { return F::celu(x, 1.5); });
    e.golden = golden("celu", 2, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::celu(in["input"], c.scalars()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("GeluTanh", [](const Tensor& x) { return F::gelu(x, "tanh"); });
    e.cases.push_back({"none_is_erf", {in({3, 4})}, [](auto& v) { return F::gelu(v[0], "none"); }});
    e.golden = golden("gelu_tanh", 1, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::gelu(in["input"], "tanh"); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Softplus", [](const Tensor& x) { return F::softplus(x, 2.0, 1.5); }, 3.0);
    e.cases.push_back({"default_wide", {in({4, 6}).uniform(-40, 40)}, [](auto& v) { return F::softplus(v[0]); }});
    e.golden = golden("softplus", 2, [](const GoldenCase& c) {
      auto s = c.scalars();
      c.check({"input"}, [&](auto& in) { return F::softplus(in["input"], s[0], s[1]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Hardtanh", [](const Tensor& x) { return F::hardtanh(x, -0.5, 2.0); });
    e.golden = golden("hardtanh", 2, [](const GoldenCase& c) {
      auto s = c.scalars();
      c.check({"input"}, [&](auto& in) { return F::hardtanh(in["input"], s[0], s[1]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("LogSigmoid", [](const Tensor& x) { return F::logsigmoid(x); }, 10.0);
    e.golden = golden("logsigmoid", 1, [](const GoldenCase& c) { c.check({"input"}, [&](auto& in) { return F::logsigmoid(in["input"]); }); });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Mish", [](const Tensor& x) { return F::mish(x); }, 3.0);
    e.golden = golden("mish", 1, [](const GoldenCase& c) { c.check({"input"}, [&](auto& in) { return F::mish(in["input"]); }); });
    register_op(std::move(e));
  }
  {
    OpEntry e = activation("Softsign", [](const Tensor& x) { return F::softsign(x); });
    e.golden = golden("softsign", 1, [](const GoldenCase& c) { c.check({"input"}, [&](auto& in) { return F::softsign(in["input"]); }); });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Glu", {}, {1e-6, 1e-12}};
    e.cases.push_back({"last_dim", {in({3, 4})}, [](auto& v) { return F::glu(v[0]); }});
    e.cases.push_back({"dim1_transposed", {in({5, 6, 2}).as([](const Tensor& t) { return t.transpose(0, 2); })},
                       [](auto& v) { return F::glu(v[0], 1); }});
    e.golden = golden("glu", 2, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::glu(in["input"], c.params()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Prelu", {}, {1e-6, 1e-12}};
    e.cases.push_back({"per_channel", {in({2, 3, 4}), in({3})}, [](auto& v) { return F::prelu(v[0], v[1]); }});
    e.cases.push_back({"one_weight_4d", {in({2, 3, 2, 2}), in({1})}, [](auto& v) { return F::prelu(v[0], v[1]); }});
    e.golden = golden("prelu", 2, [](const GoldenCase& c) {
      c.check({"input", "weight"}, [&](auto& in) { return F::prelu(in["input"], in["weight"]); });
    });
    register_op(std::move(e));
  }

  // ---- normalisation ------------------------------------------------------------------------------------
  {
    OpEntry e{"LayerNorm", {}, {2e-5, 1e-11}};
    e.cases.push_back({"last_dim_affine", {in({2, 3, 4}), in({4}), in({4})},
                       [](auto& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); }});
    e.cases.push_back({"two_dims_affine_transposed", {in({4, 3, 2}).as([](const Tensor& t) { return t.permute({2, 1, 0}); }),
                                                      in({3, 4}), in({3, 4})},
                       [](auto& v) { return F::layer_norm(v[0], {3, 4}, v[1], v[2], 1e-3); }});
    e.cases.push_back({"no_affine", {in({5, 6})}, [](auto& v) { return F::layer_norm(v[0], {6}); }});
    e.cases.push_back({"weight_only", {in({2, 7}), in({7})}, [](auto& v) { return F::layer_norm(v[0], {7}, v[1]); }});
    e.golden = golden("layer_norm", 3, [](const GoldenCase& c) {
      auto p = c.params();
      const Shape ns(p.begin(), p.end());
      const double eps = c.scalars()[0];
      if (c.has("weight"))
        c.check({"input", "weight", "bias"}, [&](auto& in) { return F::layer_norm(in["input"], ns, in["weight"], in["bias"], eps); });
      else
        c.check({"input"}, [&](auto& in) { return F::layer_norm(in["input"], ns, {}, {}, eps); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"GroupNorm", {}, {2e-5, 1e-11}};
    e.cases.push_back({"g2_affine", {in({2, 6, 3, 2}), in({6}), in({6})}, [](auto& v) { return F::group_norm(v[0], 2, v[1], v[2]); }});
    e.cases.push_back({"g3_3d", {in({2, 6, 5})}, [](auto& v) { return F::group_norm(v[0], 3); }});
    e.cases.push_back({"g1_transposed", {in({2, 2, 4, 3}).as([](const Tensor& t) { return t.transpose(2, 3); }), in({2}), in({2})},
                       [](auto& v) { return F::group_norm(v[0], 1, v[1], v[2], 1e-4); }});
    e.golden = golden("group_norm", 3, [](const GoldenCase& c) {
      const int64_t groups = c.params()[0];
      const double eps = c.scalars()[0];
      if (c.has("weight"))
        c.check({"input", "weight", "bias"}, [&](auto& in) { return F::group_norm(in["input"], groups, in["weight"], in["bias"], eps); });
      else
        c.check({"input"}, [&](auto& in) { return F::group_norm(in["input"], groups, {}, {}, eps); });
    });
    register_op(std::move(e));
  }

  // ---- distances -------------------------------------------------------------------------------------------
  {
    OpEntry e{"Normalize", {}, {2e-6, 1e-12}};
    for (double p : {2.0, 1.0, 3.0, double(INFINITY)})
      e.cases.push_back({"p" + std::to_string(p), {in({3, 5}).distinct()}, [p](auto& v) { return F::normalize(v[0], p, 1); }});
    e.cases.push_back({"dim0_transposed", {in({4, 3}).as(test::transposed)}, [](auto& v) { return F::normalize(v[0], 2.0, 0); }});
    e.golden = golden("normalize", 3, [](const GoldenCase& c) {
      auto s = c.scalars();
      c.check({"input"}, [&](auto& in) { return F::normalize(in["input"], s[0], c.params()[0], s[1]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"CosineSimilarity", {}, {2e-6, 1e-12}};
    e.cases.push_back({"dim1", {in({3, 4}), in({3, 4})}, [](auto& v) { return F::cosine_similarity(v[0], v[1]); }});
    e.cases.push_back({"broadcast_last_dim", {in({2, 1, 4}), in({3, 4})}, [](auto& v) { return F::cosine_similarity(v[0], v[1], -1); }});
    e.golden = golden("cosine_similarity", 2, [](const GoldenCase& c) {
      c.check({"x1", "x2"}, [&](auto& in) { return F::cosine_similarity(in["x1"], in["x2"], c.params()[0], c.scalars()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"PairwiseDistance", {}, {2e-6, 1e-12}};
    for (double p : {2.0, 1.0, 3.0, 0.5})
      e.cases.push_back({"p" + std::to_string(p), {in({3, 5}), in({3, 5})}, [p](auto& v) { return F::pairwise_distance(v[0], v[1], p); }});
    e.cases.push_back({"inf_keepdim_broadcast", {in({3, 5}).distinct(), in({1, 5})},
                       [](auto& v) { return F::pairwise_distance(v[0], v[1], INFINITY, 1e-6, true); }});
    e.golden = golden("pairwise_distance", 3, [](const GoldenCase& c) {
      auto s = c.scalars();
      c.check({"x1", "x2"}, [&](auto& in) { return F::pairwise_distance(in["x1"], in["x2"], s[0], s[1], c.params()[0] != 0); });
    });
    register_op(std::move(e));
  }

  // ---- embedding --------------------------------------------------------------------------------------------
  {
    OpEntry e{"Embedding", {}, {1e-6, 1e-12}};
    e.cases.push_back({"2d_indices", {index({0, 2, 5, 2, 3, 0}, {2, 3}), in({6, 3})}, [](auto& v) { return F::embedding(v[0], v[1]); }});
    // The padding row's lookups are the only uses of row 2 here, so the gradient check (which
    // finite-differences the values) would see a gradient PyTorch's rule withholds: values only.
    e.cases.push_back({"padding_idx", {index({1, 2, 2, 4}), in({5, 4})}, [](auto& v) { return F::embedding(v[0], v[1], 2); },
                       kFloats, false});
    e.golden = golden("embedding", 3, [](const GoldenCase& c) {
      auto p = c.params();
      std::optional<int64_t> pad = p[0] ? std::optional<int64_t>(p[1]) : std::nullopt;
      Tensor idx = c.get("indices");
      c.check({"weight"}, [&](auto& in) { return F::embedding(idx, in["weight"], pad); });
    });
    register_op(std::move(e));
  }

  // ---- convolutions ------------------------------------------------------------------------------------------
  {
    OpEntry e{"Conv1d", {}, {1e-4, 1e-11}};
    e.cases.push_back({"basic", {in({2, 4, 7}), in({6, 4, 3}), in({6})}, [](auto& v) { return F::conv1d(v[0], v[1], v[2]); }});
    e.cases.push_back({"stride2_pad1_dil2_groups2", {in({2, 4, 9}), in({6, 2, 3}), in({6})},
                       [](auto& v) { return F::conv1d(v[0], v[1], v[2], {.stride = 2, .padding = 1, .dilation = 2, .groups = 2}); }});
    e.cases.push_back({"unbatched_no_bias", {in({3, 8}), in({2, 3, 4})}, [](auto& v) { return F::conv1d(v[0], v[1]); }});
    e.cases.push_back({"same_even_kernel", {in({2, 3, 7}), in({2, 3, 4}), in({2})},
                       [](auto& v) { return F::conv1d_padding(v[0], v[1], v[2], "same"); }});
    e.golden = golden("conv1d", 2, [](const GoldenCase& c) {
      auto p = c.params();
      c.check({"input", "weight", "bias"}, [&](auto& in) {
        return F::conv1d(in["input"], in["weight"], in["bias"], {.stride = p[0], .padding = p[1], .dilation = p[2], .groups = p[3]});
      });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Conv2dPadding", {}, {1e-4, 1e-11}};
    e.cases.push_back({"same_3x3", {in({2, 3, 5, 6}), in({4, 3, 3, 3}), in({4})},
                       [](auto& v) { return F::conv2d_padding(v[0], v[1], v[2], "same"); }});
    e.cases.push_back({"same_even_kernel_dilation", {in({1, 2, 6, 5}), in({3, 2, 4, 2}), in({3})},
                       [](auto& v) { return F::conv2d_padding(v[0], v[1], v[2], "same", {1, 1}, {1, 2}); }});
    e.cases.push_back({"valid_groups", {in({1, 4, 5, 5}), in({2, 2, 2, 2})},
                       [](auto& v) { return F::conv2d_padding(v[0], v[1], {}, "valid", {2, 1}, {1, 1}, 2); }});
    e.cases.push_back({"unbatched_conv2d", {in({3, 5, 6}), in({4, 3, 3, 3}), in({4})},
                       [](auto& v) { return F::conv2d(v[0], v[1], v[2], {.padding = {1, 1}}); }});
    auto run = [](const GoldenCase& c, const std::string& mode) {
      auto p = c.params();
      c.check({"input", "weight", "bias"}, [&](auto& in) {
        if (in["input"].dim() == 3) return F::conv1d_padding(in["input"], in["weight"], in["bias"], mode, 1, p[2], p[3]);
        return F::conv2d_padding(in["input"], in["weight"], in["bias"], mode, {1, 1}, {p[1], p[2]}, p[3]);
      });
    };
    e.golden = golden("conv2d_padding", 3, [run](const GoldenCase& c) { run(c, c.params()[0] ? "same" : "valid"); });
    register_op(std::move(e));
    OpEntry e1{"Conv1dPadding", {}, {1e-4, 1e-11}};
    e1.cases.push_back({"same_k3_dilation2", {in({2, 3, 7}), in({2, 3, 3}), in({2})},
                        [](auto& v) { return F::conv1d_padding(v[0], v[1], v[2], "same", 1, 2); }});
    e1.golden = golden("conv1d_padding", 1, [run](const GoldenCase& c) { run(c, c.params()[0] ? "same" : "valid"); });
    register_op(std::move(e1));
  }
  {
    OpEntry e{"ConvTranspose2d", {}, {1e-4, 1e-11}};
    e.cases.push_back({"basic", {in({2, 3, 3, 3}), in({3, 2, 2, 3}), in({2})}, [](auto& v) { return F::conv_transpose2d(v[0], v[1], v[2]); }});
    e.cases.push_back({"stride2_pad1_outpad1", {in({2, 3, 3, 4}), in({3, 2, 3, 3}), in({2})},
                       [](auto& v) { return F::conv_transpose2d(v[0], v[1], v[2], {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}}); }});
    e.cases.push_back({"groups2_dilation_no_bias", {in({1, 4, 3, 3}), in({4, 1, 2, 2})},
                       [](auto& v) {
                         return F::conv_transpose2d(v[0], v[1], {}, {.stride = {1, 2}, .padding = {1, 0}, .output_padding = {0, 1},
                                                                     .groups = 2, .dilation = {2, 1}});
                       }});
    e.cases.push_back({"outpad_over_stride", {in({2, 2, 3, 3}), in({2, 3, 2, 2}), in({3})},
                       [](auto& v) { return F::conv_transpose2d(v[0], v[1], v[2], {.output_padding = {1, 1}, .dilation = {2, 2}}); }});
    e.cases.push_back({"unbatched_transposed_input", {in({3, 4, 2}).as([](const Tensor& t) { return t.transpose(1, 2); }), in({3, 2, 3, 3})},
                       [](auto& v) { return F::conv_transpose2d(v[0], v[1], {}, {.stride = {2, 2}}); }});
    e.cases.push_back({"dcgan_like_4x4_s2_p1", {in({2, 8, 4, 4}), in({8, 4, 4, 4})},
                       [](auto& v) { return F::conv_transpose2d(v[0], v[1], {}, {.stride = {2, 2}, .padding = {1, 1}}); }, kFloats, false});
    e.golden = golden("conv_transpose2d", 4, [](const GoldenCase& c) {
      auto p = c.params();
      F::ConvTranspose2dOptions o{.stride = {p[0], p[1]}, .padding = {p[2], p[3]}, .output_padding = {p[4], p[5]}, .groups = p[6],
                                  .dilation = {p[7], p[8]}};
      std::vector<std::string> leaves = {"input", "weight"};
      if (p[9]) leaves.push_back("bias");
      c.check(leaves, [&](auto& in) { return F::conv_transpose2d(in["input"], in["weight"], p[9] ? in["bias"] : Tensor(), o); });
    });
    register_op(std::move(e));
    OpEntry e1{"ConvTranspose1d", {}, {1e-4, 1e-11}};
    e1.cases.push_back({"stride2_groups2", {in({2, 4, 5}), in({4, 3, 3}), in({6})},
                        [](auto& v) {
                          return F::conv_transpose1d(v[0], v[1], v[2], {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
                        }});
    e1.cases.push_back({"unbatched", {in({3, 6}), in({3, 2, 2})}, [](auto& v) { return F::conv_transpose1d(v[0], v[1]); }});
    e1.golden = golden("conv_transpose1d", 1, [](const GoldenCase& c) {
      auto p = c.params();
      c.check({"input", "weight", "bias"}, [&](auto& in) {
        return F::conv_transpose1d(in["input"], in["weight"], in["bias"],
                                   {.stride = p[0], .padding = p[1], .output_padding = p[2], .groups = p[3], .dilation = p[4]});
      });
    });
    register_op(std::move(e1));
  }

  // ---- 1-D pooling -----------------------------------------------------------------------------------------
  {
    OpEntry e{"MaxPool1d", {}, {1e-6, 1e-12}};
    e.cases.push_back({"k3s2p1", {in({2, 3, 9}).distinct()}, [](auto& v) { return F::max_pool1d(v[0], {.kernel = 3, .stride = 2, .padding = 1}); }});
    e.cases.push_back({"k2_ceil_unbatched", {in({3, 9}).distinct()}, [](auto& v) { return F::max_pool1d(v[0], {.kernel = 2, .ceil_mode = true}); }});
    e.golden = golden("max_pool1d", 2, [](const GoldenCase& c) {
      auto p = c.params();
      c.check({"input"}, [&](auto& in) { return F::max_pool1d(in["input"], {.kernel = p[0], .stride = p[1], .padding = p[2], .ceil_mode = p[3] != 0}); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"AvgPool1d", {}, {1e-6, 1e-12}};
    for (bool include : {true, false})
      e.cases.push_back({std::string("k3s2p1_ceil_include") + (include ? "1" : "0"), {in({2, 3, 8})}, [include](auto& v) {
                           return F::avg_pool1d(v[0], {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = include});
                         }});
    e.golden = golden("avg_pool1d", 4, [](const GoldenCase& c) {
      auto p = c.params();
      c.check({"input"}, [&](auto& in) {
        return F::avg_pool1d(in["input"], {.kernel = p[0], .stride = p[1], .padding = p[2], .ceil_mode = p[3] != 0, .count_include_pad = p[4] != 0});
      });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"AdaptiveAvgPool1d", {}, {1e-6, 1e-12}};
    e.cases.push_back({"7to3", {in({2, 3, 7})}, [](auto& v) { return F::adaptive_avg_pool1d(v[0], 3); }});
    e.cases.push_back({"3to5_unbatched", {in({2, 3})}, [](auto& v) { return F::adaptive_avg_pool1d(v[0], 5); }});
    e.golden = golden("adaptive_avg_pool1d", 1, [](const GoldenCase& c) {
      c.check({"input"}, [&](auto& in) { return F::adaptive_avg_pool1d(in["input"], c.params()[0]); });
    });
    register_op(std::move(e));
  }

  // ---- channel dropout -------------------------------------------------------------------------------------
  {
    // A fresh generator per call: the same mask every time the op runs, on every device.
    OpEntry e{"Dropout2d", {}, {1e-6, 1e-12}};
    e.cases.push_back({"p0.4", {in({4, 5, 2, 3})}, [](auto& v) { Generator g(3); return F::dropout2d(v[0], 0.4, true, &g); }});
    e.cases.push_back({"3d_reads_ncl", {in({3, 4, 5})}, [](auto& v) { Generator g(4); return F::dropout2d(v[0], 0.5, true, &g); }});
    e.cases.push_back({"dropout1d_unbatched", {in({6, 5})}, [](auto& v) { Generator g(5); return F::dropout1d(v[0], 0.5, true, &g); }});
    e.cases.push_back({"dropout3d", {in({2, 3, 2, 2, 2})}, [](auto& v) { Generator g(6); return F::dropout3d(v[0], 0.3, true, &g); }});
    e.cases.push_back({"p1_all_dropped", {in({2, 3, 2, 2})}, [](auto& v) { return F::dropout2d(v[0], 1.0); }, kFloats, true, 1e-6, true});
    register_op(std::move(e));
  }

  // ---- interpolate ------------------------------------------------------------------------------------------
  {
    OpEntry e{"Interpolate", {}, {1e-5, 1e-12}};
    auto add = [&](std::string label, Shape s, F::InterpolateOptions o) {
      e.cases.push_back({std::move(label), {in(s)}, [o](auto& v) { return F::interpolate(v[0], o); }});
    };
    add("nearest_scale2_2d", {1, 2, 3, 4}, {.scale_factor = {2.0}});
    add("nearest_size_1d", {2, 2, 5}, {.size = {8}});
    add("nearest_exact_down", {1, 2, 7, 6}, {.size = {3, 4}, .mode = "nearest-exact"});
    add("linear_scale2.5", {2, 2, 4}, {.scale_factor = {2.5}, .mode = "linear"});
    add("bilinear_align", {1, 2, 4, 3}, {.size = {6, 5}, .mode = "bilinear", .align_corners = true});
    add("bilinear_down", {1, 2, 7, 8}, {.scale_factor = {0.6, 0.5}, .mode = "bilinear"});
    add("bilinear_same_size", {1, 1, 3, 3}, {.size = {3, 3}, .mode = "bilinear"});
    e.cases.push_back({"bilinear_transposed", {in({1, 2, 5, 4}).as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::interpolate(v[0], {.scale_factor = {2.0}, .mode = "bilinear"}); }});
    e.golden = golden("interpolate", 10, [](const GoldenCase& c) {
      auto p = c.params();
      const char* modes[] = {"nearest", "nearest-exact", "linear", "bilinear"};
      F::InterpolateOptions o{.mode = modes[p[0]]};
      if (p[1] >= 0) o.align_corners = p[1] != 0;
      if (p[2] >= 0) o.recompute_scale_factor = p[2] != 0;
      o.size.assign(p.begin() + 3, p.end());
      o.scale_factor = c.scalars();
      c.check({"input"}, [&](auto& in) { return F::interpolate(in["input"], o); });
    });
    register_op(std::move(e));
  }

  // ---- pad ----------------------------------------------------------------------------------------------------
  {
    OpEntry e{"PadModes", {}, {1e-6, 1e-12}};
    e.cases.push_back({"reflect_1d", {in({2, 5})}, [](auto& v) { return F::pad(v[0], {2, 3}, "reflect"); }});
    e.cases.push_back({"reflect_2d_transposed", {in({1, 2, 5, 4}).as([](const Tensor& t) { return t.transpose(2, 3); })},
                       [](auto& v) { return F::pad(v[0], {1, 2, 3, 0}, "reflect"); }});
    e.cases.push_back({"replicate_2d", {in({2, 3, 4})}, [](auto& v) { return F::pad(v[0], {2, 1, 0, 3}, "replicate"); }});
    e.cases.push_back({"circular_3d", {in({1, 1, 2, 3, 4})}, [](auto& v) { return F::pad(v[0], {1, 1, 2, 0, 1, 2}, "circular"); }});
    e.cases.push_back({"constant", {in({2, 3})}, [](auto& v) { return F::pad(v[0], {1, 0, 2, 1}, "constant", -2.0); }});
    e.golden = golden("pad", 6, [](const GoldenCase& c) {
      auto p = c.params();
      const char* modes[] = {"constant", "reflect", "replicate", "circular"};
      const std::vector<int64_t> pads(p.begin() + 1, p.end());
      c.check({"input"}, [&](auto& in) { return F::pad(in["input"], pads, modes[p[0]], c.scalars()[0]); });
    });
    register_op(std::move(e));
  }

  // ---- losses -------------------------------------------------------------------------------------------------
  {
    // Class weights, K-dimensional inputs, unbatched, probabilities as targets (ops_nn.cpp's
    // CrossEntropy entry covers the plain (N, C) forms against ops_v1.bin).
    OpEntry e{"CrossEntropyOptions", {}, {2e-6, 1e-12}};
    const std::vector<int64_t> target = {0, 3, -100, 1, 2, 3};
    for (const auto& [label, r] : kReductions)
      for (double ls : {0.0, 0.2}) {
        const std::string name = label + (ls > 0 ? "_smoothing" : "");
        e.cases.push_back({"weight_" + name, {in({6, 4}), index(target), in({4}).uniform(0.5, 1.5).no_grad()},
                           [r, ls](auto& v) { return F::cross_entropy(v[0], v[1], {.reduction = r, .label_smoothing = ls, .weight = v[2]}); }});
        e.cases.push_back({"probs_" + name, {in({5, 4}), in({5, 4}).uniform(0, 1).no_grad()},
                           [r, ls](auto& v) { return F::cross_entropy(v[0], v[1], {.reduction = r, .label_smoothing = ls}); }});
      }
    e.cases.push_back({"kdim_weight_ignore1_smoothing", {in({2, 4, 3, 2}), index({0, 1, 2, 3, 1, 1, 0, 2, 3, 1, 1, 0}, {2, 3, 2}),
                                                         in({4}).uniform(0.5, 1.5).no_grad()},
                       [](auto& v) { return F::cross_entropy(v[0], v[1], {.ignore_index = 1, .label_smoothing = 0.1, .weight = v[2]}); }});
    e.cases.push_back({"kdim_none_transposed", {in({3, 4, 2}).as([](const Tensor& t) { return t.permute({2, 1, 0}); }), index({0, 3, 2, 1, 1, 2}, {2, 3})},
                       [](auto& v) { return F::cross_entropy(v[0], v[1], {.reduction = F::Reduction::None}); }});
    e.cases.push_back({"unbatched", {in({5}), index({3}).as([](const Tensor& t) { return t.reshape({}); })},
                       [](auto& v) { return F::cross_entropy(v[0], v[1]); }});
    e.cases.push_back({"probs_kdim_weight", {in({2, 4, 3}), in({2, 4, 3}).uniform(0, 1).no_grad(), in({4}).uniform(0.5, 1.5).no_grad()},
                       [](auto& v) { return F::cross_entropy(v[0], v[1], {.weight = v[2]}); }});
    e.golden = golden("cross_entropy", 12, [](const GoldenCase& c) {
      auto p = c.params();
      F::CrossEntropyOptions o{.reduction = reduction(p[0]), .ignore_index = p[1], .label_smoothing = c.scalars()[0]};
      if (p[2]) o.weight = c.get("weight");
      Tensor t = c.get("target");
      c.check({"input"}, [&](auto& in) { return F::cross_entropy(in["input"], t, o); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"NllLossOptions", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions)
      e.cases.push_back({"weight_ignore_" + label, {in({5, 4}), index({0, 3, -100, 1, 3}), in({4}).uniform(0.5, 1.5).no_grad()},
                         [r](auto& v) { return F::nll_loss(v[0], v[1], {.reduction = r, .weight = v[2]}); }});
    e.cases.push_back({"kdim_sum", {in({2, 4, 3}), index({0, 1, 2, 3, 1, 1}, {2, 3})},
                       [](auto& v) { return F::nll_loss(v[0], v[1], {.reduction = F::Reduction::Sum}); }});
    e.golden = golden("nll_loss", 3, [](const GoldenCase& c) {
      auto p = c.params();
      F::CrossEntropyOptions o{.reduction = reduction(p[0]), .ignore_index = p[1]};
      if (p[2]) o.weight = c.get("weight");
      Tensor t = c.get("target");
      c.check({"input"}, [&](auto& in) { return F::nll_loss(in["input"], t, o); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"L1Loss", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions)
      e.cases.push_back({label, {in({3, 5}), in({5, 3}).as(test::transposed)}, [r](auto& v) { return F::l1_loss(v[0], v[1], r); }});
    e.cases.push_back({"broadcast_target", {in({3, 4}), in({4})}, [](auto& v) { return F::l1_loss(v[0], v[1]); }});
    e.golden = golden("l1_loss", 3, [](const GoldenCase& c) {
      c.check({"input", "target"}, [&](auto& in) { return F::l1_loss(in["input"], in["target"], reduction(c.params()[0])); });
    });
    register_op(std::move(e));
    OpEntry m{"MseLossBroadcast", {}, {2e-6, 1e-12}};
    m.cases.push_back({"broadcast_target", {in({3, 4}), in({1, 4})}, [](auto& v) { return F::mse_loss(v[0], v[1]); }});
    m.golden = golden("mse_loss", 1, [](const GoldenCase& c) {
      c.check({"input", "target"}, [&](auto& in) { return F::mse_loss(in["input"], in["target"], reduction(c.params()[0])); });
    });
    register_op(std::move(m));
  }
  {
    OpEntry e{"SmoothL1Loss", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions)
      e.cases.push_back({label + "_beta0.5", {in({3, 5}).uniform(-3, 3), in({3, 5})}, [r](auto& v) { return F::smooth_l1_loss(v[0], v[1], r, 0.5); }});
    e.cases.push_back({"beta0_is_l1", {in({3, 5}), in({3, 5})}, [](auto& v) { return F::smooth_l1_loss(v[0], v[1], F::Reduction::Sum, 0.0); }});
    e.golden = golden("smooth_l1_loss", 3, [](const GoldenCase& c) {
      c.check({"input", "target"}, [&](auto& in) {
        return F::smooth_l1_loss(in["input"], in["target"], reduction(c.params()[0]), c.scalars()[0]);
      });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"HuberLoss", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions)
      e.cases.push_back({label + "_delta0.7", {in({3, 5}).uniform(-3, 3), in({3, 5})}, [r](auto& v) { return F::huber_loss(v[0], v[1], r, 0.7); }});
    e.golden = golden("huber_loss", 3, [](const GoldenCase& c) {
      c.check({"input", "target"}, [&](auto& in) { return F::huber_loss(in["input"], in["target"], reduction(c.params()[0]), c.scalars()[0]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"BinaryCrossEntropy", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions) {
      e.cases.push_back({label, {in({3, 4}).uniform(0.05, 0.95), in({3, 4}).uniform(0, 1)},
                         [r](auto& v) { return F::binary_cross_entropy(v[0], v[1], {}, r); }});
      e.cases.push_back({label + "_weight", {in({3, 4}).uniform(0.05, 0.95), in({3, 4}).uniform(0, 1), in({4}).uniform(0.5, 1.5).no_grad()},
                         [r](auto& v) { return F::binary_cross_entropy(v[0], v[1], v[2], r); }});
    }
    e.golden = golden("binary_cross_entropy", 3, [](const GoldenCase& c) {
      auto p = c.params();
      Tensor w = p[1] ? c.get("weight") : Tensor();
      c.check({"input", "target"}, [&](auto& in) { return F::binary_cross_entropy(in["input"], in["target"], w, reduction(p[0])); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"BinaryCrossEntropyWithLogits", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : kReductions) {
      e.cases.push_back({label, {in({4, 3}).uniform(-6, 6), in({4, 3}).uniform(0, 1)},
                         [r](auto& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], {}, r); }});
      e.cases.push_back({label + "_weight_pos_weight", {in({4, 3}).uniform(-6, 6), in({4, 3}).uniform(0, 1), in({4, 1}).uniform(0.5, 1.5).no_grad(),
                                                        in({3}).uniform(0, 3).no_grad()},
                         [r](auto& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], v[2], r, v[3]); }});
    }
    e.cases.push_back({"large_logits_no_overflow", {in({2, 3}).uniform(50, 500), in({2, 3}).uniform(0, 1)},
                       [](auto& v) { return F::binary_cross_entropy_with_logits(v[0], v[1]); }});
    e.golden = golden("binary_cross_entropy_with_logits", 3, [](const GoldenCase& c) {
      auto p = c.params();
      Tensor w = p[1] ? c.get("weight") : Tensor(), pw = p[2] ? c.get("pos_weight") : Tensor();
      c.check({"input", "target"}, [&](auto& in) {
        return F::binary_cross_entropy_with_logits(in["input"], in["target"], w, reduction(p[0]), pw);
      });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"KlDiv", {}, {2e-6, 1e-12}};
    for (const auto& [label, r] : std::vector<std::pair<std::string, F::Reduction>>{
             {"batchmean", F::Reduction::BatchMean}, {"mean", F::Reduction::Mean}, {"sum", F::Reduction::Sum}, {"none", F::Reduction::None}}) {
      e.cases.push_back({label, {in({4, 5}), in({4, 5}).uniform(0.05, 1)}, [r](auto& v) { return F::kl_div(v[0], v[1], r); }});
      e.cases.push_back({label + "_log_target", {in({4, 5}), in({4, 5})}, [r](auto& v) { return F::kl_div(v[0], v[1], r, true); }});
    }
    e.golden = golden("kl_div", 4, [](const GoldenCase& c) {
      auto p = c.params();
      if (c.has("grad_target")) {
        c.check({"input", "target"}, [&](auto& in) { return F::kl_div(in["input"], in["target"], reduction(p[0]), p[1] != 0); });
      } else {
        Tensor t = c.get("target");
        c.check({"input"}, [&](auto& in) { return F::kl_div(in["input"], t, reduction(p[0]), p[1] != 0); });
      }
    });
    register_op(std::move(e));
  }
  return true;
}();

}  // namespace
}  // namespace ember::test::ops

// Layouts that persist in training (issue 24): a recorded convolution leaves its output in the
// layout its oneDNN primitive wrote (NHWC or nChw16c float32), and the batch norm, ReLU / ReLU6 /
// SiLU / Hardswish and residual add after it read and write that layout, forward and backward
// (src/cpu/nn_norm_held.cpp, dnnl_form.h). Nobody but the kernels may see it: every value read
// through .data() equals the plain kernels' -- bit for bit where the arithmetic is the same
// (element-wise ops), within float32 rounding where a sum runs in another order (batch-norm
// statistics and gradient sums) -- and thread counts do not change a bit.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cpu/dnnl_form.h"
#include "core/isa.h"
#include "cpu/pool_grad.h"
#include "kernels/kernels.h"
#include "kernels/nn_kernels.h"
#include "backends/registry.h"
#include "support/compare.h"
#include "support/bf16.h"

using namespace ember;
namespace F = ember::nn::functional;
using dnnl::memory;

namespace {

bool held(const Tensor& t) { return t.storage()->form() != nullptr; }

struct FormsOn {
  ~FormsOn() { cpu::set_forms_enabled(true); }
};

// A fresh tensor holding src's values in `layout` float32, as a convolution would leave it.
Tensor held_copy(const Tensor& src, memory::format_tag layout) {
  Tensor t = empty(src.sizes());
  cpu::hold_as(src.contiguous(), t, memory::data_type::f32, layout);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.data_ptr<float>(), bc.data_ptr<float>(), size_t(a.numel()) * sizeof(float)) == 0;
}

const char* layout_name(memory::format_tag t) { return t == memory::format_tag::nhwc ? "nhwc" : "nChw16c"; }

// One training step of the zoo's `name` at 32 px on `batch` images: float64, or float32 (under
// bf16 autocast where `bf16`), forms on or off. Returns the loss, every parameter's gradient and
// every floating buffer, as float64 vectors; checks that none a user can reach is left held.
std::vector<std::vector<double>> zoo_step(const std::string& name, int64_t batch, bool forms, bool f64, bool bf16) {
  const int64_t channels = name == "resnet18" || name == "mobilenet_v2" ? 3 : 1;
  cpu::set_forms_enabled(forms);
  manual_seed(7);  // mobilenet_v2's dropout draws from the default generator
  Generator g(21);
  auto model = models::create(name, 10, channels, 32, &g);
  model->train();
  Tensor x = rand({batch, channels, 32, 32}, {}, &g);
  Tensor t = randint(0, 10, {batch}, {.dtype = DType::Int64}, &g);
  if (f64) {
    model->to(DType::Float64);
    x = x.to(DType::Float64);
  }
  Tensor loss;
  {
    std::optional<autocast> ac;
    if (bf16 && !f64) ac.emplace();
    loss = F::cross_entropy((*model)(x), t);
  }
  loss.backward();
  std::vector<std::vector<double>> all{loss.detach().to_vector<double>()};
  for (auto& [n, p] : model->named_parameters()) {
    EXPECT_FALSE(held(p)) << n;
    EXPECT_FALSE(held(p.grad())) << n;
    all.push_back(p.grad().to_vector<double>());
  }
  for (auto& [n, b] : model->named_buffers()) {
    EXPECT_FALSE(held(b)) << n;
    if (is_floating(b.dtype())) all.push_back(b.to_vector<double>());
  }
  return all;
}

}  // namespace

// Batch norm (+ residual) (+ ReLU / ReLU6) on held operands, training and evaluation, forward and
// backward, against the plain kernels on the same values: outputs and every gradient within float32
// rounding of the sums, the running statistics too; the outputs and the input gradients held where
// the layout is one the held kernels take (NHWC; nChw16c with whole blocks), read plain otherwise
// -- also where the residual and the output gradient come plain (reordered into x's layout).
TEST(HeldTraining, BatchNormOnHeldOperandsEqualsThePlainKernels) {
  using Act = F::ConvActivation;
  Generator gen(3);
  for (int64_t c : {32, 24}) {
    // 19 x 23 pixels: more than one 256-pixel chunk per image, the last one partial
    const Tensor xv = randn({3, c, 19, 23}, {}, &gen) * 2.0 + 0.5;
    const Tensor rv = randn({3, c, 19, 23}, {}, &gen);
    const Tensor gv = randn({3, c, 19, 23}, {}, &gen);
    const Tensor wv = rand({c}, {}, &gen) + 0.5, bv = rand({c}, {}, &gen) - 0.5;
    const Tensor mean0 = rand({c}, {}, &gen) * 0.2, var0 = rand({c}, {}, &gen) + 0.5;
    for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c})
      for (Act act : {Act::None, Act::Relu, Act::Relu6})
        for (bool residual : {false, true})
          for (bool training : {true, false}) {
            SCOPED_TRACE(std::to_string(c) + " channels, " + layout_name(layout) + ", act " +
                         std::to_string(int(act)) + (residual ? ", residual" : "") + (training ? ", training" : ", eval"));
            bool y_held = false, gx_held = false;
            // hold: 0 nothing held, 1 every operand, 2 x only (the residual and the gradient plain:
            // the block after a pooling, the gradient from one)
            auto run = [&](int hold) {
              Tensor x = (hold ? held_copy(xv, layout) : xv.clone()).requires_grad_(true);
              Tensor r = residual ? (hold == 1 ? held_copy(rv, layout) : rv.clone()).requires_grad_(true) : Tensor();
              Tensor w = wv.clone().requires_grad_(true), b = bv.clone().requires_grad_(true);
              Tensor rm = mean0.clone(), rvar = var0.clone();
              Tensor y = residual ? F::batch_norm_add_activation(x, rm, rvar, w, b, training, 0.1, 1e-5, r, act)
                                  : F::batch_norm_activation(x, rm, rvar, w, b, training, 0.1, 1e-5, act);
              std::vector<Tensor> inputs{x, w, b};
              if (residual) inputs.push_back(r);
              auto g = autograd::grad({y}, inputs, {hold == 1 ? held_copy(gv, layout) : gv});
              if (hold) {
                y_held = held(y);
                gx_held = held(g[0]);
              }
              std::vector<Tensor> all{y.detach(), rm, rvar};
              all.insert(all.end(), g.begin(), g.end());
              return all;
            };
            const auto want = run(0);
            for (int hold : {1, 2}) {
              const auto got = run(hold);
              const bool takes = layout == memory::format_tag::nhwc || c % 16 == 0;
              // act None with a residual is the batch norm, then add: a held residual keeps the sum held
              EXPECT_EQ(y_held, takes || (act == Act::None && residual && hold == 1)) << hold;
              EXPECT_EQ(gx_held, takes) << hold;
              for (size_t i = 0; i < want.size(); ++i) {
                EXPECT_TRUE(test::close(want[i], got[i], 2e-5, true)) << "result " << i << ", hold " << hold;
                EXPECT_FALSE(held(got[i])) << i;  // read as a user reads it, the form is gone
              }
            }
          }
  }
}

// A bf16 activation (a convolution's output in training under autocast) held in NHWC or nChw16c:
// batch norm (+ ReLU / ReLU6) reads it where it is and writes bf16 -- the plain kernels' output on
// the same (widened) values, rounded to bf16; with a residual (held in bf16 in the same layout, or
// plain float32) it writes float32, act(y + r) with y rounded to bf16 first, as the unfused batch
// norm and add give it. Statistics and every gradient (float32, held in x's layout) as the plain
// kernels' within float32 rounding of the sums.
TEST(HeldTraining, BatchNormOfABf16ActivationIsThePlainOpsRoundedToBf16) {
  using Act = F::ConvActivation;
  Generator gen(13);
  const int64_t c = 32;
  auto round_bf16 = [](const Tensor& t) { return t.to(DType::BFloat16).to(DType::Float32); };
  const Tensor xv = round_bf16(randn({3, c, 19, 23}, {}, &gen) * 2.0 + 0.5);
  const Tensor rv = round_bf16(randn({3, c, 19, 23}, {}, &gen));
  const Tensor gv = randn({3, c, 19, 23}, {}, &gen);
  const Tensor wv = rand({c}, {}, &gen) + 0.5, bv = rand({c}, {}, &gen) - 0.5;
  for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c})
    for (Act act : {Act::None, Act::Relu, Act::Relu6})
      for (int residual : {0, 1, 2}) {  // none, held in bf16, plain float32
        SCOPED_TRACE(std::string(layout_name(layout)) + ", act " + std::to_string(int(act)) + ", residual " +
                     std::to_string(residual));
        auto bf16_held = [&](const Tensor& v) {
          Tensor t = empty(v.sizes());
          cpu::hold_as(v, t, memory::data_type::bf16, layout);
          return t;
        };
        // The plain ops: the batch norm's output rounded to bf16 (a cast and back), then the add and
        // the activation in float32.
        auto plain = [&]() {
          Tensor x = xv.clone().requires_grad_(true), r = rv.clone().requires_grad_(true);
          Tensor w = wv.clone().requires_grad_(true), b = bv.clone().requires_grad_(true);
          Tensor rm = zeros({c}), rvar = ones({c});
          Tensor y = F::batch_norm(x, rm, rvar, w, b, true, 0.1, 1e-5);
          y = add(y, sub(round_bf16(y), y).detach());  // rounded; the gradient passes as it is
          if (residual) y = add(y, r);
          y = act == Act::Relu ? relu(y) : act == Act::Relu6 ? relu6(y) : y;
          std::vector<Tensor> inputs{x, w, b};
          if (residual) inputs.push_back(r);
          auto g = autograd::grad({y}, inputs, {gv});
          std::vector<Tensor> all{y.detach(), rm, rvar};
          all.insert(all.end(), g.begin(), g.end());
          return all;
        };
        bool y_bf16 = false, y_held = false, gx_held = false;
        auto fused = [&]() {
          Tensor x = bf16_held(xv).requires_grad_(true);
          Tensor r = residual == 1 ? bf16_held(rv).requires_grad_(true) : rv.clone().requires_grad_(true);
          Tensor w = wv.clone().requires_grad_(true), b = bv.clone().requires_grad_(true);
          Tensor rm = zeros({c}), rvar = ones({c});
          Tensor y = residual ? F::batch_norm_add_activation(x, rm, rvar, w, b, true, 0.1, 1e-5, r, act)
                              : F::batch_norm_activation(x, rm, rvar, w, b, true, 0.1, 1e-5, act);
          const cpu::DnnlForm* f = cpu::dnnl_form_of(y);
          y_held = f != nullptr;
          y_bf16 = f != nullptr && f->desc().data_type() == memory::data_type::bf16;
          std::vector<Tensor> inputs{x, w, b};
          if (residual) inputs.push_back(r);
          auto g = autograd::grad({y}, inputs, {held_copy(gv, layout)});
          gx_held = held(g[0]);
          std::vector<Tensor> all{y.detach(), rm, rvar};
          all.insert(all.end(), g.begin(), g.end());
          return all;
        };
        const auto want = plain();
        const auto got = fused();
        // Without an activation a residual is added by add() after the batch norm: held (float32)
        // where both operands are nChw16c.
        const bool add_held = residual == 1 && layout == memory::format_tag::nChw16c;
        EXPECT_EQ(y_held, act != Act::None || residual == 0 || add_held);
        EXPECT_TRUE(gx_held);
        EXPECT_EQ(y_bf16, residual == 0);  // bf16 out without a residual, float32 with one
        // The output: a bf16 step where the float32 statistics differ in a last bit across a
        // rounding boundary; the rest within float32 rounding of the sums.
        EXPECT_TRUE(test::close(want[0], got[0], 1.0 / 128, true)) << "output";
        if (residual == 0)
          for (float v : got[0].to_vector<float>()) ASSERT_EQ(bf16_to_float(float_to_bf16(v)), v);
        for (size_t i = 1; i < want.size(); ++i) EXPECT_TRUE(test::close(want[i], got[i], 2e-5, true)) << "result " << i;
      }
}

// The held batch norm's statistics and gradient sums are merged in a fixed order: one thread and
// two give the same bits.
TEST(HeldTraining, HeldBatchNormIsThreadCountIndependent) {
  Generator gen(5);
  const Tensor xv = randn({4, 32, 30, 30}, {}, &gen);
  const Tensor gv = randn({4, 32, 30, 30}, {}, &gen);
  const int threads0 = get_num_threads();
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor x = held_copy(xv, memory::format_tag::nChw16c).requires_grad_(true);
    Tensor w = ones({32}).requires_grad_(true), b = zeros({32}).requires_grad_(true);
    Tensor rm = zeros({32}), rvar = ones({32});
    Tensor y = F::batch_norm_activation(x, rm, rvar, w, b, true, 0.1, 1e-5, F::ConvActivation::Relu);
    auto g = autograd::grad({y}, {x, w, b}, {held_copy(gv, memory::format_tag::nChw16c)});
    return std::vector<Tensor>{y.detach(), rm, rvar, g[0], g[1], g[2]};
  };
  const auto one = run(1);
  const auto two = run(2);
  set_num_threads(threads0);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(same_bits(one[i], two[i])) << i;
}

// SiLU, Hardswish, Hardsigmoid, ReLU6 and ReLU of a held float32 activation, forward and backward
// with a held gradient: the plain kernels' bits; held where nothing in the layout is padding (a
// function that maps 0 elsewhere must not write the padding channels; ReLU's kernel runs over the
// padding, 0 to 0), read plain otherwise.
TEST(HeldTraining, ActivationsOfHeldOperandsEqualThePlainKernelsBitForBit) {
  FormsOn restore;
  Generator gen(6);
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> fns{{"silu", &silu}, {"hardswish", &hardswish},
                                                     {"hardsigmoid", &hardsigmoid}, {"relu6", &relu6},
                                                     {"relu", &relu}};
  for (int64_t c : {32, 20}) {
    const Tensor xv = randn({2, c, 7, 9}, {}, &gen) * 4.0;
    const Tensor gv = randn({2, c, 7, 9}, {}, &gen);
    for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c})
      for (const auto& [name, fn] : fns) {
        SCOPED_TRACE(std::string(name) + ", " + std::to_string(c) + " channels, " + layout_name(layout));
        Tensor xp = xv.clone().requires_grad_(true);
        Tensor yp = fn(xp);
        Tensor gp = autograd::grad({yp}, {xp}, {gv})[0];
        Tensor xh = held_copy(xv, layout).requires_grad_(true);
        Tensor yh = fn(xh);
        Tensor gh = autograd::grad({yh}, {xh}, {held_copy(gv, layout)})[0];
        const bool padded = layout == memory::format_tag::nChw16c && c % 16 != 0;
        const bool relu = std::string(name) == "relu";  // 0 -> 0: may write the padding too
        EXPECT_EQ(held(yh), !padded || relu);
        EXPECT_EQ(held(gh), !padded || relu);
        EXPECT_TRUE(same_bits(yp, yh));
        EXPECT_TRUE(same_bits(gp, gh));
      }
  }
}

// Whole training steps of the zoo's batch-norm CNNs, float32 with forms on and with every output
// written plain, against the same step in float64: the held step is as close to float64 as the plain
// one (a batch norm over 4 images of 1 x 1 pixels, as mobilenet_v2's last layers at 32 px, is
// ill-conditioned: both float32 steps are percents off there, so "close to each other" would not be
// a fair test); after the step no parameter, gradient or buffer a user can reach is held.
TEST(HeldTraining, ZooTrainingStepsAreAsExactAsThePlainLayoutSteps) {
  FormsOn restore;
  for (const char* name : {"bncnn48_fc128", "resnet_small", "resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    auto step = [&](bool forms, bool f64) { return zoo_step(name, 4, forms, f64, false); };
    const auto exact = step(false, true), plain = step(false, false), got = step(true, false);
    ASSERT_EQ(exact.size(), got.size());
    double plain_err = 0.0, held_err = 0.0;  // max |v - exact| / (1 + |exact|)
    for (size_t i = 0; i < exact.size(); ++i)
      for (size_t k = 0; k < exact[i].size(); ++k) {
        const double e = exact[i][k], scale = 1.0 + std::abs(e);
        plain_err = std::max(plain_err, std::abs(plain[i][k] - e) / scale);
        held_err = std::max(held_err, std::abs(got[i][k] - e) / scale);
      }
    EXPECT_LE(held_err, 2.0 * plain_err + 1e-5) << "plain float32 is " << plain_err << " off float64";
    EXPECT_NEAR(got[0][0], plain[0][0], 1e-4 * (1.0 + std::abs(plain[0][0])));  // the loss
  }
}

// Whole training steps of the zoo's batch-norm CNNs under bf16 autocast (32 px), forms on -- the
// convolutions' outputs and the batch norms' held in bf16 -- and with every output written plain,
// against the same step in float64: the held step is about as close to it as the plain one (the
// held batch norms round their outputs to bf16, as PyTorch's autocast stores them; the plain ones
// keep float32. Both are bf16 steps: in these deep nets at 32 px a bf16 rounding moves the last
// layers' ill-conditioned batch norms over 8 samples of 1 x 1 pixels by tens of percent, so the
// comparison is of each one's distance to float64, not of the two to each other); after the step
// no parameter, gradient or buffer a user can reach is held.
TEST(HeldTraining, Bf16ZooTrainingStepsWithHeldActivationsAreAsCloseAsThePlainLayout) {
  EMBER_SKIP_WITHOUT_FAST_BF16();
  FormsOn restore;
  for (const char* name : {"bncnn48_fc128", "resnet_small", "resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    auto step = [&](bool forms, bool f64) { return zoo_step(name, 8, forms, f64, true); };
    const auto exact = step(false, true), plain = step(false, false), got = step(true, false);
    ASSERT_EQ(exact.size(), got.size());
    // Per tensor max |v - exact| / max |exact|; the median over the tensors (a few ill-conditioned
    // ones -- a gradient float64 makes ~0 -- dominate any maximum or mean).
    std::vector<double> plain_errs, held_errs;
    for (size_t i = 0; i < exact.size(); ++i) {
      double scale = 1e-30, plain_diff = 0.0, held_diff = 0.0;
      for (size_t k = 0; k < exact[i].size(); ++k) {
        scale = std::max(scale, std::abs(exact[i][k]));
        plain_diff = std::max(plain_diff, std::abs(plain[i][k] - exact[i][k]));
        held_diff = std::max(held_diff, std::abs(got[i][k] - exact[i][k]));
      }
      plain_errs.push_back(plain_diff / scale);
      held_errs.push_back(held_diff / scale);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double plain_err = median(plain_errs), held_err = median(held_errs);
    std::printf("[held bf16] %-14s loss %.6f held / %.6f plain / %.6f float64; median tensor error held %.3g, plain %.3g\n",
                name, got[0][0], plain[0][0], exact[0][0], held_err, plain_err);
    EXPECT_NEAR(got[0][0], plain[0][0], 2e-2 * (1.0 + std::abs(plain[0][0])));
    EXPECT_LE(held_err, 1.5 * plain_err + 1e-3);
  }
}

// add() of a held float32 operand and one in another layout, or plain: the other is reordered into
// the first one's layout and the sum stays held there, the plain kernel's bits (one rounding, a + b);
// a broadcast operand reads plain.
TEST(HeldTraining, AddAcrossLayoutsStaysHeldWithThePlainSum) {
  FormsOn restore;
  Generator gen(9);
  for (int64_t c : {32, 20}) {
    SCOPED_TRACE(std::to_string(c) + " channels");
    const Tensor av = randn({2, c, 5, 6}, {}, &gen), bv = randn({2, c, 5, 6}, {}, &gen);
    const Tensor want = add(av, bv);
    for (auto [la, lb] : {std::pair{memory::format_tag::nhwc, memory::format_tag::nChw16c},
                          {memory::format_tag::nChw16c, memory::format_tag::nhwc},
                          {memory::format_tag::nhwc, memory::format_tag::undef},
                          {memory::format_tag::undef, memory::format_tag::nChw16c}}) {
      const Tensor a = la == memory::format_tag::undef ? av.clone() : held_copy(av, la);
      const Tensor b = lb == memory::format_tag::undef ? bv.clone() : held_copy(bv, lb);
      const Tensor got = add(a, b);
      EXPECT_TRUE(held(got));
      EXPECT_TRUE(same_bits(want, got));
    }
    const Tensor bias = randn({c, 1, 1}, {}, &gen);
    const Tensor broadcast = add(held_copy(av, memory::format_tag::nhwc), bias);
    EXPECT_FALSE(held(broadcast));
    EXPECT_TRUE(same_bits(add(av, bias), broadcast));
  }
}

// Max pooling in training of a held activation reads it where it is and writes the output and the
// indices plain: the plain kernel's values and gradient bit for bit, ties (first maximum) and NaNs
// (the first NaN) included, for the 2x2/2 window and resnet's 3x3/2 padded stem window.
TEST(HeldTraining, MaxPoolingOfAHeldActivationEqualsThePlainKernel) {
  FormsOn restore;
  Generator gen(10);
  for (int64_t c : {32, 24})
  for (int64_t width : {11, 37}) {  // 37: output rows of 18 and 19, more than one group of 16
    Tensor xv = randn({2, c, 9, width}, {}, &gen);
    float* px = xv.data_ptr<float>();
    for (int64_t i = 0; i < xv.numel(); ++i) px[i] = std::round(px[i] * 2.f);  // integers: ties in most windows
    px[5] = std::nanf("");
    px[c * 9 * width + 40] = std::nanf("");
    for (auto type : {memory::data_type::f32, memory::data_type::bf16})  // bf16: training under autocast
    for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c})
      for (F::Pool2dOptions opt : {F::Pool2dOptions{.kernel = {2, 2}},
                                   F::Pool2dOptions{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}}) {
        SCOPED_TRACE(std::to_string(c) + " channels, width " + std::to_string(width) + ", " + layout_name(layout) + ", kernel " +
                     std::to_string(opt.kernel[0]) + (type == memory::data_type::bf16 ? ", bf16" : ""));
        Tensor xp = xv.clone().requires_grad_(true);  // integers and NaNs: bf16 numbers too
        Tensor yp = F::max_pool2d(xp, opt);
        Tensor gp = autograd::grad({yp}, {xp}, {ones(yp.sizes())})[0];
        Tensor xh = empty(xv.sizes());
        cpu::hold_as(xv, xh, type, layout);
        xh.requires_grad_(true);
        Tensor yh = F::max_pool2d(xh, opt);
        EXPECT_FALSE(held(yh));
        const bool takes = layout == memory::format_tag::nhwc || c % 16 == 0;
        EXPECT_EQ(held(xh), takes);  // read where it is, not settled
        Tensor gh = autograd::grad({yh}, {xh}, {ones(yh.sizes())})[0];
        EXPECT_TRUE(same_bits(yp, yh));
        EXPECT_TRUE(same_bits(gp, gh));
      }
  }
}

// The output gradient of a fused ReLU / ReLU6 convolution under autocast in training, made in one
// pass for its bf16 primitives (src/cpu/conv_act_grad.cpp): for a bf16 output held in NHWC (whole
// and tail groups of 16 channels) or nChw16c, and grad_out plain, held at float32 in the output's
// layout or in the other one, the result holds bf16(mask(out) ? g : 0) in the output's layout --
// the float32 mask rounded as the primitives round it, bit for bit (NaN outputs masked, NaN
// gradients kept quiet, the 6 of ReLU6 masked). Declined under ember::deterministic().
TEST(HeldTraining, FusedActivationGradientForBf16PrimitivesIsTheRoundedMask) {
  FormsOn restore;
  Generator gen(12);
  ember::ensure_backends();  // the slots fill on the first allocation; this test may run alone (ctest)
  const auto kernel = kernels::conv_activation_grad_bf16(Device::cpu());
  kernels::Conv2dParams p;
  p.compute = DType::BFloat16;
  auto grad_fn = [&](kernels::ConvEpilogue act, const Tensor& g, const Tensor& out, const Tensor& gx) {
    return kernel(act, g, out, p, gx);
  };
  for (int64_t c : {32, 40})
    for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c}) {
      if (layout == memory::format_tag::nChw16c && c % 16 != 0) continue;
      Tensor ov = randn({2, c, 5, 7}, {}, &gen);  // 35 pixels: two tiles of 16 and a tail
      float* po = ov.data_ptr<float>();
      for (int64_t i = 0; i < ov.numel(); ++i) po[i] = bf16_to_float(float_to_bf16(po[i] * 4.f));
      po[3] = 6.f;
      po[7] = std::nanf("");
      po[c * 35 + 11] = 0.f;
      Tensor gv = randn({2, c, 5, 7}, {}, &gen);
      gv.data_ptr<float>()[9] = std::nanf("");
      gv.data_ptr<float>()[3 * 35 + 2] = 1e-41f;  // a denormal, kept by the rounding
      for (auto act : {kernels::ConvEpilogue::Relu, kernels::ConvEpilogue::Relu6})
        for (int from : {0, 1, 2}) {  // grad_out plain, held in out's layout, held in the other layout
          SCOPED_TRACE(std::to_string(c) + " channels, " + layout_name(layout) + (act == kernels::ConvEpilogue::Relu6 ? ", relu6" : ", relu") +
                       ", grad_out " + (from == 0 ? "plain" : from == 1 ? "held alike" : "held otherwise"));
          Tensor out = empty(ov.sizes());
          cpu::hold_as(ov, out, memory::data_type::bf16, layout);
          const auto other = layout == memory::format_tag::nhwc && c % 16 == 0 ? memory::format_tag::nChw16c
                                                                               : memory::format_tag::nhwc;
          Tensor g = from == 0 ? gv.clone() : held_copy(gv, from == 1 ? layout : other);
          Tensor gx = empty(ov.sizes());
          ASSERT_TRUE(grad_fn(act, g, out, gx));
          const cpu::ChannelBlocked b = cpu::channel_blocked(gx);
          ASSERT_NE(b.form, nullptr);
          EXPECT_TRUE(b.bf16);
          EXPECT_EQ(b.layout, layout);
          const std::vector<float> got = gx.to_vector<float>();  // widened, NCHW
          const float* pg = gv.data_ptr<float>();
          int64_t wrong = 0;
          for (int64_t i = 0; i < ov.numel(); ++i) {
            const float o = po[i];
            const bool pass = act == kernels::ConvEpilogue::Relu6 ? o > 0.f && o < 6.f : o > 0.f;
            const uint16_t want = float_to_bf16(pass ? pg[i] : 0.f);
            uint32_t gb, wb;  // bits, so that a NaN compares too
            const float wf = bf16_to_float(want);
            std::memcpy(&gb, &got[size_t(i)], 4);
            std::memcpy(&wb, &wf, 4);
            if (gb != wb) ++wrong;
          }
          EXPECT_EQ(wrong, 0);
        }
    }
  // Declined, nothing written: under deterministic(), for a float32 output, for SiLU.
  Tensor ov = randn({2, 16, 4, 4}, {}, &gen), gv = randn({2, 16, 4, 4}, {}, &gen);
  Tensor out_bf16 = empty(ov.sizes()), out_f32 = empty(ov.sizes());
  cpu::hold_as(ov, out_bf16, memory::data_type::bf16, memory::format_tag::nChw16c);
  cpu::hold_as(ov, out_f32, memory::data_type::f32, memory::format_tag::nChw16c);
  Tensor gx = empty(ov.sizes());
  set_deterministic(true);
  EXPECT_FALSE(grad_fn(kernels::ConvEpilogue::Relu, gv, out_bf16, gx));
  set_deterministic(false);
  EXPECT_FALSE(grad_fn(kernels::ConvEpilogue::Relu, gv, out_f32, gx));
  EXPECT_FALSE(grad_fn(kernels::ConvEpilogue::Silu, gv, out_bf16, gx));
  p.groups = 16;  // depthwise: its input gradient multiplies the float32 gradient
  EXPECT_FALSE(grad_fn(kernels::ConvEpilogue::Relu, gv, out_bf16, gx));
  EXPECT_FALSE(held(gx));
}

// End to end: a fused conv + ReLU / ReLU6 + 2x2 max pooling (mnistnet's conv2, LeNet-5's) gives the
// same input, weight and bias gradients with its output held -- the pooling's gradient written by
// the activation's backward in one pass (pool_grad.h), masked and rounded to bf16 for the
// primitives under autocast (conv_act_grad.cpp) -- as with every tensor plain (indices, the
// scatter, the float32 mask, converted by the primitives): bit for bit, for an even output and an
// odd one (a row and a column no window covers). (The input's gradient may stay held, as a
// convolution's input gradient does in training: read plain here.)
TEST(HeldTraining, FusedReluConvPoolGradientsEqualThePlainLayoutsBitForBit) {
  FormsOn restore;
  for (bool bf16 : {true, false})
    for (int64_t size : {14, 15})
      for (auto act : {F::ConvActivation::Relu, F::ConvActivation::Relu6}) {
        if (bf16 && !bf16_support(Device::cpu()).native) continue;  // ember refuses bf16 there
        SCOPED_TRACE(std::string(bf16 ? "bf16, " : "fp32, ") + std::to_string(size) + " px" +
                     (act == F::ConvActivation::Relu6 ? ", relu6" : ", relu"));
        Generator gen(13);
        const int64_t pooled = (size - 2) / 2;
        const Tensor xv = randn({4, 32, size, size}, {}, &gen), wv = randn({64, 32, 3, 3}, {}, &gen) * 0.1,
                     bv = randn({64}, {}, &gen) * 0.1, tv = randn({4, 64, pooled, pooled}, {}, &gen);
        auto step = [&](bool forms) {
          cpu::set_forms_enabled(forms);
          Tensor x = xv.clone().requires_grad_(true), w = wv.clone().requires_grad_(true),
                 b = bv.clone().requires_grad_(true);
          Tensor loss;
          {
            std::optional<autocast> ac;
            if (bf16) ac.emplace();
            Tensor y = F::max_pool2d(F::conv2d_activation(x, w, b, {}, act), {.kernel = {2, 2}});
            loss = sum(mul(y, tv));
          }
          loss.backward();
          return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
        };
        const auto held_grads = step(true), plain_grads = step(false);
        for (size_t i = 0; i < 3; ++i) {
          SCOPED_TRACE("gradient " + std::to_string(i));
          EXPECT_TRUE(same_bits(held_grads[i], plain_grads[i]));
        }
      }
}

// Training's 2x2 max pooling of a held activation keeps its input instead of indices, and its
// backward leaves the input gradient unwritten (src/cpu/pool_grad.h) until a consumer writes it in
// the layout it reads: plain (write_plain), or in the input's layout at float32 (a batch norm's
// backward through f32_in_layout), masked by a ReLU of the input (a fused float32 convolution's
// relu_backward), or masked by its ReLU / ReLU6 and rounded to bf16 (conv_activation_grad_bf16).
// Each equals the plain kernels' values bit for bit: the scatter into zeros (a -0 gradient arrives
// as +0), the mask, the rounding -- for ties (integers), NaN inputs (the first NaN wins), NaN, -0
// and denormal gradients, odd sizes (a row and a column no window covers), NHWC tail groups.
TEST(HeldTraining, PooledGradientIsWrittenByItsConsumerAsThePlainOpsWouldBitForBit) {
  FormsOn restore;
  Generator gen(14);
  ember::ensure_backends();
  using cpu::PooledGradOut;
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  struct Avx512On {
    ~Avx512On() { cpu::allow_avx512(true); }
  } restore_isa;
  for (bool vector : {true, false})  // the AVX-512 kernels and the plain loops
  for (int64_t c : {32, 24})
    for (auto [h, width] : {std::pair<int64_t, int64_t>{9, 11}, {8, 37}}) {
      cpu::allow_avx512(vector);
      Tensor xv = randn({2, c, h, width}, {}, &gen);
      float* px = xv.data_ptr<float>();
      for (int64_t i = 0; i < xv.numel(); ++i) px[i] = std::round(px[i] * 2.f);  // ties in most windows; bf16 numbers
      px[5] = std::nanf("");
      px[c * h * width + 40] = std::nanf("");
      px[7] = 6.f;
      Tensor xq = xv.clone().requires_grad_(true);
      Tensor yp = F::max_pool2d(xq, {.kernel = {2, 2}});
      Tensor gv = randn(yp.sizes(), {}, &gen);
      float* pg = gv.data_ptr<float>();
      pg[1] = -0.f;
      pg[2] = std::nanf("");
      pg[3] = 1e-41f;
      for (int64_t i = 0; i < gv.numel(); i += 7) pg[i] = -0.f;
      const Tensor gp = autograd::grad({yp}, {xq}, {gv})[0];  // the plain kernels: indices and the scatter
      const float* want = gp.data_ptr<float>();
      for (auto type : {memory::data_type::f32, memory::data_type::bf16})
        for (auto layout : {memory::format_tag::nhwc, memory::format_tag::nChw16c}) {
          if (layout == memory::format_tag::nChw16c && c % 16 != 0) continue;
          SCOPED_TRACE(std::string(vector ? "avx-512, " : "plain, ") + std::to_string(c) + " channels, " + std::to_string(h) + "x" + std::to_string(width) + ", " +
                       layout_name(layout) + (type == memory::data_type::bf16 ? ", bf16" : ", f32"));
          Tensor xh = empty(xv.sizes());
          cpu::hold_as(xv, xh, type, layout);
          xh.requires_grad_(true);
          Tensor yh = F::max_pool2d(xh, {.kernel = {2, 2}});
          EXPECT_TRUE(same_bits(yp, yh));
          const Tensor gh = autograd::grad({yh}, {xh}, {gv})[0];
          const cpu::PooledGradForm* pf = cpu::pooled_grad_form(gh);
          ASSERT_NE(pf, nullptr);  // not written yet
          const cpu::ChannelBlocked xb = cpu::channel_blocked(xh);
          ASSERT_NE(xb.form, nullptr);
          const int64_t S = h * width, V = xb.V, CB = c / V;
          auto at = [&](int64_t n, int64_t ch, int64_t s) { return ((n * CB + ch / V) * S + s) * V + ch % V; };
          auto want_at = [&](int64_t n, int64_t ch, int64_t s) { return want[(n * c + ch) * S + s]; };
          for (auto kind : {PooledGradOut::F32, PooledGradOut::F32Relu, PooledGradOut::Bf16Relu, PooledGradOut::Bf16Relu6}) {
            const bool bf16_out = kind == PooledGradOut::Bf16Relu || kind == PooledGradOut::Bf16Relu6;
            std::vector<uint32_t> got(size_t(xv.numel()));
            std::vector<float> f32(got.size());
            std::vector<uint16_t> b16(got.size());
            ASSERT_TRUE(cpu::write_pooled_grad(*pf, kind, bf16_out ? static_cast<void*>(b16.data()) : f32.data()));
            int64_t wrong = 0;
            for (int64_t n = 0; n < 2; ++n)
              for (int64_t ch = 0; ch < c; ++ch)
                for (int64_t s = 0; s < S; ++s) {
                  const int64_t i = (n * c + ch) * S + s;
                  const float o = px[i], g = want[i];
                  bool pass = true;
                  if (kind != PooledGradOut::F32) pass = o > 0.f;
                  if (kind == PooledGradOut::Bf16Relu6) pass = pass && o < 6.f;
                  const float m = pass ? g : 0.f;
                  const uint32_t expect = bf16_out ? bits(bf16_to_float(float_to_bf16(m))) : bits(m);
                  const uint32_t have = bf16_out ? bits(bf16_to_float(b16[size_t(at(n, ch, s))])) : bits(f32[size_t(at(n, ch, s))]);
                  if (have != expect) ++wrong;
                }
            EXPECT_EQ(wrong, 0) << "kind " << int(kind);
          }
          // The consumers: a fused bf16 convolution's activation gradient (the input as its output),
          Tensor gx = empty(xv.sizes());
          kernels::Conv2dParams p;
          p.compute = DType::BFloat16;
          if (type == memory::data_type::bf16) {
            ASSERT_TRUE(kernels::conv_activation_grad_bf16(Device::cpu())(kernels::ConvEpilogue::Relu, gh, xh, p, gx));
            EXPECT_TRUE(cpu::channel_blocked(gx).bf16);
            std::vector<float> expect(size_t(xv.numel()));
            for (size_t i = 0; i < expect.size(); ++i) expect[i] = bf16_to_float(float_to_bf16(px[i] > 0.f ? want[i] : 0.f));
            const std::vector<float> have = gx.to_vector<float>();
            EXPECT_EQ(std::memcmp(have.data(), expect.data(), expect.size() * 4), 0);
          }
          // a fused float32 convolution's ReLU backward, held in the input's layout,
          gx = empty(xv.sizes());
          kernels::relu_backward(Device::cpu())(gh, xh, gx);
          EXPECT_NE(cpu::channel_blocked(gx).form, nullptr);
          {
            std::vector<float> expect(size_t(xv.numel()));
            for (size_t i = 0; i < expect.size(); ++i) expect[i] = px[i] > 0.f ? want[i] : 0.f;
            const std::vector<float> have = gx.to_vector<float>();
            EXPECT_EQ(std::memcmp(have.data(), expect.data(), expect.size() * 4), 0);
          }
          // a batch norm's read in the input's layout or the other one (its convolution's), and
          // anyone's plain read.
          for (auto want : {memory::format_tag::nhwc, memory::format_tag::nChw16c}) {
            if (want == memory::format_tag::nChw16c && c % 16 != 0) continue;
            Storage scratch;
            const Tensor like = held_copy(zeros({2, c, h, width}), want);  // for its desc (oneDNN is ember's)
            const memory::desc d = cpu::channel_blocked(like).f32_desc();
            // (the batch norm's view: (N, C, H * W))
            const float* in_layout = cpu::f32_in_layout(gh.reshape({2, c, S}), d, scratch);
            ASSERT_NE(in_layout, nullptr);
            EXPECT_NE(cpu::pooled_grad_form(gh), nullptr);  // written for the read, not settled
            const int64_t DV = want == memory::format_tag::nhwc ? c : 16;
            int64_t wrong = 0;
            for (int64_t n = 0; n < 2; ++n)
              for (int64_t ch = 0; ch < c; ++ch)
                for (int64_t s = 0; s < S; ++s)
                  if (bits(in_layout[((n * (c / DV) + ch / DV) * S + s) * DV + ch % DV]) != bits(want_at(n, ch, s))) ++wrong;
            EXPECT_EQ(wrong, 0) << layout_name(want);
          }
          EXPECT_TRUE(same_bits(gp, gh));
          EXPECT_EQ(gh.storage()->form(), nullptr);
        }
      // Not held: the indices and the scatter as before.
      Tensor xplain = xv.clone().requires_grad_(true);
      Tensor gq = autograd::grad({F::max_pool2d(xplain, {.kernel = {2, 2}})}, {xplain}, {gv})[0];
      EXPECT_EQ(cpu::pooled_grad_form(gq), nullptr);
    }
}

// The pooling that keeps its input instead of indices checks, as PyTorch's max pooling does, that
// the input was not modified in place before its backward: an AutogradError naming the node, not
// a gradient from the new values. The plain path (indices) is not affected by such a write.
TEST(HeldTraining, PoolingThatKeepsItsInputRefusesAnInPlaceWriteBeforeBackward) {
  FormsOn restore;
  Generator gen(15);
  Tensor x = randn({2, 16, 8, 8}, {}, &gen).requires_grad_(true);
  Tensor w = (randn({16, 16, 3, 3}, {}, &gen) * 0.1).requires_grad_(true);
  Tensor a = F::conv2d(x, w, Tensor(), {.padding = {1, 1}});  // held in training (nChw16c / NHWC)
  ASSERT_TRUE(held(a));
  Tensor y = F::max_pool2d(a, {.kernel = {2, 2}});
  {
    NoGradGuard no_grad;  // in grad mode ember refuses the write itself
    a.mul_(2.0);
  }
  Tensor loss = sum(y);
  try {
    loss.backward();
    FAIL() << "backward through a pooling whose input was written in place";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("MaxPool2dBackward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
  }
}

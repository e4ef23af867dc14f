// Op table, core ops: element-wise (broadcast and strided), dtype conversion, fill, where, random,
// reductions, matmul/linear (every GEMM path: BLAS, split-K, oneDNN linear), shape ops.
// One entry per op; harness.h says what each entry is checked for.
#include "harness/harness.h"

#include <algorithm>
#include <cmath>

namespace ember::test::ops {
namespace {

const DType F32 = DType::Float32, F64 = DType::Float64;
const std::vector<DType> kFloats = {F32, F64};
const std::vector<DType> kNumeric = {F32, F64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool};
const std::vector<DType> kNumericNoBool = {F32, F64, DType::Int64, DType::Int32, DType::UInt8};
const std::vector<DType> kAll = {F32, F64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool, DType::BFloat16, DType::Float16};

Tensor t2(const Tensor& t) { return t.t(); }
const Tolerance kExact{0, 0, 0, 0};

// Sets the CPU thread count for one op call (the split-K GEMM depends on it).
struct Threads {
  int saved = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(saved); }
};

// A binary op on (3, 4) with a broadcast (4) row, and on a transposed (37, 29) view with a
// broadcast (1, 29) row; `b` sets the second operand's values.
OpEntry binary(std::string name, OpFn fn, std::vector<DType> dtypes, Input a = in({}), Input b = in({})) {
  auto with = [](Input base, Shape s) { base.stored = std::move(s); return base; };
  Input b_row = with(b, {4}), b_bcast = with(b, {1, 29});
  b_bcast.as([](const Tensor& t) { return t.expand({37, 29}); });
  Input a_t = with(a, {29, 37});
  a_t.as(t2);
  return {name,
          {{"broadcast_row", {with(a, {3, 4}), b_row}, fn, dtypes},
           {"transposed_broadcast", {a_t, b_bcast}, fn, dtypes, /*gradcheck=*/false}}};
}

OpEntry unary(std::string name, OpFn fn, std::vector<DType> dtypes, Input a = in({})) {
  Input flat = a, strided = a;
  flat.stored = {2, 5};
  strided.stored = {23, 41};
  strided.as(t2);
  return {name, {{"2x5", {flat}, fn, dtypes}, {"transposed_41x23", {strided}, fn, dtypes, false}}};
}

const bool registered = [] {
  // ---- element-wise, binary -----------------------------------------------------------------------
  register_op(binary("Add", [](auto& v) { return add(v[0], v[1], v[0].dtype() == DType::Bool ? 1.0 : 0.7); }, kNumeric));
  register_op(binary("Sub", [](auto& v) { return sub(v[0], v[1]); }, kNumericNoBool));
  register_op(binary("AddAlpha", [](auto& v) { return add(v[0], v[1], -2.0); }, kNumericNoBool));
  {
    OpEntry e = binary("Mul", [](auto& v) { return mul(v[0], v[1]); }, kNumeric);
    // Squeeze-and-excitation's channel scaling x (N, C, H, W) * s (N, C, 1, 1): the CPU loop's
    // stride-0 row path forward, and s's gradient summed over H and W; a MobileNet-sized one too.
    e.cases.push_back({"se_scale_2x3x4x5_by_2x3x1x1", {in({2, 3, 4, 5}), in({2, 3, 1, 1})}, [](auto& v) { return mul(v[0], v[1]); }});
    e.cases.push_back({"se_scale_8x96x28x28_by_8x96x1x1", {in({8, 96, 28, 28}), in({8, 96, 1, 1})},
                       [](auto& v) { return mul(v[0], v[1]); }, kFloats, false});
    register_op(std::move(e));
  }
  register_op(binary("Div", [](auto& v) { return div(v[0], v[1]); }, kNumericNoBool, in({}), in({}).uniform(1, 5)));
  register_op(binary("Pow", [](auto& v) { return pow(v[1], v[0]); }, kNumericNoBool, in({}).uniform(0, 3),
                     in({}).uniform(0.5, 3)));
  {
    OpEntry e = binary("Maximum", [](auto& v) { return maximum(v[0], v[1]); }, kNumeric);
    e.cases.push_back({"nan", {in({3, 4}).nans(3), in({3, 4}).nans(5)}, [](auto& v) { return maximum(v[0], v[1]); },
                       kFloats, false, 1e-6, /*may_be_zero=*/true});
    register_op(std::move(e));
  }
  register_op(binary("Minimum", [](auto& v) { return minimum(v[0], v[1]); }, kNumeric));
  {
    // The comparisons on small integers (ties on purpose); the outputs are Bool.
    OpEntry e{"Comparison", {}, kExact};
    const std::vector<std::pair<const char*, OpFn>> cmp = {
        {"eq", [](auto& v) { return eq(v[0], v[1]); }}, {"ne", [](auto& v) { return ne(v[0], v[1]); }},
        {"lt", [](auto& v) { return lt(v[0], v[1]); }}, {"le", [](auto& v) { return le(v[0], v[1]); }},
        {"gt", [](auto& v) { return gt(v[0], v[1]); }}, {"ge", [](auto& v) { return ge(v[0], v[1]); }}};
    for (auto& [name, fn] : cmp)
      e.cases.push_back({name, {in({29, 37}).ints(-3, 4).as(t2), in({1, 29}).ints(-3, 4).as([](const Tensor& t) { return t.expand({37, 29}); })},
                         fn, kNumeric, false});
    register_op(std::move(e));
  }
  register_op({"Where",
               {{"broadcast_row", {mask({3, 4}), in({3, 4}), in({4})}, [](auto& v) { return where(v[0], v[1], v[2]); }, kNumeric},
                {"transposed", {mask({9, 17}).as(t2), in({9, 17}).as(t2), in({1, 9}).as([](const Tensor& t) { return t.expand({17, 9}); })},
                 [](auto& v) { return where(v[0], v[1], v[2]); }, kNumeric, false}}});

  // ---- element-wise, unary (positive inputs where the op needs them, away from kinks) -------------
  const Tolerance kUnaryTol{2e-6, 1e-12};
  auto U = [&](std::string name, OpFn fn, std::vector<DType> dt, Input a, std::function<double(double)> formula) {
    OpEntry e = unary(std::move(name), std::move(fn), std::move(dt), std::move(a));
    e.tol = kUnaryTol;
    e.formula = std::move(formula);
    register_op(std::move(e));
  };
  U("Neg", [](auto& v) { return neg(v[0]); }, kNumericNoBool, in({}), [](double x) { return -x; });
  U("Exp", [](auto& v) { return exp(v[0]); }, kFloats, in({}), [](double x) { return std::exp(x); });
  {
    OpEntry e = unary("Gelu", [](auto& v) { return gelu(v[0]); }, kFloats, in({}).uniform(-6, 6));
    e.tol = kUnaryTol;
    e.formula = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
    e.golden = Golden{"gelu", 0, [](const GoldenCase& c) { c.check({"input"}, [](auto& in) { return gelu(in["input"]); }); }};
    register_op(std::move(e));
  }
  U("Sigmoid", [](auto& v) { return sigmoid(v[0]); }, kFloats, in({}).uniform(-6, 6), [](double x) { return 1 / (1 + std::exp(-x)); });
  {
    // The MobileNet / EfficientNet activations (activation slots: reference kernels of their own).
    // Random values cover every piece; "kinks" feeds integers in [-4, 8), so -3, 0, 3 and 6 are hit
    // exactly and every backend must take the same side (PyTorch's, tests/unit/test_nn_activations.cpp);
    // the long rows take the float32 vector clones and OpenMP; the sum hands backward a stride-0 gradient.
    auto act = [&](std::string name, Tensor (*op)(const Tensor&), std::function<double(double)> formula) {
      OpEntry e = unary(std::move(name), [op](auto& v) { return op(v[0]); }, kFloats, in({}).uniform(-8, 8));
      e.tol = kUnaryTol;
      e.formula = std::move(formula);
      e.cases.push_back({"kinks_7x9", {in({7, 9}).ints(-4, 8)}, [op](auto& v) { return op(v[0]); }, kFloats, false});
      e.cases.push_back({"rows_3x40001", {in({3, 40001}).uniform(-8, 8)}, [op](auto& v) { return op(v[0]); }, kFloats, false});
      e.cases.push_back({"broadcast_grad_7x33", {in({7, 33}).uniform(-8, 8)}, [op](auto& v) { return sum(op(v[0]), {0}); }});
      register_op(std::move(e));
    };
    auto r6 = [](double x) { return std::min(std::max(x, 0.0), 6.0); };
    act("Relu6", &relu6, r6);
    act("Hardsigmoid", &hardsigmoid, [r6](double x) { return r6(x + 3) / 6; });
    act("Hardswish", &hardswish, [r6](double x) { return x * r6(x + 3) / 6; });
    act("Silu", &silu, [](double x) { return x / (1 + std::exp(-x)); });
  }
  U("Tanh", [](auto& v) { return tanh(v[0]); }, kFloats, in({}).uniform(-6, 6), [](double x) { return std::tanh(x); });
  U("AddMulScalar", [](auto& v) { return add(mul(v[0], 3.0), 1.0); }, kNumericNoBool, in({}), [](double x) { return 3 * x + 1; });
  U("Log", [](auto& v) { return log(v[0]); }, kFloats, in({}).uniform(0.3, 3), [](double x) { return std::log(x); });
  U("Sqrt", [](auto& v) { return sqrt(v[0]); }, kFloats, in({}).uniform(0.3, 3), [](double x) { return std::sqrt(x); });
  U("Rsqrt", [](auto& v) { return rsqrt(v[0]); }, kFloats, in({}).uniform(0.3, 3), [](double x) { return 1 / std::sqrt(x); });
  U("PowScalar", [](auto& v) { return pow(v[0], 2.5); }, kFloats, in({}).uniform(0.3, 3), [](double x) { return std::pow(x, 2.5); });
  U("Reciprocal", [](auto& v) { return 2.0 / v[0]; }, kFloats, in({}).uniform(0.3, 3), [](double x) { return 2 / x; });
  // abs, relu, clamp, sign: continuous random inputs never land within eps of a kink.
  U("Abs", [](auto& v) { return abs(is_floating(v[0].dtype()) ? (v[0] - 5.0) : v[0]); }, kNumericNoBool, in({}), [](double x) { return std::abs(x - 5); });
  {
    OpEntry e = unary("Relu", [](auto& v) { return relu(v[0]); }, kNumericNoBool, in({}).uniform(-3, 3));
    e.tol = kUnaryTol;
    e.formula = [](double x) { return x > 0 ? x : 0.0; };
    // A sum over rows hands relu's backward a broadcast (stride-0) gradient.
    e.cases.push_back({"broadcast_grad_7x33", {in({7, 33})}, [](auto& v) { return sum(relu(v[0]), {0}); }});
    register_op(std::move(e));
  }
  U("Clamp", [](auto& v) { return clamp(v[0], 0.6, 2.2); }, kNumericNoBool, in({}).uniform(-3, 3), [](double x) { return std::min(std::max(x, 0.6), 2.2); });
  {
    OpEntry e = unary("Sign", [](auto& v) { return sign(v[0]); }, kNumericNoBool, in({}).uniform(-3, 3));
    e.formula = [](double x) { return double((x > 0) - (x < 0)); };
    for (Case& c : e.cases) c.gradcheck = false;  // no gradient: the output does not require grad
    register_op(std::move(e));
  }

  // ---- dtype conversion (copy), fill, random --------------------------------------------------------
  {
    // Every source dtype (the case's) into every destination dtype, through a transposed source
    // and a transposed destination. Float values stay in [0, 246): converting an out-of-range
    // float to an integer is undefined.
    OpEntry e{"ToDtype", {}, kExact};
    for (DType d : kAll)
      e.cases.push_back({"to_" + std::string(dtype_name(d)),
                         {in({31, 19}).uniform(0, 246.6).as(t2).no_grad()},
                         [d](auto& v) {
                           Tensor out = zeros({v[0].size(1), v[0].size(0)}, {.dtype = d, .device = v[0].device()}).t();
                           out.copy_(v[0]);
                           return out;
                         },
                         kAll, false});
    e.cases.push_back({"broadcast_source", {in({1, 5}).as([](const Tensor& t) { return t.expand({4, 5}); }).no_grad()},
                       [](auto& v) { return v[0].contiguous(); }, kAll, false});
    register_op(std::move(e));
  }
  {
    OpEntry e{"Fill", {}, kExact};
    for (double value : {0.0, -2.5, 7.0, 1e9}) {
      std::vector<DType> dts = kAll;
      if (value < 0 || value > 255) dts.erase(dts.begin() + 4);  // uint8: an undefined conversion
      e.cases.push_back({"value_" + std::to_string(value), {},
                         [value](auto&) { Tensor t = empty({6, 4}, here()).t(); t.fill_(value); return t; }, dts,
                         false, 1e-6, value == 0.0});
    }
    register_op(std::move(e));
  }
  {
    // One seed, the same numbers on every device (Philox): uniform and bernoulli bit for bit.
    OpEntry e{"Random", {}, {1e-6, 1e-6}};
    for (int64_t n : {1, 3, 4, 1001, 1 << 16}) {
      e.cases.push_back({"rand_" + std::to_string(n), {}, [n](auto&) { Generator g(99); return rand({n}, here(), &g); }, kFloats, false});
      e.cases.push_back({"randn_" + std::to_string(n), {}, [n](auto&) { Generator g(98); return randn({n}, here(), &g); }, kFloats, false});
      e.cases.push_back({"randint_" + std::to_string(n), {},
                         [n](auto&) { Generator g(5); return randint(3, 200, {n}, here(), &g); },
                         {DType::Int64, DType::Int32, DType::UInt8}, false});
    }
    e.cases.push_back({"bernoulli_dropout", {in({1001}).uniform(1, 2).no_grad()},
                       [](auto& v) { Generator g(7); return nn::functional::dropout(v[0], 0.3, true, &g); }, kFloats, false});
    register_op(std::move(e));
  }

  // ---- reductions ---------------------------------------------------------------------------------------
  {
    auto permuted = [](const Tensor& t) { return t.permute({2, 0, 1}); };  // (30, 10, 70) stored -> (70, 30, 10)
    const Tolerance red{1e-5, 1e-12};
    OpEntry sum_e{"Sum",
                  {{"all", {in({3, 4, 5})}, [](auto& v) { return sum(v[0]); }},
                   {"dims_0_2", {in({3, 4, 5})}, [](auto& v) { return sum(v[0], {0, 2}); }},
                   {"threaded_dim0", {in({5, 40000})}, [](auto& v) { return sum(v[0], {0}, true); }, kFloats, false},
                   {"threaded_dim1", {in({5, 40000})}, [](auto& v) { return sum(v[0], {1}, true); }, kFloats, false},
                   {"transposed", {in({5, 40000}).as(t2)}, [](auto& v) { return sum(v[0], {1}, true); }, kFloats, false},
                   {"conv_bias_grad", {in({64, 32, 9, 7})}, [](auto& v) { return sum(v[0], {0, 2, 3}, true); }, kFloats, false},
                   {"linear_bias_grad", {in({65, 130})}, [](auto& v) { return sum(v[0], {0}, true); }, kFloats, false},
                   {"kept_block_last", {in({4, 3, 5})}, [](auto& v) { return sum(v[0], {0, 1}, true); }, kFloats, false},
                   {"kept_block_first", {in({4, 3, 5})}, [](auto& v) { return sum(v[0], {2}, true); }, kFloats, false},
                   {"kept_dims_split", {in({4, 3, 5})}, [](auto& v) { return sum(v[0], {1}, true); }, kFloats, false},
                   {"long_row", {in({1, 1 << 20})}, [](auto& v) { return sum(v[0], {1}); }, kFloats, false}},
                  red};
    for (auto dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}})
      sum_e.cases.push_back({"permuted_" + shape_str(dims), {in({30, 10, 70}).ints(-50, 50).as(permuted)},
                             [dims](auto& v) { return sum(v[0], dims); }, kNumeric, false});
    register_op(std::move(sum_e));
    register_op({"Mean", {{"dim1_keepdim", {in({3, 4, 5})}, [](auto& v) { return mean(v[0], {1}, true); }}}, red});
    register_op({"Var", {{"dim1", {in({3, 4, 5})}, [](auto& v) { return var(v[0], {1}); }}}, red});
    register_op({"Std", {{"dims01_biased", {in({3, 4, 5})}, [](auto& v) { return ember::std(v[0], {0, 1}, 0); }}}, red});
    for (int which = 0; which < 4; ++which) {
      const char* names[] = {"Amax", "Amin", "Argmax", "Argmin"};
      auto op = [which](const Tensor& x, int64_t d) {
        return which == 0 ? amax(x, {d}) : which == 1 ? amin(x, {d}) : which == 2 ? argmax(x, d) : argmin(x, d);
      };
      OpEntry e{names[which], {}, kExact};
      if (which < 2) {
        e.cases.push_back({"dim2", {in({3, 4, 5})}, [op](auto& v) { return op(v[0], 2); }});
        e.cases.push_back({"dim0", {in({3, 4, 5})}, [op](auto& v) { return op(v[0], 0); }});
      }
      for (int64_t d : {0, 1, 2})
        e.cases.push_back({"permuted_ties_dim" + std::to_string(d), {in({30, 10, 70}).ints(-50, 50).as(permuted).no_grad()},
                           [op, d](auto& v) { return op(v[0], d); }, kNumeric, false});
      // NaN wins and the first NaN is the arg; ties go to the first index.
      e.cases.push_back({"nan_rows", {in({6, 40}).nans(7).no_grad()}, [op](auto& v) { return op(v[0], 1); }, kFloats, false});
      e.cases.push_back({"ties", {in({5, 8}).ints(0, 3).no_grad()}, [op](auto& v) { return op(v[0], 1); }, kFloats, false, 1e-6, true});
      register_op(std::move(e));
    }
  }

  // ---- matmul and linear -------------------------------------------------------------------------------
  {
    // Column-major operands: the transpose of a contiguous transpose.
    auto colmajor = [](const Tensor& t) { return t.transpose(-1, -2); };
    OpEntry mm{"Matmul",
               {{"batched_broadcast", {in({2, 1, 3, 4}), in({5, 4, 2})}, [](auto& v) { return matmul(v[0], v[1]); }},
                {"matrix", {in({3, 4}), in({4, 6})}, [](auto& v) { return matmul(v[0], v[1]); }},
                {"matrix_vector", {in({3, 4}), in({4})}, [](auto& v) { return matmul(v[0], v[1]); }},
                {"vector_matrix", {in({4, 6}), in({4})}, [](auto& v) { return matmul(v[1], v[0]); }},
                {"transposed_views", {in({4, 6}), in({3, 4})}, [](auto& v) { return matmul(v[0].t(), v[1].t()); }},
                {"weight_broadcast", {in({5, 8, 16}), in({16, 4})}, [](auto& v) { return matmul(v[0], v[1]); }, kFloats, false}},
               {2e-5, 1e-12}};
    for (auto [B, M, K, N] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 64, 33, 17}, {1, 128, 256, 96}})
      for (int variant = 0; variant < 4; ++variant) {
        Input a = in({B, M, K}), b = in({B, K, N});
        if (variant & 1) a = in({B, K, M}).as(colmajor);
        if (variant & 2) b = in({B, N, K}).as(colmajor);
        mm.cases.push_back({"gemm_" + std::to_string(B) + "x" + std::to_string(M) + "x" + std::to_string(K) + "x" +
                                std::to_string(N) + "_variant" + std::to_string(variant),
                            {a, b}, [](auto& v) { return matmul(v[0], v[1]); }, kFloats, false});
      }
    mm.cases.push_back({"empty_k", {in({2, 4, 0}), in({2, 0, 3})}, [](auto& v) { return matmul(v[0], v[1]); }, kFloats, false,
                        1e-6, true});
    // Long K and a small output: the split-K path when 2+ threads run (3 leaves the last slice short).
    for (int threads : {1, 2, 3})
      for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{{64, 4099, 32}, {3, 2500, 5}, {1, 2048, 1}})
        for (int variant : {0, 3}) {
          Input a = variant ? in({1, K, M}).as(colmajor) : in({1, M, K});
          Input b = variant ? in({1, N, K}).as(colmajor) : in({1, K, N});
          mm.cases.push_back({"split_k_" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + "_threads" +
                                  std::to_string(threads) + "_variant" + std::to_string(variant),
                              {a.no_grad(), b.no_grad()},
                              [threads](auto& v) { Threads t(threads); return matmul(v[0], v[1]); }, kFloats, false});
        }
    for (auto [label, a, b] : std::vector<std::tuple<std::string, Shape, Shape>>{
             {"2d_autocast", {16, 40}, {40, 24}}, {"shared_right_autocast", {2, 3, 40}, {40, 5}}}) {
      Case ac{label, {in(a), in(b)}, [](auto& v) { return matmul(v[0], v[1]); }, {DType::BFloat16}, false};
      ac.autocast = true;
      mm.cases.push_back(ac);
    }
    mm.golden = Golden{"matmul", 2, [](const GoldenCase& c) {
                         c.check({"a", "b"}, [](auto& in) { return matmul(in["a"], in["b"]); });
                       }};
    register_op(std::move(mm));

    // linear: without autograd the oneDNN inference path (packed weight), with it the oneDNN
    // backward-weights path; the reference is the plain GEMM and sum.
    OpEntry lin{"Linear",
                {{"batched_input", {in({2, 3, 4}), in({6, 4}), in({6})}, [](auto& v) { return linear(v[0], v[1], v[2]); }},
                 {"transposed_weight", {in({4, 6}), in({6, 3}).as(t2)}, [](auto& v) { return linear(v[0], v[1], Tensor()); }}},
                {2e-5, 1e-12}};
    for (auto [N, I, O] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {7, 5, 3}, {3, 5, 7}, {256, 784, 256}, {64, 9216, 128}, {3, 2500, 5}})
      for (bool bias : {true, false}) {
        std::vector<Input> ins = {in({N, I}), in({O, I})};
        if (bias) ins.push_back(in({O}));
        lin.cases.push_back({std::to_string(N) + "x" + std::to_string(I) + "to" + std::to_string(O) + (bias ? "_bias" : ""), ins,
                             [](auto& v) { return linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor()); },
                             // the oneDNN paths are float32 only: large float64 cases add nothing but time
                             N * I * O > 10000 ? std::vector<DType>{F32} : kFloats, N * I * O < 100});
      }
    // bfloat16 under autocast: oneDNN's bf16 inner product (forward, backward-data, backward-weights)
    // against float32 GEMMs on the bf16-rounded x and weight. grad_out is rounded to bf16 by oneDNN
    // only, hence tol.bf16 (1e-2 of the largest value).
    for (auto [N, I, O] : std::vector<std::array<int64_t, 3>>{{7, 5, 3}, {64, 784, 256}, {64, 9216, 128}, {64, 84, 10}})
      for (bool bias : {true, false}) {
        std::vector<Input> ins = {in({N, I}), in({O, I})};
        if (bias) ins.push_back(in({O}));
        Case ac{std::to_string(N) + "x" + std::to_string(I) + "to" + std::to_string(O) + (bias ? "_bias" : "") + "_autocast",
                ins, [](auto& v) { return linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor()); }, {DType::BFloat16}, false};
        ac.autocast = true;
        lin.cases.push_back(ac);
      }
    {
      Case ac{"batched_input_autocast", {in({2, 3, 4}), in({6, 4}), in({6})},
              [](auto& v) { return linear(v[0], v[1], v[2]); }, {DType::BFloat16}, false};
      ac.autocast = true;
      lin.cases.push_back(ac);
    }
    lin.golden = Golden{"linear", 3, [](const GoldenCase& c) {
                          const bool has_bias = c.params()[0] != 0;
                          std::vector<std::string> leaves = {"input", "weight"};
                          if (has_bias) leaves.push_back("bias");
                          c.check(leaves, [&](auto& in) { return linear(in["input"], in["weight"], has_bias ? in["bias"] : Tensor()); });
                        }};
    register_op(std::move(lin));
  }

  // ---- shape ops (copies through strided views) ------------------------------------------------------------
  register_op({"Cat", {{"dim1", {in({2, 3}), in({2, 2})}, [](auto& v) { return cat({v[0], v[1]}, 1); }},
                       {"transposed_dim0", {in({3, 2}).as(t2), in({1, 3})}, [](auto& v) { return cat({v[0], v[1]}, 0); }}}});
  register_op({"Stack", {{"dim0", {in({2, 3})}, [](auto& v) { return stack({v[0], mul(v[0], 2.0)}, 0); }}}});
  register_op({"Pad", {{"value_0.5", {in({2, 3})}, [](auto& v) { return pad(v[0], {1, 2, 0, 1}, 0.5); }}}});
  register_op({"Views",
               {{"flatten_narrow", {in({2, 3})}, [](auto& v) { return v[0].flatten().narrow(0, 1, 4); }},
                {"permute_reshape", {in({4, 3})}, [](auto& v) { return v[0].permute({1, 0}).reshape({12}); }},
                {"unsqueeze_expand", {in({4, 3})}, [](auto& v) { return v[0].unsqueeze(1).expand({4, 2, 3}); }},
                {"strided_slice_exp", {in({4, 3})}, [](auto& v) { return exp(v[0].slice(0, 0, 4, 2)); }},
                {"transposed_mul", {in({4, 3}), in({3, 4})}, [](auto& v) { return mul(v[0].t(), v[1]); }},
                {"large_strided_mul", {in({300, 200}), in({200, 300}).as(t2)}, [](auto& v) { return mul(v[0], v[1]); }, kFloats, false}}});
  return true;
}();

}  // namespace
}  // namespace ember::test::ops

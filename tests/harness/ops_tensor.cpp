// Op table, the tensor ops added for PyTorch's API (issue 46): element-wise math (math_unary,
// math_binary), reductions and scans (scan), rearranging shape ops, and indexing (gather, scatter).
// One entry per op; harness.h says what each entry is checked for. PyTorch's values come from
// golden/ops_tensor_v1.bin (tests/golden/make_golden_tensor.py), checked by check_torch below.
#include "harness/harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ember::test::ops {
namespace {

const DType F32 = DType::Float32, F64 = DType::Float64;
const std::vector<DType> kFloats = {F32, F64};
const std::vector<DType> kNumeric = {F32, F64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool};
const std::vector<DType> kNumericNoBool = {F32, F64, DType::Int64, DType::Int32, DType::UInt8};
const std::vector<DType> kSigned = {F32, F64, DType::Int64, DType::Int32};
const std::vector<DType> kIntsBool = {DType::Int64, DType::Int32, DType::UInt8, DType::Bool};
const Tolerance kExact{0, 0, 0, 0};
const Tolerance kUnaryTol{2e-6, 1e-12};
const Tolerance kReduceTol{2e-5, 1e-12};
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor t2(const Tensor& t) { return t.t(); }
Tensor halves(const Tensor& t) { return mul(t, 0.5); }
Tensor zero_d(const Tensor& t) { return t.reshape({}); }

// Deterministic pseudo-random integers in [0, range): fixed index tensors for the cases.
std::vector<int64_t> picks(size_t n, int64_t range, uint64_t seed) {
  std::vector<int64_t> v(n);
  for (auto& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = int64_t((seed >> 33) % uint64_t(range));
  }
  return v;
}
// `rows` rows of `take` distinct values in [0, range) each: scatter indices without repeats in a line.
std::vector<int64_t> distinct_rows(int64_t rows, int64_t take, int64_t range, uint64_t seed) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> p(static_cast<size_t>(range));
    std::iota(p.begin(), p.end(), 0);
    const auto shuffle = picks(size_t(range), 1 << 30, seed + uint64_t(r));
    for (int64_t i = range - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(shuffle[size_t(i)] % (i + 1))]);
    out.insert(out.end(), p.begin(), p.begin() + take);
  }
  return out;
}

// got against the recorded `key`: NaN matches NaN, infinities match exactly, finite values within
// 1e-10 relative (float64) or 2e-6 (a float32 result: PyTorch's float32 loops round differently).
void expect_torch(const GoldenCase& c, const Tensor& got, const std::string& key) {
  const Tensor want = c.get(key);
  ASSERT_EQ(shape_str(got.sizes()), shape_str(want.sizes())) << c.prefix() << key;
  const double rel = got.dtype() == DType::Float32 ? 2e-6 : 1e-10;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] ||
                    (std::isfinite(w[i]) && std::abs(g[i] - w[i]) <= rel * std::max(1.0, std::abs(w[i])));
    if (!ok) {
      ADD_FAILURE() << c.prefix() << key << " element " << i << ": " << g[i] << ", PyTorch " << w[i];
      return;
    }
  }
}

// PyTorch's case from golden/ops_tensor_v1.bin: the inputs `names` (float64 ones differentiable
// where a gradient is recorded, int64 ones as they are, those in `bools` turned back into Bool),
// f's output against "output" in value and dtype, and each gradient against grad_<name>.
void check_torch(const GoldenCase& c, const std::vector<std::string>& names,
                 const std::function<Tensor(std::map<std::string, Tensor>&)>& f, const std::set<std::string>& bools = {}) {
  std::map<std::string, Tensor> in;
  std::vector<std::string> leaf_names;
  std::vector<Tensor> leaves;
  for (const auto& k : names) {
    Tensor t = c.get(k);
    if (bools.count(k)) t = t.to(DType::Bool);
    if (is_floating(t.dtype()) && c.has("grad_" + k)) {
      t.requires_grad_(true);
      leaf_names.push_back(k);
      leaves.push_back(t);
    }
    in[k] = t;
  }
  const Tensor out = f(in);
  expect_torch(c, out, "output");
  EXPECT_EQ(dtype_name(out.dtype()), dtype_name(DType(c.get("output_dtype").item<int64_t>()))) << c.prefix() << " dtype";
  if (!c.has("grad_output") || leaves.empty()) return;
  ASSERT_TRUE(out.requires_grad()) << c.prefix() << ": PyTorch's output is differentiable";
  const auto grads = autograd::grad({out}, leaves, {c.get("grad_output").to(out.dtype())});
  for (size_t i = 0; i < leaves.size(); ++i) expect_torch(c, grads[i], "grad_" + leaf_names[i]);
}
Golden torch_golden(std::string op, size_t cases, std::function<void(const GoldenCase&)> run) {
  return Golden{std::move(op), cases, std::move(run), "ops_tensor_v1.bin"};
}
// The params after the first `skip` as dims.
std::vector<int64_t> tail(const std::vector<int64_t>& p, size_t skip) { return {p.begin() + long(skip), p.end()}; }

// One input on a (2, 5) block and on a transposed (41, 23) view.
OpEntry unary(std::string name, OpFn fn, std::vector<DType> dtypes, Input a = in({}), Tolerance tol = kUnaryTol) {
  Input flat = a, strided = a;
  flat.stored = {2, 5};
  strided.stored = {23, 41};
  strided.as(t2);
  return {name, {{"2x5", {flat}, fn, dtypes}, {"transposed_41x23", {strided}, fn, dtypes, false}}, tol};
}
// Two inputs: (3, 4) with a broadcast (4) row, and a transposed (37, 29) view with a (1, 29) row.
OpEntry binary(std::string name, OpFn fn, std::vector<DType> dtypes, Input a = in({}), Input b = in({}), Tolerance tol = kExact) {
  auto with = [](Input base, Shape s) { base.stored = std::move(s); return base; };
  Input b_row = with(b, {4}), b_bcast = with(b, {1, 29});
  b_bcast.as([](const Tensor& t) { return t.expand({37, 29}); });
  Input a_t = with(a, {29, 37});
  a_t.as(t2);
  return {name, {{"broadcast_row", {with(a, {3, 4}), b_row}, fn, dtypes}, {"transposed_broadcast", {a_t, b_bcast}, fn, dtypes, false}}, tol};
}
void no_gradients(OpEntry& e) {
  for (Case& c : e.cases) {
    c.gradcheck = false;
    for (Input& i : c.inputs) i.grad = false;
  }
}

void register_math() {
  // ---- transcendental: integer inputs compute in float32 -----------------------------------------------
  auto transcendental = [](std::string name, Tensor (*op)(const Tensor&), Input a, std::function<double(double)> formula,
                           std::string golden) {
    // Integer inputs give float32 outputs: the reference rounds double math once, the CPU loop
    // runs float32 math, so those cases get float32's tolerance too.
    OpEntry e = unary(std::move(name), [op](auto& v) { return op(v[0]); }, kNumeric, std::move(a),
                      Tolerance{2e-6, 1e-12, 1e-2, 2e-3, 2e-6});
    e.formula = std::move(formula);
    e.golden = torch_golden(golden, 2, [op](const GoldenCase& c) { check_torch(c, {"input"}, [op](auto& in) { return op(in["input"]); }); });
    register_op(std::move(e));
  };
  transcendental("Sin", &sin, in({}).uniform(-4, 4), [](double x) { return std::sin(x); }, "sin");
  transcendental("Cos", &cos, in({}).uniform(-4, 4), [](double x) { return std::cos(x); }, "cos");
  transcendental("Log1p", &log1p, in({}).uniform(-0.5, 3), [](double x) { return std::log1p(x); }, "log1p");
  transcendental("Expm1", &expm1, in({}).uniform(-3, 3), [](double x) { return std::expm1(x); }, "expm1");
  transcendental("ReciprocalOp", &reciprocal, in({}).uniform(0.3, 3), [](double x) { return 1 / x; }, "reciprocal");

  // ---- rounding: zero gradients (may_be_zero), integers pass through --------------------------------------
  auto rounding = [](std::string name, std::function<Tensor(const Tensor&)> op, std::function<double(double)> formula,
                     std::string golden) {
    OpEntry e = unary(std::move(name), [op](auto& v) { return op(v[0]); }, kNumericNoBool, in({}).uniform(-3, 3), kExact);
    for (Case& c : e.cases) c.may_be_zero = true;
    // Ties: every half in [-4, 4.5), where floor / ceil / trunc / round each pick their side.
    e.cases.push_back({"halves_17", {in({17}).ints(-8, 9).as(halves)}, [op](auto& v) { return op(v[0]); }, kFloats, false, 1e-6, true});
    e.formula = std::move(formula);
    e.golden = torch_golden(golden, 0, [op](const GoldenCase& c) {
      const int64_t decimals = c.params()[0];
      check_torch(c, {"input"}, [&](auto& in) { return decimals == 0 ? op(in["input"]) : round(in["input"], decimals); });
    });
    return e;
  };
  register_op(rounding("Floor", [](const Tensor& x) { return floor(x); }, [](double x) { return std::floor(x); }, "floor"));
  register_op(rounding("Ceil", [](const Tensor& x) { return ceil(x); }, [](double x) { return std::ceil(x); }, "ceil"));
  register_op(rounding("Trunc", [](const Tensor& x) { return trunc(x); }, [](double x) { return std::trunc(x); }, "trunc"));
  {
    register_op(rounding("Round", [](const Tensor& x) { return round(x); }, [](double x) { return std::nearbyint(x); }, "round"));
    OpEntry e{"RoundDecimals", {}, kExact};  // no one-argument formula: its own entry
    for (int64_t d : {2, -1})
      e.cases.push_back({"decimals_" + std::to_string(d), {in({40}).uniform(-300, 300)}, [d](auto& v) { return round(v[0], d); },
                         kFloats, true, 1e-6, true});
    register_op(std::move(e));
  }

  // ---- predicates, not ------------------------------------------------------------------------------------
  for (auto [name, op] : std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>>{
           {"IsNan", &isnan}, {"IsInf", &isinf}, {"IsFinite", &isfinite}}) {
    std::string golden = name == "IsNan" ? "isnan" : name == "IsInf" ? "isinf" : "isfinite";
    OpEntry e{name,
              {{"nans_4x6", {in({4, 6}).nans(3)}, [op](auto& v) { return op(v[0]); }, kNumeric, false},
               // x / {0, 1}: +-inf, nan and finite values, through a transposed view
               {"infs_9x7", {in({7, 9}).as(t2), in({9, 7}).ints(0, 2)}, [op](auto& v) { return op(div(v[0], v[1])); }, kFloats, false}},
              kExact};
    no_gradients(e);
    e.golden = torch_golden(golden, 2, [op](const GoldenCase& c) { check_torch(c, {"input"}, [op](auto& in) { return op(in["input"]); }); });
    register_op(std::move(e));
  }
  {
    OpEntry e = unary("BitwiseNot", [](auto& v) { return bitwise_not(v[0]); }, kIntsBool, in({}).ints(-20, 20), kExact);
    no_gradients(e);
    e.golden = torch_golden("bitwise_not", 2, [](const GoldenCase& c) {
      check_torch(c, {"input"}, [](auto& in) { return bitwise_not(in["input"]); }, {c.prefix().find("bool") != std::string::npos ? "input" : ""});
    });
    register_op(std::move(e));
    OpEntry l = unary("LogicalNot", [](auto& v) { return logical_not(v[0]); }, kNumeric, in({}).ints(-2, 2), kExact);
    no_gradients(l);
    l.golden = torch_golden("logical_not", 1, [](const GoldenCase& c) { check_torch(c, {"input"}, [](auto& in) { return logical_not(in["input"]); }); });
    register_op(std::move(l));
  }

  // ---- Python's // and % -----------------------------------------------------------------------------------
  for (bool is_floor : {true, false}) {
    auto op = is_floor ? &floor_divide : &remainder;
    OpEntry e = binary(is_floor ? "FloorDivide" : "Remainder", [op](auto& v) { return op(v[0], v[1]); }, kNumericNoBool,
                       in({}).uniform(-9, 9), in({}).uniform(1, 4), kUnaryTol);
    // Negative divisors: the result takes the divisor's sign.
    e.cases.push_back({"negative_divisor", {in({5, 6}).uniform(-9, 9), in({6}).uniform(1, 4).as([](const Tensor& t) { return neg(t); })},
                       [op](auto& v) { return op(v[0], v[1]); }, kSigned});
    e.cases.push_back({"integer_quotients", {in({5, 6}).ints(-12, 12), in({6}).ints(1, 5)}, [op](auto& v) { return op(v[0], v[1]); },
                       kSigned, false, 1e-6, true});
    if (is_floor) no_gradients(e);
    e.golden = torch_golden(is_floor ? "floor_divide" : "remainder", 0, [op](const GoldenCase& c) {
      check_torch(c, {"input", "other"}, [op](auto& in) { return op(in["input"], in["other"]); });
    });
    register_op(std::move(e));
  }

  // ---- lerp -------------------------------------------------------------------------------------------------
  {
    OpEntry e{"Lerp",
              {{"tensor_weight", {in({3, 4}), in({3, 4}), in({4}).uniform(-1, 2)}, [](auto& v) { return lerp(v[0], v[1], v[2]); }},
               {"scalar_0.3", {in({3, 4}), in({1, 4})}, [](auto& v) { return lerp(v[0], v[1], 0.3); }},
               {"scalar_0.75_transposed", {in({4, 3}).as(t2), in({3, 4})}, [](auto& v) { return lerp(v[0], v[1], 0.75); }}},
              kUnaryTol};
    e.golden = torch_golden("lerp", 3, [](const GoldenCase& c) {
      if (c.has("weight")) return check_torch(c, {"input", "end", "weight"}, [](auto& in) { return lerp(in["input"], in["end"], in["weight"]); });
      const double w = c.scalars()[0];
      check_torch(c, {"input", "end"}, [w](auto& in) { return lerp(in["input"], in["end"], w); });
    });
    register_op(std::move(e));
  }

  // ---- bitwise -------------------------------------------------------------------------------------------------
  for (auto [name, op] : std::vector<std::pair<std::string, Tensor (*)(const Tensor&, const Tensor&)>>{
           {"bitwise_and", &bitwise_and}, {"bitwise_or", &bitwise_or}, {"bitwise_xor", &bitwise_xor}}) {
    std::string suite = name == "bitwise_and" ? "BitwiseAnd" : name == "bitwise_or" ? "BitwiseOr" : "BitwiseXor";
    OpEntry e = binary(suite, [op](auto& v) { return op(v[0], v[1]); }, kIntsBool, in({}).ints(-20, 20), in({}).ints(-20, 20));
    no_gradients(e);
    e.golden = torch_golden(name, 2, [op](const GoldenCase& c) {
      const bool b = c.prefix().find("/bool/") != std::string::npos;
      check_torch(c, {"input", "other"}, [op](auto& in) { return op(in["input"], in["other"]); },
                  b ? std::set<std::string>{"input", "other"} : std::set<std::string>{});
    });
    register_op(std::move(e));
  }
}

void register_reductions() {
  auto permuted = [](const Tensor& t) { return t.permute({2, 0, 1}); };
  // ---- scans ------------------------------------------------------------------------------------------------------
  {
    OpEntry e{"Cumsum", {}, kReduceTol};
    for (int64_t d : {0, 1, -1})
      e.cases.push_back({"dim" + std::to_string(d), {in({3, 4, 5})}, [d](auto& v) { return cumsum(v[0], d); }});
    e.cases.push_back({"permuted_ints", {in({5, 3, 4}).ints(-9, 9).as(permuted)}, [](auto& v) { return cumsum(v[0], 1); }, kNumeric, false});
    // A long line: CUDA's block-per-line kernel (tiles and carries); the CPU's threaded lines.
    e.cases.push_back({"long_line_3x3000", {in({3, 3000})}, [](auto& v) { return cumsum(v[0], 1); }, kFloats, false});
    e.cases.push_back({"many_lines_40000x3", {in({40000, 3})}, [](auto& v) { return cumsum(v[0], 0); }, kFloats, false});
    e.golden = torch_golden("cumsum", 5, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input"}, [d](auto& in) { return cumsum(in["input"], d); }, {c.prefix().find("bool") != std::string::npos ? "input" : ""});
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Cumprod",
              {{"dim1", {in({3, 6}).uniform(0.5, 1.5)}, [](auto& v) { return cumprod(v[0], 1); }},
               // zeros in most lines (ints in [-1, 3) as floats): the gradient's first-zero rule
               {"zeros_dim1", {in({6, 7}).ints(-1, 3)}, [](auto& v) { return cumprod(v[0], 1); }},
               {"zeros_dim0_transposed", {in({7, 6}).ints(-1, 3).as(t2)}, [](auto& v) { return cumprod(v[0], 0); }},
               {"ints", {in({4, 5}).ints(-3, 4)}, [](auto& v) { return cumprod(v[0], 1); }, kNumeric, false},
               {"long_line_2x400", {in({2, 400}).uniform(0.99, 1.01)}, [](auto& v) { return cumprod(v[0], 1); }, kFloats, false}},
              kReduceTol};
    e.golden = torch_golden("cumprod", 3, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input"}, [d](auto& in) { return cumprod(in["input"], d); });
    });
    register_op(std::move(e));
  }
  // ---- prod, all, any, count_nonzero ------------------------------------------------------------------------------
  {
    OpEntry e{"Prod",
              {{"dim1", {in({3, 4}).uniform(0.5, 1.5)}, [](auto& v) { return prod(v[0], 1); }},
               {"zeros_keepdim", {in({6, 3}).ints(-2, 5)}, [](auto& v) { return prod(v[0], 1, true); }},
               {"all", {in({2, 3}).uniform(0.5, 1.5)}, [](auto& v) { return prod(v[0]); }},
               {"ints_dim0", {in({4, 3}).ints(-3, 4)}, [](auto& v) { return prod(v[0], 0); }, kNumeric, false},
               {"empty_dim", {in({3, 0})}, [](auto& v) { return prod(v[0], 1); }, kFloats, false}},
              kReduceTol};
    e.golden = torch_golden("prod", 4, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return p[0] == 99 ? prod(in["input"]) : prod(in["input"], p[0], p[1] != 0); });
    });
    register_op(std::move(e));
  }
  for (bool is_all : {true, false}) {
    auto op = [is_all](const Tensor& x, std::vector<int64_t> dims, bool keep) { return is_all ? all(x, dims, keep) : any(x, dims, keep); };
    OpEntry e{is_all ? "All" : "Any",
              {{"dim1", {in({4, 5}).ints(0, 2)}, [op](auto& v) { return op(v[0], {1}, false); }, kNumeric, false},
               {"every_dim_permuted", {in({3, 4, 2}).ints(0, 2).as(permuted)}, [op](auto& v) { return op(v[0], {}, false); }, kNumeric, false},
               {"nans_keepdim", {in({6, 3}).nans(4).ints(0, 2)}, [op](auto& v) { return op(v[0], {0}, true); }, kFloats, false}},
              kExact};
    no_gradients(e);
    e.golden = torch_golden(is_all ? "all" : "any", 3, [op](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return op(in["input"], tail(p, 1), p[0] != 0); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"CountNonzero",
              {{"dims01", {in({3, 4, 2}).ints(0, 2)}, [](auto& v) { return count_nonzero(v[0], {0, 1}); }, kNumeric, false},
               {"every", {in({5, 2}).ints(-1, 2)}, [](auto& v) { return count_nonzero(v[0]); }, kNumeric, false}},
              kExact};
    no_gradients(e);
    e.golden = torch_golden("count_nonzero", 2, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return count_nonzero(in["input"], tail(p, 1)); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Logsumexp",
              {{"dim1", {in({3, 4, 5})}, [](auto& v) { return logsumexp(v[0], {1}); }},
               {"large_keepdim", {in({3, 4, 5}).uniform(500, 800)}, [](auto& v) { return logsumexp(v[0], {0, 2}, true); }},
               {"every_dim", {in({4, 3}).as(t2)}, [](auto& v) { return logsumexp(v[0]); }},
               {"ints", {in({6}).ints(-3, 4)}, [](auto& v) { return logsumexp(v[0], {0}); }, kNumeric, false}},
              kReduceTol};
    e.golden = torch_golden("logsumexp", 3, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return logsumexp(in["input"], tail(p, 1), p[0] != 0); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Norm", {}, kReduceTol};
    for (double p : {2.0, 1.0, kInf, -kInf, 3.0, 0.5, 0.0}) {
      const std::string n = p == kInf ? "inf" : p == -kInf ? "neg_inf" : std::to_string(p);
      e.cases.push_back({"p" + n + "_dim1", {in({3, 5})}, [p](auto& v) { return norm(v[0], p, {1}); }});
      e.cases.push_back({"p" + n + "_every_transposed", {in({4, 3}).as(t2)}, [p](auto& v) { return norm(v[0], p); }});
    }
    e.cases.push_back({"fro_keepdim", {in({2, 3, 4})}, [](auto& v) { return norm(v[0], "fro", {0, 2}, true); }});
    // a zero row: the 2-norm's gradient there is 0, not nan (PyTorch's masked_fill)
    e.cases.push_back({"p2_zero_row", {in({3, 4}).as([](const Tensor& t) { return mul(t, tensor(std::vector<double>{1, 0, 1}, {3, 1}).to(t.device(), t.dtype())); })},
                       [](auto& v) { return norm(v[0], 2.0, {1}); }, kFloats, false});
    for (Case& c : e.cases)
      if (c.label.rfind("p0.0", 0) == 0) c.may_be_zero = true;  // p = 0 counts: zero gradient
    e.golden = torch_golden("norm", 15, [](const GoldenCase& c) {
      const auto p = c.params();
      const double order = c.scalars()[0];
      check_torch(c, {"input"}, [&](auto& in) {
        return std::isnan(order) ? norm(in["input"], "fro", tail(p, 1), p[0] != 0) : norm(in["input"], order, tail(p, 1), p[0] != 0);
      });
    });
    register_op(std::move(e));
  }
  // ---- max / min along a dim ----------------------------------------------------------------------------------------
  for (bool is_max : {true, false}) {
    auto op = [is_max](const Tensor& x, int64_t d, bool keep) { return is_max ? max(x, d, keep) : min(x, d, keep); };
    OpEntry e{is_max ? "MaxDim" : "MinDim",
              {{"values_dim1", {in({3, 5})}, [op](auto& v) { return op(v[0], 1, false).values; }},
               {"values_dim0_keepdim_transposed", {in({5, 3}).as(t2)}, [op](auto& v) { return op(v[0], 0, true).values; }},
               {"indices_ties", {in({6, 7}).ints(-2, 2).no_grad()}, [op](auto& v) { return op(v[0], 1, false).indices; }, kNumeric, false},
               {"values_ties", {in({6, 7}).ints(-2, 2)}, [op](auto& v) { return op(v[0], -1, false).values; }, kNumericNoBool, false, 1e-6, true},
               {"indices_nans", {in({5, 8}).nans(3).no_grad()}, [op](auto& v) { return op(v[0], 1, false).indices; }, kFloats, false}},
              kExact};
    e.golden = torch_golden(is_max ? "max_dim" : "min_dim", 3, [op](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) {
        const ValuesIndices r = op(in["input"], p[0], p[1] != 0);
        expect_torch(c, r.indices, "indices");
        EXPECT_EQ(r.indices.dtype(), DType::Int64);
        return r.values;
      });
    });
    register_op(std::move(e));
  }
}

void register_shape() {
  auto scaled_cat = [](const std::vector<Tensor>& pieces, int64_t dim) {
    std::vector<Tensor> s;
    for (size_t i = 0; i < pieces.size(); ++i) s.push_back(mul(pieces[i], double(i + 1)));
    return cat(s, dim);
  };
  {
    OpEntry e{"Repeat",
              {{"2x3_by_2x1x2", {in({2, 3})}, [](auto& v) { return repeat(v[0], {2, 1, 2}); }, kNumeric},
               {"zero", {in({3})}, [](auto& v) { return repeat(v[0], {0, 2}); }, kFloats, false, 1e-6, true},
               {"transposed", {in({3, 2}).as(t2)}, [](auto& v) { return repeat(v[0], {3, 2}); }}}};
    e.golden = torch_golden("repeat", 2, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return repeat(in["input"], p); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Split",
              {{"size2_dim1", {in({3, 5})}, [=](auto& v) { return scaled_cat(split(v[0], 2, 1), 1); }},
               {"sizes_dim0", {in({6, 2})}, [=](auto& v) { return scaled_cat(split_with_sizes(v[0], {1, 3, 2}, 0), 0); }},
               {"chunk_3_of_7", {in({7, 2})}, [=](auto& v) { return scaled_cat(chunk(v[0], 3, 0), 0); }},
               {"chunk_4_of_6", {in({2, 6})}, [=](auto& v) { return scaled_cat(chunk(v[0], 4, -1), -1); }}}};
    e.golden = torch_golden("split", 1, [=](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return scaled_cat(split(in["input"], p[1], p[0]), p[0]); });
    });
    register_op(std::move(e));
    OpEntry s{"SplitWithSizes", {{"dim0", {in({6, 2})}, [=](auto& v) { return scaled_cat(split_with_sizes(v[0], {1, 3, 2}, 0), 0); }}}};
    s.golden = torch_golden("split_with_sizes", 1, [=](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return scaled_cat(split_with_sizes(in["input"], tail(p, 1), p[0]), p[0]); });
    });
    register_op(std::move(s));
    OpEntry ch{"Chunk", {{"3_of_7", {in({7, 2})}, [=](auto& v) { return scaled_cat(chunk(v[0], 3, 0), 0); }}}};
    ch.golden = torch_golden("chunk", 2, [=](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return scaled_cat(chunk(in["input"], p[1], p[0]), p[0]); });
    });
    register_op(std::move(ch));
  }
  {
    OpEntry e{"Unflatten", {{"infer", {in({2, 6, 3})}, [](auto& v) { return mul(unflatten(v[0], 1, {-1, 2}), 2.0); }}}};
    e.golden = torch_golden("unflatten", 1, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return mul(unflatten(in["input"], p[0], tail(p, 1)), 2.0); });
    });
    register_op(std::move(e));
    register_op({"SqueezeDims",
                 {{"some_dims", {in({1, 3, 1, 2})}, [](auto& v) { return mul(squeeze(v[0], {0, 1, -2}), 2.0); }},
                  {"unsqueeze", {in({3, 2})}, [](auto& v) { return mul(unsqueeze(v[0], -1), 2.0); }}}});
    OpEntry m{"Movedim", {{"two", {in({2, 3, 4, 5})}, [](auto& v) { return mul(movedim(v[0], {0, 1}, {2, 0}), 2.0); }},
                          {"one", {in({2, 3, 4})}, [](auto& v) { return mul(movedim(v[0], -1, 0), 2.0); }}}};
    m.golden = torch_golden("movedim", 1, [](const GoldenCase& c) {
      const auto p = c.params();
      const std::vector<int64_t> src(p.begin() + 1, p.begin() + 1 + p[0]), dst(p.begin() + 1 + p[0], p.end());
      check_torch(c, {"input"}, [&](auto& in) { return mul(movedim(in["input"], src, dst), 2.0); });
    });
    register_op(std::move(m));
  }
  for (bool lower : {true, false}) {
    auto op = lower ? &tril : &triu;
    OpEntry e{lower ? "Tril" : "Triu", {}};
    for (int64_t d : {0, 1, -2})
      e.cases.push_back({"diag" + std::to_string(d), {in({2, 4, 5})}, [op, d](auto& v) { return op(v[0], d); }, kNumeric});
    e.cases.push_back({"transposed", {in({5, 4}).as(t2)}, [op](auto& v) { return op(v[0], 0); }});
    e.golden = torch_golden(lower ? "tril" : "triu", 3, [op](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input"}, [&](auto& in) { return op(in["input"], d); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Flip",
              {{"dims02", {in({2, 3, 4})}, [](auto& v) { return flip(v[0], {0, 2}); }, kNumeric},
               {"last_transposed", {in({5, 2}).as(t2)}, [](auto& v) { return flip(v[0], {-1}); }}}};
    e.golden = torch_golden("flip", 2, [](const GoldenCase& c) {
      const auto p = c.params();
      check_torch(c, {"input"}, [&](auto& in) { return flip(in["input"], p); });
    });
    register_op(std::move(e));
    OpEntry r{"Roll",
              {{"two_dims", {in({3, 2, 5})}, [](auto& v) { return roll(v[0], {1, -7}, {0, 2}); }, kNumeric},
               {"flat", {in({2, 3})}, [](auto& v) { return roll(v[0], {4}); }}}};
    r.golden = torch_golden("roll", 2, [](const GoldenCase& c) {
      const auto p = c.params();
      const std::vector<int64_t> shifts(p.begin() + 1, p.begin() + 1 + p[0]), dims(p.begin() + 1 + p[0], p.end());
      check_torch(c, {"input"}, [&](auto& in) { return p[0] == 1 && dims.empty() ? roll(in["input"], shifts) : roll(in["input"], shifts, dims); });
    });
    register_op(std::move(r));
  }
}

// The index list of an index / index_put golden case: 0 = a full slice, 1 = the next index
// tensor (i0, i1, ...), 2 = the next mask (m0, ...).
std::vector<Tensor> golden_indices(std::map<std::string, Tensor>& in, const std::vector<int64_t>& codes) {
  std::vector<Tensor> out;
  int ni = 0, nm = 0;
  for (int64_t code : codes) {
    if (code == 0) out.push_back(Tensor());
    if (code == 1) out.push_back(in["i" + std::to_string(ni++)]);
    if (code == 2) out.push_back(in["m" + std::to_string(nm++)]);
  }
  return out;
}
std::vector<std::string> golden_index_names(const std::vector<int64_t>& codes) {
  std::vector<std::string> names;
  int ni = 0, nm = 0;
  for (int64_t code : codes) {
    if (code == 1) names.push_back("i" + std::to_string(ni++));
    if (code == 2) names.push_back("m" + std::to_string(nm++));
  }
  return names;
}

void register_indexing() {
  auto idx = [](Shape shape, int64_t range, uint64_t seed) { return index(picks(size_t(shape_numel(shape)), range, seed), shape); };
  {
    OpEntry e{"Gather",
              {{"dim1", {in({3, 4, 2}), idx({3, 5, 2}, 4, 1)}, [](auto& v) { return gather(v[0], 1, v[1]); }, kNumeric},
               {"dim0_smaller_index", {in({4, 3}), idx({2, 2}, 4, 2)}, [](auto& v) { return gather(v[0], 0, v[1]); }},
               {"dim_last_transposed", {in({5, 3}).as(t2), idx({3, 7}, 5, 3)}, [](auto& v) { return gather(v[0], -1, v[1]); }},
               {"threaded_64x600", {in({64, 600}), idx({64, 600}, 600, 4)}, [](auto& v) { return gather(v[0], 1, v[1]); }, kFloats, false},
               {"zero_d", {in({}), index({0}).as(zero_d)}, [](auto& v) { return gather(v[0], 0, v[1]); }}},
              kExact};
    e.golden = torch_golden("gather", 2, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input", "index"}, [d](auto& in) { return gather(in["input"], d, in["index"]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"Scatter",
              {{"dim1", {in({2, 5}), index(distinct_rows(2, 4, 5, 7), {2, 4}), in({2, 4})},
                [](auto& v) { return scatter(v[0], 1, v[1], v[2]); }, kNumeric},
               {"dim0_src_larger", {in({4, 3}), index({3, 1, 0, 2}, {2, 2}), in({3, 3})}, [](auto& v) { return scatter(v[0], 0, v[1], v[2]); }},
               {"value", {in({2, 5}), index(distinct_rows(2, 4, 5, 8), {2, 4})}, [](auto& v) { return scatter(v[0], 1, v[1], 2.5); }, kNumericNoBool},
               {"in_place", {in({3, 4}).no_grad(), index(distinct_rows(3, 2, 4, 9), {3, 2}), in({3, 2}).no_grad()},
                [](auto& v) { Tensor t = v[0].clone(); t.scatter_(1, v[1], v[2]); return t; }, kNumeric, false}},
              kExact};
    e.golden = torch_golden("scatter", 2, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input", "index", "src"}, [d](auto& in) { return scatter(in["input"], d, in["index"], in["src"]); });
    });
    register_op(std::move(e));
    OpEntry sv{"ScatterValue", {{"dim1", {in({2, 5}), index(distinct_rows(2, 4, 5, 8), {2, 4})}, [](auto& v) { return scatter(v[0], 1, v[1], 2.5); }}}, kExact};
    sv.golden = torch_golden("scatter_value", 1, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      const double value = c.scalars()[0];
      check_torch(c, {"input", "index"}, [&](auto& in) { return scatter(in["input"], d, in["index"], value); });
    });
    register_op(std::move(sv));
  }
  {
    OpEntry e{"ScatterAdd",
              {{"duplicates", {in({2, 4}), index({0, 0, 2, 0, 1, 3, 1, 1}, {2, 4}), in({2, 4})},
                [](auto& v) { return scatter_add(v[0], 1, v[1], v[2]); }, kNumeric},
               {"threaded_dim0_200x300", {in({50, 300}), idx({200, 300}, 50, 11), in({200, 300})},
                [](auto& v) { return scatter_add(v[0], 0, v[1], v[2]); }, kFloats, false},
               {"reduce_add_in_place", {in({3, 4}).no_grad(), idx({3, 6}, 4, 12), in({3, 6}).no_grad()},
                [](auto& v) { Tensor t = v[0].clone(); t.scatter_add_(1, v[1], v[2]); return add(t, scatter(v[0], 1, v[1], v[2], "add")); },
                kNumeric, false}},
              kReduceTol};
    e.golden = torch_golden("scatter_add", 2, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input", "index", "src"}, [d](auto& in) { return scatter_add(in["input"], d, in["index"], in["src"]); });
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"IndexSelect",
              {{"dim1_repeats", {in({3, 4, 2}), index({3, 0, 3, 1, 1})}, [](auto& v) { return index_select(v[0], 1, v[1]); }, kNumeric},
               {"dim0_transposed", {in({3, 4}).as(t2), index({2, 2, 0})}, [](auto& v) { return index_select(v[0], 0, v[1]); }},
               {"zero_d_index", {in({3, 4}), index({2}).as(zero_d)}, [](auto& v) { return index_select(v[0], 1, v[1]); }}},
              kExact};
    e.golden = torch_golden("index_select", 2, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      check_torch(c, {"input", "index"}, [d](auto& in) { return index_select(in["input"], d, in["index"]); });
    });
    register_op(std::move(e));
    OpEntry a{"IndexAdd",
              {{"dim0_alpha", {in({4, 3}), index({1, 3, 1, 0, 1}), in({5, 3})}, [](auto& v) { return index_add(v[0], 0, v[1], v[2], -1.5); }},
               {"dim1_ints", {in({2, 4}), index({3, 3, 0}), in({2, 3})}, [](auto& v) { return index_add(v[0], 1, v[1], v[2]); }, kNumeric, false}},
              kReduceTol};
    a.golden = torch_golden("index_add", 1, [](const GoldenCase& c) {
      const int64_t d = c.params()[0];
      const double alpha = c.scalars()[0];
      check_torch(c, {"input", "index", "source"}, [&](auto& in) { return index_add(in["input"], d, in["index"], in["source"], alpha); });
    });
    register_op(std::move(a));
  }
  {
    OpEntry e{"MaskedFill",
              {{"scalar_broadcast", {in({3, 4}), mask({4})}, [](auto& v) { return masked_fill(v[0], v[1], -4.5); }, kNumericNoBool},
               {"tensor_value", {in({3, 4}), mask({3, 4}), in({})}, [](auto& v) { return masked_fill(v[0], v[1], v[2]); }},
               {"in_place_tensor_value", {in({4, 3}).as(t2).no_grad(), mask({3, 1}), in({}).no_grad()},
                [](auto& v) { Tensor t = v[0].clone(); t.masked_fill_(v[1], v[2]); return t; }, kNumeric, false}},
              kReduceTol};  // the value's gradient is a sum
    e.golden = torch_golden("masked_fill", 2, [](const GoldenCase& c) {
      if (c.has("value"))
        return check_torch(c, {"input", "mask", "value"}, [](auto& in) { return masked_fill(in["input"], in["mask"], in["value"]); }, {"mask"});
      const double value = c.scalars()[0];
      check_torch(c, {"input", "mask"}, [value](auto& in) { return masked_fill(in["input"], in["mask"], value); }, {"mask"});
    });
    register_op(std::move(e));
    OpEntry s{"MaskedSelect",
              {{"broadcast", {in({3, 1}), mask({3, 4})}, [](auto& v) { return masked_select(v[0], v[1]); }, kNumeric},
               {"transposed", {in({5, 4}).as(t2), mask({4, 5})}, [](auto& v) { return masked_select(v[0], v[1]); }}},
              kExact};
    s.golden = torch_golden("masked_select", 1, [](const GoldenCase& c) {
      check_torch(c, {"input", "mask"}, [](auto& in) { return masked_select(in["input"], in["mask"]); }, {"mask"});
    });
    register_op(std::move(s));
    OpEntry n{"Nonzero",
              {{"3d", {in({2, 3, 4}).ints(0, 2)}, [](auto& v) { return nonzero(v[0]); }, kNumeric, false},
               {"nans", {in({9}).nans(4).ints(-1, 2)}, [](auto& v) { return nonzero(v[0]); }, kFloats, false},
               {"permuted_40000", {in({200, 200}).ints(0, 2).as(t2)}, [](auto& v) { return nonzero(v[0]); }, kFloats, false}},
              kExact};
    no_gradients(n);
    n.golden = torch_golden("nonzero", 2, [](const GoldenCase& c) { check_torch(c, {"input"}, [](auto& in) { return nonzero(in["input"]); }); });
    register_op(std::move(n));
  }
  {
    // Python's t[...] (ember::index): index tensors, masks and full slices (undefined tensors).
    const Tensor none;
    OpEntry e{"Index",
              {{"one_dim_negative", {in({3, 4, 5}), index({2, -1, 0, 2})}, [](auto& v) { return ember::index(v[0], {v[1]}); }, kNumeric},
               {"middle_dim", {in({3, 4, 5}), index({3, 0, -4, 1}, {2, 2})}, [](auto& v) { return ember::index(v[0], {Tensor(), v[1]}); }},
               {"adjacent_pair_broadcast", {in({3, 4, 5}), index({0, 3, 3}), index({4, 0}, {2, 1})},
                [](auto& v) { return ember::index(v[0], {Tensor(), v[1], v[2]}); }},
               {"separated_pair", {in({3, 4, 5}), index({2, 0, 1}), index({4, 4, -5})},
                [](auto& v) { return ember::index(v[0], {v[1], Tensor(), v[2]}); }},
               {"mask_2d", {in({3, 4, 5}), mask({3, 4})}, [](auto& v) { return ember::index(v[0], {v[1]}); }, kNumeric},
               {"mask_after_slice_transposed", {in({5, 4, 3}).as([](const Tensor& t) { return t.permute({2, 1, 0}); }), mask({4})},
                [](auto& v) { return ember::index(v[0], {Tensor(), v[1]}); }},
               {"int32_index", {in({6}), index({5, 0, 5}).as([](const Tensor& t) { return t.to(DType::Int32); })}, [](auto& v) { return ember::index(v[0], {v[1]}); }}},
              kExact};
    e.golden = torch_golden("index", 6, [](const GoldenCase& c) {
      const auto codes = c.params();
      std::vector<std::string> names{"input"};
      std::set<std::string> bools;
      for (const auto& n : golden_index_names(codes)) {
        names.push_back(n);
        if (n[0] == 'm') bools.insert(n);
      }
      check_torch(c, names, [&](auto& in) { return ember::index(in["input"], golden_indices(in, codes)); }, bools);
    });
    register_op(std::move(e));
  }
  {
    OpEntry e{"IndexPut",
              {{"pair", {in({3, 4, 2}), index({2, 0, 1}), index({1, 3, -1}), in({3, 2})},
                [](auto& v) { return index_put(v[0], {v[1], v[2]}, v[3]); }, kNumeric},
               {"accumulate_repeats", {in({4, 3}), index({1, 3, 1, 1}), in({4, 3})},
                [](auto& v) { return index_put(v[0], {v[1]}, v[2], true); }, kNumeric},
               {"mask_broadcast_value", {in({3, 4}), mask({3, 4}), in({1})}, [](auto& v) { return index_put(v[0], {v[1]}, v[2]); }},
               {"separated_slices", {in({3, 2, 4}), index({0, 2}), index({3, 1}), in({2, 2})},
                [](auto& v) { return index_put(v[0], {v[1], Tensor(), v[2]}, v[3]); }},
               {"in_place_mask_scalar", {in({3, 4}).no_grad(), mask({3, 4}), in({}).no_grad()},
                [](auto& v) { Tensor t = v[0].clone(); t.index_put_({v[1]}, v[2]); return t; }, kNumeric, false},
               {"in_place_accumulate", {in({4, 3}).no_grad(), index({1, 3, 1}), in({3}).no_grad()},
                [](auto& v) { Tensor t = v[0].clone(); t.index_put_({v[1]}, v[2], true); return t; }, kNumeric, false}},
              kReduceTol};
    e.golden = torch_golden("index_put", 4, [](const GoldenCase& c) {
      const auto p = c.params();
      const std::vector<int64_t> codes = tail(p, 1);
      std::vector<std::string> names{"input"};
      std::set<std::string> bools;
      for (const auto& n : golden_index_names(codes)) {
        names.push_back(n);
        if (n[0] == 'm') bools.insert(n);
      }
      names.push_back("values");
      check_torch(c, names, [&](auto& in) { return index_put(in["input"], golden_indices(in, codes), in["values"], p[0] != 0); }, bools);
    });
    register_op(std::move(e));
  }
}

const bool registered = [] {
  register_math();
  register_reductions();
  register_shape();
  register_indexing();
  return true;
}();

}  // namespace
}  // namespace ember::test::ops

// The checks the op harness runs for each table entry (harness.h): parity of every backend against
// the reference kernels with sentinel-filled outputs, float64 finite-difference gradients, PyTorch's
// golden values; and the registration of those checks as GoogleTest tests named Ops/<Op>.<Check>.
#include "harness/harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>

#include "golden/golden_file.h"
#include "golden/golden_tensor.h"
#include "support/gradcheck.h"
#include "support/compare.h"
#include "harness/backend_adapter.h"
#include "support/test_data.h"

namespace ember::test::ops {

Input in(Shape stored) {
  Input i;
  i.stored = std::move(stored);
  return i;
}
Input index(std::vector<int64_t> values, Shape shape) {
  Input i;
  i.stored = shape.empty() ? Shape{int64_t(values.size())} : std::move(shape);
  i.values = Values::Fixed;
  i.fixed = std::move(values);
  i.grad = false;
  i.dtype = DType::Int64;
  return i;
}
Input mask(Shape stored) {
  Input i;
  i.stored = std::move(stored);
  i.values = Values::Bools;
  i.grad = false;
  i.dtype = DType::Bool;
  return i;
}

double Tolerance::of(DType dt) const {
  switch (dt) {
    case DType::Float32: return f32;
    case DType::Float64: return f64;
    case DType::BFloat16: return bf16;
    case DType::Float16: return f16;
    default: return exact_ints;
  }
}

namespace {

TensorOptions g_here{};

// A deterministic seed per (entry, case, input).
uint64_t seed_of(const std::string& where, size_t i) { return std::hash<std::string>{}(where) * 31 + i + 1; }

DType dtype_of(const Input& in, DType case_dt) { return in.dtype.value_or(case_dt); }

// The stored (contiguous) values of an input, on the CPU.
Tensor make_stored(const Input& in, DType case_dt, uint64_t seed) {
  const DType dt = dtype_of(in, case_dt);
  Generator g(seed);
  const TensorOptions f64{.dtype = DType::Float64};
  auto ints = [&](double lo, double hi) {
    if (dt == DType::UInt8) lo = std::max(lo, 0.0);
    if (dt == DType::Bool) lo = 0, hi = 2;
    return randint(int64_t(std::ceil(lo)), int64_t(std::ceil(hi)), in.stored, {.dtype = DType::Int64}, &g).to(DType::Float64);
  };
  // An empty input has no values to draw (and randn of a shape holding a 0 trips an internal
  // assert in the CPU random kernel: src/cpu/elementwise.cpp, reported).
  if (shape_numel(in.stored) == 0) return zeros(in.stored, {.dtype = dt});
  Tensor t;
  switch (in.values) {
    case Values::Fixed: return tensor(in.fixed, in.stored);
    case Values::Bools: return randint(0, 2, in.stored, {.dtype = DType::Int64}, &g).to(DType::Bool);
    case Values::Ints: t = ints(in.lo, in.hi); break;
    case Values::Normal: t = is_floating(dt) ? randn(in.stored, f64, &g) : ints(in.lo, in.hi); break;
    case Values::Uniform:
      t = is_floating(dt) ? add(mul(rand(in.stored, f64, &g), in.hi - in.lo), in.lo) : ints(in.lo, in.hi);
      break;
    case Values::Distinct:
      t = mul(randperm(shape_numel(in.stored), &g).to(DType::Float64), 0.1).reshape(in.stored);
      break;
  }
  if (in.nan_every > 0 && is_floating(dt)) {
    t = t.contiguous();
    double* p = t.data_ptr<double>();
    for (int64_t i = 0; i < t.numel(); i += in.nan_every) p[i] = std::nan("");
  }
  return t.to(dt).contiguous();
}

bool differentiable(const Input& in, DType case_dt) { return in.grad && is_floating(dtype_of(in, case_dt)); }

// What one run of a case produced, on the CPU: named tensors in a fixed order.
struct Outcome {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::set<std::string> kernels;
};

Tensor to_cpu(const Tensor& t) { return t.defined() ? t.detach().to(Device::cpu()) : t; }

// Runs the case on a backend: the op without autograd (inference paths), then with it and the
// gradient of every differentiable input for a seeded grad_output; also records the non-
// differentiable floating inputs afterwards (ops that update them in place, as batch_norm's stats).
Outcome run_case(const std::string& where, const Case& c, DType dt, const Backend& be, bool contiguous_views) {
  BackendScope scope(be);
  const bool lowered = c.autocast && is_half(dt);  // float32 tensors, the op under autocast
  if (lowered) dt = DType::Float32;
  g_here = {.dtype = dt, .device = be.device};
  std::vector<Tensor> leaves, views, grad_leaves;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Input& in = c.inputs[i];
    Tensor leaf = make_stored(in, dt, seed_of(where, i)).to(be.device);
    if (differentiable(in, dt)) {
      leaf.requires_grad_(true);
      grad_leaves.push_back(leaf);
    }
    leaves.push_back(leaf);
    Tensor v = in.view ? in.view(leaf) : leaf;
    views.push_back(contiguous_views ? v.contiguous() : v);
  }
  Outcome o;
  {
    NoGradGuard g;
    autocast ac(DeviceType::CPU, DType::BFloat16, lowered);
    o.tensors.emplace_back("output (no autograd)", to_cpu(c.fn(views)));
  }
  Tensor out;
  {
    autocast ac(DeviceType::CPU, DType::BFloat16, lowered);  // backward runs outside, as PyTorch's
    out = c.fn(views);
  }
  o.tensors.emplace_back("output", to_cpu(out));
  if (!grad_leaves.empty() && out.requires_grad()) {
    Generator g(seed_of(where, 999));
    Tensor go = randn(out.sizes(), {.dtype = DType::Float64}, &g).to(be.device, dt);
    auto grads = autograd::grad({out}, grad_leaves, {go});
    size_t k = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (differentiable(c.inputs[i], dt)) o.tensors.emplace_back("grad of input " + std::to_string(i), to_cpu(grads[k++]));
  }
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!differentiable(c.inputs[i], dt) && is_floating(leaves[i].dtype()))
      o.tensors.emplace_back("input " + std::to_string(i) + " after the op", to_cpu(leaves[i]));
  o.kernels = scope.kernels_called();
  g_here = {};
  return o;
}

// The reference must not hold its own sentinel: a reference kernel that skipped an element.
::testing::AssertionResult same(const Tensor& want, const Tensor& got, double tol, bool may_be_zero) {
  if (want.defined() && is_floating(want.dtype()))
    for (double v : want.to_vector<double>())
      if (std::isfinite(v) && std::abs(v) >= 1e29)
        return ::testing::AssertionFailure() << "the reference left its sentinel " << v << " in an element";
  return close(want, got, tol, may_be_zero);
}

void expect_same(const Outcome& want, const Outcome& got, double tol, bool may_be_zero, const std::string& what) {
  ASSERT_EQ(want.tensors.size(), got.tensors.size()) << what;
  for (size_t i = 0; i < want.tensors.size(); ++i)
    EXPECT_TRUE(same(want.tensors[i].second, got.tensors[i].second, tol, may_be_zero))
        << what << ", " << want.tensors[i].first;
}

std::string where_of(const OpEntry& e, const Case& c) { return e.name + "/" + c.label; }
std::string trace(const OpEntry& e, const Case& c, DType dt) {
  return e.name + " case '" + c.label + "' " + std::string(dtype_name(dt));
}

}  // namespace

// Every backend in `backends` against the reference kernels, per case and dtype.
void check_parity(const OpEntry& e, const std::vector<Backend>& backends) {
  for (const Case& c : e.cases)
    for (DType dt : c.dtypes) {
      SCOPED_TRACE(trace(e, c, dt));
      const double tol = c.tol.value_or(e.tol).of(dt);
      const Outcome ref = run_case(where_of(e, c), c, dt, reference_backend(), false);
      for (const Backend& be : backends) {
        if (c.autocast && is_half(dt) && !be.device.is_cpu()) continue;  // autocast is CPU-only today
        // An alternative kernel set is run only for the cases that reach one of its kernels.
        bool relevant = be.overrides.empty();
        for (const auto& k : be.overrides) relevant = relevant || ref.kernels.count(k);
        if (!relevant) continue;
        const Outcome got = run_case(where_of(e, c), c, dt, be, false);
        expect_same(ref, got, tol, c.may_be_zero, "backend " + be.name);
      }
      if (e.formula && c.inputs.size() == 1 && is_floating(dt)) {
        // The op's formula, element by element, in float64 on the (viewed) input values.
        const Input& in = c.inputs[0];
        Tensor x = make_stored(in, dt, seed_of(where_of(e, c), 0));
        x = in.view ? in.view(x) : x;
        const Tensor& out = ref.tensors[1].second;  // "output"
        if (out.sizes() == x.sizes()) {  // element-wise cases only
          std::vector<double> v = x.contiguous().to_vector<double>();
          for (double& d : v) d = e.formula(d);
          EXPECT_TRUE(close(tensor(v, out.sizes()).to(dt), out, tol)) << "the reference against " << e.name << "'s formula";
        }
      }
      // The same op on contiguous copies of its (viewed) inputs gives the same values.
      bool has_view = false;
      for (const auto& in : c.inputs) has_view = has_view || bool(in.view);
      if (has_view && !backends.empty() && !(c.autocast && is_half(dt) && !backends.front().device.is_cpu())) {
        const Outcome flat = run_case(where_of(e, c), c, dt, backends.front(), true);
        expect_same(ref, flat, tol, c.may_be_zero, "backend " + backends.front().name + " on contiguous inputs");
      }
    }
}

void check_gradients(const OpEntry& e) {
  int checked = 0;
  for (const Case& c : e.cases) {
    if (!c.gradcheck) continue;
    SCOPED_TRACE(trace(e, c, DType::Float64));
    std::vector<Tensor> all, leaves;
    std::vector<int> leaf_of;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      Tensor t = make_stored(c.inputs[i], DType::Float64, seed_of(where_of(e, c), i));
      const bool d = differentiable(c.inputs[i], DType::Float64);
      if (d) {
        t.requires_grad_(true);
        leaves.push_back(t);
      }
      leaf_of.push_back(d ? int(leaves.size()) - 1 : -1);
      all.push_back(t);
    }
    if (leaves.empty()) continue;
    auto f = [&](const std::vector<Tensor>& ls) {
      std::vector<Tensor> v;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        Tensor t = leaf_of[i] >= 0 ? ls[size_t(leaf_of[i])] : all[i];
        v.push_back(c.inputs[i].view ? c.inputs[i].view(t) : t);
      }
      return c.fn(v);
    };
    g_here = {.dtype = DType::Float64};
    EXPECT_TRUE(gradcheck(f, leaves, {.eps = c.eps}));
    g_here = {};
    ++checked;
  }
  EXPECT_GT(checked, 0) << e.name << " has no differentiable case";
}


namespace {
// Each golden file read once (tests run on one thread).
const GoldenFile& golden_file(const std::string& file) {
  static std::map<std::string, std::unique_ptr<GoldenFile>> files;
  auto& f = files[file];
  if (!f) f = std::make_unique<GoldenFile>(ember::test::data_path(file));
  return *f;
}
}  // namespace

void check_golden(const Golden& gold) {
  std::set<std::string> names;
  for (const auto& n : golden_file(gold.file).names_with_prefix(gold.op + "/")) {
    std::string rest = n.substr(gold.op.size() + 1);
    names.insert(rest.substr(0, rest.find('/')));
  }
  ASSERT_FALSE(names.empty()) << "no case of '" << gold.op << "' in " << gold.file;
  if (gold.expected_cases) {
    EXPECT_EQ(names.size(), gold.expected_cases) << gold.op;
  }
  BackendScope scope(cpu_backends().front());
  for (const auto& n : names) {
    SCOPED_TRACE(gold.op + "/" + n);
    gold.run(GoldenCase(gold.op + "/" + n + "/", gold.file));
  }
}

namespace {

// A test whose body is a function.
class FnTest : public ::testing::Test {
 public:
  explicit FnTest(std::function<void()> f) : f_(std::move(f)) {}
  void TestBody() override { f_(); }

 private:
  std::function<void()> f_;
};

void add_test(const std::string& suite, const std::string& name, std::function<void()> body) {
  ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [body]() -> ::testing::Test* { return new FnTest(body); });
}

}  // namespace

TensorOptions here() { return g_here; }

// ---- golden cases -------------------------------------------------------------------------------
bool GoldenCase::has(const std::string& k) const { return golden_file(file_).has(prefix_ + k); }
Tensor GoldenCase::get(const std::string& k) const { return to_tensor(golden_file(file_).get(prefix_ + k)); }
std::vector<int64_t> GoldenCase::params() const { return golden_file(file_).get(prefix_ + "params").as_int64(); }
std::vector<double> GoldenCase::scalars() const { return golden_file(file_).get(prefix_ + "scalars").as_double(); }

void GoldenCase::expect_close(const Tensor& got, const std::string& key) const {
  EXPECT_TRUE(close_each(get(key), got, 1e-10)) << prefix_ << key << " against PyTorch";
}

void GoldenCase::check(const std::vector<std::string>& leaves,
                       const std::function<Tensor(std::map<std::string, Tensor>&)>& f) const {
  std::map<std::string, Tensor> in;
  for (const auto& k : leaves) in[k] = get(k).requires_grad_(true);
  Tensor out = f(in);
  expect_close(out, "output");
  std::vector<Tensor> xs;
  for (const auto& k : leaves) xs.push_back(in[k]);
  auto grads = autograd::grad({out}, xs, {get("grad_output")});
  for (size_t i = 0; i < leaves.size(); ++i) expect_close(grads[i], "grad_" + leaves[i]);
}

// ---- registration -------------------------------------------------------------------------------
namespace {
std::vector<std::shared_ptr<const OpEntry>>& op_registry() {
  static std::vector<std::shared_ptr<const OpEntry>> all;
  return all;
}
}  // namespace

const std::vector<std::shared_ptr<const OpEntry>>& registered_ops() { return op_registry(); }

std::set<std::string> kernels_reached(const OpEntry& e) {
  std::set<std::string> out;
  for (const Case& c : e.cases) {
    const DType dt = c.dtypes.front();
    const Outcome o = run_case(where_of(e, c), c, dt, cpu_backends().front(), false);
    out.insert(o.kernels.begin(), o.kernels.end());
  }
  return out;
}

bool register_op(OpEntry entry) {
  auto e = std::make_shared<const OpEntry>(std::move(entry));
  op_registry().push_back(e);
  const std::string suite = "Ops/" + e->name;
  add_test(suite, "Parity", [e] { check_parity(*e, cpu_backends()); });
  add_test(suite, "Parity_CUDA", [e] {
    std::string why;
    Backend gpu = cuda_backend(&why);
    if (gpu.name.empty()) {
      GTEST_SKIP() << why;
    }
    check_parity(*e, {gpu});
  });
  bool any_grad = false;
  for (const Case& c : e->cases)
    for (const Input& in : c.inputs) any_grad = any_grad || (c.gradcheck && differentiable(in, DType::Float64));
  if (any_grad) add_test(suite, "Gradcheck", [e] { check_gradients(*e); });
  if (e->golden) add_test(suite, "Golden", [e] { check_golden(*e->golden); });
  return true;
}

}  // namespace ember::test::ops

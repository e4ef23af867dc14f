// The table-driven op harness (in the spirit of ggml's test-backend-ops): each op is one OpEntry
// listing its cases (input shapes, views, values, attributes) and tolerances; register_op() turns it
// into the tests Ops/<Name>.Parity (every CPU backend against the reference kernels), .Parity_CUDA,
// .Gradcheck (float64 finite differences) and .Golden (PyTorch's values from golden/ops_v1.bin).
#pragma once

#include <ember/ember.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ember::test::ops {

// How an input's values are drawn (all seeded). Integer dtypes draw integers in [lo, hi).
enum class Values {
  Normal,    // N(0, 1)
  Uniform,   // U[lo, hi)
  Distinct,  // a shuffled 0.1 * (0..n-1): far apart, so max-pool never meets a tie
  Ints,      // integers in [lo, hi), held in the case's dtype (ties on purpose)
  Fixed,     // the given int64 values (class targets)
  Bools,     // a random Bool mask
};

// One input of a case: the stored leaf (its shape, values, dtype) and the view an op sees.
struct Input {
  Shape stored;
  Values values = Values::Normal;
  double lo = -3, hi = 4;
  std::vector<int64_t> fixed;
  std::function<Tensor(const Tensor&)> view;  // permute/transpose/slice/expand; null: as stored
  bool grad = true;                           // differentiated (floating dtypes only)
  int nan_every = 0;                          // every n-th stored element set to NaN
  std::optional<DType> dtype;                 // fixed dtype (else the case's dtype)

  Input& uniform(double l, double h) { values = Values::Uniform; lo = l; hi = h; return *this; }
  Input& distinct() { values = Values::Distinct; return *this; }
  Input& ints(double l, double h) { values = Values::Ints; lo = l; hi = h; return *this; }
  Input& as(std::function<Tensor(const Tensor&)> f) { view = std::move(f); return *this; }
  Input& no_grad() { grad = false; return *this; }
  Input& nans(int every) { nan_every = every; return *this; }
  Input& of(DType d) { dtype = d; return *this; }
};
Input in(Shape stored);                                  // N(0, 1), differentiated
Input index(std::vector<int64_t> values, Shape shape = {});  // int64 targets, fixed
Input mask(Shape stored);                                // a Bool mask

// Largest allowed |got - want| / max(1, max |want|) per dtype (0 = exact). The bf16/f16 slots are for
// the mixed-precision kernels.
struct Tolerance {
  double f32 = 1e-5, f64 = 1e-12, bf16 = 1e-2, f16 = 2e-3, exact_ints = 0;
  double of(DType dt) const;
};

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  std::string label;
  std::vector<Input> inputs;
  OpFn fn;                                 // the op on the (viewed) inputs
  std::vector<DType> dtypes = {DType::Float32, DType::Float64};  // parity dtypes
  bool gradcheck = true;
  double eps = 1e-6;                       // finite-difference step (keep it below the gap to a kink)
  bool may_be_zero = false;                // the output may legitimately be all zero (dropout p = 1)
  std::optional<Tolerance> tol;            // overrides the entry's
  // Mixed precision: a BFloat16 in `dtypes` runs float32 inputs under ember::autocast (the op
  // multiplies in bf16), compared with the reference kernels' bf16-rounded float32 (tol.bf16).
  bool autocast = false;
};

// The options (dtype, device) of the run in progress: creation ops in a table use them.
TensorOptions here();

// One recorded PyTorch case under "<op>/<case>/" of a golden file (golden/ops_v1.bin by default).
class GoldenCase {
 public:
  explicit GoldenCase(std::string prefix, std::string file = "golden/ops_v1.bin")
      : prefix_(std::move(prefix)), file_(std::move(file)) {}
  bool has(const std::string& k) const;
  Tensor get(const std::string& k) const;
  std::vector<int64_t> params() const;
  std::vector<double> scalars() const;
  // Runs f on the named leaves; checks the output and grad_<leaf> of each, seeded with grad_output.
  void check(const std::vector<std::string>& leaves, const std::function<Tensor(std::map<std::string, Tensor>&)>& f) const;
  void expect_close(const Tensor& got, const std::string& key) const;  // against a recorded tensor
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
  std::string file_;
};

struct Golden {
  std::string op;                                  // prefix in the golden file
  size_t expected_cases = 0;                       // 0: any number >= 1
  std::function<void(const GoldenCase&)> run;
  std::string file = "golden/ops_v1.bin";          // under tests/: which golden file holds the cases
};

struct OpEntry {
  std::string name;  // suite Ops/<name>
  std::vector<Case> cases;
  Tolerance tol;
  std::optional<Golden> golden;
  // For element-wise ops of one input without a reference kernel of their own: the plain formula
  // of one element (in float64), checked against the reference run of the floating dtypes.
  std::function<double(double)> formula;
};

// Registers the entry's tests with GoogleTest (call from a static initialiser).
bool register_op(OpEntry entry);

struct Backend;
// Every entry register_op() has seen.
const std::vector<std::shared_ptr<const OpEntry>>& registered_ops();
// The kernel slots the entry's cases reach on the registered CPU kernels (float32 where listed).
std::set<std::string> kernels_reached(const OpEntry& e);
// The checks behind those tests (the harness's own tests call them on broken ops and backends).
void check_parity(const OpEntry& e, const std::vector<Backend>& backends);
void check_gradients(const OpEntry& e);
void check_golden(const Golden& gold);

}  // namespace ember::test::ops

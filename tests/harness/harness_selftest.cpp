// The harness's own tests: each check must fail on what it exists to catch — a kernel that writes
// nothing (sentinels), a kernel that is slightly wrong, a wrong gradient (finite differences), a
// wrong op against PyTorch's values (golden) — and pass on the real ones.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "harness/backend_adapter.h"
#include "harness/harness.h"

namespace ember::test::ops {
namespace {

// The failures f reports (intercepted: they do not fail the test that runs f).
template <class F>
std::vector<std::string> failures_of(F&& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i)
    if (results.GetTestPartResult(i).failed()) out.push_back(results.GetTestPartResult(i).message());
  return out;
}

// At least one failure, and one of them mentions `piece`.
::testing::AssertionResult fails_with(const std::vector<std::string>& failures, const std::string& piece) {
  if (failures.empty()) return ::testing::AssertionFailure() << "no failure reported";
  for (const auto& m : failures)
    if (m.find(piece) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures.size() << " failures, none mentions '" << piece << "'; first: " << failures[0];
}

OpEntry exp_entry() {
  return {"Exp", {{"3x5", {in({3, 5})}, [](auto& v) { return exp(v[0]); }, {DType::Float32, DType::Float64}}}, {2e-6, 1e-12}};
}

TEST(OpsHarness, ParityPassesOnTheRegisteredKernels) { check_parity(exp_entry(), cpu_backends()); }

TEST(OpsHarness, ParityCatchesAKernelThatWritesNothing) {
  EXPECT_TRUE(fails_with(failures_of([] { check_parity(exp_entry(), {broken_backend("unary-writes-nothing")}); }),
                         "backend selftest:unary-writes-nothing"));
}

TEST(OpsHarness, ParityCatchesAKernelThatIsSlightlyWrong) {
  EXPECT_TRUE(fails_with(failures_of([] { check_parity(exp_entry(), {broken_backend("unary-off-by-1e-3")}); }), "tolerance"));
}

TEST(OpsHarness, FormulaCatchesAReferenceThatDisagrees) {
  OpEntry e = exp_entry();
  e.formula = [](double x) { return std::exp(x); };
  check_parity(e, {});
  e.formula = [](double x) { return std::exp(x) * 1.001; };
  EXPECT_TRUE(fails_with(failures_of([&] { check_parity(e, {}); }), "formula"));
}

TEST(OpsHarness, GradcheckCatchesAWrongGradient) {
  // x * detach(x): the value of x^2, the gradient x instead of 2x.
  OpEntry wrong{"WrongSquare", {{"3x4", {in({3, 4})}, [](auto& v) { return mul(v[0], v[0].detach()); }}}};
  EXPECT_TRUE(fails_with(failures_of([&] { check_gradients(wrong); }), "analytic"));
  OpEntry right{"Square", {{"3x4", {in({3, 4})}, [](auto& v) { return mul(v[0], v[0]); }}}};
  check_gradients(right);
}

TEST(OpsHarness, GoldenCatchesADifferentOp) {
  // gelu's recorded cases, answered by tanh.
  Golden g{"gelu", 0, [](const GoldenCase& c) { c.check({"input"}, [](auto& in) { return tanh(in["input"]); }); }};
  EXPECT_TRUE(fails_with(failures_of([&] { check_golden(g); }), "against PyTorch"));
}

// Nothing lost as kernels are added: every kernel slot is reached by some entry of the table on
// the registered CPU kernels (and so checked against its reference, and on CUDA).
TEST(OpsHarness, EveryKernelSlotIsReachedByTheTable) {
  std::set<std::string> reached;
  for (const auto& e : registered_ops()) {
    auto k = kernels_reached(*e);
    reached.insert(k.begin(), k.end());
  }
  for (const auto& slot : kernel_slots()) EXPECT_TRUE(reached.count(slot)) << "no table entry reaches kernel slot " << slot;
}

}  // namespace
}  // namespace ember::test::ops

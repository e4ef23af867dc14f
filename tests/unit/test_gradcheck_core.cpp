// Finite-difference gradient checks (float64) for the core ops: elementwise with broadcasting and
// non-contiguous inputs, reductions, views, matmul, shape ops.
#include "gradcheck.h"

using namespace ember;
using ember::test::gradcheck;
using ember::test::rand_leaf;

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

TEST(Gradcheck, BinaryBroadcasting) {
  Tensor a = rand_leaf({3, 4}, 1), b = rand_leaf({4}, 2), c = rand_leaf({3, 1}, 3, 0.5, 2.0);
  EXPECT_TRUE(gradcheck([](auto& v) { return add(v[0], v[1], 0.7); }, {a, b}));
  EXPECT_TRUE(gradcheck([](auto& v) { return sub(v[0], v[1]); }, {a, c}));
  EXPECT_TRUE(gradcheck([](auto& v) { return mul(v[0], v[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck([](auto& v) { return div(v[0], v[1]); }, {a, c}));
  EXPECT_TRUE(gradcheck([](auto& v) { return pow(v[1], v[0]); }, {a, c}));
  EXPECT_TRUE(gradcheck([](auto& v) { return maximum(v[0], v[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck([](auto& v) { return minimum(v[0], v[1]); }, {a, b}));
  Tensor cond = gt(a.detach(), 0.0);
  EXPECT_TRUE(gradcheck([cond](auto& v) { return where(cond, v[0], v[1]); }, {a, b}));
}

TEST(Gradcheck, NonContiguousInputs) {
  Tensor a = rand_leaf({4, 3}, 4), b = rand_leaf({3, 4}, 5);
  EXPECT_TRUE(gradcheck([](auto& v) { return mul(v[0].t(), v[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck([](auto& v) { return exp(v[0].slice(0, 0, 4, 2)); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return v[0].permute({1, 0}).reshape({12}); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return v[0].unsqueeze(1).expand({4, 2, 3}); }, {a}));
}

TEST(Gradcheck, Unary) {
  Tensor a = rand_leaf({2, 5}, 6);
  Tensor p = rand_leaf({2, 5}, 7, 0.3, 3.0);  // positive, away from 0
  for (auto [name, f] : std::vector<std::pair<const char*, Fn>>{
           {"neg", [](auto& v) { return neg(v[0]); }},
           {"exp", [](auto& v) { return exp(v[0]); }},
           {"gelu", [](auto& v) { return gelu(v[0]); }},
           {"sigmoid", [](auto& v) { return sigmoid(v[0]); }},
           {"tanh", [](auto& v) { return tanh(v[0]); }},
           {"mul_scalar", [](auto& v) { return v[0] * 3.0 + 1.0; }},
       })
    EXPECT_TRUE(gradcheck(f, {a})) << name;
  for (auto [name, f] : std::vector<std::pair<const char*, Fn>>{
           {"log", [](auto& v) { return log(v[0]); }},
           {"sqrt", [](auto& v) { return sqrt(v[0]); }},
           {"rsqrt", [](auto& v) { return rsqrt(v[0]); }},
           {"pow", [](auto& v) { return pow(v[0], 2.5); }},
           {"abs", [](auto& v) { return abs(v[0] - 5.0); }},
           {"relu", [](auto& v) { return relu(v[0] - 1.5); }},
           {"clamp", [](auto& v) { return clamp(v[0], 0.6, 2.2); }},
           {"rdiv", [](auto& v) { return 2.0 / v[0]; }},
       })
    EXPECT_TRUE(gradcheck(f, {p})) << name;
}

TEST(Gradcheck, Reductions) {
  Tensor a = rand_leaf({3, 4, 5}, 8);
  EXPECT_TRUE(gradcheck([](auto& v) { return sum(v[0]); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return sum(v[0], {0, 2}); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return mean(v[0], {1}, true); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return amax(v[0], {2}); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return amin(v[0], {0}); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return var(v[0], {1}); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return ember::std(v[0], {0, 1}, 0); }, {a}));
}

TEST(Gradcheck, Matmul) {
  Tensor a = rand_leaf({2, 1, 3, 4}, 9), b = rand_leaf({5, 4, 2}, 10);
  EXPECT_TRUE(gradcheck([](auto& v) { return matmul(v[0], v[1]); }, {a, b}));
  Tensor m = rand_leaf({3, 4}, 11), n = rand_leaf({4, 6}, 12), x = rand_leaf({4}, 13);
  EXPECT_TRUE(gradcheck([](auto& v) { return matmul(v[0], v[1]); }, {m, n}));
  EXPECT_TRUE(gradcheck([](auto& v) { return matmul(v[0], v[1]); }, {m, x}));
  EXPECT_TRUE(gradcheck([](auto& v) { return matmul(v[1], v[0]); }, {n, x}));
  EXPECT_TRUE(gradcheck([](auto& v) { return matmul(v[0].t(), v[1].t()); }, {n, m}));
  Tensor w = rand_leaf({6, 4}, 14), bias = rand_leaf({6}, 15), xin = rand_leaf({2, 3, 4}, 16);
  EXPECT_TRUE(gradcheck([](auto& v) { return linear(v[0], v[1], v[2]); }, {xin, w, bias}));
}

TEST(Gradcheck, ShapeOps) {
  Tensor a = rand_leaf({2, 3}, 17), b = rand_leaf({2, 2}, 18);
  EXPECT_TRUE(gradcheck([](auto& v) { return cat({v[0], v[1]}, 1); }, {a, b}));
  EXPECT_TRUE(gradcheck([](auto& v) { return stack({v[0], v[0] * 2.0}, 0); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return pad(v[0], {1, 2, 0, 1}, 0.5); }, {a}));
  EXPECT_TRUE(gradcheck([](auto& v) { return v[0].flatten().narrow(0, 1, 4); }, {a}));
}

TEST(Autograd, GradAccumulatesAndUnusedInputsGetNone) {
  Tensor a = rand_leaf({3}, 20), b = rand_leaf({3}, 21);
  (a * 2.0).sum().backward();
  EXPECT_FALSE(b.grad().defined());
  Tensor g1 = a.grad().clone();
  (a * 2.0).sum().backward();
  EXPECT_TRUE(allclose(a.grad(), g1 * 2.0));
  // autograd::grad does not touch .grad
  auto g = autograd::grad({(a * b).sum()}, {a, b});
  EXPECT_TRUE(allclose(g[0], b.detach()));
  EXPECT_TRUE(allclose(a.grad(), g1 * 2.0));
}

TEST(Autograd, InPlaceAfterSaveIsDetected) {
  Tensor a = rand_leaf({3}, 22);
  Tensor h = a * 1.0;        // non-leaf without grad requirement after detach
  Tensor d = h.detach();
  Tensor y = mul(a, d);       // saves d
  d.add_(1.0);                // modifies saved tensor's storage
  EXPECT_THROW(y.sum().backward(), AutogradError);
}

// Random factories and in-place fills on the Philox stream (layout in generator.h).
#include <numeric>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"

namespace ember {

using kernels::RandomDist;

namespace {
Tensor& fill_random(Tensor& t, RandomDist dist, double p0, double p1, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  uint64_t n = uint64_t(t.numel());
  uint64_t offset = g.reserve(n);
  if (t.is_contiguous()) {
    kernels::random(t.device())(dist, t, g.seed(), offset, p0, p1);
  } else {
    Tensor tmp = empty(t.sizes(), {.dtype = t.dtype(), .device = t.device()});
    kernels::random(t.device())(dist, tmp, g.seed(), offset, p0, p1);
    NoGradGuard ng;
    t.copy_(tmp);
  }
  t.storage()->bump_version();
  return t;
}
Tensor make(Shape shape, TensorOptions opt, RandomDist dist, double p0, double p1, Generator* gen) {
  bool rg = opt.requires_grad;
  opt.requires_grad = false;
  Tensor t = empty(std::move(shape), opt);
  fill_random(t, dist, p0, p1, gen);
  if (rg) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor rand(Shape shape, TensorOptions opt, Generator* gen) {
  EMBER_CHECK(is_floating(opt.dtype), DTypeError, "rand: dtype must be floating point");
  return make(std::move(shape), opt, RandomDist::Uniform, 0.0, 1.0, gen);
}
Tensor randn(Shape shape, TensorOptions opt, Generator* gen) {
  EMBER_CHECK(is_floating(opt.dtype), DTypeError, "randn: dtype must be floating point");
  return make(std::move(shape), opt, RandomDist::Normal, 0.0, 1.0, gen);
}
Tensor randint(int64_t low, int64_t high, Shape shape, TensorOptions opt, Generator* gen) {
  EMBER_CHECK(high > low, ValueError, "randint: empty range [", low, ", ", high, ")");
  return make(std::move(shape), opt, RandomDist::RandInt, double(low), double(high), gen);
}
Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  EMBER_CHECK(low <= high, ValueError, "uniform_: low ", low, " > high ", high);
  return fill_random(t, RandomDist::Uniform, low, high, gen);
}
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  EMBER_CHECK(std >= 0, ValueError, "normal_: std must be >= 0, got ", std);
  return fill_random(t, RandomDist::Normal, mean, std, gen);
}
Tensor randperm(int64_t n, Generator* gen) {
  EMBER_CHECK(n >= 0, ValueError, "randperm: n must be >= 0, got ", n);
  Tensor words = randint(0, int64_t(1) << 32, {n}, {.dtype = DType::Int64}, gen);
  const int64_t* w = words.data_ptr<int64_t>();
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[uint64_t(w[i]) % uint64_t(i + 1)]);
  return tensor(p, {n});
}

}  // namespace ember

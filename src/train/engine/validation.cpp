// The seeded validation split of a training set (validation.h): held-out indices from a
// permutation, both parts copied in their original order.
#include "ember/train/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/ops.h"

namespace ember::train {
namespace {

// The rows `idx` of a contiguous CPU tensor (N, ...) as a new contiguous tensor.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& idx) {
  Tensor src = t.contiguous();
  Shape shape = src.sizes();
  shape[0] = int64_t(idx.size());
  Tensor out = empty(shape, {.dtype = src.dtype(), .device = src.device()});
  const size_t row = src.size(0) ? src.nbytes() / size_t(src.size(0)) : 0;
  const auto* s = static_cast<const char*>(src.raw_data());
  auto* d = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < idx.size(); ++i) std::memcpy(d + i * row, s + size_t(idx[i]) * row, row);
  return out;
}

data::Dataset with_rows(const data::Dataset& ds, const std::vector<int64_t>& idx) {
  data::Dataset out = ds;  // name, classes, mean and std
  if (ds.is_photos())
    out.photos = ds.photos->take(idx);
  else
    out.images = take_rows(ds.images, idx);
  out.labels = take_rows(ds.labels, idx);
  return out;
}

}  // namespace

int64_t validation_size(int64_t n, double fraction) {
  if (!(fraction >= 0.0 && fraction < 1.0))
    throw ValueError(fmt::format("the validation split must be in [0, 1), got {}", fraction),
                     "use e.g. 0.1 (a tenth of the training set), or 0 to select on the test set");
  if (fraction == 0.0 || n < 2) return 0;
  return std::clamp<int64_t>(int64_t(std::llround(fraction * double(n))), 1, n - 1);
}

TrainValSplit split_validation(const data::Dataset& train, double fraction, uint64_t seed) {
  const int64_t n = train.size();
  const int64_t k = validation_size(n, fraction);
  if (k == 0)
    throw ValueError(fmt::format("cannot hold out a validation split of {} from {} training samples", fraction, n),
                     "use more training samples, or --val-split 0");
  EMBER_CHECK(train.is_photos() || train.images.device().is_cpu(), DeviceError, "split_validation: the dataset must be on the CPU");
  Generator gen(seed ^ 0x76616c5f73706c69ull);  // "val_spli": a stream of its own
  std::vector<int64_t> perm = randperm(n, &gen).to_vector<int64_t>();
  std::vector<char> is_val(size_t(n), 0);
  for (int64_t i = 0; i < k; ++i) is_val[size_t(perm[size_t(i)])] = 1;
  std::vector<int64_t> tr, va;
  tr.reserve(size_t(n - k)), va.reserve(size_t(k));
  for (int64_t i = 0; i < n; ++i) (is_val[size_t(i)] ? va : tr).push_back(i);
  TrainValSplit split{with_rows(train, tr), with_rows(train, va)};
  split.val.recipe.train = false;  // photos: validation sees the evaluation transforms
  return split;
}

}  // namespace ember::train

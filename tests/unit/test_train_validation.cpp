// The validation split (validation.h): one split for every caller. It is seeded, stratified,
// disjoint, keeps the order, refuses bad fractions, and the C++ Fitter's FitOptions::val_split
// holds out exactly the samples `ember train --val-split` and ember.fit hold out (issue 44: the
// Fitter had a second, unstratified split with another seed).
#include <gtest/gtest.h>

#include <set>

#include "ember/core/error.h"
#include "ember/optim/optimizer.h"
#include "ember/train/fit.h"
#include "ember/train/validation.h"
#include "support/train_cases.h"

using namespace ember;
using namespace ember::train;

namespace {
// Sample ids: the dataset's images are distinct, so pixel rows identify samples.
std::vector<std::vector<uint8_t>> rows(const data::Dataset& d) {
  auto px = d.images.to_vector<uint8_t>();
  std::vector<std::vector<uint8_t>> out;
  for (int64_t i = 0; i < d.size(); ++i) out.emplace_back(px.begin() + i * 16, px.begin() + (i + 1) * 16);
  return out;
}
}  // namespace

TEST(TrainValidation, BadFractionsAreRefusedAndTinySetsHoldNothingOut) {
  const auto all = test::synthetic_dataset(100);
  EXPECT_THROW(validation_split(all, 1.0, 0), ValueError);
  EXPECT_THROW(validation_split(all, -0.1, 0), ValueError);
  EXPECT_EQ(validation_split(all, 0.0, 0).held_out.size(), 0);
  // One sample per class: none can be held out without emptying its class.
  const auto three = test::synthetic_dataset(3);
  const auto s = validation_split(three, 0.5, 0);
  EXPECT_EQ(s.held_out.size(), 0);
  EXPECT_EQ(s.kept.size(), 3);
}

TEST(TrainValidation, SplitIsStratifiedSeededDisjointAndKeepsTheOrder) {
  const auto all = test::synthetic_dataset(200);  // 3 classes of 67, 67 and 66
  const auto s = validation_split(all, 0.1, 42);
  EXPECT_EQ(s.held_out.size(), 21);  // llround(6.7) + llround(6.7) + llround(6.6)
  EXPECT_EQ(s.kept.size(), 179);
  EXPECT_EQ(s.kept.classes, all.classes);
  EXPECT_EQ(s.held_out.mean, all.mean);
  std::vector<int> per_class(3);
  for (int64_t l : s.held_out.labels.to_vector<int64_t>()) ++per_class[size_t(l)];
  EXPECT_EQ(per_class, (std::vector<int>{7, 7, 7}));
  const auto a = rows(all), t = rows(s.kept), v = rows(s.held_out);
  // Both parts are subsequences of the original: the order is kept.
  auto subsequence = [&](const std::vector<std::vector<uint8_t>>& part, std::vector<int64_t>& idx) {
    size_t j = 0;
    for (size_t i = 0; i < a.size() && j < part.size(); ++i)
      if (a[i] == part[j]) idx.push_back(int64_t(i)), ++j;
    return j == part.size();
  };
  std::vector<int64_t> ti, vi;
  EXPECT_TRUE(subsequence(t, ti));
  EXPECT_TRUE(subsequence(v, vi));
  std::set<int64_t> both(ti.begin(), ti.end());
  both.insert(vi.begin(), vi.end());
  EXPECT_EQ(both.size(), 200u);  // disjoint and covering
  EXPECT_EQ(rows(validation_split(all, 0.1, 42).held_out), v);  // same seed, same split
  EXPECT_NE(rows(validation_split(all, 0.1, 43).held_out), v);
}

TEST(TrainValidation, TheFittersSplitIsTheRunsSplit) {
  const auto train = test::synthetic_dataset(90), test_set = test::synthetic_dataset(12, 3, 9);
  auto model = test::tiny_mlp(3);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  FitOptions o = test::fit_options(16, 1, 1);
  o.val_split = 0.2, o.seed = 5;
  Fitter f(*model, opt, nullptr, false, train, test_set, o);
  const data::DatasetSplit run = validation_split(train, 0.2, 5);
  ASSERT_NE(f.val_set(), nullptr);
  EXPECT_EQ(rows(*f.val_set()), rows(run.held_out));
  EXPECT_EQ(rows(f.train_set()), rows(run.kept));
  EXPECT_EQ(f.val_set()->labels.to_vector<int64_t>(), run.held_out.labels.to_vector<int64_t>());
}

// The seeded validation split: sizes, disjoint parts that cover the set, the original order kept,
// the same split for the same seed, and bad fractions refused.
#include <gtest/gtest.h>

#include <set>

#include "ember/core/error.h"
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

TEST(TrainValidation, SizesAndBadFractions) {
  EXPECT_EQ(validation_size(100, 0.0), 0);
  EXPECT_EQ(validation_size(100, 0.1), 10);
  EXPECT_EQ(validation_size(3, 0.01), 1);
  EXPECT_EQ(validation_size(3, 0.99), 2);
  EXPECT_THROW(validation_size(100, 1.0), ValueError);
  EXPECT_THROW(validation_size(100, -0.1), ValueError);
  EXPECT_THROW(split_validation(test::synthetic_dataset(1, 1), 0.5, 0), ValueError);
}

TEST(TrainValidation, SplitIsSeededDisjointAndKeepsTheOrder) {
  const auto all = test::synthetic_dataset(200);
  const auto s = split_validation(all, 0.1, 42);
  EXPECT_EQ(s.val.size(), 20);
  EXPECT_EQ(s.train.size(), 180);
  EXPECT_EQ(s.train.classes, all.classes);
  EXPECT_EQ(s.val.mean, all.mean);
  const auto a = rows(all), t = rows(s.train), v = rows(s.val);
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
  auto labels = s.train.labels.to_vector<int64_t>();
  auto all_labels = all.labels.to_vector<int64_t>();
  for (size_t i = 0; i < ti.size(); ++i) EXPECT_EQ(labels[i], all_labels[size_t(ti[i])]);
  EXPECT_EQ(rows(split_validation(all, 0.1, 42).val), v);  // same seed, same split
  EXPECT_NE(rows(split_validation(all, 0.1, 43).val), v);
}

// --limit-train / --limit-test (issue 22): a seeded, stratified subset, not the first N samples
// (which, in a set stored class by class, are all of one class); a subset left with one class is
// refused naming the flag.
#include <gtest/gtest.h>

#include "support/errors.h"
#include "ember/data/dataset.h"
#include "ember/train/dataset.h"
#include "ember/train/settings.h"

using namespace ember;
namespace {

// counts[k] samples of class k, stored class by class (as an image folder is); pixel = index % 251.
data::Dataset by_class(const std::vector<int64_t>& counts) {
  std::vector<int64_t> labels;
  for (size_t k = 0; k < counts.size(); ++k) labels.insert(labels.end(), size_t(counts[k]), int64_t(k));
  const int64_t n = int64_t(labels.size());
  std::vector<uint8_t> px(size_t(n) * 4);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 4; ++j) px[size_t(i * 4 + j)] = uint8_t(i % 251);
  return data::dataset_from_tensors(from_blob_copy(px.data(), {n, 1, 2, 2}, DType::UInt8),
                                    from_blob_copy(labels.data(), {n}, DType::Int64), int64_t(counts.size()));
}

std::vector<int64_t> per_class(const data::Dataset& d) {
  std::vector<int64_t> c(size_t(d.num_classes()), 0);
  for (int64_t y : d.labels.to_vector<int64_t>()) ++c[size_t(y)];
  return c;
}

}  // namespace

TEST(DataSubset, StratifiedSeededAndInTheSetsOrder) {
  const data::Dataset all = by_class({400, 400, 400});
  const data::Dataset a = data::subset_dataset(all, 60, 7);
  EXPECT_EQ(a.size(), 60);
  EXPECT_EQ(per_class(a), (std::vector<int64_t>{20, 20, 20}));
  EXPECT_EQ(a.classes, all.classes);
  EXPECT_EQ(a.mean, all.mean);
  // Kept in the set's order (labels never decrease), drawn by the seed.
  const std::vector<int64_t> y = a.labels.to_vector<int64_t>();
  EXPECT_TRUE(std::is_sorted(y.begin(), y.end()));
  EXPECT_EQ(data::subset_dataset(all, 60, 7).images.to_vector<uint8_t>(), a.images.to_vector<uint8_t>());
  EXPECT_NE(data::subset_dataset(all, 60, 8).images.to_vector<uint8_t>(), a.images.to_vector<uint8_t>());
  // Not simply the first 20 of each class.
  std::vector<uint8_t> px = a.images.to_vector<uint8_t>();
  EXPECT_NE(px[4 * 19], 19);
  // n >= size: the set itself.
  EXPECT_EQ(data::subset_dataset(all, 5000, 7).images.data_ptr<uint8_t>(), all.images.data_ptr<uint8_t>());
  EXPECT_EQ(data::classes_present(a), 3);
}

TEST(DataSubset, ProportionalWithEverySmallClassKept) {
  const data::Dataset all = by_class({90, 9, 1});
  EXPECT_EQ(per_class(data::subset_dataset(all, 10, 0)), (std::vector<int64_t>{8, 1, 1}));
  EXPECT_EQ(per_class(data::subset_dataset(all, 50, 0)), (std::vector<int64_t>{44, 5, 1}));
  EXPECT_EQ(per_class(data::subset_dataset(all, 2, 0)), (std::vector<int64_t>{1, 1, 0}));
}

TEST(DataSubset, LimitSplitRefusesASetOfOneClassNamingTheFlag) {
  const data::Dataset all = by_class({40, 40, 40});
  EXPECT_EQ(per_class(train::limit_split(all, 3, 0, true)), (std::vector<int64_t>{1, 1, 1}));
  const std::string msg = ember::test::expect_error<train::SettingError>(
      [&] { train::limit_split(all, 1, 0, true); }, "--limit-train 1 leaves 1 of the 3 classes");
  ember::test::expect_error<train::SettingError>([&] { train::limit_split(all, 1, 0, false); }, "--limit-test 1");
  // The train and test subsets of one seed are drawn independently of each other.
  EXPECT_NE(train::limit_split(all, 30, 0, true).images.to_vector<uint8_t>(),
            train::limit_split(all, 30, 0, false).images.to_vector<uint8_t>());
  EXPECT_EQ(train::limit_split(all, 0, 0, true).size(), 120);
}

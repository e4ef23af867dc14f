// One split of a known dataset for the fit loop, optionally cut to a seeded stratified subset.
#include "ember/train/dataset.h"

#include <fmt/format.h>

#include "ember/train/settings.h"

namespace ember::train {

data::Dataset limit_split(const data::Dataset& ds, int64_t limit, uint64_t seed, bool train, bool allow_one_class) {
  if (limit <= 0 || limit >= ds.size()) return ds;
  data::Dataset out = data::subset_dataset(ds, limit, seed ^ (train ? 0x6c696d2d74726e00ULL /* "lim-trn" */
                                                                    : 0x6c696d2d74737400ULL /* "lim-tst" */));
  const int64_t before = data::classes_present(ds), after = data::classes_present(out);
  const char* flag = train ? "--limit-train" : "--limit-test";
  if (after < 2 && before >= 2 && !allow_one_class)
    throw SettingError(fmt::format("{} {} leaves {} of the {} classes of {} ({} samples): a set of one class is "
                                   "classified \"100%\" right without learning anything",
                                   flag, limit, after, before, ds.name, ds.size()),
                       fmt::format("pass {} {} or more (at least one sample per class), or leave it out", flag, before));
  return out;
}

data::Dataset load_split(const std::string& name, const std::filesystem::path& dir, bool train, int64_t limit,
                         uint64_t seed) {
  return limit_split(data::load_dataset(name, {.data_dir = dir, .train = train}), limit, seed, train);
}

}  // namespace ember::train

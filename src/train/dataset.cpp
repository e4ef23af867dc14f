// One split of a known dataset for the fit loop, optionally cut to its first samples, and the
// seeded validation split held out of a training set.
#include "ember/train/dataset.h"

namespace ember::train {

data::Dataset load_split(const std::string& name, const std::filesystem::path& dir, bool train, int64_t limit) {
  data::Dataset ds = data::load_dataset(name, {.data_dir = dir, .train = train});
  if (limit > 0 && limit < ds.size()) {
    ds.images = ds.images.narrow(0, 0, limit);  // contiguous: a prefix of a contiguous tensor
    ds.labels = ds.labels.narrow(0, 0, limit);
  }
  return ds;
}

data::DatasetSplit validation_split(const data::Dataset& train, double fraction, uint64_t seed) {
  return data::split_dataset(train, fraction, seed ^ 0x76616c2d73706c74ULL /* "val-splt" */);
}

}  // namespace ember::train

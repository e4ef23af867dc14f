// One split of a known dataset for the fit loop, optionally cut to its first samples.
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

}  // namespace ember::train

// The seeded, stratified validation split of a training set (validation.h).
#include "ember/train/validation.h"

namespace ember::train {

data::DatasetSplit validation_split(const data::Dataset& train, double fraction, uint64_t seed) {
  return data::split_dataset(train, fraction, seed ^ 0x76616c2d73706c74ULL /* "val-splt" */);
}

}  // namespace ember::train

// The validation split: a seeded share of the training set held out for model selection ("best",
// early stopping), so the test set is only ever reported, never selected on.
//
// Which samples: randperm(N) from Generator(seed mixed with a constant of its own, so the split does
// not follow the epoch shuffles), its first validation_size(N, fraction) indices. Both parts keep
// the samples in their original order; the pixels of each part are copied once (uint8).
#pragma once

#include <cstdint>

#include "ember/data/dataset.h"

namespace ember::train {

// round(fraction x n), at least 1 and at most n - 1 for 0 < fraction < 1 and n >= 2; 0 for
// fraction 0. ValueError for a fraction outside [0, 1).
int64_t validation_size(int64_t n, double fraction);

struct TrainValSplit {
  data::Dataset train, val;  // val normalised with the training set's mean and std, as the train part
};
// ValueError when the set has fewer than 2 samples or the fraction is outside (0, 1).
TrainValSplit split_validation(const data::Dataset& train, double fraction, uint64_t seed);

}  // namespace ember::train

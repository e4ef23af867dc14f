// The validation split of a run: a seeded, stratified share of the training set held out for model
// selection ("best", early stopping), so the test set is only ever reported, never selected on.
// One split for every caller: `ember train --val-split`, ember.fit(val_split=) and the C++ Fitter's
// FitOptions::val_split hold out the same samples for the same seed and fraction.
#pragma once

#include <cstdint>

#include "ember/data/dataset.h"

namespace ember::train {

// `fraction` of each class of `train` held out by data::split_dataset (round(fraction x n) of a
// class of n, at least one of a class of two or more, never all of it), seeded by the run's seed
// mixed with a constant of its own, so it is independent of an image folder's test split and of the
// batch shuffles. `kept` is what the run trains on, `held_out` (evaluation transforms, the training
// set's mean and std) what selects its best epoch; both keep the set's order. Fraction 0, or a set
// too small to hold a sample out, gives an empty held_out. ValueError for a fraction outside [0, 1).
data::DatasetSplit validation_split(const data::Dataset& train, double fraction, uint64_t seed);

}  // namespace ember::train

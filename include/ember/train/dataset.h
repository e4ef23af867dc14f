// Datasets for the fit loop: ember::data's known datasets, held once as uint8 and normalised batch
// by batch by the DataLoader (never the whole set as float).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "ember/data/dataset.h"

namespace ember::train {

// data::load_dataset for one split, keeping the first `limit` samples when limit > 0 (views of the
// loaded tensors, no copy). Throws ValueError for an unknown name, IOError when the files are
// missing (the hint says how to get them), DataError when they are corrupt.
data::Dataset load_split(const std::string& name, const std::filesystem::path& dir, bool train, int64_t limit = 0);

// The validation split of a run (FitOptions::val_split, `ember train --val-split`): `fraction` of
// each class of the training set held out by data::split_dataset, seeded by the run's seed mixed
// with a constant of its own (so it is independent of an image folder's test split and of the
// batch shuffles). `kept` is what the run trains on, `held_out` what selects its best epoch.
data::DatasetSplit validation_split(const data::Dataset& train, double fraction, uint64_t seed);

}  // namespace ember::train

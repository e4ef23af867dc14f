// Datasets for the fit loop: ember::data's known datasets, held once as uint8 and normalised batch
// by batch by the DataLoader (never the whole set as float).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "ember/data/dataset.h"

namespace ember::train {

// data::load_dataset for one split, cut to `limit` samples when limit > 0 (limit_split).
// Throws ValueError for an unknown name, IOError when the files are missing (the hint says how to get
// them), DataError when they are corrupt, SettingError as limit_split.
data::Dataset load_split(const std::string& name, const std::filesystem::path& dir, bool train, int64_t limit = 0,
                         uint64_t seed = 0);

// --limit-train / --limit-test: `limit` samples of `ds` (limit <= 0 or >= its size: all of it), a
// seeded, stratified subset (data::subset_dataset: each class in proportion, in the set's order),
// seeded by the run's seed mixed with a constant of the split's own, so the same run always draws
// the same samples (resume, eval) and the two splits draw independently. A subset left with one
// class of a set that has more is a SettingError naming the flag (a 1-class set trains to "100%"),
// unless allow_one_class (`ember eval --limit-test 1`: a quick look, not a run).
data::Dataset limit_split(const data::Dataset& ds, int64_t limit, uint64_t seed, bool train,
                          bool allow_one_class = false);

}  // namespace ember::train

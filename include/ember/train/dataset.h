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

}  // namespace ember::train

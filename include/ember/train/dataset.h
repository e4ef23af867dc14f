// In-memory image-classification datasets for the fit loop: Fashion-MNIST, MNIST (IDX, plain or
// gzip) and CIFAR-10 (binary), decoded once into a normalised float32 tensor. Batches are gathered
// from a per-epoch permutation that depends only on (seed, epoch), so a resumed run sees exactly
// the batches an uninterrupted one would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::train {

struct ImageDataset {
  std::string name;                     // "fashion-mnist"
  Tensor images;                        // (N, C, H, W) float32 on the CPU, normalised per channel
  std::vector<int64_t> labels;          // N values in [0, num_classes)
  int64_t num_classes = 0;
  std::vector<std::string> class_names;
  int64_t size() const { return int64_t(labels.size()); }
  int64_t channels() const { return images.size(1); }
  int64_t image_size() const { return images.size(2); }
};

// The names load_image_dataset accepts.
std::vector<std::string> dataset_names();
// Where a dataset is looked for when --data-dir is not given: $EMBER_DATA_DIR/<name>, then
// /usr/share/datasets/<name> (Debian's dataset-fashion-mnist), then ~/.cache/ember/<name>.
std::filesystem::path default_data_dir(const std::string& name);
// Loads the train or test split; limit > 0 keeps the first `limit` samples. Throws ValueError for
// an unknown name, IOError when the files are missing (the hint says how to get them), DataError
// when they are corrupt.
ImageDataset load_image_dataset(const std::string& name, const std::filesystem::path& dir, bool train,
                                int64_t limit = 0);

// Images and labels of samples [begin, end) of `order` (a permutation of 0..N-1), as a fresh
// contiguous (B, C, H, W) float32 tensor and an int64 (B) tensor, both on the CPU.
std::pair<Tensor, Tensor> gather_batch(const ImageDataset& ds, const std::vector<int64_t>& order, int64_t begin,
                                       int64_t end);
// The shuffle of an epoch: randperm from a Philox stream keyed by (seed, epoch).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace ember::train

// Photo datasets: samples kept as their files and decoded per use, each epoch seeing a fresh
// torchvision-style augmentation of the whole picture (RandomResizedCrop draws its box from the
// full image, which a set of pre-resized tensors cannot give), as torchvision's ImageFolder +
// DataLoader do, in ember's worker threads instead of Python processes.
//
// A Dataset holding a PhotoSet (dataset.h: `photos`) has no uint8 tensor: the DataLoader decodes
// sample i, applies the dataset's PhotoRecipe with the random draws of (seed, epoch, i) (so worker
// counts and resumed runs see the same samples, as for tensor datasets), and writes the float
// (3, size, size) planes straight into the batch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/decode.h"
#include "ember/data/image.h"
#include "ember/data/photo_augment.h"

namespace ember::data {

// What a photo run does to each sample (`ember train --augment`):
//   standard  RandomResizedCrop(size, scale (0.08, 1), ratio (3/4, 4/3)) + RandomHorizontalFlip:
//             torchvision's ImageNet training recipe
//   light     RandomResizedCrop(size, scale (0.35, 1)) + RandomHorizontalFlip: for fine-tuning on a
//             few hundred photos, where crops of 8% of a picture lose the object
//   trivial   standard + TrivialAugmentWide (one of 14 operations at a random strength per sample):
//             the recipe of torchvision's newer ("V2") ImageNet weights
//   none      the evaluation transforms on the training samples too
// Evaluation (test, validation, predict): Resize(size * 256 / 224) + CenterCrop(size).
// Then ToTensor + Normalize with the dataset's mean/std (ImageNet's for photos).
// --color-jitter adds torchvision's ColorJitter to any training recipe but none (after the flip,
// before TrivialAugmentWide, as torchvision's references order them).
enum class Augment { None, Light, Standard, Trivial };
Augment parse_augment(const std::string& name);  // ValueError naming the choices
const char* augment_name(Augment a);

struct PhotoRecipe {
  int64_t size = 224;               // the square side the model sees
  bool train = false;               // training transforms (augment) or the evaluation ones
  Augment augment = Augment::Standard;
  ColorJitter jitter;               // none unless --color-jitter
  int64_t max_pixels = kMaxImagePixels;   // per picture, checked on its header before decoding; 0: none
  // "RandomResizedCrop(224, scale 0.08-1) + horizontal flip [+ ColorJitter(..)] [+ TrivialAugmentWide]",
  // "resize 256, centre crop 224"
  std::string describe() const;
};

class PhotoCache;

class PhotoSet {
 public:
  // skipped_at_scan: files of the folder already left out when their headers were read; they count
  // towards the share of undecodable files (dataset.h: too_many_undecodable).
  explicit PhotoSet(std::vector<std::filesystem::path> files, int64_t skipped_at_scan = 0);
  // The pictures of a one-file cache (photo_cache.h), read from its memory map.
  explicit PhotoSet(std::shared_ptr<const PhotoCache> cache);
  int64_t size() const { return int64_t(rows_.size()); }
  // Sample i's file (a cache's samples: the cache file).
  const std::filesystem::path& file(int64_t i) const;
  // "path/to/file.jpg", or "photos.ember#17" for a cache's picture (messages, checksums).
  std::string name(int64_t i) const;
  // Sample i decoded to RGB; thread-safe. Throws IOError / DataError naming the file.
  Image picture(int64_t i, int64_t max_pixels) const;
  // Sample i through the recipe into dst (3, size, size): read, decode, transform, normalise.
  // Augmented training draws the crop box from the header's size first and decodes a JPEG at the
  // smallest DCT scale (1/2, 1/4, 1/8) that keeps the box at least `size` pixels a side, so a
  // 12-megapixel photo is not decoded whole to be cut to 224 pixels; evaluation decodes whole.
  // False when the file cannot be read or decoded (a truncated JPEG whose header read fine): the
  // first time it warns ("ember: warning: skipping FILE: why", dataset.h's skip_warning) and the
  // file is remembered by every set sharing this one's files, so later epochs skip it without
  // reading it; the caller leaves the sample out of its batch. DataError once too many of the
  // set's files failed (dataset.h: too_many_undecodable). Thread-safe.
  bool sample(int64_t i, const PhotoRecipe& recipe, const std::vector<float>& mean, const std::vector<float>& std,
              uint64_t seed, int64_t epoch, int64_t index, float* dst) const;
  // Files found undecodable so far (by sample()) among those this set shares.
  int64_t undecodable() const;
  // The samples idx[0], idx[1], ... of this set (sharing the file list).
  std::shared_ptr<const PhotoSet> take(const std::vector<int64_t>& idx) const;

  struct Undecodable;  // the rows found bad, shared by the sets take() makes

 private:
  PhotoSet(std::shared_ptr<const std::vector<std::filesystem::path>> files, std::shared_ptr<const PhotoCache> cache,
           std::vector<int64_t> rows, std::shared_ptr<Undecodable> bad)
      : files_(std::move(files)), cache_(std::move(cache)), rows_(std::move(rows)), bad_(std::move(bad)) {}
  void sample_or_throw(int64_t i, const PhotoRecipe& recipe, const std::vector<float>& mean,
                       const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index, float* dst) const;
  std::shared_ptr<const std::vector<std::filesystem::path>> files_;
  std::shared_ptr<const PhotoCache> cache_;
  std::vector<int64_t> rows_;
  std::shared_ptr<Undecodable> bad_;
};

// Sample `index` of epoch `epoch` through the recipe: (3, size, size) floats into dst, normalised
// by mean/std. Training draws the crop box and the flip from Philox keyed by seed, counter by
// (epoch, index).
void photo_sample(const Image& picture, const PhotoRecipe& recipe, const std::vector<float>& mean,
                  const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index, float* dst);

}  // namespace ember::data

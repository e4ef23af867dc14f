// Photo datasets decoded per sample; see photo_set.h.
#include "ember/data/photo_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>

#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/data/dataset.h"
#include "ember/data/decode.h"
#include "ember/data/photo_cache.h"
#include "ember/data/photo_transforms.h"
#include "ember/io/user_file.h"

namespace ember::data {

Augment parse_augment(const std::string& name) {
  if (name == "standard") return Augment::Standard;
  if (name == "light") return Augment::Light;
  if (name == "none") return Augment::None;
  if (name == "trivial") return Augment::Trivial;
  throw ValueError(fmt::format("unknown augmentation '{}'", name),
                   "choose --augment standard (RandomResizedCrop + flip), light (crops of at least 35%), trivial "
                   "(standard + TrivialAugmentWide) or none");
}

const char* augment_name(Augment a) {
  switch (a) {
    case Augment::Standard: return "standard";
    case Augment::Light: return "light";
    case Augment::None: return "none";
    case Augment::Trivial: return "trivial";
  }
  return "?";
}

namespace {
double min_scale(Augment a) { return a == Augment::Light ? 0.35 : 0.08; }

// The crop of `box` resized to the recipe's size, maybe flipped, colour-jittered and through
// TrivialAugmentWide as the recipe says, normalised into dst.
void finish_sample(const Image& picture, const Box& box, const PhotoRecipe& recipe, const std::vector<float>& mean,
                   const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index, float* dst) {
  Image crop = resize(picture, recipe.size, recipe.size, box);
  // The flip: its own Philox block (tag 0x7D), apart from the crop's (0x7C) and transforms.h's (0x7E).
  const uint64_t i = uint64_t(index);
  const auto w = philox4x32_10({uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), 0x7D000000u},
                               {uint32_t(seed), uint32_t(seed >> 32)});
  if (w[0] & 1u) crop = hflip(crop);
  if (recipe.jitter.any())
    crop = apply_color_jitter(crop, recipe.jitter, draw_color_jitter(recipe.jitter, seed, epoch, index));
  if (recipe.augment == Augment::Trivial) crop = apply_trivial_augment(crop, draw_trivial_augment(seed, epoch, index));
  to_planes(crop, mean, std, dst);
}
}  // namespace

std::string PhotoRecipe::describe() const {
  if (train && augment != Augment::None)
    return fmt::format("RandomResizedCrop({}, scale {:g}-1) + horizontal flip{}{}", size, min_scale(augment),
                       jitter.any() ? " + " + jitter.describe() : std::string(),
                       augment == Augment::Trivial ? " + TrivialAugmentWide" : "");
  return fmt::format("resize {}, centre crop {}", resize_for_crop(size), size);
}

struct PhotoSet::Undecodable {
  std::mutex mu;
  std::set<int64_t> rows;            // rows of the shared file list (or cache) that failed
  std::vector<std::string> reasons;  // their warnings' reasons, in the order found
  int64_t total = 0;                 // the files the share is taken of (the scan's skipped ones too)
  int64_t at_scan = 0;
};

PhotoSet::PhotoSet(std::vector<std::filesystem::path> files, int64_t skipped_at_scan)
    : files_(std::make_shared<const std::vector<std::filesystem::path>>(std::move(files))),
      bad_(std::make_shared<Undecodable>()) {
  rows_.resize(files_->size());
  for (size_t i = 0; i < rows_.size(); ++i) rows_[i] = int64_t(i);
  bad_->at_scan = skipped_at_scan;
  bad_->total = int64_t(files_->size()) + skipped_at_scan;
}

PhotoSet::PhotoSet(std::shared_ptr<const PhotoCache> cache) : cache_(std::move(cache)), bad_(std::make_shared<Undecodable>()) {
  rows_.resize(size_t(cache_->size()));
  for (size_t i = 0; i < rows_.size(); ++i) rows_[i] = int64_t(i);
  bad_->total = cache_->size();
}

int64_t PhotoSet::undecodable() const {
  std::lock_guard<std::mutex> lock(bad_->mu);
  return int64_t(bad_->rows.size());
}

const std::filesystem::path& PhotoSet::file(int64_t i) const {
  EMBER_CHECK(i >= 0 && i < size(), IndexError, "photo set: sample ", i, " is outside [0, ", size(), ")");
  if (cache_) return cache_->path();
  return (*files_)[size_t(rows_[size_t(i)])];
}

std::string PhotoSet::name(int64_t i) const {
  if (cache_) return file(i).string() + "#" + std::to_string(rows_[size_t(i)]);
  return file(i).string();
}

Image PhotoSet::picture(int64_t i, int64_t max_pixels) const {
  if (cache_) {
    (void)file(i);  // the range check
    return cache_->picture(rows_[size_t(i)]);
  }
  return read_rgb_image(file(i), max_pixels);
}

std::shared_ptr<const PhotoSet> PhotoSet::take(const std::vector<int64_t>& idx) const {
  std::vector<int64_t> rows;
  rows.reserve(idx.size());
  for (int64_t i : idx) {
    EMBER_CHECK(i >= 0 && i < size(), IndexError, "photo set: sample ", i, " is outside [0, ", size(), ")");
    rows.push_back(rows_[size_t(i)]);
  }
  return std::shared_ptr<const PhotoSet>(new PhotoSet(files_, cache_, std::move(rows), bad_));
}

bool PhotoSet::sample(int64_t i, const PhotoRecipe& recipe, const std::vector<float>& mean,
                      const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index, float* dst) const {
  (void)file(i);  // the range check: an IndexError is ours, never a skipped file
  const int64_t row = rows_[size_t(i)];
  {
    std::lock_guard<std::mutex> lock(bad_->mu);
    if (bad_->rows.count(row)) return false;
  }
  std::string reason;
  try {
    sample_or_throw(i, recipe, mean, std, seed, epoch, index, dst);
    return true;
  } catch (const DataError& e) {
    reason = e.what();
  } catch (const IOError& e) {  // the file went away or became unreadable since the scan
    reason = e.what();
  }
  reason = cache_ ? name(i) + ": " + reason : reason_naming(file(i), reason);
  std::lock_guard<std::mutex> lock(bad_->mu);
  if (!bad_->rows.insert(row).second) return false;  // another worker got there first
  bad_->reasons.push_back(reason);
  std::fprintf(stderr, "ember: warning: %s\n", skip_warning(reason).c_str());
  const int64_t bad = int64_t(bad_->rows.size()) + bad_->at_scan;
  if (too_many_undecodable(bad, bad_->total))
    throw_too_many_undecodable(cache_ ? "photo cache '" + cache_->path().string() + "'"
                                      : "image folder '" + file(i).parent_path().parent_path().string() + "'",
                               bad, bad_->total, bad_->reasons);
  return false;
}

void PhotoSet::sample_or_throw(int64_t i, const PhotoRecipe& recipe, const std::vector<float>& mean,
                               const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index,
                               float* dst) const {
  if (!recipe.train || recipe.augment == Augment::None || (cache_ && cache_->raw(rows_[size_t(i)]))) {
    photo_sample(picture(i, recipe.max_pixels), recipe, mean, std, seed, epoch, index, dst);
    return;
  }
  std::vector<uint8_t> owned;
  std::span<const uint8_t> bytes;
  if (cache_) {
    (void)file(i);
    bytes = cache_->bytes(rows_[size_t(i)]);
  } else {
    owned = io::read_user_file(file(i), io::kImageFile);
    bytes = owned;
  }
  const std::string where = name(i);
  const ImageInfo info = probe_image(bytes, where);
  const int64_t w = info.oriented_width(), h = info.oriented_height(), s = recipe.size;
  const Box box = random_resized_crop_box(h, w, seed, epoch, index, {min_scale(recipe.augment), 1.0},
                                          {3.0 / 4.0, 4.0 / 3.0});
  DecodeOptions opt;
  opt.channels = 3;
  opt.max_pixels = recipe.max_pixels;
  // The decoded picture must keep the box at least s pixels a side.
  opt.min_width = std::min<int64_t>(w, (w * s + box.width - 1) / box.width);
  opt.min_height = std::min<int64_t>(h, (h * s + box.height - 1) / box.height);
  opt.apply_exif = !cache_;  // a cache holds its pictures upright already
  const Image pic = decode_image(bytes, opt, where);
  Box b = box;
  if (pic.width != w || pic.height != h) {  // decoded at 1/r: the box in the smaller picture's pixels
    const double sx = double(pic.width) / double(w), sy = double(pic.height) / double(h);
    b.left = std::min<int64_t>(int64_t(double(box.left) * sx), pic.width - 1);
    b.top = std::min<int64_t>(int64_t(double(box.top) * sy), pic.height - 1);
    b.width = std::clamp<int64_t>(std::llround(double(box.width) * sx), 1, pic.width - b.left);
    b.height = std::clamp<int64_t>(std::llround(double(box.height) * sy), 1, pic.height - b.top);
  }
  finish_sample(pic, b, recipe, mean, std, seed, epoch, index, dst);
}

void photo_sample(const Image& picture, const PhotoRecipe& recipe, const std::vector<float>& mean,
                  const std::vector<float>& std, uint64_t seed, int64_t epoch, int64_t index, float* dst) {
  const int64_t s = recipe.size;
  if (!recipe.train || recipe.augment == Augment::None) {
    to_planes(eval_resize_crop(picture, s), mean, std, dst);
    return;
  }
  const Box box = random_resized_crop_box(picture.height, picture.width, seed, epoch, index,
                                          {min_scale(recipe.augment), 1.0}, {3.0 / 4.0, 4.0 / 3.0});
  finish_sample(picture, box, recipe, mean, std, seed, epoch, index, dst);
}

}  // namespace ember::data

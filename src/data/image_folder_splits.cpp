// An image folder as a training set: train/ and test/ (and val/) sub-folders, or one level of
// class folders split by a seeded shuffle; image size and channels from the first training image
// unless given; every split normalised with the training split's statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "ember/core/error.h"
#include "ember/data/dataset.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The rows `idx` of a loaded folder as a new dataset (pixels copied once, labels kept).
Dataset take_rows(const Dataset& all, const std::vector<int64_t>& idx, const std::string& name) {
  const int64_t sample = all.channels() * all.height() * all.width();
  LabeledImages li;
  li.n = int64_t(idx.size()), li.c = all.channels(), li.h = all.height(), li.w = all.width();
  li.num_classes = all.num_classes();
  li.images.resize(size_t(li.n * sample));
  li.labels.reserve(idx.size());
  const uint8_t* src = all.images.data_ptr<uint8_t>();
  const int64_t* lab = all.labels.data_ptr<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(li.images.data() + i * size_t(sample), src + size_t(idx[i] * sample), size_t(sample));
    li.labels.push_back(lab[idx[i]]);
  }
  // mean/std are set by the caller (the training split's); placeholders keep them from being computed twice.
  return dataset_from_labeled_images(std::move(li), name, all.classes, std::vector<float>(size_t(all.channels()), 0.f),
                                     std::vector<float>(size_t(all.channels()), 1.f));
}

// Per class, a seeded Fisher-Yates shuffle (mt19937_64 is specified bit for bit by the standard,
// and the index draw below is ours, so the split is the same everywhere), then the first
// round(fraction * n) images (at least one when the class has two or more) go to test.
// `rng_seed` is used as given: callers mix their own constant into the run's seed.
void seeded_split(const Dataset& all, double fraction, uint64_t rng_seed, std::vector<int64_t>& train_idx,
                  std::vector<int64_t>& test_idx) {
  std::vector<std::vector<int64_t>> by_class(size_t(all.num_classes()));
  const int64_t* lab = all.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < all.size(); ++i) by_class[size_t(lab[i])].push_back(i);
  std::mt19937_64 rng(rng_seed);
  for (auto& members : by_class) {
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[size_t(rng() % i)]);
    size_t n_test = size_t(std::llround(fraction * double(members.size())));
    if (members.size() >= 2) n_test = std::clamp<size_t>(n_test, 1, members.size() - 1);
    else n_test = 0;
    test_idx.insert(test_idx.end(), members.begin(), members.begin() + std::ptrdiff_t(n_test));
    train_idx.insert(train_idx.end(), members.begin() + std::ptrdiff_t(n_test), members.end());
  }
  std::sort(train_idx.begin(), train_idx.end());
  std::sort(test_idx.begin(), test_idx.end());
}

void check_classes(const Dataset& d, const std::vector<std::string>& expected, const std::string& what,
                   const std::string& expected_from) {
  if (d.classes == expected) return;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& c : v) s += (s.empty() ? "" : ", ") + c;
    return s;
  };
  throw DataError(detail::cat(what, " has the classes [", list(d.classes), "] but ", expected_from, " has [",
                              list(expected), "]"),
                  "every split needs the same class folders (an empty folder counts as a class)");
}

}  // namespace

ImageFolderSplits load_image_folder_splits(const fs::path& root, const ImageFolderSplitOptions& opt) {
  EMBER_CHECK(opt.size >= 0 && opt.size <= 4096, ValueError, "image folder: the image size must be between 1 and 4096, got ",
              opt.size);
  EMBER_CHECK(opt.channels == 0 || opt.channels == 1 || opt.channels == 3, ValueError,
              "image folder: channels must be 1 or 3, got ", opt.channels);
  EMBER_CHECK(opt.test_fraction > 0 && opt.test_fraction < 1, ValueError,
              "image folder: the test fraction must be between 0 and 1 (exclusive), got ", opt.test_fraction);
  EMBER_CHECK(opt.load_train || (!opt.mean.empty() && !opt.std.empty()), ValueError,
              "image folder: loading only the test split needs the training split's mean and std");
  if (!is_dir(root))
    throw IOError(detail::cat("image folder '", root.string(), "': not a directory"),
                  "pass a folder holding train/<class>/ and test/<class>/ sub-folders, or one sub-folder per class");
  ImageFolderSplits out;
  const bool split_layout = is_dir(root / "train") || is_dir(root / "test");
  if (split_layout) {
    EMBER_CHECK(is_dir(root / "train") && is_dir(root / "test"), DataError, "image folder '", root.string(), "': found ",
                is_dir(root / "train") ? "train/ but no test/" : "test/ but no train/",
                " (expected train/<class>/ and test/<class>/; val/<class>/ is optional)");
    out.layout = is_dir(root / "val") ? "train/, val/ and test/ folders" : "train/ and test/ folders";
  } else {
    out.layout = detail::cat("one folder of classes, seeded split (", std::llround(100 * (1 - opt.test_fraction)), "/",
                             std::llround(100 * opt.test_fraction), ")");
  }

  // Size and channels: given, or from the first training image.
  ImageFolderOptions io;
  io.resize = ResizeMode::CenterCrop;  // photos keep their aspect ratio
  io.height = io.width = opt.size;
  io.channels = opt.channels;
  if (opt.size == 0 || opt.channels == 0) {
    const fs::path first = first_image_in_folder(split_layout ? root / "train" : root);
    EMBER_CHECK(!first.empty(), DataError, "image folder '", root.string(), "': no image files in ",
                split_layout ? "train/<class>/" : "<class>/", " (.png, .jpg, .jpeg, .bmp, .gif, .tga, .ppm, .pgm)");
    const ImageInfo info = probe_image(first);
    std::string how;
    if (opt.size == 0) {
      io.height = io.width = std::min({info.width, info.height, ImageFolderSplitOptions::kAutoMaxSide});
      how = detail::cat("size ", io.height, "x", io.width, info.width == info.height && info.width <= io.width
                                                               ? " as the first image"
                                                               : detail::cat(" from the first image's ", info.width, "x",
                                                                             info.height, " (--image-size to change)"));
    }
    if (opt.channels == 0) {
      io.channels = info.channels <= 2 ? 1 : 3;
      how += detail::cat(how.empty() ? "" : ", ", io.channels == 1 ? "grey" : "colour", " as the first image");
    }
    out.size_source = how + " (" + first.filename().string() + ")";
  }

  const std::string base = "image-folder:" + root.string();
  if (split_layout) {
    if (opt.load_train) out.train = load_image_folder(root / "train", io);
    out.test = load_image_folder(root / "test", io);
    if (is_dir(root / "val")) out.val = load_image_folder(root / "val", io);
    out.train.name = base + "/train", out.test.name = base + "/test";
    if (out.val.size()) out.val.name = base + "/val";
  } else {
    Dataset all = load_image_folder(root, io);
    std::vector<int64_t> train_idx, test_idx;
    seeded_split(all, opt.test_fraction, opt.seed ^ 0x696d616765736574ULL /* "imageset" */, train_idx, test_idx);
    EMBER_CHECK(!test_idx.empty(), DataError, "image folder '", root.string(), "': too few images to hold any out for "
                "testing (", all.size(), " images in ", all.num_classes(), " classes)",
                "; put at least two images in each class folder");
    if (opt.load_train) out.train = take_rows(all, train_idx, base + " (train split)");
    out.test = take_rows(all, test_idx, base + " (test split)");
  }

  const std::vector<std::string>& classes = opt.load_train ? out.train.classes : out.test.classes;
  if (!opt.classes.empty()) check_classes(opt.load_train ? out.train : out.test, opt.classes,
                                          "image folder '" + root.string() + "'", "the trained run");
  if (opt.load_train) {
    check_classes(out.test, classes, "test/", "train/");
    if (out.val.size()) check_classes(out.val, classes, "val/", "train/");
  }
  std::vector<float> mean = opt.mean, sd = opt.std;
  if (mean.empty() || sd.empty()) compute_mean_std(out.train.images, mean, sd);
  EMBER_CHECK(int64_t(mean.size()) == io.channels && int64_t(sd.size()) == io.channels, ValueError,
              "image folder: ", mean.size(), " means and ", sd.size(), " stds given for ", io.channels, " channels");
  for (Dataset* d : {&out.train, &out.test, &out.val})
    if (d->size()) d->mean = mean, d->std = sd;
  return out;
}

DatasetSplit split_dataset(const Dataset& all, double fraction, uint64_t rng_seed) {
  EMBER_CHECK(fraction >= 0 && fraction < 1, ValueError, "split_dataset: the fraction must be in [0, 1), got ", fraction);
  EMBER_CHECK(all.images.defined() && all.images.is_contiguous() && all.images.device().is_cpu(), ValueError,
              "split_dataset: the images must be a contiguous CPU tensor");
  std::vector<int64_t> kept_idx, held_idx;
  if (fraction > 0) seeded_split(all, fraction, rng_seed, kept_idx, held_idx);
  DatasetSplit out;
  if (held_idx.empty()) {
    out.kept = all;  // nothing held out: the same tensors, no copy
    return out;
  }
  out.kept = take_rows(all, kept_idx, all.name);
  out.held_out = take_rows(all, held_idx, all.name + " (held out)");
  for (Dataset* d : {&out.kept, &out.held_out}) d->mean = all.mean, d->std = all.std;
  return out;
}

}  // namespace ember::data

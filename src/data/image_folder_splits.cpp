// An image folder as a training set: train/ and test/ (and val/) sub-folders, or one level of
// class folders split by a seeded shuffle; image size and channels from a sample of the training
// images unless given; every split normalised with the training split's statistics. Also the seeded
// stratified subsets of --limit-train / --limit-test.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

#include "data/decode_internal.h"
#include "data/image_fit.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/photo_cache.h"
#include "ember/data/photo_transforms.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The rows `idx` of a loaded folder as a new dataset (pixels copied once, labels kept).
Dataset take_rows(const Dataset& all, const std::vector<int64_t>& idx, const std::string& name) {
  if (all.is_photos()) {  // the file list is shared; only the rows are picked
    Dataset d = all;
    d.name = name;
    d.photos = all.photos->take(idx);
    Tensor labels = empty({int64_t(idx.size())}, {.dtype = DType::Int64});
    const int64_t* lab = all.labels.data_ptr<int64_t>();
    int64_t* out = labels.data_ptr<int64_t>();
    for (size_t i = 0; i < idx.size(); ++i) out[i] = lab[idx[i]];
    d.labels = labels;
    return d;
  }
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

namespace {

std::string join_names(const std::vector<std::string>& v, size_t max_shown = 5) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max_shown; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max_shown) s += detail::cat(" and ", v.size() - max_shown, " more");
  return s;
}

// The training split's listing must make a classifier: two classes at least, each with images.
void check_training_classes(const fs::path& dir, const ImageFolderListing& l) {
  if (!l.empty_classes.empty())
    throw DataError(detail::cat("image folder '", dir.string(), "': ", l.empty_classes.size(), " of its ", l.classes.size(),
                                " class folders hold no image files (", join_names(l.empty_classes), "), so ",
                                l.empty_classes.size() == 1 ? "that class" : "those classes",
                                " would be trained on nothing",
                                l.not_read.empty() ? "" : "; " + describe_not_read(l.not_read)),
                    "put images (.png, .jpg, .jpeg, .bmp, .gif, .tga, .ppm, .pgm) in every class folder, or remove "
                    "the empty ones");
  if (l.classes.size() < 2)
    throw DataError(detail::cat("image folder '", dir.string(), "' has one class folder ('", l.classes.front(), "', ",
                                l.files.size(), l.files.size() == 1 ? " image" : " images",
                                "): a classifier needs at least two classes (a 1-class model is always \"100%\" right)"),
                    detail::cat("put each class's images in a folder of their own under ", dir.string(),
                                "/ (e.g. cats/ and dogs/)"));
}

// One sampled image's size and whether it is colour, as its header (or a photo cache's index) says.
struct GeometrySample {
  std::string name;
  int64_t width = 0, height = 0;
  bool colour = true;
};

// Size and channels from up to kSizeSample training images spread over the set (every class is
// sampled when the classes are of similar size), `n` images in all: the median shorter side
// (capped at kAutoMaxSide) and the channels most of them have. One odd image (a grey one in a
// colour set, a 1x1 icon) does not decide for the rest. An image folder and its photo cache choose
// alike: the folder from its files' headers, the cache from its index.
std::string geometry_from(const std::vector<GeometrySample>& samples, size_t n, const ImageFolderSplitOptions& opt,
                          ImageFolderOptions& io) {
  std::vector<int64_t> sides;
  int64_t colour = 0, grey = 0, min_w = 0, min_h = 0, max_w = 0, max_h = 0;
  bool all_same = true;
  std::vector<std::string> minority;  // files of the channel count not chosen (named in the note)
  std::vector<std::pair<std::string, bool>> seen;
  for (const GeometrySample& info : samples) {
    if (!sides.empty() && (info.width != max_w || info.height != max_h)) all_same = false;
    if (sides.empty() || info.width * info.height < min_w * min_h) min_w = info.width, min_h = info.height;
    if (sides.empty() || info.width * info.height > max_w * max_h) max_w = info.width, max_h = info.height;
    sides.push_back(std::min(info.width, info.height));
    (info.colour ? colour : grey) += 1;
    seen.emplace_back(info.name, info.colour);
  }
  const size_t m = sides.size();
  std::nth_element(sides.begin(), sides.begin() + std::ptrdiff_t(m / 2), sides.end());
  const int64_t median = sides[m / 2];
  const std::string sampled = m == n ? (m == 1 ? std::string("the one image") : detail::cat("all ", m, " images"))
                                     : detail::cat(m, " sampled images");
  std::string size_part;
  const bool uniform = all_same && max_w == max_h;
  if (opt.size == 0) {
    io.height = io.width = std::max<int64_t>(1, std::min(median, ImageFolderSplitOptions::kAutoMaxSide));
    if (uniform && max_w <= io.width)
      size_part = detail::cat("size ", io.height, "x", io.width);
    else
      size_part = detail::cat("size ", io.height, "x", io.width, ": the median shorter side of ", sampled,
                              median > io.height ? detail::cat(" is ", median, ", capped at ", io.height) : "",
                              all_same ? detail::cat(" (", max_w, "x", max_h, "; --image-size to change)")
                                       : detail::cat(" (", min_w, "x", min_h, " to ", max_w, "x", max_h,
                                                     "; --image-size to change)"));
  }
  if (opt.channels == 0) {
    io.channels = colour >= grey ? 3 : 1;
    for (const auto& [name, is_colour] : seen)
      if (is_colour != (io.channels == 3)) minority.push_back(name);
  }
  const std::string kind = io.channels == 1 ? "grey" : "colour";
  // "39 of them (1 grey, converted: a.png)": the channels most images have, and the others named.
  auto mixed_of = [&](const std::string& whom) {
    return detail::cat(std::max(colour, grey), " of ", whom, " (", minority.size(), " ",
                       io.channels == 1 ? "colour" : "grey", ", converted: ", join_names(minority, 2), ")");
  };
  if (opt.channels != 0)  // the size alone was chosen
    return size_part.find(':') == std::string::npos ? size_part + " as " + sampled : size_part;
  if (opt.size != 0)  // the channels alone
    return kind + " as " + (minority.empty() ? sampled : mixed_of(sampled));
  if (size_part.find(':') == std::string::npos)
    return minority.empty() ? size_part + " and " + kind + " as " + sampled
                            : size_part + " as " + sampled + "; " + kind + " as " + mixed_of("them");
  return size_part + "; " + kind + " as " + (minority.empty() ? std::string("all of them") : mixed_of("them"));
}

std::string choose_geometry(const ImageFolderListing& l, const ImageFolderSplitOptions& opt, ImageFolderOptions& io) {
  const size_t n = l.files.size(), k = std::min<size_t>(n, size_t(ImageFolderSplitOptions::kSizeSample));
  std::vector<GeometrySample> samples;
  for (size_t i = 0; i < k; ++i) {
    const fs::path& f = l.files[i * n / k].first;
    try {
      const ImageInfo info = probe_image(f);
      samples.push_back({f.filename().string(), info.width, info.height, info.channels_in_file >= 3});
    } catch (const Error&) {
      continue;  // named when it is decoded (skipped with a warning, or an error under strict)
    }
  }
  EMBER_CHECK(!samples.empty(), DataError, "none of the ", k, " images sampled to choose the image size has a header "
              "ember can read (first: ", l.files.front().first.string(), ")",
              "; pass PNG or JPEG images, or give --image-size and --channels");
  return geometry_from(samples, n, opt, io);
}

// A photo cache's pictures, decoded once and fitted to io's size and channels as an image folder's
// files are for ember's small models. A picture that cannot be decoded is skipped as a folder's
// file is (warned, counted, a large share refused).
Dataset cache_as_tensors(const PhotoCache& cache, const ImageFolderOptions& io, const std::string& name) {
  const int64_t n = cache.size(), sample = io.channels * io.height * io.width;
  std::vector<uint8_t> images(size_t(n * sample));
  std::vector<int64_t> labels;
  std::vector<std::string> skipped;
  for (int64_t i = 0; i < n; ++i) {
    const std::string where = cache.path().string() + "#" + std::to_string(i);
    try {
      Image rgb = cache.picture(i);
      Image pic = rgb;
      if (io.channels == 1) {
        pic = Image(rgb.width, rgb.height, 1);
        internal::rgb_to_grey(rgb.pixels.data(), pic.pixels.data(), size_t(rgb.width * rgb.height));
      }
      if (!fit_image_into(pic, io, images.data() + labels.size() * size_t(sample)))
        throw DataError(detail::cat(where, ": cannot resize a ", pic.width, "x", pic.height, " picture"));
    } catch (const DataError& e) {
      skipped.push_back(reason_naming(where, e.what()));
      std::fprintf(stderr, "ember: warning: %s\n", skip_warning(skipped.back()).c_str());
      continue;
    }
    labels.push_back(cache.label(i));
  }
  EMBER_CHECK(!labels.empty(), DataError, "photo cache '", cache.path().string(), "': none of its pictures decodes");
  if (too_many_undecodable(int64_t(skipped.size()), n))
    throw_too_many_undecodable("photo cache '" + cache.path().string() + "'", int64_t(skipped.size()), n, skipped);
  images.resize(labels.size() * size_t(sample));
  LabeledImages li;
  li.images = std::move(images);
  li.n = int64_t(labels.size());
  li.labels = std::move(labels);
  li.c = io.channels, li.h = io.height, li.w = io.width;
  li.num_classes = int64_t(cache.classes().size());
  return dataset_from_labeled_images(std::move(li), name, cache.classes());
}

// The val/ folder under one of its usual names; "" when there is none. Two of them are ambiguous.
std::string val_folder_name(const fs::path& root) {
  std::vector<std::string> found;
  for (const char* name : {"val", "validation", "valid"})
    if (is_dir(root / name)) found.emplace_back(name);
  if (found.size() > 1)
    throw DataError(detail::cat("image folder '", root.string(), "' has both ", found[0], "/ and ", found[1],
                                "/: which one is the validation split?"),
                    "keep one of them (val/, validation/ or valid/)");
  return found.empty() ? std::string() : found.front();
}

// A folder as a photo dataset: its listing, each file's header read (not decoded) so an
// unreadable one is left out here rather than failing an epoch, the labels, no pixels.
Dataset photo_folder(const fs::path& dir, const ImageFolderSplitOptions& opt, bool train, ImageFolderReport& rep) {
  const ImageFolderListing listing = list_image_folder(dir);
  std::vector<fs::path> files;
  std::vector<int64_t> labels;
  std::vector<bool> has(listing.classes.size(), false);
  std::vector<std::string> unreadable;
  for (const auto& [file, label] : listing.files) {
    ImageInfo info;
    try {
      info = probe_image(file);
    } catch (const Error& e) {
      unreadable.push_back(reason_naming(file, e.what()));
      rep.warnings.push_back(skip_warning(unreadable.back()));
      std::fprintf(stderr, "ember: warning: %s\n", rep.warnings.back().c_str());
      continue;
    }
    if (std::string w = check_pixel_budget(file.string(), info.width, info.height, opt.max_pixels); !w.empty()) {
      std::fprintf(stderr, "ember: warning: %s\n", w.c_str());
      rep.warnings.push_back(std::move(w));
    }
    files.push_back(file);
    labels.push_back(label);
    has[size_t(label)] = true;
  }
  for (size_t c = 0; c < has.size(); ++c)
    if (!has[c]) rep.empty_classes.push_back(listing.classes[c]);
  rep.not_read = listing.not_read;
  rep.loaded = int64_t(files.size());
  EMBER_CHECK(!files.empty(), DataError, "image folder '", dir.string(), "': no readable images");
  const int64_t listed = int64_t(listing.files.size());
  if (too_many_undecodable(int64_t(unreadable.size()), listed))
    throw_too_many_undecodable(detail::cat("image folder '", dir.string(), "'"), int64_t(unreadable.size()), listed,
                               unreadable);
  Dataset d;
  d.classes = listing.classes;
  d.labels = from_blob_copy(labels.data(), {int64_t(labels.size())}, DType::Int64, Device::cpu());
  d.photos = std::make_shared<const PhotoSet>(std::move(files), int64_t(unreadable.size()));
  d.recipe.size = opt.size > 0 ? opt.size : opt.photo_size;
  d.recipe.train = train;
  d.recipe.augment = opt.augment;
  d.recipe.jitter = opt.jitter;
  d.recipe.max_pixels = opt.max_pixels;
  return d;
}

// A one-file photo cache (photo_cache.h), split per class by the seed as a one-level folder is, with
// the folder's defaults: photos decoded per sample for torchvision's models (opt.photos), else its
// pictures decoded once at the size and channels chosen as the folder's are.
ImageFolderSplits photo_cache_splits(const fs::path& file, const ImageFolderSplitOptions& opt) {
  EMBER_CHECK(!opt.photos || opt.channels == 0 || opt.channels == 3, ValueError,
              "a photo cache's photos are read as RGB (3 channels), got --channels ", opt.channels);
  auto cache = std::make_shared<const PhotoCache>(file);
  ImageFolderSplits out;
  out.layout = detail::cat("one photo cache file (", cache->size(), " pictures, longer side <= ", cache->max_side(),
                           "), seeded split (", std::llround(100 * (1 - opt.test_fraction)), "/",
                           std::llround(100 * opt.test_fraction), ")");
  Dataset all;
  if (opt.photos) {
    all.name = "photo-cache:" + file.string();
    all.classes = cache->classes();
    std::vector<int64_t> labels(size_t(cache->size()));
    for (int64_t i = 0; i < cache->size(); ++i) labels[size_t(i)] = cache->label(i);
    all.labels = from_blob_copy(labels.data(), {int64_t(labels.size())}, DType::Int64, Device::cpu());
    all.photos = std::make_shared<const PhotoSet>(cache);
    all.recipe.size = opt.size > 0 ? opt.size : opt.photo_size;
    all.recipe.augment = opt.augment;
    all.recipe.jitter = opt.jitter;
    all.recipe.max_pixels = opt.max_pixels;
    out.size_source = detail::cat(all.recipe.size, "x", all.recipe.size, " RGB crops (",
                                  opt.size > 0 ? "--image-size" : "default: the model's size", "), decoded per sample");
  } else {
    ImageFolderOptions io;
    io.resize = ResizeMode::CenterCrop;
    io.height = io.width = opt.size;
    io.channels = opt.channels;
    if (opt.size == 0 || opt.channels == 0) {
      const size_t n = size_t(cache->size()), k = std::min<size_t>(n, size_t(ImageFolderSplitOptions::kSizeSample));
      std::vector<GeometrySample> samples;
      for (size_t i = 0; i < k; ++i) {
        const int64_t row = int64_t(i * n / k);
        samples.push_back({detail::cat("#", row), cache->width(row), cache->height(row), !cache->source_grey(row)});
      }
      out.size_source = geometry_from(samples, n, opt, io);
    }
    all = cache_as_tensors(*cache, io, "photo-cache:" + file.string());
  }
  std::vector<int64_t> train_idx, test_idx;
  seeded_split(all, opt.test_fraction, opt.seed ^ 0x696d616765736574ULL /* "imageset", as folders */, train_idx,
               test_idx);
  EMBER_CHECK(!test_idx.empty(), DataError, "photo cache '", file.string(), "': too few pictures to hold any out for "
              "testing (", all.size(), " in ", all.num_classes(), " classes)");
  if (opt.load_train) out.train = take_rows(all, train_idx, all.name + " (train split)");
  out.test = take_rows(all, test_idx, all.name + " (test split)");
  out.train.recipe.train = true;
  if (!opt.classes.empty()) check_classes(opt.load_train ? out.train : out.test, opt.classes,
                                          "photo cache '" + file.string() + "'", "the trained run");
  std::vector<float> mean = opt.mean, sd = opt.std;
  if ((mean.empty() || sd.empty()) && opt.photos) mean = kImageNetMean, sd = kImageNetStd;  // torchvision's defaults
  if (mean.empty() || sd.empty()) compute_mean_std(out.train.images, mean, sd);  // the training split's, as a folder's
  for (Dataset* d : {&out.train, &out.test})
    if (d->size()) d->mean = mean, d->std = sd;
  return out;
}

}  // namespace

ImageFolderSplits load_image_folder_splits(const fs::path& root, const ImageFolderSplitOptions& opt) {
  EMBER_CHECK(opt.size >= 0 && opt.size <= 4096, ValueError, "image folder: the image size must be between 1 and 4096, got ",
              opt.size);
  EMBER_CHECK(opt.channels == 0 || opt.channels == 1 || opt.channels == 3, ValueError,
              "image folder: channels must be 1 or 3, got ", opt.channels);
  EMBER_CHECK(opt.test_fraction > 0 && opt.test_fraction < 1, ValueError,
              "image folder: the test fraction must be between 0 and 1 (exclusive), got ", opt.test_fraction);
  EMBER_CHECK(opt.load_train || opt.photos || (!opt.mean.empty() && !opt.std.empty()), ValueError,
              "image folder: loading only the test split needs the training split's mean and std");
  EMBER_CHECK(opt.max_pixels >= 0, ValueError, "image folder: the pixel budget must be >= 0 (0: no limit), got ",
              opt.max_pixels);
  if (!is_dir(root) && is_photo_cache(root)) return photo_cache_splits(root, opt);
  if (!is_dir(root))
    throw IOError(detail::cat("image folder '", root.string(), "': not a directory"),
                  "pass a folder holding train/<class>/ and test/<class>/ sub-folders, or one sub-folder per class");
  ImageFolderSplits out;
  auto warn = [&](std::string w) {
    std::fprintf(stderr, "ember: warning: %s\n", w.c_str());
    out.warnings.push_back(std::move(w));
  };
  const bool split_layout = is_dir(root / "train") || is_dir(root / "test");
  std::string val_name;
  if (split_layout) {
    EMBER_CHECK(is_dir(root / "train") && is_dir(root / "test"), DataError, "image folder '", root.string(), "': found ",
                is_dir(root / "train") ? "train/ but no test/" : "test/ but no train/",
                " (expected train/<class>/ and test/<class>/; val/<class>/ is optional)");
    val_name = val_folder_name(root);
    out.layout = val_name.empty() ? "train/ and test/ folders" : detail::cat("train/, ", val_name, "/ and test/ folders");
    // Beside the splits, nothing is read: say so rather than drop a folder of images in silence.
    std::vector<std::string> others;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(".") || name == "train" || name == "test" || name == val_name) continue;
      others.push_back(name + (is_dir(e.path()) ? "/" : ""));
    }
    std::sort(others.begin(), others.end());
    if (!others.empty())
      warn(detail::cat("image folder '", root.string(), "': only train/, test/ and val/ (or validation/, valid/) are "
                       "read; not read: ", join_names(others)));
  } else {
    out.layout = detail::cat("one folder of classes, seeded split (", std::llround(100 * (1 - opt.test_fraction)), "/",
                             std::llround(100 * opt.test_fraction), ")");
  }

  const fs::path train_root = split_layout ? root / "train" : root;
  ImageFolderOptions io;
  io.resize = ResizeMode::CenterCrop;  // photos keep their aspect ratio
  io.height = io.width = opt.size;
  io.channels = opt.channels;
  io.max_pixels = opt.max_pixels;
  if (opt.photos) {
    EMBER_CHECK(opt.channels == 0 || opt.channels == 3, ValueError,
                "image folder: photos are read as RGB (3 channels), got --channels ", opt.channels);
    io.channels = 3;
    io.height = io.width = opt.size > 0 ? opt.size : opt.photo_size;
    out.size_source = detail::cat(io.height, "x", io.height, " RGB crops (",
                                  opt.size > 0 ? "--image-size" : "default: the model's size", "), decoded per sample");
  }
  if (opt.load_train && opt.photos) check_training_classes(train_root, list_image_folder(train_root));
  if (!opt.photos && (opt.load_train || opt.size == 0 || opt.channels == 0)) {
    const ImageFolderListing listing = list_image_folder(train_root);
    EMBER_CHECK(!listing.files.empty(), DataError, "image folder '", root.string(), "': no image files in ",
                split_layout ? "train/<class>/" : "<class>/", " (.png, .jpg, .jpeg, .bmp, .gif, .tga, .ppm, .pgm)",
                listing.not_read.empty() ? "" : "; " + describe_not_read(listing.not_read));
    if (opt.load_train) check_training_classes(train_root, listing);
    if (opt.size == 0 || opt.channels == 0) out.size_source = choose_geometry(listing, opt, io);
  }

  const std::string base = "image-folder:" + root.string();
  auto load = [&](const fs::path& dir, const char* what, bool train = false) {
    ImageFolderReport rep;
    Dataset d = opt.photos ? photo_folder(dir, opt, train, rep) : load_image_folder(dir, io, &rep);
    for (const std::string& c : rep.empty_classes)
      out.warnings.push_back(detail::cat(what, " has no images of class '", c, "': its accuracy there is not measured"));
    for (std::string& w : rep.warnings) out.warnings.push_back(std::move(w));
    if (!rep.not_read.empty()) out.warnings.push_back(detail::cat(what, ": ", describe_not_read(rep.not_read)));
    return d;
  };
  if (split_layout) {
    if (opt.load_train) out.train = load(root / "train", "train/", /*train=*/true);
    out.test = load(root / "test", "test/");
    if (!val_name.empty()) out.val = load(root / val_name, "val/");
    out.train.name = base + "/train", out.test.name = base + "/test";
    if (out.val.size()) out.val.name = base + "/" + val_name;
  } else {
    Dataset all = load(root, "the folder");
    std::vector<int64_t> train_idx, test_idx;
    seeded_split(all, opt.test_fraction, opt.seed ^ 0x696d616765736574ULL /* "imageset" */, train_idx, test_idx);
    EMBER_CHECK(!test_idx.empty(), DataError, "image folder '", root.string(), "': too few images to hold any out for "
                "testing (", all.size(), " images in ", all.num_classes(), " classes)",
                "; put at least two images in each class folder");
    if (opt.load_train) out.train = take_rows(all, train_idx, base + " (train split)");
    out.test = take_rows(all, test_idx, base + " (test split)");
    out.train.recipe.train = true;  // photos: the training split is augmented, the test split not
  }

  const std::vector<std::string>& classes = opt.load_train ? out.train.classes : out.test.classes;
  if (!opt.classes.empty()) check_classes(opt.load_train ? out.train : out.test, opt.classes,
                                          "image folder '" + root.string() + "'", "the trained run");
  if (opt.load_train) {
    check_classes(out.test, classes, "test/", "train/");
    if (out.val.size()) check_classes(out.val, classes, val_name + "/", "train/");
  }
  std::vector<float> mean = opt.mean, sd = opt.std;
  if ((mean.empty() || sd.empty()) && opt.photos) mean = kImageNetMean, sd = kImageNetStd;  // torchvision's defaults
  if (mean.empty() || sd.empty()) compute_mean_std(out.train.images, mean, sd);
  EMBER_CHECK(int64_t(mean.size()) == io.channels && int64_t(sd.size()) == io.channels, ValueError,
              "image folder: ", mean.size(), " means and ", sd.size(), " stds given for ", io.channels, " channels");
  for (Dataset* d : {&out.train, &out.test, &out.val})
    if (d->size()) d->mean = mean, d->std = sd;
  return out;
}

DatasetSplit split_dataset(const Dataset& all, double fraction, uint64_t rng_seed) {
  EMBER_CHECK(fraction >= 0 && fraction < 1, ValueError, "split_dataset: the fraction must be in [0, 1), got ", fraction);
  EMBER_CHECK(all.is_photos() || (all.images.defined() && all.images.is_contiguous() && all.images.device().is_cpu()),
              ValueError, "split_dataset: the images must be a contiguous CPU tensor");
  std::vector<int64_t> kept_idx, held_idx;
  if (fraction > 0) seeded_split(all, fraction, rng_seed, kept_idx, held_idx);
  DatasetSplit out;
  if (held_idx.empty()) {
    out.kept = all;  // nothing held out: the same tensors, no copy
    return out;
  }
  out.kept = take_rows(all, kept_idx, all.name);
  out.held_out = take_rows(all, held_idx, all.name + " (held out)");
  out.held_out.recipe.train = false;  // photos: a held-out split is evaluated, not augmented
  for (Dataset* d : {&out.kept, &out.held_out}) d->mean = all.mean, d->std = all.std;
  return out;
}

Dataset subset_dataset(const Dataset& all, int64_t n, uint64_t rng_seed) {
  if (n <= 0 || n >= all.size()) return all;
  EMBER_CHECK(all.is_photos() || (all.images.defined() && all.images.is_contiguous() && all.images.device().is_cpu()),
              ValueError, "subset_dataset: the images must be a contiguous CPU tensor");
  std::vector<std::vector<int64_t>> by_class(size_t(all.num_classes()));
  const int64_t* lab = all.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < all.size(); ++i) by_class[size_t(lab[i])].push_back(i);
  // Proportional shares, the remainder to the largest fractional parts (Hamilton's method).
  const size_t k = by_class.size();
  std::vector<int64_t> take(k, 0);
  std::vector<std::pair<double, size_t>> frac;
  int64_t given = 0;
  for (size_t c = 0; c < k; ++c) {
    const double exact = double(n) * double(by_class[c].size()) / double(all.size());
    take[c] = int64_t(exact);
    given += take[c];
    frac.emplace_back(-(exact - double(take[c])), c);  // larger fraction first, then lower label
  }
  std::sort(frac.begin(), frac.end());
  for (size_t i = 0; given < n && i < frac.size(); ++i, ++given) ++take[frac[i].second];
  // A small class rounded to nothing takes one from the largest share while n allows.
  for (size_t c = 0; c < k; ++c) {
    if (take[c] > 0 || by_class[c].empty()) continue;
    const size_t big = size_t(std::max_element(take.begin(), take.end()) - take.begin());
    if (take[big] <= 1) break;
    --take[big], ++take[c];
  }
  std::mt19937_64 rng(rng_seed);
  std::vector<int64_t> keep;
  keep.reserve(size_t(n));
  for (size_t c = 0; c < k; ++c) {
    auto& members = by_class[c];
    for (size_t i = members.size(); i > 1; --i) std::swap(members[i - 1], members[size_t(rng() % i)]);
    keep.insert(keep.end(), members.begin(), members.begin() + std::ptrdiff_t(take[c]));
  }
  std::sort(keep.begin(), keep.end());
  Dataset out = take_rows(all, keep, all.name);
  out.mean = all.mean, out.std = all.std;
  return out;
}

int64_t classes_present(const Dataset& d) {
  if (d.size() == 0) return 0;
  std::vector<bool> seen(size_t(d.num_classes()), false);
  const Tensor labels = d.labels.cpu().contiguous();
  const int64_t* lab = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < d.size(); ++i) seen[size_t(lab[i])] = true;
  return int64_t(std::count(seen.begin(), seen.end(), true));
}

}  // namespace ember::data

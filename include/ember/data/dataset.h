// Dataset: a labelled image set ready for the DataLoader: labels int64 (N) in [0, classes.size()),
// and either images uint8 (N, C, H, W), contiguous, held once (floats are made per batch), or a
// photo set (photo_set.h: the files, decoded and transformed per sample; images undefined).
// Sources: the known datasets by name (fashion-mnist, mnist, cifar10, cifar100), image folders
// (root/<class>/<file>.png|jpg, as tensors or photos) and photo caches, the IDX/CIFAR readers'
// LabeledImages, or tensors the user already has in memory. A Dataset is a value of handles:
// copying it never copies pixels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/data/decode.h"
#include "ember/data/photo_set.h"
#include "ember/data/readers.h"

namespace ember::data {

struct Dataset {
  std::string name;                  // "fashion-mnist", "image-folder:<root>", "tensors", ...
  Tensor images;                     // uint8 (N, C, H, W), contiguous; undefined for a photo dataset
  Tensor labels;                     // int64 (N)
  std::vector<std::string> classes;  // label i is classes[i]
  std::vector<float> mean, std;      // per channel, on the [0, 1] scale (pixel / 255)
  // A photo dataset (photo_set.h): the samples are files decoded and transformed per use by the
  // recipe, giving (3, recipe.size, recipe.size) samples; `images` is then undefined.
  std::shared_ptr<const PhotoSet> photos;
  PhotoRecipe recipe;

  bool is_photos() const { return photos != nullptr; }
  int64_t size() const { return photos ? photos->size() : images.defined() ? images.size(0) : 0; }
  int64_t channels() const { return photos ? 3 : images.size(1); }
  int64_t height() const { return photos ? recipe.size : images.size(2); }
  int64_t width() const { return photos ? recipe.size : images.size(3); }
  int64_t num_classes() const { return int64_t(classes.size()); }
  // Bytes of pixel + label memory this dataset holds.
  size_t nbytes() const;
};

// Per-channel mean and std (population, on the [0, 1] scale) of uint8 (N, C, H, W) images.
// One pass, accumulated in double.
void compute_mean_std(const Tensor& images, std::vector<float>& mean, std::vector<float>& std);

// Takes ownership of the reader's buffers without copying the pixels (the uint8 data is held
// once, even while converting). classes default to "0".."K-1"; mean/std, when empty, are computed.
Dataset dataset_from_labeled_images(LabeledImages&& li, std::string name, std::vector<std::string> classes = {},
                                    std::vector<float> mean = {}, std::vector<float> std = {});

// Users' own data from C++: images uint8 (N, C, H, W) or (N, H, W) (C = 1), labels integer (N) in
// [0, num_classes). The tensors are shared, not copied, when already uint8/int64 contiguous on the
// CPU. num_classes 0 = max label + 1. Throws ShapeError / DTypeError / ValueError.
Dataset dataset_from_tensors(const Tensor& images, const Tensor& labels, int64_t num_classes = 0,
                             std::vector<std::string> classes = {}, std::vector<float> mean = {},
                             std::vector<float> std = {});

// ---- image folders ---------------------------------------------------------------------------
// The pixel budget of one decoded image (kMaxImagePixels, decode.h), checked against the file's
// header before anything is decoded (a 400 KB PNG can declare 20000x20000 pixels and take 1.6 GB to
// decode). Pillow's limits: above kMaxImagePixels a file is refused; above half of it a warning
// says how large it is. `ember train/eval/predict --max-image-pixels N` changes the budget (0: no
// limit). Files are decoded by decode_image (ember/data/decode.h): JPEG, PNG, WebP, BMP, GIF, TGA,
// PPM/PGM, with the pixels of Pillow's convert("RGB") / convert("L") and the EXIF orientation applied.

enum class ResizeMode {
  Resize,      // scale to (height, width), ignoring the aspect ratio (stb_image_resize default
               // filters: Catmull-Rom up, Mitchell down)
  CenterCrop,  // scale the shorter side to fit, then cut the centre (height, width)
};
struct ImageFolderOptions {
  int64_t height = 32, width = 32;
  int64_t channels = 3;            // 1 (grey) or 3 (RGB), converted as Pillow's convert("L"/"RGB")
  ResizeMode resize = ResizeMode::Resize;
  bool strict = false;             // an undecodable file: false = skip with a warning, true = DataError
  int64_t max_pixels = kMaxImagePixels;  // width x height above this: DataError before decoding; 0: no limit
};
struct ImageFolderReport {
  int64_t loaded = 0;
  std::vector<std::string> warnings;       // one per skipped file, naming it (also printed to stderr)
  std::vector<std::string> empty_classes;  // class folders holding no image file (classes of 0 images)
  std::vector<std::string> not_read;       // entries left out, each "<class>/<name> (why)" (see below)
};
// The entries of an image folder as ember reads them: root/<class>/<file>, classes sorted by name
// give labels 0..K-1, files sorted by name within a class. Image files are those of
// image_extensions() (.jpg, .jpeg, .jpe, .jfif, .png, .webp, .bmp, .gif, .tga, .ppm, .pgm; any
// case); a symlink to one is followed. Hidden entries (".name") are
// left out in silence; everything else that is not read is listed in not_read with the reason: a
// file that is not an image, a dangling symlink, a folder inside a class folder (only one level is
// read), a file directly in root.
struct ImageFolderListing {
  std::vector<std::string> classes;
  std::vector<std::pair<std::filesystem::path, int64_t>> files;  // (path, label)
  std::vector<std::string> empty_classes;
  std::vector<std::string> not_read;
};
// Throws IOError (no such directory) or DataError (no class folders).
ImageFolderListing list_image_folder(const std::filesystem::path& root);
// "3 entries not read: 1 file that is not an image (cat/notes.txt), ..." — counts and the first names
// of each kind, for a warning; "" when nothing was left out.
std::string describe_not_read(const std::vector<std::string>& not_read);

// ---- files that cannot be decoded ------------------------------------------------------------------
// One damaged file (a truncated JPEG, a half-copied PNG) never ends a run: every reader of images —
// the folder loaded as tensors, a photo set's header scan and its per-sample decoding, `ember data
// cache` — leaves it out with the same warning, skip_warning(reason), and counts it. Only a large
// share of bad files is refused (a copy gone wrong, the wrong folder): more than one file and more
// than a tenth of those read, too_many_undecodable().
inline constexpr int64_t kUndecodableShareDenominator = 10;  // "a tenth"
// "skipping <reason>"; reason names the file ("photos/dog/5.jpg: cannot decode image: ...").
std::string skip_warning(const std::string& reason);
// `reason` prefixed with `file` unless it names the file already.
std::string reason_naming(const std::filesystem::path& file, const std::string& reason);
bool too_many_undecodable(int64_t bad, int64_t total);
// The DataError for too_many_undecodable: how many of how many, where, and the first reasons.
[[noreturn]] void throw_too_many_undecodable(const std::string& where, int64_t bad, int64_t total,
                                             const std::vector<std::string>& first_reasons);

// Decodes every image of list_image_folder(root). Entries not read and empty class folders are
// reported (and warned about on stderr); an empty class folder is still a class, with no images.
// Throws IOError (no such directory) or DataError (no class folders, no images, an image over the
// pixel budget, or an undecodable image under strict; the message names the file, what was
// expected and what was found).
Dataset load_image_folder(const std::filesystem::path& root, const ImageFolderOptions& opt = {},
                          ImageFolderReport* report = nullptr);
// One image file decoded and resized like an image-folder sample: uint8 (C, H, W). DataError
// naming the file (and what it starts with) when it cannot be decoded or declares more pixels than
// opt.max_pixels (checked on the header, before decoding; above half the budget a warning is
// printed); IOError when unreadable.
Tensor load_image(const std::filesystem::path& file, const ImageFolderOptions& opt);

// What an image file declares in its header (no full decode): size, channels as stored, format,
// EXIF orientation. DataError naming the file when it is not a readable image; IOError when the
// file cannot be read.
ImageInfo probe_image(const std::filesystem::path& file);
// The first image load_image_folder(root) would read (first class folder, first file, both by
// name); empty when there is none.
std::filesystem::path first_image_in_folder(const std::filesystem::path& root);

// ---- an image folder as train / test (/ val) splits --------------------------------------------
// Layouts:
//   root/train/<class>/*, root/test/<class>/* (and optionally root/val/<class>/*, also spelled
//                   validation/ or valid/): used as they are; other folders beside them are named
//                   in a warning;
//   root/<class>/*: one level of class folders, split per class by a seeded shuffle (test_fraction
//                   of each class held out for test, at least one image when the class has two).
// Every split is normalised with the training split's per-channel mean and std (or the given ones),
// and must have the same class folders as the training split. The training split must have at
// least two classes and an image in every class folder (a class of 0 images is refused, naming the
// folders); a test or val folder without images of a class is a warning.
// A photo cache file (photo_cache.h) in place of `root` gives the same splits, with the same
// defaults, as the folder it was written from: a seeded split per class, and without `photos` its
// pictures decoded once at the size and channels chosen the same way (from the pictures' stored
// sizes and their source files' channels).
struct ImageFolderSplitOptions {
  int64_t size = 0;                   // square side in pixels; 0: the median shorter side of up to
                                      // kSizeSample training images, at most kAutoMaxSide
  int64_t channels = 0;               // 1 or 3; 0: as most of those images (grey: 1, else 3)
  double test_fraction = 0.2;         // one-level layout only; in (0, 1)
  uint64_t seed = 0;                  // one-level layout: the split's shuffle
  bool load_train = true;             // false: only the test split (eval, predict); needs mean/std
  std::vector<std::string> classes;   // non-empty: the folder must have exactly these classes
  std::vector<float> mean, std;       // non-empty: normalise with these instead of the train split's
  int64_t max_pixels = kMaxImagePixels;  // per image, as ImageFolderOptions::max_pixels
  // Photos (photo_set.h): each split a PhotoSet decoded per sample, 3 channels, `size` the crop
  // (0: photo_size, the model's, said as the default), the training split through `augment`, the
  // others through the evaluation transforms;
  // mean/std ImageNet's unless given. Every file's header is read (not decoded) when listed: an
  // unreadable one is left out with a warning, one over the pixel budget refused.
  bool photos = false;
  int64_t photo_size = 224;           // photos without `size`: the model's input size
  Augment augment = Augment::Standard;
  ColorJitter jitter;                 // --color-jitter on the training split's photos
  static constexpr int64_t kAutoMaxSide = 64;
  static constexpr int64_t kSizeSample = 32;  // images probed (headers only) to choose size and channels
};
struct ImageFolderSplits {
  Dataset train, test, val;           // val.size() == 0 without a val/ folder; train empty when !load_train
  std::string layout;                 // "train/ and test/ folders", "one folder, seeded 80/20 split", ...
  std::string size_source;            // how the size and channels were chosen (for the banner)
  std::vector<std::string> warnings;  // what was left out or looks wrong (also printed to stderr)
};
// Throws IOError (no such directory), DataError (no classes or images, one class, an empty class
// folder in the training split, classes differing between splits or from opt.classes, a train/
// folder without test/, two val folders, an image over the pixel budget) or ValueError (bad options).
ImageFolderSplits load_image_folder_splits(const std::filesystem::path& root, const ImageFolderSplitOptions& opt);

// ---- a seeded split of a loaded dataset -------------------------------------------------------
// Per class, a seeded shuffle (std::mt19937_64 seeded with `rng_seed` as given: the same split on
// every machine), then round(fraction x n) of each class (at least one when the class has two or
// more images, never all of them) go to `held_out`; the rest stay in `kept`. Both keep the order of
// `all`, its classes, mean and std; pixels are copied once. fraction 0 (or too few images to hold
// any out) gives kept = all (shared, not copied) and an empty held_out. ValueError for a fraction
// outside [0, 1) or images that are not a contiguous CPU tensor.
struct DatasetSplit {
  Dataset kept, held_out;
};
DatasetSplit split_dataset(const Dataset& all, double fraction, uint64_t rng_seed);

// ---- a seeded, stratified subset (--limit-train, --limit-test) ---------------------------------
// n samples of `all`, drawn from each class in proportion to its size (largest remainders, ties to
// the lower label; a class with samples keeps at least one while n allows), each class's by a seeded
// shuffle (std::mt19937_64 seeded with `rng_seed` as given), kept in the order of `all`, with its
// classes, mean and std; pixels are copied once. n <= 0 or n >= all.size(): `all` itself (shared).
// ValueError for images that are not a contiguous CPU tensor.
Dataset subset_dataset(const Dataset& all, int64_t n, uint64_t rng_seed);
// How many of d's classes have at least one sample.
int64_t classes_present(const Dataset& d);

// ---- known datasets by name ------------------------------------------------------------------
struct KnownDataset {
  std::string name;                   // "fashion-mnist"
  std::vector<std::string> classes;
  std::vector<float> mean, std;       // of the training set, [0, 1] scale
  std::string install_hint;           // how to get it when missing
  int64_t channels = 0, size = 0;     // geometry of one sample: (channels, size, size)
};
// The names ember knows: fashion-mnist, mnist, cifar10, cifar100. Throws ValueError otherwise
// (the message lists the known names).
const KnownDataset& known_dataset(const std::string& name);
std::vector<std::string> known_dataset_names();

// Where a known dataset is looked for when no data_dir is given:
//   fashion-mnist: /usr/share/datasets/fashion-mnist (Debian dataset-fashion-mnist) if present,
//                  else the cache below
//   others:        $EMBER_DATA_DIR/NAME if EMBER_DATA_DIR is set, else ~/.cache/ember/datasets/NAME
std::filesystem::path default_data_dir(const std::string& name);

struct LoadOptions {
  std::filesystem::path data_dir;     // empty: default_data_dir(name)
  bool train = true;                  // training or test split
};
// Loads a known dataset. mnist / fashion-mnist read the MNIST-named IDX files
// ({train,t10k}-{images-idx3,labels-idx1}-ubyte, plain or .gz) from the directory; cifar10 reads
// cifar-10-batches-bin/ (or the directory itself), cifar100 cifar-100-binary/ (fine labels).
// A missing dataset throws IOError saying where it looked and how to get it
// (`apt-get install dataset-fashion-mnist` or `ember data fetch NAME`).
Dataset load_dataset(const std::string& name, const LoadOptions& opt = {});

}  // namespace ember::data

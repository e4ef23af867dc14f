// In-memory datasets for the fit loop: decode once, normalise, gather batches by index.
#include "ember/train/dataset.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "ember/data/readers.h"
#include "ember/ops.h"

namespace ember::train {
namespace fs = std::filesystem;

namespace {
struct Spec {
  const char* name;
  std::vector<double> mean, std;
  std::vector<std::string> classes;
};
const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {"fashion-mnist", {0.2860}, {0.3530},
       {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}},
      {"mnist", {0.1307}, {0.3081}, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
      {"cifar10", {0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616},
       {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}},
  };
  return s;
}
const Spec* find_spec(const std::string& name) {
  for (const auto& s : specs())
    if (name == s.name) return &s;
  return nullptr;
}
// The IDX file, plain or .gz, whichever exists.
fs::path idx_file(const fs::path& dir, const std::string& stem) {
  for (const char* ext : {".gz", ""})
    if (fs::exists(dir / (stem + ext))) return dir / (stem + ext);
  return dir / (stem + ".gz");
}
}  // namespace

std::vector<std::string> dataset_names() {
  std::vector<std::string> n;
  for (const auto& s : specs()) n.push_back(s.name);
  return n;
}

fs::path default_data_dir(const std::string& name) {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("EMBER_DATA_DIR")) candidates.push_back(fs::path(env) / name);
  candidates.push_back(fs::path("/usr/share/datasets") / name);
  if (const char* home = std::getenv("HOME")) candidates.push_back(fs::path(home) / ".cache/ember" / name);
  for (const auto& c : candidates)
    if (fs::is_directory(c)) return c;
  return candidates.back();
}

ImageDataset load_image_dataset(const std::string& name, const fs::path& dir, bool train, int64_t limit) {
  const Spec* spec = find_spec(name);
  if (!spec) {
    std::string known;
    for (const auto& n : dataset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError(fmt::format("unknown dataset '{}'", name), "choose one of: " + known);
  }
  std::string how = name == "fashion-mnist"
                        ? "install it with `apt install dataset-fashion-mnist` or `ember data fetch fashion-mnist`, or "
                          "point --data-dir at a directory holding the four IDX files"
                        : fmt::format("download it with `ember data fetch {}`, or point --data-dir at it", name);
  data::LabeledImages li;
  if (name == "cifar10") {
    fs::path d = fs::exists(dir / "cifar-10-batches-bin") ? dir / "cifar-10-batches-bin" : dir;
    if (!fs::exists(d / (train ? "data_batch_1.bin" : "test_batch.bin")))
      throw IOError(fmt::format("dataset cifar10 not found in '{}' (no {})", d.string(),
                                train ? "data_batch_1.bin" : "test_batch.bin"),
                    how);
    li = data::load_cifar10(d, train);
  } else {
    std::string split = train ? "train" : "t10k";
    fs::path images = idx_file(dir, split + "-images-idx3-ubyte"), labels = idx_file(dir, split + "-labels-idx1-ubyte");
    if (!fs::exists(images) || !fs::exists(labels))
      throw IOError(fmt::format("dataset {} not found in '{}' (looked for {})", name, dir.string(),
                                (fs::exists(images) ? labels : images).filename().string()),
                    how);
    li = data::load_idx_pair(images, labels, 10);
  }
  int64_t n = li.n;
  if (limit > 0 && limit < n) n = limit;
  const int64_t per = li.c * li.h * li.w;
  ImageDataset ds;
  ds.name = name;
  ds.num_classes = li.num_classes;
  ds.class_names = spec->classes;
  ds.labels.assign(li.labels.begin(), li.labels.begin() + n);
  ds.images = empty({n, li.c, li.h, li.w});
  float* out = ds.images.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < li.c; ++c) {
      const float m = float(spec->mean[size_t(c)]), s = float(spec->std[size_t(c)]);
      const int64_t plane = li.h * li.w;
      for (int64_t k = 0; k < plane; ++k) {
        const int64_t idx = i * per + c * plane + k;
        out[idx] = (float(li.images[size_t(idx)]) / 255.0f - m) / s;
      }
    }
  return ds;
}

std::pair<Tensor, Tensor> gather_batch(const ImageDataset& ds, const std::vector<int64_t>& order, int64_t begin,
                                       int64_t end) {
  const int64_t b = end - begin, per = ds.images.numel() / std::max<int64_t>(ds.size(), 1);
  Tensor x = empty({b, ds.images.size(1), ds.images.size(2), ds.images.size(3)});
  std::vector<int64_t> y(static_cast<size_t>(b));
  const float* src = ds.images.data_ptr<float>();
  float* dst = x.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    const int64_t j = order[size_t(begin + i)];
    std::memcpy(dst + i * per, src + j * per, size_t(per) * sizeof(float));
    y[size_t(i)] = ds.labels[size_t(j)];
  }
  return {x, tensor(y, {b})};
}

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  // A distinct Philox key per epoch: the golden-ratio increment keeps (seed, epoch) pairs apart.
  Generator gen(seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch) + 1);
  return randperm(n, &gen).to_vector<int64_t>();
}

}  // namespace ember::train

// Dataset construction: adopting the readers' buffers without a copy, users' tensors, statistics,
// and the known datasets by name (where they live, how to load them, how to get them).
#include "ember/data/dataset.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <map>
#include <mutex>

#include "ember/core/error.h"
#include "backends/registry.h"
#include "ember/io/user_file.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

// StorageImpl's deleter is a plain function of the data pointer, so the vectors whose buffers
// tensors adopt are kept here, keyed by that pointer, until the storage lets go.
std::mutex g_adopted_mu;
std::map<void*, std::vector<uint8_t>>& adopted() {
  static auto* m = new std::map<void*, std::vector<uint8_t>>();  // never destroyed: storages may outlive main
  return *m;
}
void release_adopted(void* p) {
  std::lock_guard<std::mutex> lock(g_adopted_mu);
  adopted().erase(p);
}

// A uint8 tensor over `bytes`'s buffer, without copying it.
Tensor adopt_bytes(std::vector<uint8_t>&& bytes, Shape shape) {
  EMBER_ASSERT(int64_t(bytes.size()) == shape_numel(shape));
  if (bytes.empty()) return empty(std::move(shape), {.dtype = DType::UInt8});
  void* p = bytes.data();
  const size_t n = bytes.size();
  {
    std::lock_guard<std::mutex> lock(g_adopted_mu);
    adopted().emplace(p, std::move(bytes));  // moving a vector keeps its buffer
  }
  // Every other tensor comes from empty(), which registers the backends first; so must this one,
  // or a kernel looked up through it before any allocation would find the table empty.
  ensure_backends();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(p, n, Device::cpu(), &release_adopted);
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = DType::UInt8;
  return Tensor(impl);
}

std::vector<std::string> numbered_classes(int64_t k) {
  std::vector<std::string> c;
  for (int64_t i = 0; i < k; ++i) c.push_back(std::to_string(i));
  return c;
}

// Class names from a CIFAR meta file (one name per line), when present and complete.
std::vector<std::string> read_class_names(const fs::path& file, size_t expected) {
  if (io::path_type(file) == io::PathType::missing) return {};
  std::istringstream in(io::read_user_text(file, io::kClassNamesFile));
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.size() != expected) return {};
  return names;
}

}  // namespace

size_t Dataset::nbytes() const {
  return (images.defined() ? images.nbytes() : 0) + (labels.defined() ? labels.nbytes() : 0);
}

void compute_mean_std(const Tensor& images, std::vector<float>& mean, std::vector<float>& sd) {
  EMBER_CHECK(images.dtype() == DType::UInt8 && images.dim() == 4, DTypeError,
              "compute_mean_std: expected uint8 (N, C, H, W) images, got ", images.dtype(), " ",
              shape_str(images.sizes()));
  Tensor im = images.cpu().contiguous();
  const int64_t n = im.size(0), c = im.size(1), hw = im.size(2) * im.size(3);
  const uint8_t* p = im.data_ptr<uint8_t>();
  mean.assign(size_t(c), 0.0f);
  sd.assign(size_t(c), 1.0f);
  for (int64_t ch = 0; ch < c; ++ch) {
    // A histogram makes this exact and cheap: 256 bins per channel.
    std::vector<uint64_t> hist(256, 0);
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* q = p + (i * c + ch) * hw;
      for (int64_t k = 0; k < hw; ++k) ++hist[q[k]];
    }
    double count = 0, s = 0, s2 = 0;
    for (int v = 0; v < 256; ++v) {
      const double x = v / 255.0;
      count += double(hist[size_t(v)]);
      s += double(hist[size_t(v)]) * x;
      s2 += double(hist[size_t(v)]) * x * x;
    }
    if (count == 0) continue;
    const double m = s / count;
    const double var = std::max(0.0, s2 / count - m * m);
    mean[size_t(ch)] = float(m);
    sd[size_t(ch)] = var > 0 ? float(std::sqrt(var)) : 1.0f;  // a constant channel: leave unscaled
  }
}

namespace {
Dataset finish_dataset(Dataset d, int64_t num_classes, std::vector<std::string> classes, std::vector<float> mean,
                       std::vector<float> sd) {
  if (classes.empty()) classes = numbered_classes(num_classes);
  EMBER_CHECK(int64_t(classes.size()) == num_classes, ValueError, "dataset '", d.name, "': ", classes.size(),
              " class names for ", num_classes, " classes");
  d.classes = std::move(classes);
  if (mean.empty() || sd.empty()) {
    compute_mean_std(d.images, mean, sd);
  }
  EMBER_CHECK(int64_t(mean.size()) == d.channels() && int64_t(sd.size()) == d.channels(), ValueError,
              "dataset '", d.name, "': mean/std need one value per channel (", d.channels(), "), got ",
              mean.size(), " and ", sd.size());
  d.mean = std::move(mean);
  d.std = std::move(sd);
  return d;
}
}  // namespace

Dataset dataset_from_labeled_images(LabeledImages&& li, std::string name, std::vector<std::string> classes,
                                    std::vector<float> mean, std::vector<float> sd) {
  EMBER_CHECK(li.n > 0, DataError, "dataset '", name, "' is empty");
  EMBER_CHECK(int64_t(li.images.size()) == li.n * li.c * li.h * li.w && int64_t(li.labels.size()) == li.n,
              InternalError, "dataset '", name, "': reader buffers do not match their dims");
  Dataset d;
  d.name = std::move(name);
  d.images = adopt_bytes(std::move(li.images), {li.n, li.c, li.h, li.w});
  d.labels = from_blob_copy(li.labels.data(), {li.n}, DType::Int64);
  li.labels = {};
  return finish_dataset(std::move(d), li.num_classes, std::move(classes), std::move(mean), std::move(sd));
}

Dataset dataset_from_tensors(const Tensor& images, const Tensor& labels, int64_t num_classes,
                             std::vector<std::string> classes, std::vector<float> mean, std::vector<float> sd) {
  EMBER_CHECK(images.defined() && labels.defined(), ValueError, "dataset_from_tensors: undefined tensor");
  EMBER_CHECK(images.dtype() == DType::UInt8, DTypeError, "dataset_from_tensors: images must be uint8 (pixel "
              "values 0..255), got ", images.dtype(), "; convert with images.mul(255).to(DType::UInt8)");
  EMBER_CHECK(images.dim() == 3 || images.dim() == 4, ShapeError, "dataset_from_tensors: images must be "
              "(N, C, H, W) or (N, H, W), got ", shape_str(images.sizes()));
  EMBER_CHECK(is_integral(labels.dtype()), DTypeError, "dataset_from_tensors: labels must be integers, got ",
              labels.dtype());
  EMBER_CHECK(labels.dim() == 1 && labels.size(0) == images.size(0), ShapeError, "dataset_from_tensors: labels ",
              shape_str(labels.sizes()), " do not match ", images.size(0), " images");
  EMBER_CHECK(images.size(0) > 0, ValueError, "dataset_from_tensors: no images");
  Dataset d;
  d.name = "tensors";
  Tensor im = images.dim() == 3 ? images.unsqueeze(1) : images;
  d.images = im.cpu().contiguous();
  d.labels = labels.to(Device::cpu(), DType::Int64).contiguous();
  const int64_t* lab = d.labels.data_ptr<int64_t>();
  int64_t max_label = 0;
  for (int64_t i = 0; i < d.labels.numel(); ++i) {
    EMBER_CHECK(lab[i] >= 0, ValueError, "dataset_from_tensors: label ", lab[i], " at index ", i, " is negative");
    max_label = std::max(max_label, lab[i]);
  }
  if (num_classes <= 0) num_classes = classes.empty() ? max_label + 1 : int64_t(classes.size());
  EMBER_CHECK(max_label < num_classes, ValueError, "dataset_from_tensors: label ", max_label, " is not below ",
              num_classes, " classes");
  return finish_dataset(std::move(d), num_classes, std::move(classes), std::move(mean), std::move(sd));
}

// ---- known datasets ----------------------------------------------------------------------------

const KnownDataset& known_dataset(const std::string& name) {
  static const std::vector<KnownDataset> known = {
      {"fashion-mnist",
       {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"},
       {0.2860f},
       {0.3530f},
       "install the Debian package (`apt-get install dataset-fashion-mnist`) or run "
       "`ember data fetch fashion-mnist`",
       1, 28},
      {"mnist", numbered_classes(10), {0.1307f}, {0.3081f}, "run `ember data fetch mnist`", 1, 28},
      {"cifar10",
       {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"},
       {0.4914f, 0.4822f, 0.4465f},
       {0.2470f, 0.2435f, 0.2616f},
       "run `ember data fetch cifar10`", 3, 32},
      {"cifar100", numbered_classes(100), {0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f},
       "run `ember data fetch cifar100`", 3, 32},
  };
  for (const auto& k : known) {
    if (k.name == name) return k;
  }
  std::string names;
  for (const auto& k : known) names += (names.empty() ? "" : ", ") + k.name;
  throw ValueError(detail::cat("unknown dataset '", name, "'; known datasets: ", names),
                   "for your own images use an image folder (root/<class>/<file>.png)");
}

std::vector<std::string> known_dataset_names() { return {"fashion-mnist", "mnist", "cifar10", "cifar100"}; }

fs::path default_data_dir(const std::string& name) {
  known_dataset(name);  // validates the name
  if (name == "fashion-mnist" && fs::is_directory("/usr/share/datasets/fashion-mnist")) {
    return "/usr/share/datasets/fashion-mnist";
  }
  if (const char* env = std::getenv("EMBER_DATA_DIR"); env && *env) return fs::path(env) / name;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".cache" / "ember" / "datasets" / name;
}

namespace {

[[noreturn]] void throw_missing(const std::string& name, const fs::path& dir, const std::string& what) {
  const KnownDataset& k = known_dataset(name);
  throw IOError(detail::cat("dataset '", name, "' not found: ", what, " in ", dir.string()),
                k.install_hint + (name == "fashion-mnist" ? "" : " (or pass --data-dir DIR)"));
}

// The existence checks go through io::path_type: a symlink loop or an unreadable directory is an
// IOError that says so, never std::filesystem's "filesystem error" nor "not found".
bool path_exists(const fs::path& p) { return io::path_type(p) != io::PathType::missing; }

// "<dir>/<base>" or "<dir>/<base>.gz", whichever exists.
fs::path find_idx(const std::string& name, const fs::path& dir, const std::string& base) {
  for (const fs::path& p : {dir / base, dir / (base + ".gz")}) {
    if (path_exists(p)) return p;
  }
  throw_missing(name, dir, "no " + base + " or " + base + ".gz");
}

fs::path find_subdir(const fs::path& dir, const std::string& sub, const std::string& probe) {
  if (path_exists(dir / sub / probe)) return dir / sub;
  return dir;
}

}  // namespace

Dataset load_dataset(const std::string& name, const LoadOptions& opt) {
  const KnownDataset& k = known_dataset(name);
  const fs::path dir = opt.data_dir.empty() ? default_data_dir(name) : opt.data_dir;
  if (io::path_type(dir) != io::PathType::directory) throw_missing(name, dir, "no such directory");
  if (name == "fashion-mnist" || name == "mnist") {
    const std::string split = opt.train ? "train" : "t10k";
    const fs::path images = find_idx(name, dir, split + "-images-idx3-ubyte");
    const fs::path labels = find_idx(name, dir, split + "-labels-idx1-ubyte");
    return dataset_from_labeled_images(load_idx_pair(images, labels, 10), name, k.classes, k.mean, k.std);
  }
  if (name == "cifar10") {
    const fs::path d = find_subdir(dir, "cifar-10-batches-bin", "test_batch.bin");
    if (!path_exists(d / "test_batch.bin")) throw_missing(name, dir, "no cifar-10-batches-bin/test_batch.bin");
    auto classes = read_class_names(d / "batches.meta.txt", 10);
    return dataset_from_labeled_images(load_cifar10(d, opt.train), name, classes.empty() ? k.classes : classes,
                                       k.mean, k.std);
  }
  EMBER_ASSERT(name == "cifar100");
  const fs::path d = find_subdir(dir, "cifar-100-binary", "test.bin");
  if (!path_exists(d / "test.bin")) throw_missing(name, dir, "no cifar-100-binary/test.bin");
  auto classes = read_class_names(d / "fine_label_names.txt", 100);
  return dataset_from_labeled_images(load_cifar100(d, opt.train, true), name, classes.empty() ? k.classes : classes,
                                     k.mean, k.std);
}

}  // namespace ember::data

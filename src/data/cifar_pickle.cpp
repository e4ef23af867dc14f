// CIFAR's Python version (cifar-10-batches-py/, cifar-100-python/, the folders torchvision
// downloads): pickled dicts of a uint8 NumPy array and label lists, read by the restricted unpickler
// (src/io/pickle.h, Allow::NumpyArrays) so a tampered batch can name no function and run nothing.
#include <string_view>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"
#include "io/pickle.h"

namespace ember::data {
namespace {

namespace pk = io::pickle;
using internal::kRedownloadHint;
using internal::throw_data_error;

constexpr int64_t kPixels = 3 * 32 * 32;
constexpr const char* kCifarHint =
    "the file is incomplete or corrupt: download the dataset again (torchvision's CIFAR10(root, download=True) "
    "or `ember data fetch cifar10` for the binary version)";

pk::Pickle unpickle_file(std::span<const uint8_t> bytes, const std::string& source) {
  size_t pos = 0;
  return pk::unpickle(bytes, pos, source, pk::Allow::NumpyArrays);
}

// The value under `key` in the pickle's top-level dict: keys are str (Python 3, or Python 2 read
// with encoding="latin1") or bytes (Python 2 read with encoding="bytes"); nullptr when absent.
const pk::Obj* lookup(const pk::Pickle& p, const std::string& key, const std::string& source) {
  const pk::Obj& root = p.at(p.root);
  if (!pk::is_dict(root.kind)) {
    throw_data_error(detail::cat(source, ": expected a pickled dict, found a ", pk::kind_name(root.kind)),
                     kCifarHint);
  }
  for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
    const pk::Obj& k = p.at(root.items[i]);
    if ((k.kind == pk::Kind::Str || k.kind == pk::Kind::Bytes) && k.s == key) return &p.at(root.items[i + 1]);
  }
  return nullptr;
}

std::string keys_of(const pk::Pickle& p) {
  std::string out;
  const pk::Obj& root = p.at(p.root);
  for (size_t i = 0; i < root.items.size(); i += 2) {
    const pk::Obj& k = p.at(root.items[i]);
    if (k.kind == pk::Kind::Str || k.kind == pk::Kind::Bytes) out += (out.empty() ? "'" : ", '") + k.s + "'";
  }
  return out.empty() ? "none" : out;
}

const pk::Obj& require(const pk::Pickle& p, const std::string& key, const std::string& source) {
  const pk::Obj* v = lookup(p, key, source);
  if (!v) throw_data_error(detail::cat(source, ": no '", key, "' entry (its keys: ", keys_of(p), ")"), kCifarHint);
  return *v;
}

void require_files(const std::filesystem::path& dir, const std::vector<std::string>& files, const char* what) {
  if (io::path_type(dir) != io::PathType::directory) {
    internal::throw_io_error(detail::cat(dir.string(), ": the ", what, " directory does not exist"),
                             "download the dataset (download=True) or pass the folder that holds it as root");
  }
  std::string missing;
  for (const auto& f : files) {
    if (io::path_type(dir / f) == io::PathType::missing) missing += (missing.empty() ? "" : ", ") + f;
  }
  if (!missing.empty()) {
    internal::throw_io_error(detail::cat(dir.string(), ": the ", what, " directory is missing ", missing),
                             "download the dataset again (download=True) into an empty root");
  }
}

void append(LabeledImages& dst, LabeledImages&& src) {
  if (dst.n == 0) {
    dst = std::move(src);
    return;
  }
  dst.images.insert(dst.images.end(), src.images.begin(), src.images.end());
  dst.labels.insert(dst.labels.end(), src.labels.begin(), src.labels.end());
  dst.n += src.n;
}

}  // namespace

LabeledImages parse_cifar_pickle(std::span<const uint8_t> bytes, const std::string& source,
                                 const std::string& labels_key, int64_t num_classes) {
  const pk::Pickle p = unpickle_file(bytes, source);
  const pk::Obj& data = require(p, "data", source);
  if (data.kind != pk::Kind::NpArray || data.items.size() != 3) {
    throw_data_error(detail::cat(source, ": 'data' is a ", pk::kind_name(data.kind), ", expected a uint8 array"),
                     kCifarHint);
  }
  const pk::Obj& shape = p.at(data.items[0]);
  const pk::Obj& dtype = p.at(data.items[1]);
  // The pickle machine checked that the bytes match the shape; here the shape must be (N, 3072).
  if (dtype.s != "u1" || shape.items.size() != 2 || p.at(shape.items[1]).i != kPixels ||
      p.at(shape.items[0]).i == 0) {
    std::string dims;
    for (uint32_t d : shape.items) dims += (dims.empty() ? "" : ", ") + std::to_string(p.at(d).i);
    throw_data_error(detail::cat(source, ": 'data' is a ", dtype.s, " array of shape (", dims,
                                 "), expected uint8 (N, 3072) with N > 0"),
                     kCifarHint);
  }
  const pk::Obj& labels = require(p, labels_key, source);
  if (labels.kind != pk::Kind::List) {
    throw_data_error(detail::cat(source, ": '", labels_key, "' is a ", pk::kind_name(labels.kind),
                                 ", expected a list of ints"),
                     kCifarHint);
  }
  LabeledImages out;
  out.n = p.at(shape.items[0]).i;
  out.c = 3;
  out.h = out.w = 32;
  out.num_classes = num_classes;
  if (static_cast<int64_t>(labels.items.size()) != out.n) {
    throw_data_error(detail::cat(source, ": ", out.n, " images but ", labels.items.size(), " '", labels_key, "'"),
                     kCifarHint);
  }
  out.labels.reserve(labels.items.size());
  for (size_t i = 0; i < labels.items.size(); ++i) {
    const pk::Obj& l = p.at(labels.items[i]);
    if (l.kind != pk::Kind::Int || l.i < 0 || l.i >= num_classes) {
      throw_data_error(detail::cat(source, ": '", labels_key, "'[", i, "] is ",
                                   l.kind == pk::Kind::Int ? std::to_string(l.i)
                                                           : std::string("a ") + pk::kind_name(l.kind),
                                   ", expected an int in [0, ", num_classes, ")"),
                       kCifarHint);
    }
    out.labels.push_back(l.i);
  }
  const std::string& pixels = p.at(data.items[2]).s;  // shape x dtype bytes: checked by the unpickler
  out.images.assign(pixels.begin(), pixels.end());
  return out;
}

std::vector<std::string> parse_cifar_pickle_names(std::span<const uint8_t> bytes, const std::string& source,
                                                  const std::string& key) {
  const pk::Pickle p = unpickle_file(bytes, source);
  const pk::Obj& names = require(p, key, source);
  if (names.kind != pk::Kind::List || names.items.empty()) {
    throw_data_error(detail::cat(source, ": '", key, "' is not a non-empty list of names"), kCifarHint);
  }
  std::vector<std::string> out;
  for (uint32_t i : names.items) {
    const pk::Obj& n = p.at(i);
    if (n.kind != pk::Kind::Str && n.kind != pk::Kind::Bytes) {
      throw_data_error(detail::cat(source, ": '", key, "' holds a ", pk::kind_name(n.kind), ", expected names"),
                       kCifarHint);
    }
    out.push_back(n.s);
  }
  return out;
}

LabeledImages load_cifar_python(const std::filesystem::path& dir, bool cifar100, bool train) {
  std::vector<std::string> files;
  if (cifar100) {
    files.push_back(train ? "train" : "test");
  } else if (train) {
    for (int i = 1; i <= 5; ++i) files.push_back(detail::cat("data_batch_", i));
  } else {
    files.push_back("test_batch");
  }
  require_files(dir, files, cifar100 ? "cifar-100-python" : "cifar-10-batches-py");
  LabeledImages all;
  for (const auto& f : files) {
    const auto path = dir / f;
    const std::vector<uint8_t> bytes = read_file_bytes(path, false);
    // torchvision's CIFAR100 reads the fine labels ("labels" in CIFAR-10's batches).
    append(all, parse_cifar_pickle(bytes, path.string(), cifar100 ? "fine_labels" : "labels", cifar100 ? 100 : 10));
  }
  return all;
}

std::vector<std::string> load_cifar_classes(const std::filesystem::path& dir, bool cifar100) {
  namespace fs = std::filesystem;
  const fs::path meta = dir / (cifar100 ? "meta" : "batches.meta");
  if (io::path_type(meta) != io::PathType::missing) {
    const std::vector<uint8_t> bytes = read_file_bytes(meta, false);
    return parse_cifar_pickle_names(bytes, meta.string(), cifar100 ? "fine_label_names" : "label_names");
  }
  // The binary tarballs' text lists: one name a line (blank lines dropped).
  const fs::path text = dir / (cifar100 ? "fine_label_names.txt" : "batches.meta.txt");
  if (io::path_type(text) == io::PathType::missing) {
    internal::throw_io_error(detail::cat(dir.string(), ": neither ", meta.filename().string(), " nor ",
                                         text.filename().string(), " (the class names) is there"),
                             "download the dataset again into an empty root");
  }
  const std::vector<uint8_t> bytes = read_file_bytes(text, false);
  std::vector<std::string> out;
  std::string line;
  for (size_t i = 0; i <= bytes.size(); ++i) {
    if (i == bytes.size() || bytes[i] == '\n') {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty()) out.push_back(line);
      line.clear();
    } else {
      line.push_back(static_cast<char>(bytes[i]));
    }
  }
  const size_t expected = cifar100 ? 100 : 10;
  if (out.size() != expected) {
    throw_data_error(detail::cat(text.string(), ": ", out.size(), " class names, expected ", expected),
                     kRedownloadHint);
  }
  return out;
}

}  // namespace ember::data

// CIFAR-10/100 binary readers: fixed-size records of label byte(s) followed by 3072 pixels
// (R, G, B planes of 32 x 32). There is no header, so the size and the labels are all we can check.
#include <array>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"

namespace ember::data {
namespace {

using internal::kRedownloadHint;
using internal::throw_data_error;

constexpr int64_t kChannels = 3, kSide = 32;
constexpr size_t kPixels = kChannels * kSide * kSide;  // 3072

void append(LabeledImages& dst, LabeledImages&& src) {
  if (dst.n == 0) {
    dst = std::move(src);
    return;
  }
  dst.images.insert(dst.images.end(), src.images.begin(), src.images.end());
  dst.labels.insert(dst.labels.end(), src.labels.begin(), src.labels.end());
  dst.n += src.n;
}

// io::path_type, not std::filesystem: a symlink loop must be named as one, not taken for "missing".
void require_dir(const std::filesystem::path& dir, const char* what, const char* expected_name) {
  const io::PathType type = io::path_type(dir);
  if (type == io::PathType::missing) {
    internal::throw_io_error(detail::cat(dir.string(), ": ", what, " directory does not exist"),
                             detail::cat("download the binary version (`ember data fetch ", expected_name,
                                         "`) and pass the extracted directory"));
  }
  if (type != io::PathType::directory) {
    internal::throw_io_error(detail::cat(dir.string(), ": expected the ", what, " directory, found a file"),
                             "pass the directory that holds the .bin files, not a file");
  }
}

// Checks every file exists before reading any, so a missing batch fails fast and names them all.
void require_files(const std::filesystem::path& dir, const std::vector<std::string>& files, const char* what) {
  std::string missing;
  for (const auto& f : files) {
    if (io::path_type(dir / f) == io::PathType::missing) missing += (missing.empty() ? "" : ", ") + f;
  }
  if (missing.empty()) return;
  std::string expected;
  for (const auto& f : files) expected += (expected.empty() ? "" : ", ") + f;
  std::string hint = "re-extract the binary version of the dataset into this directory";
  if (io::path_type(dir / files[0].substr(0, files[0].size() - 4)) != io::PathType::missing)
    hint = "this is the Python (pickle) version of the dataset; ember reads the binary version (*-binary.tar.gz)";
  if (missing == expected) {
    internal::throw_io_error(detail::cat(dir.string(), ": ", what, " directory holds none of its files: missing ",
                                         missing),
                             hint);
  }
  internal::throw_io_error(
      detail::cat(dir.string(), ": ", what, " directory is missing ", missing, " (expected ", expected, ")"), hint);
}

}  // namespace

LabeledImages parse_cifar(std::span<const uint8_t> bytes, const std::string& name, int label_bytes, int label_index,
                          int64_t num_classes) {
  if (label_bytes < 1 || label_bytes > 2 || label_index < 0 || label_index >= label_bytes) {
    internal::throw_value_error(detail::cat("parse_cifar: label_bytes ", label_bytes, " / label_index ", label_index,
                                            " are invalid; expected 1 / 0 (CIFAR-10) or 2 / 0..1 (CIFAR-100)"));
  }
  if (num_classes < 1 || num_classes > 256) {
    internal::throw_value_error(
        detail::cat("parse_cifar: num_classes ", num_classes, " is out of range; uint8 labels allow 1 to 256"));
  }
  const size_t record = static_cast<size_t>(label_bytes) + kPixels;
  const char* format = label_bytes == 1 ? "CIFAR-10" : "CIFAR-100";
  if (bytes.empty()) {
    throw_data_error(detail::cat(name, ": empty file (0 bytes), expected ", format, " records of ", record, " bytes"),
                     kRedownloadHint);
  }
  if (bytes.size() % record != 0) {
    const size_t whole = bytes.size() / record;
    const size_t other = label_bytes == 1 ? kPixels + 2 : kPixels + 1;
    std::string hint = kRedownloadHint;
    if (bytes.size() % other == 0) {
      hint = label_bytes == 1 ? "the size fits 3074-byte CIFAR-100 records: use load_cifar100"
                              : "the size fits 3073-byte CIFAR-10 records: use load_cifar10";
    }
    throw_data_error(detail::cat(name, ": size ", bytes.size(), " bytes is not a multiple of the ", record, "-byte ",
                                 format, " record (", label_bytes, " label byte", label_bytes == 1 ? "" : "s",
                                 " + 3072 pixels): ", whole, " whole records and ", bytes.size() % record,
                                 " bytes of an incomplete one starting at byte offset ", whole * record),
                     hint);
  }

  LabeledImages out;
  out.n = static_cast<int64_t>(bytes.size() / record);
  out.c = kChannels;
  out.h = kSide;
  out.w = kSide;
  out.num_classes = num_classes;
  out.labels.resize(static_cast<size_t>(out.n));
  out.images.resize(static_cast<size_t>(out.n) * kPixels);
  for (size_t i = 0; i < static_cast<size_t>(out.n); ++i) {
    const uint8_t* rec = bytes.data() + i * record;
    const uint8_t v = rec[label_index];
    if (v >= num_classes) {
      throw_data_error(detail::cat(name, ": label ", int{v}, " of record ", i, " (byte offset ",
                                   i * record + static_cast<size_t>(label_index), ") is out of range for ",
                                   num_classes, " classes (expected 0 to ", num_classes - 1, ")"),
                       label_bytes == 1 ? "is this a CIFAR-100 file? use load_cifar100" : kRedownloadHint);
    }
    out.labels[i] = v;
    std::copy(rec + label_bytes, rec + record, out.images.begin() + static_cast<std::ptrdiff_t>(i * kPixels));
  }
  return out;
}

LabeledImages load_cifar10(const std::filesystem::path& dir, bool train) {
  require_dir(dir, "CIFAR-10", "cifar10");
  std::vector<std::string> files;
  if (train) {
    for (int i = 1; i <= 5; ++i) files.push_back(detail::cat("data_batch_", i, ".bin"));
  } else {
    files.push_back("test_batch.bin");
  }
  require_files(dir, files, "CIFAR-10");
  LabeledImages all;
  for (const auto& f : files) {
    const auto path = dir / f;
    internal::FileBytes file = internal::read_file(path, true);
    append(all, parse_cifar(file.data, file.was_gzip ? path.string() + " (decompressed)" : path.string(), 1, 0, 10));
  }
  return all;
}

LabeledImages load_cifar100(const std::filesystem::path& dir, bool train, bool fine_labels) {
  require_dir(dir, "CIFAR-100", "cifar100");
  const std::string f = train ? "train.bin" : "test.bin";
  require_files(dir, {f}, "CIFAR-100");
  const auto path = dir / f;
  internal::FileBytes file = internal::read_file(path, true);
  return parse_cifar(file.data, file.was_gzip ? path.string() + " (decompressed)" : path.string(), 2,
                     fine_labels ? 1 : 0, fine_labels ? 100 : 20);
}

}  // namespace ember::data

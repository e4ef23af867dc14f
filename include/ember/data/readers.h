// Dataset file readers: IDX (MNIST family, plain or gzip) and CIFAR-10/100 binary batches.
// They return plain uint8 buffers (no Tensor), validated against the file's own header and
// against each other (image count == label count, every label < num_classes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "ember/io/sha256.h"

namespace ember::data {

// A uint8 IDX array (element type byte 0x08), row-major, dims as stored in the header.
// data.size() == product(dims).
struct IdxArray {
  std::vector<uint8_t> data;
  std::vector<int64_t> dims;
};

// Images plus labels, validated together.
//   images: (n, c, h, w) uint8, row-major, channel planes contiguous (CIFAR is R, G, B planes)
//   labels: (n), each in [0, num_classes)
struct LabeledImages {
  std::vector<uint8_t> images;
  std::vector<int64_t> labels;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t num_classes = 0;
};

// Reads a whole file through io::read_user_file (a regular file of at most 4 GiB: a FIFO, a device
// or a directory is refused unread). When gunzip_if_gzip is set and the content starts with the gzip
// magic (1f 8b) it is decompressed (all concatenated members, output capped at 4 GiB and grown with
// the data, never sized from the gzip trailer); detection is by content, never by file name. Throws
// IOError (missing file, not a regular file, symlink loop, permission, read error, over the cap) or
// DataError (truncated/corrupt gzip); messages name the file.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path, bool gunzip_if_gzip = true);

// The pure IDX parser: header checks (magic 00 00 08 ndim, 1 <= ndim <= 4), dims product checked
// for overflow and against the payload size before anything is allocated. source_name prefixes
// every error message. Throws DataError.
IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& source_name);

// read_file_bytes + parse_idx. Plain or gzip (detected by content); a .gz is decompressed into no
// more than the size its IDX header promises (header + product of the dims).
IdxArray read_idx(const std::filesystem::path& path);

// An IDX image file (3 dims: N, H, W -> c = 1; or 4 dims read as N, C, H, W) and an IDX label file
// (1 dim: N). Throws DataError when a file has the wrong kind (hinting at swapped paths), the
// counts differ, the set is empty or a label is >= num_classes; ValueError when num_classes is
// not in [1, 256].
LabeledImages load_idx_pair(const std::filesystem::path& images, const std::filesystem::path& labels,
                            int64_t num_classes = 10);

// Parses CIFAR binary records: label_bytes label bytes then 3072 pixel bytes (3 x 32 x 32,
// R, G, B planes). CIFAR-10: label_bytes 1, label_index 0, 10 classes. CIFAR-100: label_bytes 2,
// label_index 0 (coarse, 20 classes) or 1 (fine, 100 classes). The size must be a non-zero
// multiple of the record size. Throws DataError (bad content) or ValueError (bad arguments).
LabeledImages parse_cifar(std::span<const uint8_t> bytes, const std::string& source_name, int label_bytes,
                          int label_index, int64_t num_classes);

// CIFAR-10 binary version (cifar-10-batches-bin/): data_batch_1.bin .. data_batch_5.bin when
// train, test_batch.bin otherwise. All files are checked to exist before any is read.
LabeledImages load_cifar10(const std::filesystem::path& dir, bool train);

// CIFAR-100 binary version (cifar-100-binary/): train.bin or test.bin; fine (100) or coarse (20)
// labels.
LabeledImages load_cifar100(const std::filesystem::path& dir, bool train, bool fine_labels = true);

// CIFAR's Python version (the pickled batches torchvision downloads), read by the restricted
// unpickler: NumPy arrays are rebuilt from their bytes and any global outside numpy's array
// machinery (os.system, builtins.eval, ...) is refused by name before anything is called. Keys may be
// str or bytes. A malformed pickle is io::PthError (kind Pickle), a forbidden global
// io::PthForbiddenGlobalError, content of the wrong shape DataError.
// One batch: 'data' a uint8 array (N, 3072) of R, G, B planes, labels_key ("labels", "fine_labels",
// "coarse_labels") a list of N ints in [0, num_classes).
LabeledImages parse_cifar_pickle(std::span<const uint8_t> bytes, const std::string& source,
                                 const std::string& labels_key, int64_t num_classes);
// The list of names under key ("label_names", "fine_label_names") of a meta file.
std::vector<std::string> parse_cifar_pickle_names(std::span<const uint8_t> bytes, const std::string& source,
                                                  const std::string& key);
// cifar-10-batches-py/ (data_batch_1..5 when train, else test_batch; "labels") or cifar-100-python/
// (train or test; "fine_labels", as torchvision's CIFAR100 reads). Missing files are IOError.
LabeledImages load_cifar_python(const std::filesystem::path& dir, bool cifar100, bool train);
// The class names of a CIFAR folder of either version: the pickled meta file (batches.meta /
// meta: label_names / fine_label_names) when present, else the binary version's text list
// (batches.meta.txt / fine_label_names.txt), which must hold 10 / 100 names.
std::vector<std::string> load_cifar_classes(const std::filesystem::path& dir, bool cifar100);

// SHA-256 of bytes as 64 lowercase hex digits: lives in the io layer (ember/io/sha256.h).
using io::sha256_hex;

}  // namespace ember::data

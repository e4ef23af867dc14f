// Reading a file whose path a user gave (datasets, checkpoints and their manifests, model specs,
// config files, images, metrics): only regular files are read. A FIFO, a device (a symlink to
// /dev/zero), a socket or a directory is refused with what it is, without blocking and without
// reading a byte; a symlink loop is named as one; no read goes past a size cap per kind of file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ember::io {

// A kind of user file: how messages name it, the most bytes ember reads of it, and the hint
// given when the path does not exist (empty: a generic "check the path").
struct UserFileKind {
  const char* name;
  uint64_t max_bytes;
  const char* missing_hint = "";
};

// The caps sit far above any genuine file of the kind and far below "read until memory runs out".
// Dataset files: the largest ember reads (CIFAR-100 train.bin, 150 MiB) times 25; matches the cap
// on decompressed gzip output.
inline constexpr UserFileKind kDatasetFile{"dataset file", uint64_t{4} << 30,
                                           "check the path; `ember data fetch <dataset>` downloads MNIST, "
                                           "Fashion-MNIST and CIFAR-10"};
// Checkpoint weights (safetensors): ember's models are CNNs of a few MB; 16 GiB is a 4-billion
// parameter f32 model.
inline constexpr UserFileKind kCheckpointFile{"checkpoint", uint64_t{16} << 30};
// latest.json / best.json: a few KB of JSON (settings, optimizer scalars, RNG state).
inline constexpr UserFileKind kManifestFile{"checkpoint manifest", uint64_t{64} << 20};
// Hand-written text: model spec (.toml), config file, class-name lists.
inline constexpr UserFileKind kModelSpecFile{"model spec", uint64_t{4} << 20,
                                             "check the --model path (a zoo name or a .toml model spec)"};
inline constexpr UserFileKind kConfigFile{"config file", uint64_t{4} << 20, "check the --config path"};
inline constexpr UserFileKind kClassNamesFile{"class-name list", uint64_t{4} << 20};
// A PNG/JPEG to classify or train on: a 16k x 16k RGB PNG is under 1 GiB; photos are a few MB.
inline constexpr UserFileKind kImageFile{"image", uint64_t{256} << 20, "check the path of the image"};
// metrics.jsonl: ~150 bytes a record; 1 GiB is millions of logged steps.
inline constexpr UserFileKind kMetricsFile{"metrics file", uint64_t{1} << 30};

// The whole content of `path` (symlinks followed). The file is opened with O_NONBLOCK, so a FIFO
// with no writer cannot block, and checked with fstat on the open descriptor before any read.
// Throws ember::IOError naming the path:
//   missing / permission denied / other open errors: "<path>: cannot open for reading: <errno text>"
//   a symlink loop:        "too many levels of symbolic links: <path> ..."
//   not a regular file:    "<path> is a FIFO (named pipe), not a regular file: expected a <kind>"
//                          (directory, character device, block device, socket likewise; a symlink's
//                          target is named: "(it resolves to /dev/zero)")
//   over the cap:          "<path> is 5.2 GiB, over the 4 GiB limit for a <kind>" (also when a file
//                          grows past the cap while it is read)
// Thread-safe.
std::vector<uint8_t> read_user_file(const std::filesystem::path& path, const UserFileKind& kind);

// The same checks as read_user_file (opens it without blocking, regular file, under the cap) without
// reading, for a path that is read later or by another library. Throws the same IOErrors.
void check_user_file(const std::filesystem::path& path, const UserFileKind& kind);

// read_user_file as text (bytes unchanged).
std::string read_user_text(const std::filesystem::path& path, const UserFileKind& kind);

// What a path names, symlinks followed, for the "does it exist / is it a directory" checks before
// a read. Missing (ENOENT, ENOTDIR) is an answer, not an error; a symlink loop, a permission
// problem on a directory of the path or a name too long throw ember::IOError with the same words as
// read_user_file, where std::filesystem would throw filesystem_error (an "internal error") or
// report "does not exist".
enum class PathType { missing, regular, directory, other };
PathType path_type(const std::filesystem::path& path);

// "1.5 MiB"-style size for messages.
std::string format_bytes(uint64_t n);

}  // namespace ember::io

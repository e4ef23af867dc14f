// Downloading the known datasets (libcurl) with SHA-256 checks and atomic writes, and verifying
// what is on disk. Used by `ember data fetch NAME [--data-dir DIR] [--verify]`.
//
// Guarantees: a file appears under its final name only after it was downloaded completely and
// passed its check (SHA-256 of the decompressed content when ember knows it, otherwise a full
// structural parse); it is written with io::write_file_atomic, so a failed, partial or
// interrupted download never leaves a file that looks valid. A second call skips files that
// already pass their check.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ember::data {

// One file of a dataset on a server.
struct RemoteFile {
  std::string name;         // written as <dir>/<name>, and fetched from <base_url>/<name>
  std::string sha256;       // of the content after gunzip (gzip files) or of the file; "" = unknown
  // What the content must parse as when no SHA-256 is known (or in addition to it):
  //   "idx" (IDX file), "cifar10-tar" / "cifar100-tar" (the CIFAR binary tarball, extracted), "" (none)
  std::string kind;
  // SHA-256 of the bytes as the canonical server sends them (the .gz / .tar.gz), as published in
  // TensorFlow Datasets' url_checksums; "" = unknown. A file passes when either hash matches
  // (mirrors and Debian recompress the .gz, which changes these bytes but not the content).
  std::string download_sha256;
};

struct FetchOptions {
  std::string base_url;         // "" = the dataset's canonical address; tests point it at 127.0.0.1
  long connect_timeout_s = 30;
  long timeout_s = 1800;        // whole transfer
  long stall_timeout_s = 60;    // abort when under 1 byte/s for this long
  bool force = false;           // download again even when the file on disk verifies
  bool progress = false;        // print one line per file to stderr
};

struct FetchFileReport {
  std::string name;
  std::string status;   // "downloaded", "already present" (verified), "extracted"
  uint64_t bytes = 0;   // size on disk
  std::string sha256;   // of the checked content
  bool verified_sha256 = false;  // false: no known SHA-256, checked by parsing only
};
struct FetchReport {
  std::string dataset;
  std::string base_url;
  std::filesystem::path dir;
  std::vector<FetchFileReport> files;
};

// The files and canonical address of a known dataset (see known_dataset_names()), or of "kmnist"
// (fetched only for ember.vision.datasets.KMNIST; not a dataset `ember train` knows by name).
std::string canonical_base_url(const std::string& dataset);
std::vector<RemoteFile> dataset_files(const std::string& dataset);

// Downloads `files` from base_url into dir (created if needed). Throws IOError on a transfer
// failure (HTTP status, refused connection, truncated transfer, timeout; naming the URL) and
// DataError on a checksum or format mismatch (naming the file, the expected and the actual
// SHA-256); in every case no file is left under the final name unless it verified.
FetchReport fetch_files(const std::vector<RemoteFile>& files, const std::string& base_url,
                        const std::filesystem::path& dir, const FetchOptions& opt = {});

// Where fetch_dataset writes: dir itself, or for "" default_data_dir(name), except that the
// read-only Debian directory of fashion-mnist becomes $EMBER_DATA_DIR/<name> or
// ~/.cache/ember/datasets/<name>.
std::filesystem::path fetch_target_dir(const std::string& name, const std::filesystem::path& dir = {});

// fetch_files for a known dataset; dir "" = default_data_dir(name) (for fashion-mnist the Debian
// directory is read-only, so "" means $EMBER_DATA_DIR or ~/.cache/ember/datasets/fashion-mnist).
FetchReport fetch_dataset(const std::string& name, const std::filesystem::path& dir = {},
                          const FetchOptions& opt = {});

struct VerifyFileReport {
  std::string name;
  std::string expected_sha256;  // "" when ember knows none for this file
  std::string actual_sha256;    // of the decompressed content; "" when the file is missing
  bool ok = false;
  std::string message;          // what is wrong, or "ok" / "ok (no known SHA-256; parsed)"
};
struct VerifyReport {
  std::string dataset;
  std::filesystem::path dir;
  std::vector<VerifyFileReport> files;
  bool ok() const;
};
// Checks the dataset's files on disk (plain or .gz) against the known SHA-256 of their
// decompressed content (Fashion-MNIST); files without a known hash are parsed instead. Never throws
// for a bad or missing file: the report says what is wrong. dir "" = default_data_dir(name).
VerifyReport verify_dataset(const std::string& name, const std::filesystem::path& dir = {});

}  // namespace ember::data

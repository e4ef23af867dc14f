// Atomic, durable whole-file writes: checkpoints are replaced, never left half-written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace ember::io {

// Writes `bytes` to `path` so that a reader (or a crash) sees either the previous file or the new
// one, never a mix: a temp file "<name>.tmp.<pid>.<n>" is created in the same directory, written,
// fsync'ed, renamed over `path`, then the directory is fsync'ed so the rename survives power loss.
// The new file gets mode 0666 & ~umask (an existing file's mode is not carried over).
//
// On any failure the temp file is removed, the previous file at `path` (if any) is untouched, and
// ember::IOError is thrown naming `path` and the errno text (e.g. "No space left on device",
// "File too large"). Thread-safe; concurrent writers to one path each write their own temp file
// and the last rename wins. Does not change signal dispositions: a caller under RLIMIT_FSIZE that
// wants EFBIG instead of death must ignore SIGXFSZ itself.
void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace ember::io

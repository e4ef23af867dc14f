// Atomic, durable whole-file writes: checkpoints are replaced, never left half-written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace ember::io {

// Writes `bytes` to `path` so that a reader (or a crash) sees either the previous file or the new
// one, never a mix: a temp file "<name>.tmp.<pid>.<n>" is created in the same directory, written,
// fsync'ed, renamed over `path`, then the directory is fsync'ed so the rename survives power loss.
// The new file gets mode 0666 & ~umask (an existing file's mode is not carried over).
//
// A symlink is written through: the file it resolves to is replaced (the temp file goes next to
// it) and the link stays; a dangling link's target is created. A path that is (or resolves to) a
// directory, a device (/dev/stdout on a terminal, /dev/null), a FIFO or a socket is refused with an
// IOError saying what it is, before anything is created: rename would replace it.
//
// On any failure the temp file is removed, the previous file at `path` (if any) is untouched, and
// ember::IOError is thrown naming `path` and the errno text (e.g. "No space left on device",
// "File too large"). Thread-safe; concurrent writers to one path each write their own temp file
// and the last rename wins. Does not change signal dispositions: a caller under RLIMIT_FSIZE that
// wants EFBIG instead of death must ignore SIGXFSZ itself.
void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);

// Whether a user-named output path means standard output: "-", /dev/stdout, /dev/fd/1 or
// /proc/self/fd/1 (which write_file_atomic refuses when they resolve to a pipe or a terminal, and
// would replace when they resolve to a file).
bool names_stdout(const std::filesystem::path& path);

// Writes all of `bytes` to standard output (fd 1: a pipe, a file it was redirected to), for
// `-o -`. `what` names the content for messages ("the ONNX model"). IOError when standard output
// is a terminal (binary bytes would garble it; redirect it or name a file) or a write fails.
void write_stdout(std::span<const uint8_t> bytes, const std::string& what);

}  // namespace ember::io

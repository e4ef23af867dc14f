// SHA-256 (FIPS 180-4) of a byte string, for checkpoint weights and downloaded dataset files; plain
// and self-contained (no crypto library).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ember::io {
// SHA-256 of bytes as 64 lowercase hex digits.
std::string sha256_hex(std::span<const uint8_t> bytes);
}  // namespace ember::io

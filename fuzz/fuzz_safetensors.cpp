// libFuzzer target for the safetensors reader (mirrors the Rust reference's fuzz_target_1 and
// structured_roundtrip): arbitrary bytes -> st_parse must either throw FormatError or succeed, and
// whatever succeeds must survive st_serialize -> st_parse unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "ember/io/safetensors.h"

using namespace ember::io;

namespace {
[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StFile first;
  try {
    first = st_parse(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const ember::FormatError&) {
    return 0;  // rejecting is fine; any other exception type escapes and is reported
  }
  // A parsed file must always be writable, and the rewrite must read back identically.
  std::vector<uint8_t> bytes = st_serialize(first);
  StFile second = st_parse(bytes, "fuzz-roundtrip");
  if (second.metadata != first.metadata) die("metadata changed in round trip");
  if (second.tensors.size() != first.tensors.size()) die("tensor count changed in round trip");
  for (size_t i = 0; i < first.tensors.size(); ++i) {
    const StTensor& a = first.tensors[i];
    const StTensor& b = second.tensors[i];  // both sorted by name
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.data != b.data)
      die("tensor changed in round trip");
  }
  if (st_serialize(second) != bytes) die("writer is not deterministic");
  return 0;
}

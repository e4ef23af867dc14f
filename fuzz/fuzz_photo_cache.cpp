// libFuzzer target for the photo cache reader (src/data/photo_cache_format.h): arbitrary bytes go
// to parse_photo_cache, the checks a `--data photos.ember` file meets before anything is decoded.
// With the first byte odd the target appends the end marker and the right SHA-256 itself, so the
// fuzzer gets past the checksum into the header, metadata and index checks; even, the bytes are the
// whole file (the checksum and truncation paths). A DataError is the expected outcome for bad input;
// anything else (a crash, a sanitizer report, another exception, an entry outside its data region)
// is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "data/photo_cache_format.h"
#include "ember/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & 1) {
    const std::vector<uint8_t> sum = ember::data::sha256_raw(file);
    file.insert(file.end(), ember::data::kEndMagic, ember::data::kEndMagic + 8);
    file.insert(file.end(), sum.begin(), sum.end());
  }
  try {
    const ember::data::PhotoCacheIndex index = ember::data::parse_photo_cache(file, "fuzz.ember");
    if (index.classes.empty()) __builtin_trap();
    const uint64_t index_off = ember::data::get_u64(file.data() + 32);
    for (const auto& e : index.entries) {
      // offset, size, label, width, height, encoding: inside the data region, a known label
      if (e[0] < ember::data::kHeader || e[0] + e[1] > index_off || e[2] >= index.classes.size() || e[5] > 1)
        __builtin_trap();
    }
  } catch (const ember::DataError&) {
  }
  return 0;
}

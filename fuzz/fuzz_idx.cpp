// libFuzzer target for the IDX parser: arbitrary bytes go to parse_idx, and gzip-looking bytes also
// through gunzip (output capped small; once more capped by the IDX header's promise, as read_idx
// does) and then parse_idx. A DataError is the expected outcome for
// bad input; anything else (crash, sanitizer report, other exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  try {
    ember::data::IdxArray a = ember::data::parse_idx(bytes, "fuzz");
    // Invariant: the data is exactly the product of the dims.
    size_t numel = 1;
    for (int64_t d : a.dims) numel *= static_cast<size_t>(d);
    if (numel != a.data.size()) __builtin_trap();
  } catch (const ember::DataError&) {
  }
  if (ember::data::internal::is_gzip(bytes)) {
    try {
      // 16 MiB keeps a zip bomb from dominating the run while still exercising the cap.
      const std::vector<uint8_t> raw = ember::data::internal::gunzip(bytes, "fuzz.gz", uint64_t{16} << 20);
      ember::data::parse_idx(raw, "fuzz.gz (decompressed)");
    } catch (const ember::DataError&) {
    }
    // As read_idx decompresses: output capped by what the IDX header promises. Whatever comes back
    // is never longer than the promise.
    try {
      const std::vector<uint8_t> raw = ember::data::internal::gunzip(bytes, "fuzz.gz", uint64_t{16} << 20,
                                                                     ember::data::internal::idx_size_promise);
      const auto p = ember::data::internal::idx_size_promise(raw);
      if (p.status == ember::data::internal::SizePromise::Status::known && raw.size() > p.bytes) __builtin_trap();
      ember::data::parse_idx(raw, "fuzz.gz (decompressed)");
    } catch (const ember::DataError&) {
    }
  }
  return 0;
}

// libFuzzer target for the PyTorch .pth reader (zip container, restricted unpickler, tensor views):
// arbitrary bytes -> pth_parse and pth_parse_tree must either throw FormatError (PthError) or
// return tensors whose data is exactly numel x itemsize bytes (and a tree that writes back with
// pth_serialize_tree); anything else (a crash, a sanitizer report, another exception type, a leak,
// a hang) is a bug. Seeds: the torch.save fixtures of tests/fixtures/pth.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "ember/io/pth.h"

using namespace ember::io;

namespace {
void check(const StTensor& t) {
  uint64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d < 0) std::abort();
    numel *= static_cast<uint64_t>(d);
  }
  if (t.data.size() != numel * st_dtype_size(t.dtype)) {
    std::fprintf(stderr, "fuzz_pth: tensor '%s' has %zu bytes for %llu elements\n", t.name.c_str(), t.data.size(),
                 static_cast<unsigned long long>(numel));
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const PthTree tree = pth_parse_tree(std::span<const uint8_t>(data, size), "fuzz");
    for (const PthTensor& t : tree.tensors) check(t.data);
    try {
      pth_serialize_tree(tree);
    } catch (const ember::ValueError&) {  // a tuple that contains itself, a dtype torch cannot store
    }
  } catch (const ember::FormatError&) {
  }
  PthFile file;
  try {
    file = pth_parse(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const ember::FormatError&) {
    return 0;  // rejecting is fine; any other exception type escapes and is reported
  }
  for (const StTensor& t : file.tensors) check(t);
  return 0;
}

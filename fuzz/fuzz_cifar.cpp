// libFuzzer target for the CIFAR binary parser, in its three layouts: CIFAR-10 (1 label byte),
// CIFAR-100 coarse and fine (2 label bytes). Only DataError may escape the parser.
#include <cstddef>
#include <cstdint>
#include <span>

#include "ember/core/error.h"
#include "ember/data/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  struct Layout {
    int label_bytes, label_index;
    int64_t num_classes;
  };
  for (const Layout& l : {Layout{1, 0, 10}, Layout{2, 0, 20}, Layout{2, 1, 100}}) {
    try {
      ember::data::LabeledImages d = ember::data::parse_cifar(bytes, "fuzz.bin", l.label_bytes, l.label_index,
                                                              l.num_classes);
      if (d.images.size() != static_cast<size_t>(d.n) * 3 * 32 * 32 || d.labels.size() != static_cast<size_t>(d.n))
        __builtin_trap();
      for (int64_t v : d.labels)
        if (v < 0 || v >= l.num_classes) __builtin_trap();
    } catch (const ember::DataError&) {
    }
  }
  return 0;
}

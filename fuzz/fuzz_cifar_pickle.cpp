// libFuzzer target for CIFAR's pickled batches: arbitrary bytes -> the restricted unpickler's NumPy
// profile (io::pickle::Allow::NumpyArrays) and parse_cifar_pickle / parse_cifar_pickle_names. Only
// FormatError (PthError: a malformed pickle, a forbidden global) and DataError may escape; every
// array rebuilt must hold exactly shape x itemsize bytes, every batch N x 3072 pixels and N labels
// in range. Seeds: batches written as NumPy pickles them (scripts/run-fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <span>

#include "ember/core/error.h"
#include "ember/data/readers.h"
#include "io/pickle.h"

namespace pk = ember::io::pickle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  try {
    size_t pos = 0;
    const pk::Pickle p = pk::unpickle(bytes, pos, "fuzz", pk::Allow::NumpyArrays);
    for (const pk::Obj& o : p.arena) {
      if (o.kind != pk::Kind::NpArray || o.items.empty()) continue;
      uint64_t n = uint64_t(pk::numpy_itemsize(p.at(o.items[1]).s));
      for (uint32_t d : p.at(o.items[0]).items) n *= uint64_t(p.at(d).i);
      if (n != p.at(o.items[2]).s.size()) __builtin_trap();
    }
  } catch (const ember::FormatError&) {
  }
  for (const char* key : {"labels", "fine_labels"}) {
    try {
      const ember::data::LabeledImages d = ember::data::parse_cifar_pickle(bytes, "fuzz", key, 10);
      if (d.n <= 0 || d.images.size() != size_t(d.n) * 3072 || d.labels.size() != size_t(d.n)) __builtin_trap();
      for (int64_t v : d.labels)
        if (v < 0 || v >= 10) __builtin_trap();
    } catch (const ember::FormatError&) {
    } catch (const ember::DataError&) {
    }
  }
  try {
    ember::data::parse_cifar_pickle_names(bytes, "fuzz", "label_names");
  } catch (const ember::FormatError&) {
  } catch (const ember::DataError&) {
  }
  return 0;
}

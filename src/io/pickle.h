// A restricted pickle reader for torch.save's data.pkl: it builds values, never calls anything.
// The globals it accepts are those of `torch.load(weights_only=True)`'s allow list that plain
// objects need (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types, torch.Size, torch.device, the dtypes, _codecs.encode for bytes); any other
// global (os.system, builtins.eval, ...) is refused by name as soon as it is read. REDUCE of an
// allowed global becomes a value (an empty OrderedDict, a Size, a Device, Bytes, a Tensor record);
// persistent ids (torch's storages) are kept as PersId records for the caller (src/io/pth.cpp).
// A second allow list (Allow::NumpyArrays) reads pickled data files, such as CIFAR's python
// batches: plain values plus NumPy arrays (numpy's _reconstruct + ndarray.__setstate__ and, for
// protocol 5, _frombuffer), each rebuilt as a byte record and checked against its shape and dtype.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ember::io::pickle {

enum class Kind : uint8_t {
  None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, PersId, Tensor,
  OrderedDict,  // collections.OrderedDict(): a Dict that remembers it was one
  Size,         // torch.Size((...)): items are its ints
  Device,       // torch.device(type[, index]): s = type, i = index (-1: none)
  NpDType,      // numpy.dtype(code): s = the code ("u1", "f4"), i = the byte order ('|', '<', '>', '=')
  NpArray,      // a NumPy array: items = {shape tuple, NpDType, its raw bytes (C order; a Bytes or Str)};
                // an array _reconstruct made that no BUILD has filled yet has no items
};
// Dict or OrderedDict: both hold key, value, key, value, ...
inline bool is_dict(Kind k) { return k == Kind::Dict || k == Kind::OrderedDict; }
const char* kind_name(Kind kind);

// Values live in an arena and refer to each other by index, so shared and even cyclic references
// (a list appended to itself) cost nothing and free without recursion.
struct Obj {
  Kind kind = Kind::None;
  int64_t i = 0;               // Bool, Int; Device: its index (-1: none)
  double f = 0;                // Float
  std::string s;               // Str, Bytes; Global: "module.name"; Device: its type ("cuda")
  std::vector<uint32_t> items;  // Tuple, List, Size; Dict: key, value, key, value, ... (insertion order)
                                // PersId: {pid}; Tensor: {args tuple of _rebuild_tensor_v2[,
                                // requires_grad of the _rebuild_parameter that wraps it]}
};

struct Pickle {
  std::vector<Obj> arena;
  uint32_t root = 0;
  const Obj& at(uint32_t i) const { return arena[i]; }
};

// Runs the opcodes of one pickle from `bytes[pos]` to its STOP and returns the object; `pos` is left
// after the STOP (the legacy format holds several pickles in a row). Protocols 0-5 opcodes that
// build plain values are read (BYTEARRAY8 as bytes); INST/OBJ/NEWOBJ/EXT* and the out-of-band
// buffers are refused.
// Throws PthError(Pickle) or PthForbiddenGlobalError naming `source`.
// Which globals a pickle may name. TorchWeights: torch.load(weights_only=True)'s (above).
// NumpyArrays: plain values and NumPy arrays of numeric dtypes (numpy.dtype, numpy.ndarray,
// numpy[._]core.multiarray._reconstruct, numpy[._]core.numeric._frombuffer, _codecs.encode); errors
// then speak of a data file rather than a weights file.
enum class Allow : uint8_t { TorchWeights, NumpyArrays };

// The size in bytes of one element of a NumPy dtype code ("u1" -> 1, "f8" -> 8, "?" / "b1" -> 1);
// 0 for a code ember does not read (objects, strings, structured dtypes).
int64_t numpy_itemsize(const std::string& code);

Pickle unpickle(std::span<const uint8_t> bytes, size_t& pos, const std::string& source,
                Allow allow = Allow::TorchWeights);

}  // namespace ember::io::pickle

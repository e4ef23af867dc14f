// A restricted pickle reader for torch.save's data.pkl: it builds values, never calls anything.
// The globals it accepts are those of `torch.load(weights_only=True)`'s allow list that plain
// objects need (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types, torch.Size, torch.device, the dtypes, _codecs.encode for bytes); any other
// global (os.system, builtins.eval, ...) is refused by name as soon as it is read. REDUCE of an
// allowed global becomes a value (an empty OrderedDict, a Size, a Device, Bytes, a Tensor record);
// persistent ids (torch's storages) are kept as PersId records for the caller (src/io/pth.cpp).
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
// build plain values are read; INST/OBJ/NEWOBJ/EXT* and the out-of-band buffers are refused.
// Throws PthError(Pickle) or PthForbiddenGlobalError naming `source`.
Pickle unpickle(std::span<const uint8_t> bytes, size_t& pos, const std::string& source);

}  // namespace ember::io::pickle

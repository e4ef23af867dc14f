// A restricted pickle reader for torch.save's data.pkl: it builds values, never calls anything.
// The globals it accepts are the ones `torch.load(weights_only=True)` needs for a state dict
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the torch.*Storage
// types); any other global (os.system, builtins.eval, ...) is refused by name as soon as it is read.
// REDUCE of an allowed global becomes a value (an empty dict, a Tensor record); persistent ids
// (torch's storages) are kept as PersId records for the caller (src/io/pth.cpp) to resolve.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ember::io::pickle {

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, PersId, Tensor };
const char* kind_name(Kind kind);

// Values live in an arena and refer to each other by index, so shared and even cyclic references
// (a list appended to itself) cost nothing and free without recursion.
struct Obj {
  Kind kind = Kind::None;
  int64_t i = 0;               // Bool, Int
  double f = 0;                // Float
  std::string s;               // Str, Bytes; Global: "module.name"
  std::vector<uint32_t> items;  // Tuple, List; Dict: key, value, key, value, ... (insertion order)
                                // PersId: {pid}; Tensor: {args tuple} of _rebuild_tensor_v2
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

// torch.save files, read and written without Python and without running anything: the zip archive
// torch writes since 1.6 (data.pkl + one entry per storage) and the legacy stream of pickles before
// it. The pickle is read by a restricted unpickler that accepts what `torch.load(weights_only=True)`
// accepts for plain objects and refuses every other global by name (src/io/pickle.h). Two views of
// one format: a flat state dict (name -> tensor: `ember export`, `--init-from x.pth`) and any object
// tree (PthTree: ember.save / ember.load); one reader and one writer serve both. Tensors come back
// contiguous, as safetensors'.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/safetensors.h"

namespace ember::io {

enum class PthErrorKind {
  Archive,          // the zip container: truncated, no end record, an entry out of bounds, compressed
  MissingEntry,     // no data.pkl, or a storage key with no data/<key> entry
  Pickle,           // malformed pickle: unknown opcode, stack underflow, memo index, truncated
  ForbiddenGlobal,  // a global outside the allow list (os.system, builtins.eval, ...): never called
  Tensor,           // sizes/strides/offset that do not fit the storage, overflow, bad dtype
  NotAStateDict,    // the object is not a dict of name -> tensor (nor holds one under a key)
};
std::string_view pth_error_kind_name(PthErrorKind kind);

// The hint for a .pth ember cannot read: what makes one it can, in one line of PyTorch.
inline constexpr const char* kPthStateDictHint =
    "load it in PyTorch and save the weights alone, which ember reads: torch.save(model.state_dict(), "
    "\"weights.pth\")";

// what() reads "<source>: <detail>" (the kind is kind(), for code; users read the sentence).
class PthError : public FormatError {
 public:
  PthError(PthErrorKind kind, const std::string& msg, std::string hint = {})
      : FormatError(msg, std::move(hint)), kind_(kind) {}
  PthErrorKind kind() const noexcept { return kind_; }

 private:
  PthErrorKind kind_;
};

// A pickle that names a global ember does not allow ("os.system"); nothing was called.
class PthForbiddenGlobalError : public PthError {
 public:
  PthForbiddenGlobalError(const std::string& msg, std::string global, std::string hint = {})
      : PthError(PthErrorKind::ForbiddenGlobal, msg, std::move(hint)), global_(std::move(global)) {}
  const std::string& global() const noexcept { return global_; }  // "module.name"

 private:
  std::string global_;
};

struct PthFile {
  // In the dict's order; data little-endian, row-major, contiguous (StTensor's contract).
  // torch's CharStorage is I8, ShortStorage I16 (dtypes ember reads as safetensors does: not all).
  std::vector<StTensor> tensors;
  std::string format;      // "torch.save zip archive" or "legacy torch.save pickle stream"
  std::string nested_key;  // "state_dict" when the tensors came from obj["state_dict"]; "" for the root
};

// True when `bytes` start like a torch.save file: a zip local header ("PK\3\4"; not a NumPy .npz,
// whose first member is a .npy) or a pickle (protocol 2+) whose first object is the legacy magic
// number. Decided by content, never by the file's extension.
bool pth_sniff(std::span<const uint8_t> bytes);

// Parses a whole .pth/.pt file held in memory. Every size, offset, index and count is checked
// before it is used; nothing is allocated beyond what the file's own bytes account for. Throws
// PthError naming `source` and what is wrong.
PthFile pth_parse(std::span<const uint8_t> bytes, const std::string& source);

// ---- Any object: the tree of values torch.save pickles --------------------------------------------

// A value of the tree. Dict is Python's dict, OrderedDict collections.OrderedDict; Size torch.Size;
// Device torch.device; DType a torch dtype named as torch names it ("float32", "bfloat16").
enum class PthKind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, OrderedDict, Tensor, Size, Device, DType };
std::string_view pth_kind_name(PthKind kind);

struct PthValue {
  PthKind kind = PthKind::None;
  int64_t i = 0;                // Bool (0/1), Int; Tensor: its index in PthTree::tensors; Device: index, -1 none
  double f = 0;                 // Float
  std::string s;                // Str (UTF-8), Bytes (raw); Device: its type ("cuda"); DType: its name
  std::vector<uint32_t> items;  // Tuple, List, Size: the elements; Dict, OrderedDict: key, value, key, value, ...
};

struct PthTensor {
  StTensor data;                 // contiguous; data.name says where the tensor is ("obj['model']['fc.weight']")
  std::string location = "cpu";  // the device torch.save recorded: "cpu", "cuda:0"
  bool requires_grad = false;
};

// Values refer to each other by index, so a value may be reached twice (torch.save's memo: the same
// dict under two keys) and a list or dict may contain itself. pth_parse_tree gives each value read
// its pickle's index (values not reachable from the root stay None).
struct PthTree {
  std::vector<PthValue> values;
  uint32_t root = 0;
  std::vector<PthTensor> tensors;
  std::string format;  // as PthFile::format (parse only)
};

// The values a file holds, as torch.load(f, weights_only=True) would return them. The same checks
// as pth_parse (every size, offset and index checked before use; the copies of storages bounded by
// the file's size), and nesting deeper than kPthMaxDepth refused, so a caller may walk the tree
// recursively. A global outside the allow list is PthForbiddenGlobalError; nothing is ever called.
inline constexpr int kPthMaxDepth = 1000;
PthTree pth_parse_tree(std::span<const uint8_t> bytes, const std::string& source);

// The file torch.save(obj) writes for the tree (protocol 2, the zip archive; see pth_serialize):
// torch.load(f, weights_only=True) reads it and returns the same values. Each tensor gets its own
// storage, written contiguous; a value reached twice is written once and referenced (so torch.load
// gives one object), a list or dict may contain itself; a tuple that contains itself is ValueError.
// ValueError for a dtype PyTorch has no storage for, and past 4 GiB (no zip64).
std::vector<uint8_t> pth_serialize_tree(const PthTree& tree);

// ---- The flat state dict ---------------------------------------------------------------------------

// The file `torch.save(model.state_dict(), "x.pt")` writes, for `tensors` (in this order, by their
// names): a zip archive ("archive/data.pkl", "archive/byteorder", one "archive/data/<i>" per
// tensor, "archive/version") whose pickle (protocol 2) is an OrderedDict of
// torch._utils._rebuild_tensor_v2 calls on torch.<Type>Storage persistent ids — only what
// torch.load(weights_only=True) allows, so PyTorch loads it without trusting it, and pth_parse
// reads it back. Each tensor contiguous, not requiring grad. ValueError past 4 GiB (no zip64).
// pth_serialize_tree of an OrderedDict of the tensors: the same bytes.
std::vector<uint8_t> pth_serialize(const std::vector<StTensor>& tensors);

}  // namespace ember::io

// PyTorch state_dict files (`torch.save(model.state_dict(), "x.pth")`), read without Python and
// without running anything: the zip archive torch writes since 1.6 (data.pkl + one entry per
// storage) and the legacy stream of pickles before it. The pickle is read by a restricted
// unpickler that accepts what `torch.load(weights_only=True)` needs for a state dict and refuses
// every other global by name (src/io/pickle.h). Tensors come back contiguous, as safetensors'.
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

// The file `torch.save(model.state_dict(), "x.pt")` writes, for `tensors` (in this order, by their
// names): a zip archive ("archive/data.pkl", "archive/byteorder", one "archive/data/<i>" per
// tensor, "archive/version") whose pickle (protocol 2) is an OrderedDict of
// torch._utils._rebuild_tensor_v2 calls on torch.<Type>Storage persistent ids — only what
// torch.load(weights_only=True) allows, so PyTorch loads it without trusting it, and pth_parse
// reads it back. Each tensor contiguous, not requiring grad. ValueError past 4 GiB (no zip64).
std::vector<uint8_t> pth_serialize(const std::vector<StTensor>& tensors);

}  // namespace ember::io

// Recognising weight files that are not safetensors (a PyTorch .pt/.pth zip or pickle, ONNX, NumPy,
// HDF5, GGUF, gzip, text) from their first bytes, so a loader can say "this is a PyTorch pickle,
// here is how to convert it" instead of a safetensors parse error such as HeaderTooLarge.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ember::io {

struct ForeignFileKind {
  std::string what;  // "a PyTorch checkpoint (torch.save zip archive)"
  std::string hint;  // how to turn it into a safetensors file ember reads
  bool text = false;  // plain text (a weak guess: a damaged .safetensors file may be text too)
};

// Call only after the bytes failed to parse as safetensors (a valid safetensors header length can
// start with any byte). nullopt when the bytes look like none of the known formats. `file` is
// the path the hint's conversion command names.
std::optional<ForeignFileKind> sniff_foreign_weights(std::span<const uint8_t> bytes, const std::string& file = "FILE");

// True when `bytes` start like an ONNX model (a protobuf ModelProto: ir_version, then another of
// its fields), whatever the file's extension.
bool looks_like_onnx(std::span<const uint8_t> bytes);

}  // namespace ember::io

// Magic-number checks for weight formats ember does not read (see file_kind.h). Each names the
// format and gives the one-line Python conversion to safetensors, which ember does read.
#include "ember/io/file_kind.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace ember::io {
namespace {

bool starts_with(std::span<const uint8_t> b, std::string_view magic) {
  return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
}

const char* kTorchHint =
    "convert it with PyTorch: `import torch; from safetensors.torch import save_file; "
    "sd = torch.load('FILE', map_location='cpu'); save_file(sd.get('state_dict', sd), 'FILE.safetensors')` "
    "and pass the .safetensors file";

bool looks_like_text(std::span<const uint8_t> b) {
  const size_t n = std::min<size_t>(b.size(), 512);
  if (n == 0) return false;
  for (size_t i = 0; i < n; ++i)
    if (b[i] < 0x09 || (b[i] > 0x0d && b[i] < 0x20)) return false;
  return true;
}

}  // namespace

// ONNX files are a protobuf ModelProto whose first field is ir_version (field 1, varint: tag 0x08)
// followed by another ModelProto field (producer_name 0x12, ..., graph 0x3a, opset_import 0x42).
bool looks_like_onnx(std::span<const uint8_t> b) {
  if (b.size() < 4 || b[0] != 0x08) return false;
  size_t i = 1;
  while (i < b.size() && i < 11 && (b[i] & 0x80)) ++i;  // the varint
  if (++i >= b.size()) return false;
  const uint8_t tag = b[i];
  return tag == 0x12 || tag == 0x1a || tag == 0x22 || tag == 0x2a || tag == 0x32 || tag == 0x3a || tag == 0x42 ||
         tag == 0x52 || tag == 0x72;
}

static std::optional<ForeignFileKind> sniff_kind(std::span<const uint8_t> b);

std::optional<ForeignFileKind> sniff_foreign_weights(std::span<const uint8_t> b, const std::string& file) {
  auto kind = sniff_kind(b);
  if (!kind) return kind;
  std::string& h = kind->hint;
  for (size_t at = h.find("FILE"); at != std::string::npos; at = h.find("FILE", at + file.size()))
    h.replace(at, 4, file);
  return kind;
}

static std::optional<ForeignFileKind> sniff_kind(std::span<const uint8_t> b) {
  if (starts_with(b, "PK\x03\x04")) {
    // The first member's name (local file header: name length at 26, name at 30) tells a NumPy
    // .npz from torch.save's archive ("<name>/data.pkl", "archive/data.pkl").
    std::string first;
    if (b.size() >= 30) {
      const size_t len = size_t(b[26]) | size_t(b[27]) << 8;
      if (b.size() >= 30 + len) first.assign(reinterpret_cast<const char*>(b.data()) + 30, len);
    }
    if (first.ends_with(".npy"))
      return ForeignFileKind{"a NumPy .npz archive",
                             "save the arrays with `safetensors.numpy.save_file(dict(np.load('FILE')), "
                             "'FILE.safetensors')` and pass the .safetensors file"};
    return ForeignFileKind{"a PyTorch checkpoint (torch.save zip archive, .pt/.pth)", kTorchHint};
  }
  if (b.size() >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
    return ForeignFileKind{"a Python pickle (a legacy PyTorch .pt/.pth/.bin file)", kTorchHint};
  if (starts_with(b, "\x93NUMPY"))
    return ForeignFileKind{"a NumPy .npy array",
                           "save named arrays with `safetensors.numpy.save_file({...}, 'FILE.safetensors')`"};
  if (starts_with(b, "\x89HDF\r\n\x1a\n"))
    return ForeignFileKind{"an HDF5 file (Keras .h5 weights?)",
                           "ember reads safetensors files: export the weights to safetensors in the tool that wrote it"};
  if (starts_with(b, "GGUF"))
    return ForeignFileKind{"a GGUF file (llama.cpp)", "ember reads safetensors files, not GGUF"};
  if (starts_with(b, "\x1f\x8b"))
    return ForeignFileKind{"a gzip-compressed file", "decompress it first (`gunzip FILE`)"};
  if (looks_like_onnx(b))
    return ForeignFileKind{"an ONNX model",
                           "ember trains from weights, not from ONNX graphs: save the source model's weights with "
                           "`safetensors.torch.save_file(model.state_dict(), 'FILE.safetensors')` and pass that"};
  if (looks_like_text(b))
    return ForeignFileKind{"a text file", "pass a .safetensors weights file (or a run directory for --resume)", true};
  return std::nullopt;
}

}  // namespace ember::io

// pth_serialize (pth.h): a state dict written as torch.save writes one — the zip archive of
// PyTorchStreamWriter and a protocol-2 pickle that names only the globals
// torch.load(weights_only=True) accepts, so the file needs no trust to load.
#include <fmt/format.h>

#include <cstring>

#include "ember/io/pth.h"
#include "zip_stored.h"

namespace ember::io {
namespace {

// torch's storage class for each dtype (the names torch.save pickles, as pth.cpp reads them).
const char* storage_name(StDType d) {
  switch (d) {
    case StDType::F32: return "FloatStorage";
    case StDType::F64: return "DoubleStorage";
    case StDType::F16: return "HalfStorage";
    case StDType::BF16: return "BFloat16Storage";
    case StDType::I64: return "LongStorage";
    case StDType::I32: return "IntStorage";
    case StDType::I16: return "ShortStorage";
    case StDType::I8: return "CharStorage";
    case StDType::U8: return "ByteStorage";
    case StDType::BOOL: return "BoolStorage";
    default: break;
  }
  throw ValueError("torch.save format: no PyTorch storage type for this tensor's dtype",
                   "export as safetensors instead");
}

// The opcodes of pickle protocol 2 a state dict needs.
class PickleWriter {
 public:
  std::vector<uint8_t> bytes{0x80, 0x02};  // PROTO 2

  void op(char c) { bytes.push_back(uint8_t(c)); }
  void global(const std::string& module, const std::string& name) {
    op('c');
    append(module + "\n" + name + "\n");
  }
  void str(const std::string& s) {  // BINUNICODE
    op('X');
    le(s.size(), 4);
    append(s);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');  // BININT1
      le(uint64_t(v), 1);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');  // BININT
      le(uint64_t(uint32_t(int32_t(v))), 4);
    } else {
      op('\x8a');  // LONG1: 8 bytes, little-endian two's complement
      le(8, 1);
      le(uint64_t(v), 8);
    }
  }
  void int_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }

 private:
  void append(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  }
};

}  // namespace

std::vector<uint8_t> pth_serialize(const std::vector<StTensor>& tensors) {
  PickleWriter p;
  // OrderedDict() then SETITEMS of (name, _rebuild_tensor_v2(storage, offset, size, stride,
  // requires_grad, backward_hooks)), as torch pickles a state dict.
  p.global("collections", "OrderedDict");
  p.op(')');
  p.op('R');
  p.op('(');
  for (size_t i = 0; i < tensors.size(); ++i) {
    const StTensor& t = tensors[i];
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    EMBER_CHECK(t.data.size() == size_t(numel) * st_dtype_size(t.dtype), ValueError, "torch.save format: tensor '",
                t.name, "' holds ", t.data.size(), " bytes for ", numel, " elements");
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    p.str(t.name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.op('(');
    // The storage's persistent id: ('storage', torch.XStorage, key, location, numel).
    p.op('(');
    p.str("storage");
    p.global("torch", storage_name(t.dtype));
    p.str(std::to_string(i));
    p.str("cpu");
    p.integer(numel);
    p.op('t');
    p.op('Q');  // BINPERSID
    p.integer(0);  // storage offset
    p.int_tuple(t.shape);
    p.int_tuple(strides);
    p.op('\x89');  // requires_grad False
    p.global("collections", "OrderedDict");
    p.op(')');
    p.op('R');
    p.op('t');
    p.op('R');
  }
  p.op('u');  // SETITEMS
  p.op('.');  // STOP

  std::vector<std::pair<std::string, std::vector<uint8_t>>> entries;
  entries.emplace_back("archive/data.pkl", std::move(p.bytes));
  entries.emplace_back("archive/byteorder", std::vector<uint8_t>{'l', 'i', 't', 't', 'l', 'e'});
  for (size_t i = 0; i < tensors.size(); ++i) entries.emplace_back(fmt::format("archive/data/{}", i), tensors[i].data);
  entries.emplace_back("archive/version", std::vector<uint8_t>{'3', '\n'});
  return zip_write_stored(entries);
}

}  // namespace ember::io

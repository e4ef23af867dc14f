// pth_serialize_tree and pth_serialize (pth.h): values written as torch.save writes them — the zip
// archive of PyTorchStreamWriter and a protocol-2 pickle that names only the globals
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

// The opcodes of pickle protocol 2 the tree needs.
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
  void real(double v) {  // BINFLOAT: big-endian IEEE double
    uint64_t bits = 0;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) bytes.push_back(uint8_t(bits >> (8 * i)));
  }
  void int_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }
  void memo_put(uint32_t n) {
    if (n < 256) {
      op('q');  // BINPUT
      le(n, 1);
    } else {
      op('r');  // LONG_BINPUT
      le(n, 4);
    }
  }
  void memo_get(uint32_t n) {
    if (n < 256) {
      op('h');  // BINGET
      le(n, 1);
    } else {
      op('j');  // LONG_BINGET
      le(n, 4);
    }
  }

 private:
  void append(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(uint8_t(v >> (8 * i)));
  }
};

// Bytes as protocol 2 writes them: _codecs.encode(text, "latin1"), the text's code points the bytes.
std::string latin1_as_utf8(const std::string& raw) {
  std::string out;
  for (char ch : raw) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xc0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
  return out;
}

// Writes the tree's values depth first, as pickle.Pickler does: a container reached twice is
// written once and fetched from the memo after (only those get a memo slot, so a tree without
// sharing writes no memo opcode); a list or dict enters the memo before its items, so it may
// contain itself.
class TreeWriter {
 public:
  explicit TreeWriter(const PthTree& tree) : t_(tree), refs_(tree.values.size(), 0), state_(tree.values.size(), 0),
                                             memo_(tree.values.size(), UINT32_MAX) {
    EMBER_CHECK(tree.root < tree.values.size(), ValueError, "torch.save format: the tree has no root value");
    count_refs();
  }

  std::vector<uint8_t> pickle() {
    value(t_.root, 0);
    p_.op('.');  // STOP
    return std::move(p_.bytes);
  }
  // The tensors in the order their storages were written: storage key i is storages()[i].
  const std::vector<uint32_t>& storages() const { return storage_order_; }

 private:
  void count_refs() {
    std::vector<uint32_t> stack{t_.root};
    std::vector<uint8_t> seen(t_.values.size(), 0);
    refs_[t_.root] = 1;
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = 1;
      for (uint32_t c : t_.values[v].items) {
        EMBER_CHECK(c < t_.values.size(), ValueError, "torch.save format: value ", v, " refers to value ", c,
                    ", which does not exist");
        if (++refs_[c] == 1) stack.push_back(c);
      }
    }
  }
  bool memoized(PthKind k) const {
    return k == PthKind::List || k == PthKind::Dict || k == PthKind::OrderedDict || k == PthKind::Tuple ||
           k == PthKind::Size || k == PthKind::Tensor;
  }
  void remember(uint32_t v) {
    if (refs_[v] < 2) return;
    memo_[v] = next_memo_++;
    p_.memo_put(memo_[v]);
  }
  void items(const PthValue& x, int depth) {
    for (uint32_t c : x.items) value(c, depth + 1);
  }

  void value(uint32_t v, int depth) {
    const PthValue& x = t_.values[v];
    EMBER_CHECK(depth <= kPthMaxDepth, ValueError, "torch.save format: values nested deeper than ", kPthMaxDepth,
                " levels");
    if (memoized(x.kind)) {
      if (memo_[v] != UINT32_MAX) return p_.memo_get(memo_[v]);
      EMBER_CHECK(state_[v] == 0, ValueError, "torch.save format: a ", pth_kind_name(x.kind),
                  " that contains itself cannot be written (only a list or a dict can)");
      state_[v] = 1;
    }
    switch (x.kind) {
      case PthKind::None: p_.op('N'); break;
      case PthKind::Bool: p_.op(x.i ? '\x88' : '\x89'); break;  // NEWTRUE / NEWFALSE
      case PthKind::Int: p_.integer(x.i); break;
      case PthKind::Float: p_.real(x.f); break;
      case PthKind::Str: p_.str(x.s); break;
      case PthKind::Bytes:
        p_.global("_codecs", "encode");
        p_.op('(');
        p_.str(latin1_as_utf8(x.s));
        p_.str("latin1");
        p_.op('t');
        p_.op('R');
        break;
      case PthKind::Tuple:
        p_.op('(');
        items(x, depth);
        p_.op('t');
        remember(v);
        break;
      case PthKind::Size:  // torch.Size((...))
        p_.global("torch", "Size");
        p_.op('(');
        p_.op('(');
        items(x, depth);
        p_.op('t');
        p_.op('t');
        p_.op('R');
        remember(v);
        break;
      case PthKind::List:
        p_.op(']');  // EMPTY_LIST
        remember(v);
        p_.op('(');
        items(x, depth);
        p_.op('e');  // APPENDS
        break;
      case PthKind::Dict:
      case PthKind::OrderedDict:
        EMBER_CHECK(x.items.size() % 2 == 0, ValueError, "torch.save format: a dict with an odd number of items");
        if (x.kind == PthKind::Dict) {
          p_.op('}');  // EMPTY_DICT
        } else {
          p_.global("collections", "OrderedDict");
          p_.op(')');
          p_.op('R');
        }
        remember(v);
        p_.op('(');
        items(x, depth);
        p_.op('u');  // SETITEMS
        break;
      case PthKind::Device:  // torch.device(type[, index])
        p_.global("torch", "device");
        p_.op('(');
        p_.str(x.s);
        if (x.i >= 0) p_.integer(x.i);
        p_.op('t');
        p_.op('R');
        break;
      case PthKind::DType: p_.global("torch", x.s); break;
      case PthKind::Tensor: tensor(v, x); break;
    }
    state_[v] = 2;
  }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks), as torch
  // pickles a tensor; the storage's persistent id is ('storage', torch.XStorage, key, location, numel).
  void tensor(uint32_t v, const PthValue& x) {
    EMBER_CHECK(x.i >= 0 && size_t(x.i) < t_.tensors.size(), ValueError, "torch.save format: value ", v,
                " names tensor ", x.i, ", which does not exist");
    const PthTensor& pt = t_.tensors[size_t(x.i)];
    const StTensor& t = pt.data;
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    EMBER_CHECK(t.data.size() == size_t(numel) * st_dtype_size(t.dtype), ValueError, "torch.save format: tensor '",
                t.name, "' holds ", t.data.size(), " bytes for ", numel, " elements");
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    const size_t key = storage_order_.size();
    storage_order_.push_back(uint32_t(x.i));
    p_.global("torch._utils", "_rebuild_tensor_v2");
    p_.op('(');
    p_.op('(');
    p_.str("storage");
    p_.global("torch", storage_name(t.dtype));
    p_.str(std::to_string(key));
    p_.str(pt.location);
    p_.integer(numel);
    p_.op('t');
    p_.op('Q');  // BINPERSID
    p_.integer(0);  // storage offset
    p_.int_tuple(t.shape);
    p_.int_tuple(strides);
    p_.op(pt.requires_grad ? '\x88' : '\x89');
    p_.global("collections", "OrderedDict");
    p_.op(')');
    p_.op('R');
    p_.op('t');
    p_.op('R');
    remember(v);
  }

  const PthTree& t_;
  PickleWriter p_;
  std::vector<uint32_t> refs_;   // how many times each value is referred to (the root once)
  std::vector<uint8_t> state_;   // 0 not written, 1 being written, 2 written
  std::vector<uint32_t> memo_;   // memo slot, UINT32_MAX none
  uint32_t next_memo_ = 0;
  std::vector<uint32_t> storage_order_;
};

}  // namespace

std::vector<uint8_t> pth_serialize_tree(const PthTree& tree) {
  TreeWriter w(tree);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> entries;
  entries.emplace_back("archive/data.pkl", w.pickle());
  entries.emplace_back("archive/byteorder", std::vector<uint8_t>{'l', 'i', 't', 't', 'l', 'e'});
  for (size_t key = 0; key < w.storages().size(); ++key)
    entries.emplace_back(fmt::format("archive/data/{}", key), tree.tensors[w.storages()[key]].data.data);
  entries.emplace_back("archive/version", std::vector<uint8_t>{'3', '\n'});
  return zip_write_stored(entries);
}

std::vector<uint8_t> pth_serialize(const std::vector<StTensor>& tensors) {
  // An OrderedDict of name -> tensor, as torch pickles model.state_dict().
  PthTree tree;
  tree.values.resize(1);
  tree.values[0].kind = PthKind::OrderedDict;
  for (const StTensor& t : tensors) {
    PthValue name, value;
    name.kind = PthKind::Str, name.s = t.name;
    value.kind = PthKind::Tensor, value.i = int64_t(tree.tensors.size());
    tree.values[0].items.push_back(uint32_t(tree.values.size()));
    tree.values.push_back(std::move(name));
    tree.values[0].items.push_back(uint32_t(tree.values.size()));
    tree.values.push_back(std::move(value));
    PthTensor pt;
    pt.data = t;
    tree.tensors.push_back(std::move(pt));
  }
  return pth_serialize_tree(tree);
}

}  // namespace ember::io

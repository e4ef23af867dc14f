// torch.save files (see pth.h): the container (zip archive, or the legacy pickle stream), the
// restricted unpickler's object turned into a state dict or into a tree of values, and each
// tensor's view of its storage (size, stride, offset) checked against the storage and copied out
// contiguous. One decoder (decode) serves both views.
#include "ember/io/pth.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "pickle.h"
#include "zip_stored.h"

namespace ember::io {
namespace {

using pickle::Kind;
using pickle::Obj;
using pickle::Pickle;

// "<file>: <what>": the kind is the error's type (PthError::kind()), not a word in the message. The
// hint is the one-line conversion that gives a file ember reads: the weights alone.
template <class... Args>
[[noreturn]] void fail(PthErrorKind kind, const std::string& source, const Args&... args) {
  throw PthError(kind, detail::cat(source, ": ", args...), std::string(kPthStateDictHint));
}

// torch's legacy files start with pickle.dump(0x1950a86a20f9469cfc6c, protocol=2): PROTO 2, LONG1 10.
constexpr uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

struct StorageType {
  std::string_view global;
  StDType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"torch.FloatStorage", StDType::F32}, {"torch.DoubleStorage", StDType::F64}, {"torch.HalfStorage", StDType::F16},
    {"torch.BFloat16Storage", StDType::BF16}, {"torch.LongStorage", StDType::I64}, {"torch.IntStorage", StDType::I32},
    {"torch.ShortStorage", StDType::I16}, {"torch.CharStorage", StDType::I8}, {"torch.ByteStorage", StDType::U8},
    {"torch.BoolStorage", StDType::BOOL},
};

// A storage as a tensor's persistent id names it: ('storage', torch.XStorage, key, location, numel).
struct StorageRef {
  std::string key;
  StDType dtype;
  uint64_t numel;
  std::string location;  // "cpu", "cuda:0"
};

// Where the storages' bytes are (views into the file): zip entries "<prefix>data/<key>", or the
// legacy stream's records.
struct Storages {
  std::map<std::string, std::span<const uint8_t>> data;
  bool big_endian = false;
  std::optional<std::span<const uint8_t>> find(const std::string& key) const {
    auto it = data.find(key);
    if (it == data.end()) return std::nullopt;
    return it->second;
  }
};

class Reader {
 public:
  Reader(const Pickle& p, const Storages& st, const std::string& source, uint64_t budget)
      : p_(p), st_(st), src_(source), budget_(budget) {}

  StorageRef storage(uint32_t pid_index) const;
  StTensor tensor(const std::string& name, uint32_t index);
  // The tensor record's requires_grad (its _rebuild_parameter's, else _rebuild_tensor_v2's).
  bool requires_grad(uint32_t index) const;
  const Obj& at(uint32_t i) const { return p_.at(i); }

 private:
  int64_t int_of(uint32_t i, const std::string& name, const char* what) const {
    if (at(i).kind != Kind::Int) fail(PthErrorKind::Tensor, src_, "tensor '", name, "': ", what, " is a ", pickle::kind_name(at(i).kind), ", not an int");
    return at(i).i;
  }
  const Pickle& p_;
  const Storages& st_;
  const std::string& src_;
  uint64_t budget_;  // bytes the tensors may still take (see pth_parse)
};

StorageRef Reader::storage(uint32_t index) const {
  const Obj& o = at(index);
  if (o.kind != Kind::PersId) fail(PthErrorKind::Tensor, src_, "a tensor's storage is a ", pickle::kind_name(o.kind), ", not a persistent id");
  const Obj& pid = at(o.items[0]);
  if (pid.kind != Kind::Tuple || pid.items.size() < 5 || at(pid.items[0]).kind != Kind::Str || at(pid.items[0]).s != "storage")
    fail(PthErrorKind::Tensor, src_, "a persistent id is not ('storage', type, key, location, numel)");
  const Obj& type = at(pid.items[1]);
  const Obj& key = at(pid.items[2]);
  const Obj& location = at(pid.items[3]);
  const Obj& numel = at(pid.items[4]);
  if (type.kind != Kind::Global || key.kind != Kind::Str || numel.kind != Kind::Int || numel.i < 0 ||
      location.kind != Kind::Str)
    fail(PthErrorKind::Tensor, src_, "a persistent id is not ('storage', type, key, location, numel)");
  if (pid.items.size() > 5 && at(pid.items[5]).kind != Kind::None)  // legacy storage views (torch < 0.4)
    fail(PthErrorKind::Tensor, src_, "storage '", key.s, "' is a view of another storage (torch < 0.4), which ember does not read");
  for (const auto& t : kStorageTypes)
    if (type.s == t.global) return {key.s, t.dtype, static_cast<uint64_t>(numel.i), location.s};
  fail(PthErrorKind::Tensor, src_, "storage '", key.s, "' has type ", type.s, ", which is not a storage type");
}

StTensor Reader::tensor(const std::string& name, uint32_t index) {
  const Obj& args = at(at(index).items[0]);
  if (args.kind != Kind::Tuple || args.items.size() < 4)
    fail(PthErrorKind::Tensor, src_, "tensor '", name, "': _rebuild_tensor_v2 needs (storage, offset, size, stride, ...)");
  const StorageRef ref = storage(args.items[0]);
  const uint64_t esize = st_dtype_size(ref.dtype);
  const auto data = st_.find(ref.key);
  if (!data) fail(PthErrorKind::MissingEntry, src_, "tensor '", name, "': its storage '", ref.key, "' is not in the file");
  uint64_t storage_bytes = 0;
  if (__builtin_mul_overflow(ref.numel, esize, &storage_bytes) || storage_bytes != data->size())
    fail(PthErrorKind::Tensor, src_, "storage '", ref.key, "' holds ", data->size(), " bytes, but its record says ", ref.numel,
         " elements of ", esize, " bytes");

  const int64_t offset = int_of(args.items[1], name, "the storage offset");
  const Obj& size = at(args.items[2]);
  const Obj& stride = at(args.items[3]);
  if (size.kind != Kind::Tuple || stride.kind != Kind::Tuple || size.items.size() != stride.items.size())
    fail(PthErrorKind::Tensor, src_, "tensor '", name, "': size and stride must be tuples of the same length");
  if (offset < 0) fail(PthErrorKind::Tensor, src_, "tensor '", name, "': negative storage offset ", offset);
  StTensor t{name, ref.dtype, {}, {}};
  std::vector<int64_t> strides;
  uint64_t numel = 1, last = static_cast<uint64_t>(offset);  // `last`: the highest element the view reads
  for (size_t d = 0; d < size.items.size(); ++d) {
    const int64_t n = int_of(size.items[d], name, "a size"), s = int_of(stride.items[d], name, "a stride");
    if (n < 0) fail(PthErrorKind::Tensor, src_, "tensor '", name, "': negative size ", n, " in dim ", d);
    if (s < 0) fail(PthErrorKind::Tensor, src_, "tensor '", name, "': negative stride ", s, " in dim ", d);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(n), &numel) || numel > uint64_t(INT64_MAX))
      fail(PthErrorKind::Tensor, src_, "tensor '", name, "': its size overflows 64 bits");
    t.shape.push_back(n);
    strides.push_back(s);
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, esize, &nbytes) || nbytes > storage_bytes)
    fail(PthErrorKind::Tensor, src_, "tensor '", name, "': ", numel, " elements of ", esize,
         " bytes exceed its storage '", ref.key, "' (", storage_bytes, " bytes)");
  if (numel > 0) {
    for (size_t d = 0; d < t.shape.size(); ++d) {
      uint64_t reach = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1), static_cast<uint64_t>(strides[d]), &reach) ||
          __builtin_add_overflow(last, reach, &last))
        fail(PthErrorKind::Tensor, src_, "tensor '", name, "': its strides overflow 64 bits");
    }
    if (last >= ref.numel)
      fail(PthErrorKind::Tensor, src_, "tensor '", name, "': offset ", offset, ", size and stride reach element ", last,
           " of storage '", ref.key, "', which has ", ref.numel);
  }
  if (nbytes > budget_)
    fail(PthErrorKind::Tensor, src_, "tensor '", name, "': the tensors' views of shared storages add up to more ",
         "than 4x the file's size");
  budget_ -= nbytes;

  // Gather element by element in row-major order (a contiguous view is one memcpy).
  t.data.resize(nbytes);
  bool contiguous = true;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1, expect = 1; d >= 0; --d) {
    if (t.shape[d] != 1 && strides[d] != expect) contiguous = false;
    expect *= t.shape[d];
  }
  const uint8_t* src = data->data();
  if (contiguous) {
    if (nbytes) std::memcpy(t.data.data(), src + offset * esize, nbytes);
  } else {
    std::vector<int64_t> idx(t.shape.size(), 0);
    for (uint64_t e = 0; e < numel; ++e) {
      uint64_t at_elem = static_cast<uint64_t>(offset);
      for (size_t d = 0; d < idx.size(); ++d) at_elem += static_cast<uint64_t>(idx[d] * strides[d]);
      std::memcpy(t.data.data() + e * esize, src + at_elem * esize, esize);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < t.shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  if (st_.big_endian && esize > 1)
    for (uint64_t e = 0; e < nbytes; e += esize) std::reverse(t.data.begin() + e, t.data.begin() + e + esize);
  return t;
}

bool Reader::requires_grad(uint32_t index) const {
  const Obj& t = at(index);
  if (t.items.size() > 1) return at(t.items[1]).kind == Kind::Bool && at(t.items[1]).i != 0;
  const Obj& args = at(t.items[0]);
  return args.kind == Kind::Tuple && args.items.size() > 4 && at(args.items[4]).kind == Kind::Bool &&
         at(args.items[4]).i != 0;
}

bool is_tensor_dict(const Pickle& p, const Obj& o) {
  if (!pickle::is_dict(o.kind) || o.items.empty()) return false;
  for (size_t i = 0; i < o.items.size(); i += 2)
    if (p.at(o.items[i]).kind != Kind::Str || p.at(o.items[i + 1]).kind != Kind::Tensor) return false;
  return true;
}

// The dict of tensors: the root itself, or a checkpoint's {"state_dict": {...}, "epoch": 3, ...}.
// Returns the dict's index and sets `nested_key`.
uint32_t find_state_dict(const Pickle& p, const std::string& source, std::string& nested_key) {
  const Obj& root = p.at(p.root);
  if (!pickle::is_dict(root.kind))
    fail(PthErrorKind::NotAStateDict, source, "the file holds a ", pickle::kind_name(root.kind),
         ", not a dict of tensors (a state dict)");
  bool root_has_tensor = false;
  std::vector<std::pair<std::string, uint32_t>> nested;  // str keys whose values are tensor dicts
  // One answer per dict: a hostile root could name one huge dict under many keys (memo GET).
  std::unordered_map<uint32_t, bool> tensor_dict;
  for (size_t i = 0; i < root.items.size(); i += 2) {
    const Obj& k = p.at(root.items[i]);
    const uint32_t v = root.items[i + 1];
    root_has_tensor = root_has_tensor || p.at(v).kind == Kind::Tensor;
    if (k.kind != Kind::Str || !pickle::is_dict(p.at(v).kind)) continue;
    auto [it, fresh] = tensor_dict.emplace(v, false);
    if (fresh) it->second = is_tensor_dict(p, p.at(v));
    if (it->second) nested.emplace_back(k.s, v);
  }
  if (root_has_tensor || nested.empty()) return p.root;  // checked key by key by the caller
  for (const char* preferred : {"state_dict", "model_state_dict", "model", "module", "net"})
    for (const auto& [key, index] : nested)
      if (key == preferred) return nested_key = key, index;
  if (nested.size() == 1) return nested_key = nested[0].first, nested[0].second;
  std::string keys;
  for (const auto& [key, index] : nested)
    if (keys.size() < 200) keys += (keys.empty() ? "'" : ", '") + key + "'";
  fail(PthErrorKind::NotAStateDict, source, "the file holds several dicts of tensors (", keys,
       ") and none is called 'state_dict' or 'model': save the one you mean on its own");
}

std::vector<StTensor> read_state_dict(const Pickle& p, const Storages& st, const std::string& source, uint64_t budget,
                                      std::string& nested_key) {
  const uint32_t dict = find_state_dict(p, source, nested_key);
  const Obj& d = p.at(dict);
  if (d.items.empty()) fail(PthErrorKind::NotAStateDict, source, "the state dict is empty");
  Reader r(p, st, source, budget);
  std::vector<StTensor> out;
  std::unordered_map<std::string, size_t> seen;  // a key set twice keeps its first place, last value (as Python)
  for (size_t i = 0; i < d.items.size(); i += 2) {
    const Obj& k = p.at(d.items[i]);
    const Obj& v = p.at(d.items[i + 1]);
    if (k.kind != Kind::Str)
      fail(PthErrorKind::NotAStateDict, source, "a key of the state dict is a ", pickle::kind_name(k.kind), ", not a str");
    if (v.kind != Kind::Tensor)
      fail(PthErrorKind::NotAStateDict, source, "'", k.s, "' is a value of type ", pickle::kind_name(v.kind),
           ", not a tensor: the file is not a state dict of tensors");
    StTensor t = r.tensor(k.s, d.items[i + 1]);
    if (auto [it, fresh] = seen.emplace(k.s, out.size()); !fresh) out[it->second] = std::move(t);
    else out.push_back(std::move(t));
  }
  return out;
}

// Views of one storage may each copy all of it; more than 4x the file means a hostile file.
uint64_t copy_budget(size_t file_size) { return 4 * static_cast<uint64_t>(file_size) + (uint64_t{1} << 20); }

// The file decoded: its object's pickle and where each storage's bytes are. Both views of the
// format (the flat state dict, the tree) read from this.
struct Decoded {
  Pickle p;
  Storages st;
  std::string format;
  uint64_t budget = 0;
};

Decoded decode_zip(std::span<const uint8_t> bytes, const std::string& source) {
  const auto entries = zip_list(bytes, source);
  // torch names the archive's top folder after the file ("archive" since 1.?): "<folder>/data.pkl".
  std::string prefix;
  for (const auto& [name, e] : entries)
    if (name.ends_with("/data.pkl") && name.find('/') == name.size() - 9) {
      prefix = name.substr(0, name.size() - 8);
      break;
    }
  if (prefix.empty()) {
    std::string names;
    for (const auto& [name, e] : entries)
      if (names.size() < 200) names += (names.empty() ? "" : ", ") + name;
    fail(PthErrorKind::MissingEntry, source, "no <name>/data.pkl in the zip archive (entries: ",
         names.empty() ? "none" : names, "): not a torch.save file");
  }
  Decoded d;
  d.format = "torch.save zip archive";
  d.budget = copy_budget(bytes.size());
  if (auto it = entries.find(prefix + "byteorder"); it != entries.end()) {
    const auto b = zip_read(bytes, it->first, it->second, source);
    const std::string order(b.begin(), b.end());
    if (order != "little" && order != "big") fail(PthErrorKind::Archive, source, "byteorder is '", order, "'");
    d.st.big_endian = order == "big";
  }
  const std::string data_dir = prefix + "data/";
  for (const auto& [name, e] : entries)
    if (name.starts_with(data_dir) && name.size() > data_dir.size())
      d.st.data.emplace(name.substr(data_dir.size()), zip_read(bytes, name, e, source));
  const auto& pkl = entries.at(prefix + "data.pkl");
  const auto pkl_bytes = zip_read(bytes, prefix + "data.pkl", pkl, source);
  size_t pos = 0;
  d.p = pickle::unpickle(pkl_bytes, pos, source);
  return d;
}

// torch < 1.6 (and _use_new_zipfile_serialization=False): pickles of the magic number, the
// protocol version (1001), sys_info, the object, the sorted storage keys; then per key an int64
// element count and the raw bytes, in that order.
Decoded decode_legacy(std::span<const uint8_t> bytes, const std::string& source) {
  // The magic number is a 10-byte int (pth_sniff checked it); the unpickler's ints stop at 64 bits.
  size_t pos = sizeof kLegacyMagic;
  if (pos >= bytes.size() || bytes[pos] != '.') fail(PthErrorKind::Pickle, source, "the legacy magic number pickle has no STOP");
  ++pos;
  const Pickle version = pickle::unpickle(bytes, pos, source);
  if (version.at(version.root).kind != Kind::Int || version.at(version.root).i != 1001)
    fail(PthErrorKind::Pickle, source, "legacy format version is not 1001");
  const Pickle sys_info = pickle::unpickle(bytes, pos, source);
  bool little = true;
  if (const Obj& si = sys_info.at(sys_info.root); pickle::is_dict(si.kind))
    for (size_t i = 0; i + 1 < si.items.size(); i += 2)
      if (sys_info.at(si.items[i]).kind == Kind::Str && sys_info.at(si.items[i]).s == "little_endian")
        little = sys_info.at(si.items[i + 1]).i != 0;
  Decoded d;
  d.format = "legacy torch.save pickle stream";
  d.budget = copy_budget(bytes.size());
  d.p = pickle::unpickle(bytes, pos, source);
  const Pickle keys = pickle::unpickle(bytes, pos, source);
  const Obj& key_list = keys.at(keys.root);
  if (key_list.kind != Kind::List) fail(PthErrorKind::Pickle, source, "the storage key list is a ", pickle::kind_name(key_list.kind));

  // Each storage's element size comes from the persistent ids that name it.
  d.st.big_endian = !little;
  std::map<std::string, uint64_t> esize;
  const Reader probe(d.p, d.st, source, 0);
  for (uint32_t i = 0; i < d.p.arena.size(); ++i)
    if (d.p.at(i).kind == Kind::PersId) {
      const StorageRef ref = probe.storage(i);
      esize[ref.key] = st_dtype_size(ref.dtype);
    }
  for (uint32_t k : key_list.items) {
    const Obj& key = keys.at(k);
    if (key.kind != Kind::Str) fail(PthErrorKind::Pickle, source, "a storage key is a ", pickle::kind_name(key.kind));
    auto es = esize.find(key.s);
    if (es == esize.end()) fail(PthErrorKind::MissingEntry, source, "storage '", key.s, "' is listed but no tensor uses it");
    if (bytes.size() - pos < 8) fail(PthErrorKind::Archive, source, "storage '", key.s, "': truncated before its size");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[pos + i];
    if (!little) n = __builtin_bswap64(n);
    pos += 8;
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(n, es->second, &nbytes) || nbytes > bytes.size() - pos)
      fail(PthErrorKind::Archive, source, "storage '", key.s, "': ", n, " elements run past the end of the file (truncated?)");
    d.st.data[key.s] = bytes.subspan(pos, nbytes);
    pos += nbytes;
  }
  return d;
}

Decoded decode(std::span<const uint8_t> bytes, const std::string& source) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) == 0) return decode_zip(bytes, source);
  if (pth_sniff(bytes)) return decode_legacy(bytes, source);
  fail(PthErrorKind::Archive, source, "not a torch.save file (neither a zip archive nor the legacy pickle stream)");
}

// "['fc.weight']", "[3]": how a value is reached from its container, for messages (keys cut short).
std::string key_label(const Obj& key) {
  if (key.kind == Kind::Str) return "['" + (key.s.size() > 40 ? key.s.substr(0, 40) + "..." : key.s) + "']";
  if (key.kind == Kind::Int) return "[" + std::to_string(key.i) + "]";
  return "[<" + std::string(pickle::kind_name(key.kind)) + " key>]";
}

// The pickle's values reachable from its root as a PthTree (same indices), in the order a recursive
// walk visits them (depth first, children in order, each value once), so the depth checked here is
// the depth such a walk of the tree reaches.
PthTree build_tree(const Decoded& d, const std::string& source) {
  const Pickle& p = d.p;
  PthTree tree;
  tree.format = d.format;
  tree.root = p.root;
  tree.values.resize(p.arena.size());
  Reader reader(p, d.st, source, d.budget);
  constexpr uint32_t kNoParent = UINT32_MAX;
  struct Visit {
    uint32_t v, parent;
    int depth;
    std::string label;
  };
  std::vector<uint8_t> seen(p.arena.size(), 0);
  std::vector<std::pair<uint32_t, std::string>> came_from(p.arena.size(), {kNoParent, ""});
  // A tensor's place: the last few steps from the root ("obj...['layer']['weight']").
  auto path_of = [&](uint32_t v) {
    std::vector<const std::string*> steps;
    for (uint32_t at = v; at != kNoParent && steps.size() < 12; at = came_from[at].first) steps.push_back(&came_from[at].second);
    std::string path = came_from[v].first == kNoParent || steps.size() < 12 ? "obj" : "obj...";
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) path += **it;
    return path;
  };
  std::vector<Visit> stack{{p.root, kNoParent, 0, ""}};
  while (!stack.empty()) {
    Visit at = std::move(stack.back());
    stack.pop_back();
    if (seen[at.v]) continue;
    seen[at.v] = 1;
    came_from[at.v] = {at.parent, std::move(at.label)};
    if (at.depth > kPthMaxDepth)
      fail(PthErrorKind::Pickle, source, "values nested deeper than ", kPthMaxDepth, " levels");
    const Obj& o = p.at(at.v);
    PthValue& out = tree.values[at.v];
    auto children = [&](bool dict) {
      out.items = o.items;
      for (size_t i = o.items.size(); i-- > 0;) {
        std::string label = !dict ? "[" + std::to_string(i) + "]"
                            : i % 2 ? key_label(p.at(o.items[i - 1]))
                                    : key_label(p.at(o.items[i])) + "<key>";
        stack.push_back({o.items[i], at.v, at.depth + 1, std::move(label)});
      }
    };
    switch (o.kind) {
      case Kind::None: out.kind = PthKind::None; break;
      case Kind::Bool: out.kind = PthKind::Bool, out.i = o.i; break;
      case Kind::Int: out.kind = PthKind::Int, out.i = o.i; break;
      case Kind::Float: out.kind = PthKind::Float, out.f = o.f; break;
      case Kind::Str: out.kind = PthKind::Str, out.s = o.s; break;
      case Kind::Bytes: out.kind = PthKind::Bytes, out.s = o.s; break;
      case Kind::Tuple: out.kind = PthKind::Tuple, children(false); break;
      case Kind::List: out.kind = PthKind::List, children(false); break;
      case Kind::Size: out.kind = PthKind::Size, children(false); break;
      case Kind::Dict: out.kind = PthKind::Dict, children(true); break;
      case Kind::OrderedDict: out.kind = PthKind::OrderedDict, children(true); break;
      case Kind::Device: out.kind = PthKind::Device, out.s = o.s, out.i = o.i; break;
      case Kind::Global:
        // A dtype is a value (torch.float32); a function or class named as a value is not.
        if (o.s.starts_with("torch.") && o.s.find('.', 6) == std::string::npos && !o.s.ends_with("Storage") &&
            o.s != "torch.Size" && o.s != "torch.device") {
          out.kind = PthKind::DType, out.s = o.s.substr(6);
          break;
        }
        fail(PthErrorKind::Pickle, source, path_of(at.v), ": ", o.s, " is named as a value, not called");
      case Kind::PersId:
        fail(PthErrorKind::Tensor, source, path_of(at.v), ": a storage outside a tensor, which ember does not read");
      case Kind::NpDType:
      case Kind::NpArray:  // only Allow::NumpyArrays makes these, and the weights reader never asks for it
        fail(PthErrorKind::Pickle, source, path_of(at.v), ": a NumPy value, which a weights file does not hold");
      case Kind::Tensor: {
        const std::string path = path_of(at.v);
        PthTensor t;
        t.data = reader.tensor(path, at.v);
        t.location = reader.storage(p.at(o.items[0]).items[0]).location;
        t.requires_grad = reader.requires_grad(at.v);
        out.kind = PthKind::Tensor;
        out.i = static_cast<int64_t>(tree.tensors.size());
        tree.tensors.push_back(std::move(t));
        break;
      }
    }
  }
  return tree;
}

}  // namespace

std::string_view pth_error_kind_name(PthErrorKind kind) {
  switch (kind) {
    case PthErrorKind::Archive: return "Archive";
    case PthErrorKind::MissingEntry: return "MissingEntry";
    case PthErrorKind::Pickle: return "Pickle";
    case PthErrorKind::ForbiddenGlobal: return "ForbiddenGlobal";
    case PthErrorKind::Tensor: return "Tensor";
    case PthErrorKind::NotAStateDict: return "NotAStateDict";
  }
  return "?";
}

bool pth_sniff(std::span<const uint8_t> b) {
  if (b.size() >= 4 && std::memcmp(b.data(), "PK\x03\x04", 4) == 0) {
    // Any zip but NumPy's .npz (its first member is a .npy), which file_kind.h names as such.
    if (b.size() < 30) return true;
    const size_t len = size_t(b[26]) | size_t(b[27]) << 8;
    return b.size() < 30 + len || !std::string_view(reinterpret_cast<const char*>(b.data()) + 30, len).ends_with(".npy");
  }
  return b.size() >= sizeof kLegacyMagic && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5 &&
         std::memcmp(b.data() + 2, kLegacyMagic + 2, sizeof kLegacyMagic - 2) == 0;
}

PthFile pth_parse(std::span<const uint8_t> bytes, const std::string& source) {
  const Decoded d = decode(bytes, source);
  PthFile out;
  out.format = d.format;
  out.tensors = read_state_dict(d.p, d.st, source, d.budget, out.nested_key);
  return out;
}

PthTree pth_parse_tree(std::span<const uint8_t> bytes, const std::string& source) {
  return build_tree(decode(bytes, source), source);
}

std::string_view pth_kind_name(PthKind kind) {
  switch (kind) {
    case PthKind::None: return "None";
    case PthKind::Bool: return "bool";
    case PthKind::Int: return "int";
    case PthKind::Float: return "float";
    case PthKind::Str: return "str";
    case PthKind::Bytes: return "bytes";
    case PthKind::Tuple: return "tuple";
    case PthKind::List: return "list";
    case PthKind::Dict: return "dict";
    case PthKind::OrderedDict: return "OrderedDict";
    case PthKind::Tensor: return "tensor";
    case PthKind::Size: return "torch.Size";
    case PthKind::Device: return "torch.device";
    case PthKind::DType: return "torch.dtype";
  }
  return "?";
}

}  // namespace ember::io

// Hand-built torch.save files for the .pth reader's tests (tests/unit/test_io_pth.cpp): a zip of
// stored entries laid out as torch's, and protocol-2 pickles of a state dict whose tensor records
// (storage, offset, sizes, strides) the test chooses, so each malformed case is one argument away
// from a valid file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ember::test {

using PthBytes = std::vector<uint8_t>;

inline void put_le(PthBytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A zip of stored entries (no zip64, no comment), names and bytes in order. `method` is written
// into every central directory entry (0 = stored) to test the refusal of compressed entries.
inline PthBytes stored_zip(const std::vector<std::pair<std::string, std::string>>& entries, uint16_t method = 0) {
  PthBytes out, cd;
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    put_le(out, 0x04034b50, 4), put_le(out, 20, 2), put_le(out, 0, 2), put_le(out, 0, 2);
    put_le(out, 0, 4), put_le(out, 0, 4);  // time, date; crc (not checked)
    put_le(out, data.size(), 4), put_le(out, data.size(), 4), put_le(out, name.size(), 2), put_le(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), data.begin(), data.end());
    put_le(cd, 0x02014b50, 4), put_le(cd, 20, 2), put_le(cd, 20, 2), put_le(cd, 0, 2), put_le(cd, method, 2);
    put_le(cd, 0, 4), put_le(cd, 0, 4), put_le(cd, data.size(), 4), put_le(cd, data.size(), 4);
    put_le(cd, name.size(), 2), put_le(cd, 0, 2), put_le(cd, 0, 2), put_le(cd, 0, 2), put_le(cd, 0, 2);
    put_le(cd, 0, 4), put_le(cd, local, 4);
    cd.insert(cd.end(), name.begin(), name.end());
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), cd.begin(), cd.end());
  put_le(out, 0x06054b50, 4), put_le(out, 0, 2), put_le(out, 0, 2), put_le(out, entries.size(), 2);
  put_le(out, entries.size(), 2), put_le(out, cd.size(), 4), put_le(out, cd_offset, 4), put_le(out, 0, 2);
  return out;
}

// Protocol-2 pickle pieces.
inline std::string pk_str(const std::string& s) {  // BINUNICODE
  PthBytes b{'X'};
  put_le(b, s.size(), 4);
  return std::string(b.begin(), b.end()) + s;
}
inline std::string pk_int(int64_t v) {  // LONG1 of 8 bytes: any int64
  PthBytes b{0x8a, 8};
  put_le(b, static_cast<uint64_t>(v), 8);
  return std::string(b.begin(), b.end());
}
inline std::string pk_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (int64_t x : v) s += pk_int(x);
  return s + "t";
}

struct PthTensorRecord {
  std::string name = "w";
  std::string storage_type = "FloatStorage";
  std::string key = "0";
  int64_t storage_numel = 6;
  int64_t offset = 0;
  std::vector<int64_t> sizes{2, 3}, strides{3, 1};
};

// {name: _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, sizes, strides,
// False, OrderedDict())} as torch 1.13 pickles it (GLOBAL, BINPERSID, REDUCE), without memo.
inline std::string tensor_pickle(const PthTensorRecord& t) {  // the value only
  std::string s = "ctorch._utils\n_rebuild_tensor_v2\n(";
  s += "(" + pk_str("storage") + "ctorch\n" + t.storage_type + "\n" + pk_str(t.key) + pk_str("cpu") +
       pk_int(t.storage_numel) + "tQ";
  s += pk_int(t.offset) + pk_tuple(t.sizes) + pk_tuple(t.strides) + "\x89" + "ccollections\nOrderedDict\n)R";
  return s + "tR";
}
inline std::string dict_pickle(const std::vector<PthTensorRecord>& tensors) {  // "}(" name value ... "u"
  std::string s = "}(";
  for (const auto& t : tensors) s += pk_str(t.name) + tensor_pickle(t);
  return s + "u";
}
inline std::string state_dict_pickle(const std::vector<PthTensorRecord>& tensors) {
  return "\x80\x02" + dict_pickle(tensors) + ".";
}

// archive/data.pkl + archive/data/<key> for each storage.
inline PthBytes torch_zip(const std::string& pkl, const std::vector<std::pair<std::string, std::string>>& storages) {
  std::vector<std::pair<std::string, std::string>> entries{{"archive/data.pkl", pkl}};
  for (const auto& [key, data] : storages) entries.emplace_back("archive/data/" + key, data);
  entries.emplace_back("archive/version", "3\n");
  return stored_zip(entries);
}

inline std::string float_bytes(int n) {  // 0, 1, ..., n-1 as float32
  std::string s;
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i);
    s.append(reinterpret_cast<const char*>(&f), 4);
  }
  return s;
}

}  // namespace ember::test

// Reader for ember's golden reference files (EMBGOLD1), written by tests/golden/make_golden.py
// from PyTorch. Header-only, std only; used by tests that compare ember against PyTorch.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// File format, all integers little-endian (the full description is at the top of make_golden.py):
//   8 bytes "EMBGOLD1" | u32 version (= 1) | u32 record count
//   per record: u32 name length | name (UTF-8) | u32 dtype (0 f32, 1 f64, 2 i64) | u32 ndim |
//               ndim x i64 dims | prod(dims) * itemsize bytes of row-major data
// The file ends right after the last record.

namespace ember::test {

static_assert(std::endian::native == std::endian::little,
              "golden files store little-endian data; this reader copies it as-is");

inline constexpr int kGoldenFloat32 = 0;
inline constexpr int kGoldenFloat64 = 1;
inline constexpr int kGoldenInt64 = 2;

inline const char* golden_dtype_name(int dtype) {
  switch (dtype) {
    case kGoldenFloat32: return "float32";
    case kGoldenFloat64: return "float64";
    case kGoldenInt64: return "int64";
    default: return "unknown";
  }
}

inline std::size_t golden_itemsize(int dtype) {
  switch (dtype) {
    case kGoldenFloat32: return 4;
    case kGoldenFloat64: return 8;
    case kGoldenInt64: return 8;
    default: return 0;
  }
}

// "[2, 3, 4]"; "[]" for a 0-d record.
inline std::string golden_shape_string(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

// One named tensor. `bytes` holds numel() * itemsize bytes, row-major, exactly as stored.
struct GoldenRecord {
  std::string name;
  int dtype = kGoldenFloat32;
  std::vector<int64_t> dims;  // empty for a 0-d (scalar) record
  std::vector<uint8_t> bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }

  // Values as float / double, converted from whichever float dtype is stored (float64 -> float
  // rounds). Throws for int64 records: reading labels as floats is a test bug.
  std::vector<float> as_float() const { return as_floating<float>(); }
  std::vector<double> as_double() const { return as_floating<double>(); }

  // Values of an int64 record. Throws for float records.
  std::vector<int64_t> as_int64() const {
    if (dtype != kGoldenInt64) {
      throw std::runtime_error("golden record '" + name + "' is " + golden_dtype_name(dtype) +
                               ", not int64");
    }
    return copy_as<int64_t>();
  }

 private:
  template <typename T>
  std::vector<T> copy_as() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }

  template <typename Out>
  std::vector<Out> as_floating() const {
    if (dtype == kGoldenFloat32) {
      auto v = copy_as<float>();
      return std::vector<Out>(v.begin(), v.end());
    }
    if (dtype == kGoldenFloat64) {
      auto v = copy_as<double>();
      std::vector<Out> out(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<Out>(v[i]);
      return out;
    }
    throw std::runtime_error("golden record '" + name + "' is " + golden_dtype_name(dtype) +
                             ", not a floating-point record");
  }
};

// A whole golden file, read and validated at construction. Immutable afterwards, so safe to share
// between threads for reading.
class GoldenFile {
 public:
  static constexpr char kMagic[8] = {'E', 'M', 'B', 'G', 'O', 'L', 'D', '1'};
  static constexpr uint32_t kVersion = 1;
  static constexpr uint32_t kMaxNameLength = 4096;
  static constexpr uint32_t kMaxNdim = 16;

  // Throws std::runtime_error naming the file and what is wrong (missing, bad magic, wrong
  // version, truncated, trailing bytes, duplicate names, bad dtype or dims).
  explicit GoldenFile(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_, std::ios::binary | std::ios::ate);
    if (!in) fail("cannot open file");
    const std::streamoff size = in.tellg();
    if (size < 0) fail("cannot determine the file size");
    std::vector<uint8_t> data(static_cast<std::size_t>(size));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(data.data()), size)) fail("read error");
    parse(data);
  }

  const std::string& path() const { return path_; }
  std::size_t size() const { return records_.size(); }

  bool has(const std::string& name) const { return records_.count(name) != 0; }

  const GoldenRecord& get(const std::string& name) const {
    auto it = records_.find(name);
    if (it == records_.end()) {
      throw std::runtime_error("golden file " + path_ + ": no record named '" + name + "'");
    }
    return it->second;
  }

  // Names that start with `prefix`, in sorted order ("" gives every name).
  std::vector<std::string> names_with_prefix(const std::string& prefix) const {
    std::vector<std::string> names;
    for (auto it = records_.lower_bound(prefix); it != records_.end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) != 0) break;
      names.push_back(it->first);
    }
    return names;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("golden file " + path_ + ": " + what);
  }

  void parse(const std::vector<uint8_t>& data) {
    std::size_t pos = 0;
    auto need = [&](std::size_t n, const std::string& what) {
      if (n > data.size() - pos) {
        fail("truncated: needs " + std::to_string(n) + " bytes for " + what + " at offset " +
             std::to_string(pos) + ", but the file is " + std::to_string(data.size()) + " bytes");
      }
    };
    auto read_u32 = [&](const std::string& what) {
      need(4, what);
      uint32_t v;
      std::memcpy(&v, data.data() + pos, 4);
      pos += 4;
      return v;
    };
    auto read_i64 = [&](const std::string& what) {
      need(8, what);
      int64_t v;
      std::memcpy(&v, data.data() + pos, 8);
      pos += 8;
      return v;
    };

    need(sizeof(kMagic), "the magic");
    if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
      fail("not a golden file (magic is not EMBGOLD1)");
    }
    pos += sizeof(kMagic);
    const uint32_t version = read_u32("the version");
    if (version != kVersion) {
      fail("format version " + std::to_string(version) + ", this reader knows version " +
           std::to_string(kVersion));
    }
    const uint32_t count = read_u32("the record count");

    for (uint32_t i = 0; i < count; ++i) {
      const std::string which = "record " + std::to_string(i) + " of " + std::to_string(count);
      const uint32_t name_len = read_u32(which + " name length");
      if (name_len == 0 || name_len > kMaxNameLength) {
        fail(which + ": name length " + std::to_string(name_len) + " is out of range");
      }
      need(name_len, which + " name");
      GoldenRecord rec;
      rec.name.assign(reinterpret_cast<const char*>(data.data() + pos), name_len);
      pos += name_len;
      const std::string where = which + " ('" + rec.name + "')";

      const uint32_t dtype = read_u32(where + " dtype");
      const std::size_t itemsize = golden_itemsize(static_cast<int>(dtype));
      if (itemsize == 0) fail(where + ": unknown dtype code " + std::to_string(dtype));
      rec.dtype = static_cast<int>(dtype);
      const uint32_t ndim = read_u32(where + " ndim");
      if (ndim > kMaxNdim) fail(where + ": ndim " + std::to_string(ndim) + " is out of range");

      for (uint32_t d = 0; d < ndim; ++d) {
        const int64_t dim = read_i64(where + " dims");
        if (dim < 0) fail(where + ": negative dim " + std::to_string(dim));
        rec.dims.push_back(dim);
      }
      // Count elements against the bytes left, so corrupt dims can neither overflow nor allocate.
      const std::size_t left = data.size() - pos;
      const std::size_t max_numel = left / itemsize;
      std::size_t numel = 1;
      bool too_big = false;
      for (int64_t dim : rec.dims) {
        if (dim == 0) { numel = 0; too_big = false; break; }
        if (too_big || static_cast<uint64_t>(dim) > max_numel / numel) { too_big = true; continue; }
        numel *= static_cast<std::size_t>(dim);
      }
      const std::string shape = golden_shape_string(rec.dims) + " " + golden_dtype_name(rec.dtype);
      if (too_big) {
        fail("truncated: " + where + " is " + shape + ", more data than the " +
             std::to_string(left) + " bytes left in the file");
      }
      const std::size_t nbytes = numel * itemsize;
      need(nbytes, where + " data (" + shape + ")");
      rec.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(pos),
                       data.begin() + static_cast<std::ptrdiff_t>(pos + nbytes));
      pos += nbytes;

      std::string name = rec.name;
      if (!records_.emplace(name, std::move(rec)).second) {
        fail(where + ": duplicate record name");
      }
    }
    if (pos != data.size()) {
      fail(std::to_string(data.size() - pos) + " trailing bytes after the last of " +
           std::to_string(count) + " records");
    }
  }

  std::string path_;
  std::map<std::string, GoldenRecord> records_;
};

}  // namespace ember::test

// safetensors reader/writer. The reader checks every size, key, dtype, shape and offset before it
// allocates a single tensor ("validation before allocation"); the writer is byte-for-byte
// reproducible (sorted JSON keys, space padding, data ordered like the Python package).
#include "ember/io/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "ember/io/atomic_file.h"
#include "ember/io/user_file.h"

namespace ember::io {
namespace {

using nlohmann::json;

struct DTypeInfo {
  StDType dtype;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 13> kDTypes = {{
    {StDType::BOOL, "BOOL", 1}, {StDType::U8, "U8", 1},     {StDType::I8, "I8", 1},
    {StDType::I16, "I16", 2},   {StDType::U16, "U16", 2},   {StDType::F16, "F16", 2},
    {StDType::BF16, "BF16", 2}, {StDType::I32, "I32", 4},   {StDType::U32, "U32", 4},
    {StDType::F32, "F32", 4},   {StDType::F64, "F64", 8},   {StDType::I64, "I64", 8},
    {StDType::U64, "U64", 8},
}};

// The format's other dtypes (safetensors' Dtype enum): valid in a file, not read by ember.
constexpr std::array<std::string_view, 7> kUnreadDTypes = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4",
                                                           "F6_E2M3", "F6_E3M2", "C64"};

const DTypeInfo& dtype_info(StDType dtype) {
  auto i = static_cast<size_t>(dtype);
  EMBER_ASSERT(i < kDTypes.size() && kDTypes[i].dtype == dtype, "bad StDType ", i);
  return kDTypes[i];
}

constexpr std::string_view kMetadataKey = "__metadata__";

template <class... Args>
[[noreturn]] void fail(StErrorKind kind, const std::string& source, const Args&... args) {
  throw SafetensorsError(kind, detail::cat("safetensors: ", source, ": ", st_error_kind_name(kind),
                                           ": ", args...));
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
// Returns the offset of the first bad byte, or npos.
size_t find_invalid_utf8(std::span<const uint8_t> s) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((s[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string_view::npos;
}

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Parses the header JSON, rejecting duplicate keys at any level (nlohmann would keep the last one)
// and nesting deeper than the format has (root object -> tensor object -> shape array).
json parse_header_json(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> keys_stack;
  std::string duplicate;
  bool too_deep = false;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        if (depth > 2) too_deep = true;
        keys_stack.emplace_back();
        return !too_deep;
      case json::parse_event_t::array_start:
        if (depth > 2) too_deep = true;
        return !too_deep;
      case json::parse_event_t::object_end:
        if (!keys_stack.empty()) keys_stack.pop_back();
        return !too_deep;
      case json::parse_event_t::key:
        if (!keys_stack.empty() && parsed.is_string() &&
            !keys_stack.back().insert(parsed.get_ref<const std::string&>()).second &&
            duplicate.empty())
          duplicate = parsed.get<std::string>();
        return true;
      default:
        return !too_deep;
    }
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    fail(StErrorKind::InvalidHeaderDeserialization, source, "header is not valid JSON (",
         e.what(), ")");
  }
  if (too_deep)
    fail(StErrorKind::InvalidHeaderDeserialization, source,
         "header nests deeper than the format allows (object -> tensor -> shape)");
  if (!duplicate.empty())
    fail(StErrorKind::InvalidHeaderDeserialization, source, "duplicate key '", duplicate,
         "' in the header");
  return root;
}

struct TensorSpan {
  const std::string* name;
  StDType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

TensorSpan parse_tensor_entry(const std::string& name, const json& entry, uint64_t buffer_size,
                              const std::string& source) {
  constexpr auto kBad = StErrorKind::InvalidHeaderDeserialization;
  if (!entry.is_object())
    fail(kBad, source, "tensor '", name, "' must be an object, got ", entry.type_name());
  for (const auto& [key, value] : entry.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail(kBad, source, "tensor '", name, "' has an unknown field '", key, "'");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field)) fail(kBad, source, "tensor '", name, "' lacks '", field, "'");

  TensorSpan t{&name, StDType::F32, {}, 0, 0};
  const json& dt = entry["dtype"];
  if (!dt.is_string()) fail(kBad, source, "tensor '", name, "': dtype must be a string");
  auto dtype = st_dtype_from_name(dt.get_ref<const std::string&>());
  if (!dtype) {
    const std::string& dn = dt.get_ref<const std::string&>();
    if (std::find(kUnreadDTypes.begin(), kUnreadDTypes.end(), dn) != kUnreadDTypes.end())
      throw SafetensorsDTypeError(detail::cat("safetensors: ", source, ": tensor '", name, "' has dtype ", dn,
                                              ", which ember does not read"),
                                  name, dn);
    fail(kBad, source, "tensor '", name, "': unknown dtype '", dn, "'");
  }
  t.dtype = *dtype;

  const json& shape = entry["shape"];
  if (!shape.is_array()) fail(kBad, source, "tensor '", name, "': shape must be an array");
  uint64_t numel = 1;
  for (const json& d : shape) {
    // is_number_unsigned rejects -1 (signed), 2.0 (float), "2" and null alike.
    if (!d.is_number_unsigned())
      fail(kBad, source, "tensor '", name, "': shape entries must be non-negative integers, got ",
           d.dump());
    uint64_t dim = d.get<uint64_t>();
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(StErrorKind::ValidationOverflow, source, "tensor '", name, "': dim ", dim,
           " does not fit in int64");
    if (__builtin_mul_overflow(numel, dim, &numel))
      fail(StErrorKind::ValidationOverflow, source, "tensor '", name, "': shape ", shape.dump(),
           " has more elements than fit in 64 bits");
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(st_dtype_size(t.dtype)), &nbytes))
    fail(StErrorKind::ValidationOverflow, source, "tensor '", name, "': shape ", shape.dump(),
         " x ", st_dtype_size(t.dtype), " bytes overflows 64 bits");

  const json& off = entry["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned())
    fail(kBad, source, "tensor '", name,
         "': data_offsets must be two non-negative integers [begin, end], got ", off.dump());
  t.begin = off[0].get<uint64_t>();
  t.end = off[1].get<uint64_t>();
  if (t.begin > t.end)
    fail(StErrorKind::InvalidOffset, source, "tensor '", name, "': data_offsets begin ", t.begin,
         " > end ", t.end);
  if (t.end > buffer_size)
    fail(StErrorKind::InvalidOffset, source, "tensor '", name, "': data_offsets end ", t.end,
         " is past the data buffer (", buffer_size, " bytes)");
  if (t.end - t.begin != nbytes)
    fail(StErrorKind::TensorInvalidInfo, source, "tensor '", name, "': data_offsets [", t.begin,
         ", ", t.end, ") hold ", t.end - t.begin, " bytes but ", st_dtype_name(t.dtype), " shape ",
         shape.dump(), " needs ", nbytes);
  return t;
}

std::map<std::string, std::string> parse_metadata(const json& meta, const std::string& source) {
  constexpr auto kBad = StErrorKind::InvalidHeaderDeserialization;
  if (!meta.is_object())
    fail(kBad, source, "__metadata__ must be an object of strings, got ", meta.type_name());
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string())
      fail(kBad, source, "__metadata__['", key, "'] must be a string, got ", value.type_name());
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace

size_t st_dtype_size(StDType dtype) { return dtype_info(dtype).size; }
std::string_view st_dtype_name(StDType dtype) { return dtype_info(dtype).name; }

std::optional<StDType> st_dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

std::string_view st_error_kind_name(StErrorKind kind) {
  switch (kind) {
    case StErrorKind::HeaderTooSmall: return "HeaderTooSmall";
    case StErrorKind::InvalidHeaderLength: return "InvalidHeaderLength";
    case StErrorKind::HeaderTooLarge: return "HeaderTooLarge";
    case StErrorKind::InvalidHeader: return "InvalidHeader";
    case StErrorKind::InvalidHeaderStart: return "InvalidHeaderStart";
    case StErrorKind::InvalidHeaderDeserialization: return "InvalidHeaderDeserialization";
    case StErrorKind::TensorInvalidInfo: return "TensorInvalidInfo";
    case StErrorKind::InvalidOffset: return "InvalidOffset";
    case StErrorKind::MetadataIncompleteBuffer: return "MetadataIncompleteBuffer";
    case StErrorKind::ValidationOverflow: return "ValidationOverflow";
  }
  return "Unknown";
}

const StTensor* StFile::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

StFile st_parse(std::span<const uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8)
    fail(StErrorKind::HeaderTooSmall, source, "file is ", bytes.size(),
         " bytes, shorter than the 8-byte header length");
  const uint64_t n = load_le64(bytes.data());
  // Compared before any arithmetic, so N = 2^64-1 cannot wrap 8 + N.
  if (n > kStMaxHeaderSize)
    fail(StErrorKind::HeaderTooLarge, source, "header length ", n, " exceeds the ",
         kStMaxHeaderSize, "-byte limit");
  if (n > bytes.size() - 8)
    fail(StErrorKind::InvalidHeaderLength, source, "header length ", n, " runs past the end of the ",
         bytes.size(), "-byte file");
  const auto header = bytes.subspan(8, n);
  const auto buffer = bytes.subspan(8 + n);

  if (size_t bad = find_invalid_utf8(header); bad != std::string_view::npos)
    fail(StErrorKind::InvalidHeader, source, "header is not valid UTF-8 (byte ", bad, ")");
  if (header.empty() || header[0] != '{')
    fail(StErrorKind::InvalidHeaderStart, source, "header must start with '{'",
         header.empty() ? " but is empty" : "");
  // nlohmann stops silently at a NUL, so "{...}\0garbage" would parse; only spaces may pad.
  if (const void* nul = std::memchr(header.data(), 0, header.size()))
    fail(StErrorKind::InvalidHeaderDeserialization, source, "NUL byte at header offset ",
         static_cast<const uint8_t*>(nul) - header.data(), " (only spaces may pad the header)");

  const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
  const json root = parse_header_json(text, source);
  if (!root.is_object())
    fail(StErrorKind::InvalidHeaderDeserialization, source, "header must be a JSON object");

  // Pass 1: validate everything; nothing proportional to the data buffer is allocated yet.
  StFile out;
  std::vector<TensorSpan> spans;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey)
      out.metadata = parse_metadata(value, source);
    else
      spans.push_back(parse_tensor_entry(key, value, buffer.size(), source));
  }
  std::vector<const TensorSpan*> by_offset;
  for (const auto& s : spans) by_offset.push_back(&s);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorSpan* a, const TensorSpan* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t cursor = 0;
  const std::string* prev = nullptr;
  for (const TensorSpan* s : by_offset) {
    if (s->begin < cursor)
      fail(StErrorKind::InvalidOffset, source, "tensor '", *s->name, "' [", s->begin, ", ", s->end,
           ") overlaps tensor '", *prev, "' which ends at ", cursor);
    if (s->begin > cursor)
      fail(StErrorKind::MetadataIncompleteBuffer, source, "gap of ", s->begin - cursor,
           " unused bytes before tensor '", *s->name, "' at offset ", cursor);
    cursor = s->end;
    prev = s->name;
  }
  if (cursor != buffer.size())
    fail(StErrorKind::MetadataIncompleteBuffer, source, "tensors cover ", cursor, " of the ",
         buffer.size(), " data bytes");

  // Pass 2: copy. Offsets need not be aligned, hence byte copies rather than casts.
  out.tensors.reserve(spans.size());
  for (auto& s : spans) {
    StTensor t;
    t.name = *s.name;
    t.dtype = s.dtype;
    t.shape = std::move(s.shape);
    t.data.assign(buffer.begin() + static_cast<ptrdiff_t>(s.begin),
                  buffer.begin() + static_cast<ptrdiff_t>(s.end));
    out.tensors.push_back(std::move(t));
  }
  return out;  // in name order: nlohmann objects iterate sorted by key
}

std::vector<uint8_t> st_serialize(const StFile& file) {
  std::set<std::string_view> names;
  for (const auto& t : file.tensors) {
    EMBER_CHECK(t.name != kMetadataKey, ValueError, "st_serialize: tensor name '", t.name,
                "' is reserved for metadata");
    EMBER_CHECK(names.insert(t.name).second, ValueError, "st_serialize: duplicate tensor name '",
                t.name, "'");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      EMBER_CHECK(d >= 0, ValueError, "st_serialize: tensor '", t.name, "' has negative dim ", d);
      EMBER_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel), ValueError,
                  "st_serialize: tensor '", t.name, "' has too many elements");
    }
    uint64_t nbytes = 0;
    EMBER_CHECK(!__builtin_mul_overflow(numel, uint64_t{st_dtype_size(t.dtype)}, &nbytes) &&
                    nbytes == t.data.size(),
                ValueError, "st_serialize: tensor '", t.name, "' (", st_dtype_name(t.dtype), ", ",
                numel, " elements) needs ", nbytes, " bytes of data but has ", t.data.size());
  }

  // Largest itemsize first, then name: the Python package's order, which keeps every tensor
  // aligned to its itemsize because the header pads 8 + N to a multiple of 8.
  std::vector<const StTensor*> order;
  for (const auto& t : file.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const StTensor* a, const StTensor* b) {
    if (a->dtype != b->dtype) return a->dtype > b->dtype;
    return a->name < b->name;
  });

  json root = json::object();  // std::map underneath: keys come out sorted at every level
  uint64_t offset = 0;
  for (const StTensor* t : order) {
    root[t->name] = {{"dtype", st_dtype_name(t->dtype)},
                     {"shape", t->shape},
                     {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  if (!file.metadata.empty()) root[std::string(kMetadataKey)] = file.metadata;

  std::string header;
  try {
    header = root.dump();  // compact, UTF-8 kept as is; throws on invalid UTF-8
  } catch (const json::exception& e) {
    throw ValueError(detail::cat("st_serialize: a tensor name or metadata string is not valid UTF-8 (",
                                 e.what(), ")"));
  }
  header.append((8 - header.size() % 8) % 8, ' ');

  std::vector<uint8_t> out(8 + header.size() + offset);
  store_le64(out.data(), header.size());
  std::memcpy(out.data() + 8, header.data(), header.size());
  uint8_t* p = out.data() + 8 + header.size();
  for (const StTensor* t : order) {
    if (!t->data.empty()) std::memcpy(p, t->data.data(), t->data.size());
    p += t->data.size();
  }
  return out;
}

StFile st_load(const std::filesystem::path& path) {
  return st_parse(read_user_file(path, kCheckpointFile), path.string());
}

void st_save(const std::filesystem::path& path, const StFile& file) {
  write_file_atomic(path, st_serialize(file));
}

}  // namespace ember::io

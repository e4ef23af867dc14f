// safetensors reader/writer and write_file_atomic: every validation rule with its error category,
// round-trip properties, truncation/bit-flip robustness, byte-for-byte parity with an independent
// Python writer, interop with Python's `safetensors` package, and crash-safety of atomic writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/atomic_file.h"
#include "ember/io/safetensors.h"
#include "ember/train/checkpoint.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace ember::io;
using Bytes = std::vector<uint8_t>;

namespace {

static_assert(std::endian::native == std::endian::little, "tests build data bytes with memcpy");

// 8-byte LE length + header text (verbatim, may be malformed) + data buffer.
Bytes raw_file(const std::string& header, const Bytes& data = {}, std::optional<uint64_t> n = {}) {
  // Sized once and filled in place: vector::insert of a range here drew a false
  // -Wstringop-overread from g++ 12 under the sanitizer build.
  Bytes out(8 + header.size() + data.size());
  uint64_t len = n.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(len >> (8 * i));
  for (size_t i = 0; i < header.size(); ++i) out[8 + i] = static_cast<uint8_t>(header[i]);
  for (size_t i = 0; i < data.size(); ++i) out[8 + header.size() + i] = data[i];
  return out;
}

// Asserts st_parse throws a SafetensorsError (a FormatError) of `kind` whose message has `piece`.
void expect_st_error(const Bytes& bytes, StErrorKind kind, const std::string& piece) {
  try {
    st_parse(bytes, "test.safetensors");
    ADD_FAILURE() << "expected " << st_error_kind_name(kind) << " (" << piece << "), parse succeeded";
  } catch (const SafetensorsError& e) {
    const ember::FormatError& as_format = e;  // the public contract: a FormatError
    std::string msg = as_format.what();
    EXPECT_EQ(e.kind(), kind) << msg;
    EXPECT_NE(msg.find(std::string(st_error_kind_name(kind))), std::string::npos) << msg;
    EXPECT_NE(msg.find(piece), std::string::npos) << "missing '" << piece << "' in: " << msg;
    EXPECT_NE(msg.find("test.safetensors"), std::string::npos) << msg;
  }
}

template <class T>
Bytes to_bytes(std::initializer_list<T> values) {
  Bytes out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

StTensor make_tensor(std::string name, StDType dtype, std::vector<int64_t> shape, Bytes data) {
  return StTensor{std::move(name), dtype, std::move(shape), std::move(data)};
}

// A small file touching metadata, a scalar, an empty tensor and three item sizes.
StFile small_file() {
  StFile f;
  f.tensors.push_back(make_tensor("weight", StDType::F32, {2, 2}, to_bytes<float>({1.f, -0.f, 2.5f, NAN})));
  f.tensors.push_back(make_tensor("bias", StDType::I16, {3}, to_bytes<int16_t>({-1, 0, 7})));
  f.tensors.push_back(make_tensor("step", StDType::I64, {}, to_bytes<int64_t>({42})));
  f.tensors.push_back(make_tensor("empty", StDType::U8, {0, 3}, {}));
  f.metadata["format"] = "pt";
  return f;
}

void expect_same_tensors(const StFile& a, const StFile& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& t : a.tensors) {
    const StTensor* u = b.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(t.dtype, u->dtype) << t.name;
    EXPECT_EQ(t.shape, u->shape) << t.name;
    EXPECT_EQ(t.data, u->data) << t.name;  // bitwise: NaN payloads and -0.0 included
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

// A scratch directory removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("ember_st_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

Bytes read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

bool python_has(const std::string& module) {
  if (::access("/usr/bin/python3", X_OK) != 0) return false;
  std::string cmd = "/usr/bin/python3 -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

// ---- dtypes --------------------------------------------------------------------------------

TEST(SafetensorsDType, NamesSizesRoundTrip) {
  const std::vector<std::pair<StDType, size_t>> all = {
      {StDType::BOOL, 1}, {StDType::U8, 1},  {StDType::I8, 1},   {StDType::I16, 2}, {StDType::U16, 2},
      {StDType::F16, 2},  {StDType::BF16, 2}, {StDType::I32, 4}, {StDType::U32, 4}, {StDType::F32, 4},
      {StDType::F64, 8},  {StDType::I64, 8}, {StDType::U64, 8}};
  for (auto [dt, size] : all) {
    EXPECT_EQ(st_dtype_size(dt), size);
    EXPECT_EQ(st_dtype_from_name(st_dtype_name(dt)), dt);
  }
  EXPECT_EQ(st_dtype_name(StDType::BF16), "BF16");
  EXPECT_FALSE(st_dtype_from_name("F33").has_value());
  EXPECT_FALSE(st_dtype_from_name("f32").has_value());
}

// ---- sizes ---------------------------------------------------------------------------------

TEST(SafetensorsParse, HeaderTooSmall) {
  for (size_t n = 0; n < 8; ++n)
    expect_st_error(Bytes(n, 0), StErrorKind::HeaderTooSmall, "shorter than the 8-byte");
}

TEST(SafetensorsParse, InvalidHeaderLengthPastEnd) {
  expect_st_error(raw_file("{}", {}, 3), StErrorKind::InvalidHeaderLength, "runs past the end");
  expect_st_error(raw_file("{}", {}, 100'000'000), StErrorKind::InvalidHeaderLength, "runs past");
}

TEST(SafetensorsParse, HeaderTooLargeIncludingWrapAround) {
  expect_st_error(raw_file("{}", {}, 100'000'001), StErrorKind::HeaderTooLarge, "100000001");
  // 2^64-1 would wrap 8 + N to 7; it must be rejected without that arithmetic.
  expect_st_error(raw_file("{}", {}, std::numeric_limits<uint64_t>::max()),
                  StErrorKind::HeaderTooLarge, "18446744073709551615");
  expect_st_error(raw_file("{}", {}, std::numeric_limits<uint64_t>::max() - 7),
                  StErrorKind::HeaderTooLarge, "limit");
}

TEST(SafetensorsParse, EmptyHeaderIsBadStart) {
  expect_st_error(raw_file(""), StErrorKind::InvalidHeaderStart, "is empty");
}

// ---- header bytes --------------------------------------------------------------------------

TEST(SafetensorsParse, HeaderMustStartWithBrace) {
  expect_st_error(raw_file("\xEF\xBB\xBF{}"), StErrorKind::InvalidHeaderStart, "start with '{'");
  expect_st_error(raw_file(" {}"), StErrorKind::InvalidHeaderStart, "start with '{'");
  expect_st_error(raw_file("[]"), StErrorKind::InvalidHeaderStart, "start with '{'");
  expect_st_error(raw_file("\n{}"), StErrorKind::InvalidHeaderStart, "start with '{'");
}

TEST(SafetensorsParse, HeaderMustBeValidJsonObject) {
  expect_st_error(raw_file("{\"a\":"), StErrorKind::InvalidHeaderDeserialization, "not valid JSON");
  expect_st_error(raw_file("{} []"), StErrorKind::InvalidHeaderDeserialization, "not valid JSON");
  expect_st_error(raw_file("{}}"), StErrorKind::InvalidHeaderDeserialization, "not valid JSON");
  expect_st_error(raw_file("{\"a\":1,}"), StErrorKind::InvalidHeaderDeserialization, "not valid JSON");
  expect_st_error(raw_file("{/*c*/}"), StErrorKind::InvalidHeaderDeserialization, "not valid JSON");
}

TEST(SafetensorsParse, NulBytesRejectedEvenWhereNlohmannWouldStop) {
  expect_st_error(raw_file(std::string("{}\0\0\0\0\0\0", 8)), StErrorKind::InvalidHeaderDeserialization,
                  "NUL byte at header offset 2");
  expect_st_error(raw_file(std::string("{}\0garbage", 10)), StErrorKind::InvalidHeaderDeserialization,
                  "NUL byte");
  expect_st_error(raw_file(std::string("{\"a\0\":1}", 8)), StErrorKind::InvalidHeaderDeserialization,
                  "NUL byte at header offset 3");
}

TEST(SafetensorsParse, TrailingSpacePaddingAccepted) {
  StFile f = st_parse(raw_file("{}      "), "pad");
  EXPECT_TRUE(f.tensors.empty());
  f = st_parse(raw_file(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}   )", {7, 9}), "pad");
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].data, (Bytes{7, 9}));
}

TEST(SafetensorsParse, InvalidUtf8) {
  expect_st_error(raw_file("{\"\xFF\":1}"), StErrorKind::InvalidHeader, "not valid UTF-8 (byte 2)");
  expect_st_error(raw_file("{\"\xC0\xAF\":1}"), StErrorKind::InvalidHeader, "UTF-8");      // overlong '/'
  expect_st_error(raw_file("{\"\xED\xA0\x80\":1}"), StErrorKind::InvalidHeader, "UTF-8");  // surrogate
  expect_st_error(raw_file("{\"\xF4\x90\x80\x80\":1}"), StErrorKind::InvalidHeader, "UTF-8");  // > U+10FFFF
  expect_st_error(raw_file("{\"\xE2\x82"), StErrorKind::InvalidHeader, "UTF-8");           // cut short
  // Valid multi-byte names are fine.
  StFile f = st_parse(raw_file("{\"\xC3\xA9\xF0\x9F\x94\xA5\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", {5}), "u");
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].name, "\xC3\xA9\xF0\x9F\x94\xA5");
}

TEST(SafetensorsParse, DeepNestingFailsCleanly) {
  std::string deep = "{\"a\":" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  expect_st_error(raw_file(deep), StErrorKind::InvalidHeaderDeserialization, "nests deeper");
  std::string unclosed = "{\"a\":" + std::string(100'000, '[');
  expect_st_error(raw_file(unclosed), StErrorKind::InvalidHeaderDeserialization, "JSON");
}

// ---- keys and metadata ----------------------------------------------------------------------

TEST(SafetensorsParse, DuplicateTensorNames) {
  const std::string t = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  expect_st_error(raw_file("{\"a\":" + t + ",\"a\":" + t + "}", {1}),
                  StErrorKind::InvalidHeaderDeserialization, "duplicate key 'a'");
  // The same key spelled with an escape is still a duplicate.
  expect_st_error(raw_file("{\"a\":" + t + ",\"\\u0061\":" + t + "}", {1}),
                  StErrorKind::InvalidHeaderDeserialization, "duplicate key 'a'");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", {1}),
                  StErrorKind::InvalidHeaderDeserialization, "duplicate key 'dtype'");
  expect_st_error(raw_file(R"({"__metadata__":{"k":"1","k":"2"}})"),
                  StErrorKind::InvalidHeaderDeserialization, "duplicate key 'k'");
}

TEST(SafetensorsParse, MetadataMustBeStringToString) {
  expect_st_error(raw_file(R"({"__metadata__":{"a":1}})"), StErrorKind::InvalidHeaderDeserialization,
                  "__metadata__['a'] must be a string");
  expect_st_error(raw_file(R"({"__metadata__":{"a":null}})"), StErrorKind::InvalidHeaderDeserialization,
                  "must be a string");
  expect_st_error(raw_file(R"({"__metadata__":{"a":{"b":"c"}}})"),
                  StErrorKind::InvalidHeaderDeserialization, "must be a string");
  expect_st_error(raw_file(R"({"__metadata__":["a","b"]})"), StErrorKind::InvalidHeaderDeserialization,
                  "__metadata__ must be an object");
  expect_st_error(raw_file(R"({"__metadata__":"x"})"), StErrorKind::InvalidHeaderDeserialization,
                  "__metadata__ must be an object");
  StFile f = st_parse(raw_file(R"({"__metadata__":{"format":"pt","b":""}})"), "m");
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"b", ""}}));
}

TEST(SafetensorsParse, TensorEntryShape) {
  expect_st_error(raw_file(R"({"a":[1,2]})"), StErrorKind::InvalidHeaderDeserialization,
                  "tensor 'a' must be an object");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[0]}})"),
                  StErrorKind::InvalidHeaderDeserialization, "lacks 'data_offsets'");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"extra":1}})"),
                  StErrorKind::InvalidHeaderDeserialization, "unknown field 'extra'");
  expect_st_error(raw_file(R"({"a":{"dtype":7,"shape":[0],"data_offsets":[0,0]}})"),
                  StErrorKind::InvalidHeaderDeserialization, "dtype must be a string");
}

// ---- dtype and shape -------------------------------------------------------------------------

TEST(SafetensorsParse, UnknownDType) {
  expect_st_error(raw_file(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", Bytes(4)),
                  StErrorKind::InvalidHeaderDeserialization, "unknown dtype 'F33'");
  expect_st_error(raw_file(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", Bytes(4)),
                  StErrorKind::InvalidHeaderDeserialization, "unknown dtype 'f32'");
}

// A dtype of the format that ember does not read is not damage (issue 22: an F8_E4M3 file was
// "corrupt or truncated"): its own error type, naming the tensor and the dtype; a checkpoint load
// says "unsupported dtype".
TEST(SafetensorsParse, FormatDTypesEmberDoesNotReadAreUnsupportedNotCorrupt) {
  for (const char* dt : {"F8_E4M3", "F8_E5M2", "C64"}) {
    const Bytes file = raw_file(std::string(R"({"w":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,1]}})",
                                Bytes(1));
    try {
      st_parse(file, "f8.safetensors");
      ADD_FAILURE() << dt << ": no error";
    } catch (const SafetensorsDTypeError& e) {
      EXPECT_EQ(e.tensor(), "w");
      EXPECT_EQ(e.dtype(), dt);
      EXPECT_NE(std::string(e.what()).find(std::string("has dtype ") + dt + ", which ember does not read"),
                std::string::npos)
          << e.what();
    }
  }
  ember::test::TempDir d;
  ember::test::write_bytes(d.path() / "f8.safetensors",
                           raw_file(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", Bytes(1)));
  try {
    ember::train::load_checkpoint(d.path() / "f8.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const ember::FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tensor 'w' has the unsupported dtype F8_E4M3"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("corrupt"), std::string::npos) << msg;
    EXPECT_NE(e.hint().find("v.float()"), std::string::npos) << e.hint();
  }
}

TEST(SafetensorsParse, BadShapeDims) {
  for (const char* dims : {"[-1]", "[2.0]", "[\"2\"]", "[null]", "[true]", "[[2]]", "2", "{}"}) {
    std::string h = std::string(R"({"a":{"dtype":"U8","shape":)") + dims + R"(,"data_offsets":[0,2]}})";
    expect_st_error(raw_file(h, Bytes(2)), StErrorKind::InvalidHeaderDeserialization, "shape");
  }
}

TEST(SafetensorsParse, ShapeProductOverflow) {
  // 2^32 * 2^32 = 2^64 elements.
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
                  StErrorKind::ValidationOverflow, "more elements than fit");
  // 2^62 elements fit, but 2^62 * 8 bytes does not.
  expect_st_error(raw_file(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})"),
                  StErrorKind::ValidationOverflow, "overflows 64 bits");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}})"),
                  StErrorKind::ValidationOverflow, "does not fit in int64");
  // A 0 dim makes the product 0 even next to huge dims: valid, and no overflow is reported.
  StFile f = st_parse(raw_file(R"({"a":{"dtype":"F64","shape":[0,4611686018427387904],"data_offsets":[0,0]}})"), "z");
  EXPECT_EQ(f.tensors.at(0).shape, (std::vector<int64_t>{0, 4611686018427387904}));
}

// ---- offsets --------------------------------------------------------------------------------

TEST(SafetensorsParse, DataOffsetsMustBeTwoUnsigned) {
  for (const char* off : {"[0]", "[0,1,2]", "[-1,0]", "[0.0,1]", "[0,1.5]", "\"0,1\"", "[]", "null",
                          "[0,18446744073709551616]"}) {
    std::string h = std::string(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":)") + off + "}}";
    expect_st_error(raw_file(h, Bytes(1)), StErrorKind::InvalidHeaderDeserialization,
                    "data_offsets must be two non-negative integers");
  }
}

TEST(SafetensorsParse, BeginAfterEnd) {
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}})", Bytes(2)),
                  StErrorKind::InvalidOffset, "begin 2 > end 1");
}

TEST(SafetensorsParse, EndPastBuffer) {
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", Bytes(3)),
                  StErrorKind::InvalidOffset, "end 4 is past the data buffer (3 bytes)");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})"),
                  StErrorKind::InvalidOffset, "past the data buffer");
}

TEST(SafetensorsParse, SpanMustMatchShape) {
  expect_st_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", Bytes(4)),
                  StErrorKind::TensorInvalidInfo, "hold 4 bytes but F32 shape [2] needs 8");
  expect_st_error(raw_file(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,0]}})"),
                  StErrorKind::TensorInvalidInfo, "needs 4");
}

TEST(SafetensorsParse, OverlappingRanges) {
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", Bytes(6)),
                  StErrorKind::InvalidOffset, "overlaps tensor 'a'");
  // Two tensors aliasing the same bytes.
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", Bytes(4)),
                  StErrorKind::InvalidOffset, "overlaps");
  // An empty tensor placed inside another one's bytes.
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})", Bytes(4)),
                  StErrorKind::InvalidOffset, "overlaps");
}

TEST(SafetensorsParse, GapsAndTrailingBytes) {
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                           R"("b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})", Bytes(5)),
                  StErrorKind::MetadataIncompleteBuffer, "gap of 1 unused bytes before tensor 'b'");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", Bytes(3)),
                  StErrorKind::MetadataIncompleteBuffer, "gap");
  expect_st_error(raw_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", Bytes(3)),
                  StErrorKind::MetadataIncompleteBuffer, "cover 2 of the 3 data bytes");
  expect_st_error(raw_file("{}", Bytes(1)), StErrorKind::MetadataIncompleteBuffer, "cover 0 of the 1");
}

// ---- valid edge cases ------------------------------------------------------------------------

TEST(SafetensorsParse, ScalarsEmptyTensorsAndUnalignedOffsets) {
  // U8[3] at 0..3 pushes the F32 and F64 to offsets 3 and 7: unaligned, read byte-wise.
  Bytes data = {1, 2, 3};
  Bytes f32 = to_bytes<float>({-0.0f, 3.5f});
  Bytes f64 = to_bytes<double>({std::numbers::pi});
  data.insert(data.end(), f32.begin(), f32.end());
  data.insert(data.end(), f64.begin(), f64.end());
  StFile f = st_parse(raw_file(R"({"bytes":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                               R"("e":{"dtype":"F32","shape":[2,0,5],"data_offsets":[3,3]},)"
                               R"("pair":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},)"
                               R"("pi":{"dtype":"F64","shape":[],"data_offsets":[11,19]}})", data),
                      "edge");
  ASSERT_EQ(f.tensors.size(), 4u);
  EXPECT_EQ(f.tensors[0].name, "bytes");  // sorted by name
  EXPECT_EQ(f.find("e")->shape, (std::vector<int64_t>{2, 0, 5}));
  EXPECT_TRUE(f.find("e")->data.empty());
  EXPECT_EQ(f.find("pair")->data, f32);
  EXPECT_TRUE(f.find("pi")->shape.empty());
  double pi = 0;
  std::memcpy(&pi, f.find("pi")->data.data(), 8);
  EXPECT_EQ(pi, std::numbers::pi);
  EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(SafetensorsParse, EmptyFileIsValid) {
  StFile f = st_parse(raw_file("{}"), "empty");
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
  Bytes again = st_serialize(f);
  EXPECT_EQ(again, raw_file("{}      "));
}

// ---- writer ----------------------------------------------------------------------------------

TEST(SafetensorsSerialize, LayoutSortedPaddedAligned) {
  Bytes out = st_serialize(small_file());
  uint64_t n = 0;
  std::memcpy(&n, out.data(), 8);
  ASSERT_EQ((8 + n) % 8, 0u);
  std::string header(out.begin() + 8, out.begin() + 8 + static_cast<long>(n));
  // Sorted keys at every level, compact, space padding; data: itemsize descending then name.
  EXPECT_EQ(header,
            R"({"__metadata__":{"format":"pt"},)"
            R"("bias":{"data_offsets":[24,30],"dtype":"I16","shape":[3]},)"
            R"("empty":{"data_offsets":[30,30],"dtype":"U8","shape":[0,3]},)"
            R"("step":{"data_offsets":[0,8],"dtype":"I64","shape":[]},)"
            R"("weight":{"data_offsets":[8,24],"dtype":"F32","shape":[2,2]}})"
            + std::string((8 - (header.find_last_not_of(' ') + 1) % 8) % 8, ' '));
  EXPECT_EQ(out.size(), 8 + n + 30);
}

TEST(SafetensorsSerialize, RejectsUnwritableFiles) {
  StFile f;
  f.tensors.push_back(make_tensor("a", StDType::F32, {2}, Bytes(4)));
  EXPECT_THROW(st_serialize(f), ember::ValueError);
  f.tensors[0] = make_tensor("a", StDType::F32, {-1}, {});
  EXPECT_THROW(st_serialize(f), ember::ValueError);
  f.tensors[0] = make_tensor("__metadata__", StDType::U8, {}, Bytes(1));
  EXPECT_THROW(st_serialize(f), ember::ValueError);
  f.tensors[0] = make_tensor("a", StDType::U8, {}, Bytes(1));
  f.tensors.push_back(f.tensors[0]);
  try {
    st_serialize(f);
    ADD_FAILURE() << "duplicate names accepted";
  } catch (const ember::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate tensor name 'a'"), std::string::npos);
  }
  f.tensors.pop_back();
  f.tensors[0].name = "\xFF";
  EXPECT_THROW(st_serialize(f), ember::ValueError);
}

TEST(SafetensorsRoundTrip, SpecialFloatBitsSurvive) {
  StFile f;
  const uint32_t f32_bits[] = {0x7FC00001u, 0xFFA00000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x00000001u};
  const uint64_t f64_bits[] = {0x7FF8000000000123ull, 0x8000000000000000ull, 0x000FFFFFFFFFFFFFull};
  const uint16_t h_bits[] = {0x7E01u, 0x8000u, 0xFC00u, 0x0001u};
  auto raw = [](const auto& arr) {
    Bytes b(sizeof(arr));
    std::memcpy(b.data(), arr, sizeof(arr));
    return b;
  };
  f.tensors.push_back(make_tensor("f32", StDType::F32, {6}, raw(f32_bits)));
  f.tensors.push_back(make_tensor("f64", StDType::F64, {3}, raw(f64_bits)));
  f.tensors.push_back(make_tensor("f16", StDType::F16, {2, 2}, raw(h_bits)));
  f.tensors.push_back(make_tensor("bf16", StDType::BF16, {4}, raw(h_bits)));
  expect_same_tensors(f, st_parse(st_serialize(f), "special"));
}

TEST(SafetensorsRoundTrip, RandomFilesProperty) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* alphabet[] = {"a", "b", "z", "_", ".", "0", "9", "\xC3\xA9", "\xE2\x82\xAC", "\"", "\\", "\n", " "};
  auto random_string = [&](int max_len) {
    std::string s;
    for (int i = uniform(0, max_len); i > 0; --i) s += alphabet[uniform(0, 12)];
    return s;
  };
  for (int iter = 0; iter < 400; ++iter) {
    StFile f;
    std::set<std::string> used;
    for (int i = uniform(0, 8); i > 0; --i) {
      std::string name = random_string(6);
      if (name == "__metadata__" || !used.insert(name).second) continue;
      StTensor t;
      t.name = name;
      t.dtype = static_cast<StDType>(uniform(0, 12));
      int64_t numel = 1;
      for (int r = uniform(0, 4); r > 0; --r) {
        t.shape.push_back(uniform(0, 10) == 0 ? 0 : uniform(1, 8));
        numel *= t.shape.back();
      }
      t.data.resize(static_cast<size_t>(numel) * st_dtype_size(t.dtype));
      for (auto& b : t.data) b = static_cast<uint8_t>(uniform(0, 255));
      f.tensors.push_back(std::move(t));
    }
    for (int i = uniform(0, 3); i > 0; --i) f.metadata[random_string(5)] = random_string(8);

    Bytes bytes = st_serialize(f);
    StFile g = st_parse(bytes, "random");
    SCOPED_TRACE("iteration " + std::to_string(iter));
    expect_same_tensors(f, g);
    ASSERT_EQ(st_serialize(g), bytes);  // deterministic writer, independent of input order

    // Every tensor is aligned to its itemsize in the file.
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    ASSERT_EQ(n % 8, 0u);
    auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      auto dt = st_dtype_from_name(entry["dtype"].get<std::string>());
      ASSERT_TRUE(dt.has_value());
      EXPECT_EQ(entry["data_offsets"][0].get<uint64_t>() % st_dtype_size(*dt), 0u) << name;
    }
  }
}

// ---- robustness --------------------------------------------------------------------------------

TEST(SafetensorsRobustness, TruncationAtEveryOffsetThrows) {
  Bytes full = st_serialize(small_file());
  ASSERT_NO_THROW(st_parse(full, "full"));
  for (size_t cut = 0; cut < full.size(); ++cut) {
    Bytes part(full.begin(), full.begin() + static_cast<long>(cut));
    EXPECT_THROW(st_parse(part, "cut"), ember::FormatError) << "cut at " << cut;
  }
}

TEST(SafetensorsRobustness, BitFlipsInHeaderNeverCrash) {
  Bytes full = st_serialize(small_file());
  uint64_t n = 0;
  std::memcpy(&n, full.data(), 8);
  int parsed = 0, rejected = 0;
  for (size_t i = 0; i < 8 + n; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes flipped = full;
      flipped[i] ^= static_cast<uint8_t>(1u << bit);
      try {
        StFile f = st_parse(flipped, "flip");
        ++parsed;
        // Whatever parsed must serialize and parse back to the same content.
        expect_same_tensors(f, st_parse(st_serialize(f), "reflip"));
      } catch (const ember::FormatError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(parsed, 0);  // e.g. flips inside the padding or metadata text stay valid
}

// ---- files on disk -------------------------------------------------------------------------------

TEST(SafetensorsFile, SaveLoadRoundTrip) {
  TempDir dir;
  fs::path p = dir.path / "model.safetensors";
  st_save(p, small_file());
  expect_same_tensors(small_file(), st_load(p));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"model.safetensors"});
}

TEST(SafetensorsFile, LoadErrorsNameThePath) {
  TempDir dir;
  fs::path missing = dir.path / "nope.safetensors";
  try {
    st_load(missing);
    ADD_FAILURE();
  } catch (const ember::IOError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(st_load(dir.path), ember::IOError);
  fs::path bad = dir.path / "bad.safetensors";
  write_text(bad, "garbage");
  try {
    st_load(bad);
    ADD_FAILURE();
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.kind(), StErrorKind::HeaderTooSmall);
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

// ---- independent writers ---------------------------------------------------------------------

namespace {
// The same content the Python golden script writes, built through our API.
StFile golden_file() {
  StFile f;
  f.tensors.push_back(make_tensor("a.weight", StDType::F32, {2, 3}, to_bytes<float>({-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f})));
  f.tensors.push_back(make_tensor("b.index", StDType::I64, {4}, to_bytes<int64_t>({-1, 0, 1, int64_t{1} << 40})));
  f.tensors.push_back(make_tensor("c.bytes", StDType::U8, {3}, {1, 2, 3}));
  f.tensors.push_back(make_tensor("d.half", StDType::F16, {2}, to_bytes<uint16_t>({0x3C00, 0xC000})));
  f.tensors.push_back(make_tensor("e.scalar", StDType::F64, {}, to_bytes<double>({0.1})));
  f.tensors.push_back(make_tensor("f.empty", StDType::F32, {0, 3}, {}));
  f.tensors.push_back(make_tensor("g.mask", StDType::BOOL, {3}, {1, 0, 1}));
  f.tensors.push_back(make_tensor("h.short", StDType::I16, {2}, to_bytes<int16_t>({-300, 300})));
  f.metadata = {{"format", "pt"}, {"note", "golden"}};
  return f;
}

// Independent writer: struct.pack('<Q') + json.dumps(sort_keys) + numpy tobytes(), with the
// ordering rule (itemsize descending, then name) and space padding written out in Python.
constexpr const char* kGoldenScript = R"PY(
import json, struct, sys
import numpy as np
tensors = {
    "a.weight": ("F32", np.array([[-1, -0.5, 0], [0.5, 1, 1.5]], dtype="<f4")),
    "b.index": ("I64", np.array([-1, 0, 1, 1 << 40], dtype="<i8")),
    "c.bytes": ("U8", np.array([1, 2, 3], dtype=np.uint8)),
    "d.half": ("F16", np.array([1.0, -2.0], dtype="<f2")),
    "e.scalar": ("F64", np.array(0.1, dtype="<f8")),
    "f.empty": ("F32", np.zeros((0, 3), dtype="<f4")),
    "g.mask": ("BOOL", np.array([True, False, True])),
    "h.short": ("I16", np.array([-300, 300], dtype="<i2")),
}
rank = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"]
order = sorted(tensors, key=lambda k: (-rank.index(tensors[k][0]), k))
header, data, off = {"__metadata__": {"format": "pt", "note": "golden"}}, b"", 0
for name in order:
    dt, arr = tensors[name]
    raw = arr.tobytes()
    header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
    data += raw
    off += len(raw)
text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
)PY";
}  // namespace

TEST(SafetensorsInterop, ByteIdenticalToIndependentPythonWriter) {
  if (!python_has("numpy")) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  TempDir dir;
  write_text(dir.path / "golden.py", kGoldenScript);
  fs::path golden = dir.path / "golden.safetensors";
  std::string cmd = "/usr/bin/python3 " + (dir.path / "golden.py").string() + " " + golden.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Bytes theirs = read_all(golden);
  Bytes ours = st_serialize(golden_file());
  EXPECT_EQ(ours, theirs) << "ours:   " << std::string(ours.begin() + 8, ours.begin() + 200)
                          << "\ntheirs: " << std::string(theirs.begin() + 8, theirs.begin() + 200);
  expect_same_tensors(golden_file(), st_parse(theirs, golden.string()));
}

TEST(SafetensorsInterop, PythonSafetensorsLoadsOurFile) {
  if (!python_has("safetensors")) GTEST_SKIP() << "Python package 'safetensors' not importable by /usr/bin/python3";
  TempDir dir;
  fs::path ours = dir.path / "ours.safetensors";
  st_save(ours, golden_file());
  // safetensors.deserialize needs no numpy; print a canonical listing and compare it with ours.
  write_text(dir.path / "read.py", R"PY(
import sys, safetensors
with open(sys.argv[1], "rb") as f:
    items = safetensors.deserialize(f.read())
with open(sys.argv[2], "w") as out:
    for name, t in sorted(items):
        out.write("%s %s %s %s\n" % (name, t["dtype"], ",".join(map(str, t["shape"])), bytes(t["data"]).hex()))
)PY");
  fs::path listing = dir.path / "listing.txt";
  std::string cmd = "/usr/bin/python3 " + (dir.path / "read.py").string() + " " + ours.string() + " " + listing.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string expected;
  for (const auto& t : st_parse(read_all(ours), "ours").tensors) {
    std::string shape, hex;
    for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
    char buf[3];
    for (uint8_t b : t.data) {
      std::snprintf(buf, sizeof buf, "%02x", b);
      hex += buf;
    }
    expected += t.name + " " + std::string(st_dtype_name(t.dtype)) + " " + shape + " " + hex + "\n";
  }
  Bytes got = read_all(listing);
  EXPECT_EQ(std::string(got.begin(), got.end()), expected);
}

TEST(SafetensorsInterop, WeReadPythonSafetensorsFiles) {
  if (!python_has("safetensors.numpy")) GTEST_SKIP() << "Python 'safetensors' with numpy not importable by /usr/bin/python3";
  TempDir dir;
  fs::path theirs = dir.path / "theirs.safetensors";
  write_text(dir.path / "write.py", R"PY(
import sys, numpy as np
from safetensors.numpy import save_file
save_file({"a.weight": np.array([[-1, -0.5, 0], [0.5, 1, 1.5]], dtype=np.float32),
           "c.bytes": np.array([1, 2, 3], dtype=np.uint8),
           "e.scalar": np.array(0.1, dtype=np.float64),
           "f.empty": np.zeros((0, 3), dtype=np.float32)},
          sys.argv[1], metadata={"format": "pt"})
)PY");
  std::string cmd = "/usr/bin/python3 " + (dir.path / "write.py").string() + " " + theirs.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  StFile f = st_load(theirs);
  StFile want = golden_file();
  want.tensors.erase(std::remove_if(want.tensors.begin(), want.tensors.end(), [](const StTensor& t) {
                       return t.name != "a.weight" && t.name != "c.bytes" && t.name != "e.scalar" && t.name != "f.empty";
                     }), want.tensors.end());
  want.metadata = {{"format", "pt"}};
  expect_same_tensors(want, f);
  // Same data layout as the package: only the header's key order differs.
  Bytes a = read_all(theirs), b = st_serialize(f);
  uint64_t na = 0, nb = 0;
  std::memcpy(&na, a.data(), 8);
  std::memcpy(&nb, b.data(), 8);
  EXPECT_EQ(Bytes(a.begin() + 8 + static_cast<long>(na), a.end()), Bytes(b.begin() + 8 + static_cast<long>(nb), b.end()));
}

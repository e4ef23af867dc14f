// TensorBoard event writer (see tensorboard.h). The protobuf encoding is written by hand: an Event
// with a scalar needs four field kinds (double, varint, length-delimited, float) in ~40 lines,
// which is less than a protobuf dependency and generated code for TensorFlow's event.proto.
#include "ember/io/tensorboard.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "ember/core/error.h"

namespace ember::io {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc32cTable = make_crc32c_table();

// ---- protobuf wire format: tag = (field << 3) | wire type ----
void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}
template <class T>
void put_fixed(std::vector<uint8_t>& out, T value) {  // little-endian, as protobuf requires
  uint8_t b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
  for (uint8_t byte : b) out.push_back(byte);  // (a range insert of 8 bytes trips GCC 12's -Wstringop-overflow)
}
void put_double(std::vector<uint8_t>& out, int field, double v) {
  put_varint(out, uint64_t(field) << 3 | 1);
  put_fixed(out, v);
}
void put_float(std::vector<uint8_t>& out, int field, float v) {
  put_varint(out, uint64_t(field) << 3 | 5);
  put_fixed(out, v);
}
void put_int64(std::vector<uint8_t>& out, int field, int64_t v) {
  put_varint(out, uint64_t(field) << 3 | 0);
  put_varint(out, uint64_t(v));  // int64: two's complement, 10 bytes when negative
}
void put_bytes(std::vector<uint8_t>& out, int field, std::span<const uint8_t> bytes) {
  put_varint(out, uint64_t(field) << 3 | 2);
  put_varint(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}
std::span<const uint8_t> as_bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary), session_log = 7 (SessionLog). Summary: value = 1 (repeated Value).
// Value: tag = 1 (string), simple_value = 2 (float). SessionLog: status = 1 (enum, START = 1).
std::vector<uint8_t> event_header(double wall_time, int64_t step) {
  std::vector<uint8_t> e;
  put_double(e, 1, wall_time);
  if (step != 0) put_int64(e, 2, step);
  return e;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string h = buf;
  for (char& ch : h)
    if (ch == '/') ch = '_';
  return h;
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> data) {
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : data) c = kCrc32cTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::span<const uint8_t> data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::vector<uint8_t> tfrecord_frame(std::span<const uint8_t> data) {
  std::vector<uint8_t> out;
  out.reserve(data.size() + 16);
  put_fixed(out, uint64_t(data.size()));
  put_fixed(out, masked_crc32c(std::span(out.data(), 8)));
  out.insert(out.end(), data.begin(), data.end());
  put_fixed(out, masked_crc32c(data));
  return out;
}

std::vector<uint8_t> event_file_version(double wall_time) {
  std::vector<uint8_t> e = event_header(wall_time, 0);
  put_bytes(e, 3, as_bytes("brain.Event:2"));
  return e;
}

std::vector<uint8_t> event_scalar(std::string_view tag, int64_t step, float value, double wall_time) {
  std::vector<uint8_t> v;
  put_bytes(v, 1, as_bytes(tag));
  put_float(v, 2, value);
  std::vector<uint8_t> summary;
  put_bytes(summary, 1, v);
  std::vector<uint8_t> e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::vector<uint8_t> event_session_start(int64_t step, double wall_time) {
  std::vector<uint8_t> log;  // SessionLog: status = 1 (enum), START = 1
  put_int64(log, 1, 1);
  std::vector<uint8_t> e = event_header(wall_time, step);
  put_bytes(e, 7, log);  // Event.session_log = 7 (6 is the deprecated log_message)
  return e;
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  const double now = unix_time_now();
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}", int64_t(now), host_name(), getpid());
  f_ = std::fopen(path_.c_str(), "wb");
  if (!f_)
    throw IOError(fmt::format("cannot create TensorBoard event file '{}': {}", path_.string(), std::strerror(errno)),
                  "check that the run directory is writable");
  write_record(event_file_version(now));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_) std::fclose(f_);
}

void TensorBoardWriter::write_record(std::span<const uint8_t> event) {
  const std::vector<uint8_t> rec = tfrecord_frame(event);
  if (std::fwrite(rec.data(), 1, rec.size(), f_) != rec.size())
    throw IOError(fmt::format("cannot write TensorBoard event file '{}': {}", path_.string(), std::strerror(errno)));
}

void TensorBoardWriter::write_scalar(std::string_view tag, int64_t step, double value, double wall_time) {
  write_record(event_scalar(tag, step, float(value), wall_time));
}

void TensorBoardWriter::write_restart(int64_t step, double wall_time) {
  write_record(event_session_start(step, wall_time));
}

void TensorBoardWriter::flush() {
  if (std::fflush(f_) != 0)
    throw IOError(fmt::format("cannot write TensorBoard event file '{}': {}", path_.string(), std::strerror(errno)));
}

}  // namespace ember::io

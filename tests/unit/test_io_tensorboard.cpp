// TensorBoard event files: CRC-32C against the published check values, TFRecord framing, the
// hand-written protobuf bytes of an Event, and metrics.jsonl records that carry a wall-clock time
// and reach the event file under their TensorBoard tags.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ember/io/tensorboard.h"
#include "ember/train/metrics.h"
#include "support/files.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {
std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Splits a TFRecord file into its records, checking both CRCs of each.
std::vector<std::vector<uint8_t>> read_records(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::vector<uint8_t>> out;
  size_t i = 0;
  while (i < b.size()) {
    EXPECT_LE(i + 12, b.size());
    const uint64_t n = le64(&b[i]);
    EXPECT_EQ(le32(&b[i + 8]), io::masked_crc32c(std::span(&b[i], 8)));
    std::vector<uint8_t> data(b.begin() + long(i + 12), b.begin() + long(i + 12 + n));
    EXPECT_EQ(le32(&b[i + 12 + n]), io::masked_crc32c(data));
    out.push_back(std::move(data));
    i += 16 + n;
  }
  return out;
}
}  // namespace

TEST(TensorBoard, Crc32cMatchesKnownValues) {
  // RFC 3720 (iSCSI) B.4 test vectors and the "123456789" check value of CRC-32C.
  EXPECT_EQ(io::crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(io::crc32c(std::vector<uint8_t>(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(io::crc32c(std::vector<uint8_t>(32, 0xFF)), 0x62A8AB43u);
  std::vector<uint8_t> inc(32);
  for (int i = 0; i < 32; ++i) inc[size_t(i)] = uint8_t(i);
  EXPECT_EQ(io::crc32c(inc), 0x46DD794Eu);
  EXPECT_EQ(io::crc32c({}), 0u);
  // TFRecord's mask: rotate right by 15, add 0xa282ead8.
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(io::masked_crc32c(bytes_of("123456789")), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TensorBoard, FramesAndEncodesEvents) {
  const std::vector<uint8_t> data = bytes_of("abc");
  const std::vector<uint8_t> rec = io::tfrecord_frame(data);
  ASSERT_EQ(rec.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(le64(rec.data()), 3u);
  EXPECT_EQ(le32(&rec[8]), io::masked_crc32c(std::span(rec.data(), 8)));
  EXPECT_EQ(std::string(rec.begin() + 12, rec.begin() + 15), "abc");
  EXPECT_EQ(le32(&rec[15]), io::masked_crc32c(data));

  // Event{wall_time: 1.5, file_version: "brain.Event:2"}
  std::vector<uint8_t> want = {0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x1A, 13};
  for (char ch : std::string("brain.Event:2")) want.push_back(uint8_t(ch));
  EXPECT_EQ(io::event_file_version(1.5), want);
  // Event{wall_time: 2.0, step: 300, summary: {value: [{tag: "lr", simple_value: 0.5}]}}
  want = {0x09, 0, 0, 0, 0, 0, 0, 0x00, 0x40, 0x10, 0xAC, 0x02, 0x2A, 11, 0x0A, 9, 0x0A, 2, 'l', 'r', 0x15, 0, 0, 0, 0x3F};
  EXPECT_EQ(io::event_scalar("lr", 300, 0.5f, 2.0), want);
  // Event{wall_time: 2.0, step: 5, session_log: {status: START}}
  want = {0x09, 0, 0, 0, 0, 0, 0, 0x00, 0x40, 0x10, 5, 0x3A, 2, 0x08, 1};
  EXPECT_EQ(io::event_session_start(5, 2.0), want);
}

TEST(TensorBoard, MetricsWriterStampsTimeAndWritesTaggedScalars) {
  test::TempDir d;
  const double before = io::unix_time_now();
  {
    train::MetricsWriter w(d.path() / "metrics.jsonl", /*tensorboard=*/true);
    w.write({"step", 1, 10, {{"loss", 0.5}, {"acc", 0.75}, {"lr", 0.01}, {"samples_per_s", 100.0}}});
    w.write({"resume", 1, 10, {{"batch_in_epoch", 3.0}}});  // not plotted
    w.write({"epoch", 1, 20, {{"test_acc", 0.9}, {"val_acc", 0.8}, {"data_wait", 0.1}}});
  }
  auto recs = train::read_metrics(d.path() / "metrics.jsonl");
  ASSERT_EQ(recs.size(), 3u);
  for (const auto& r : recs) {
    EXPECT_GE(r.time, before - 1);
    EXPECT_LE(r.time, io::unix_time_now() + 1);
    EXPECT_TRUE(std::none_of(r.values.begin(), r.values.end(), [](auto& kv) { return kv.first == "time"; }));
  }
  std::vector<fs::path> events;
  for (const auto& e : fs::directory_iterator(d.path()))
    if (e.path().filename().string().starts_with("events.out.tfevents.")) events.push_back(e.path());
  ASSERT_EQ(events.size(), 1u);
  auto records = read_records(events[0]);
  ASSERT_EQ(records.size(), 1u + 4 + 1 + 3);  // file_version, 4 step fields, the restart, 3 epoch fields
  EXPECT_EQ(records[5], io::event_session_start(11, recs[1].time));  // resume at step 10
  auto has = [&](const std::string& tag) {
    for (const auto& r : records)
      if (std::search(r.begin(), r.end(), tag.begin(), tag.end()) != r.end()) return true;
    return false;
  };
  for (const char* tag : {"brain.Event:2", "train/loss", "train/acc", "samples_per_s", "test/acc", "val/acc", "data_wait"})
    EXPECT_TRUE(has(tag)) << tag;
  EXPECT_FALSE(has("batch_in_epoch"));
  EXPECT_EQ(train::tensorboard_tag("epoch", "train_loss"), "epoch/train_loss");
  EXPECT_EQ(train::tensorboard_tag("test", "accuracy"), "test/accuracy");
  EXPECT_EQ(train::tensorboard_tag("resume", "batch_in_epoch"), "");
}

// TensorBoard event files, written without TensorFlow or protobuf: `tensorboard --logdir runs`
// shows ember's scalars (loss, accuracy, learning rate, throughput) next to other tools' runs.
//
// Format: a TFRecord file named events.out.tfevents.<unix time>.<host>.<pid> (TensorBoard reads
// every file whose name contains "tfevents"; the pid keeps two writers started in one second apart).
// Each record: uint64 length (little-endian), masked CRC32C of those 8 bytes, the data, masked
// CRC32C of the data. The data is a serialized tensorflow.Event protobuf: the first has
// file_version "brain.Event:2", each later one a Summary with one {tag, simple_value}.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses it.
uint32_t crc32c(std::span<const uint8_t> data);
// TFRecord's masking: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::span<const uint8_t> data);
// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::vector<uint8_t> tfrecord_frame(std::span<const uint8_t> data);
// Serialized tensorflow.Event messages.
std::vector<uint8_t> event_file_version(double wall_time);  // file_version = "brain.Event:2"
std::vector<uint8_t> event_scalar(std::string_view tag, int64_t step, float value, double wall_time);
// Event{step, session_log: {status: START}}: TensorBoard drops the points at `step` and later that
// earlier files of the run hold (a resumed run logs those steps again).
std::vector<uint8_t> event_session_start(int64_t step, double wall_time);

// Not thread-safe: one writer per file, used from one thread (the fit loop).
class TensorBoardWriter {
 public:
  // Creates a new event file in `dir` (which must exist) and writes the file_version record.
  // Throws IOError naming the path.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // wall_time: unix seconds (fractions allowed). Buffered until flush(). Non-finite values are
  // written as they are (TensorBoard shows NaN/Inf points).
  void write_scalar(std::string_view tag, int64_t step, double value, double wall_time);
  // A resumed run restarts here: points with step >= `step` from before are orphans (see above).
  void write_restart(int64_t step, double wall_time);
  void flush();  // IOError when the data cannot be written
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(std::span<const uint8_t> event);
  std::FILE* f_ = nullptr;
  std::filesystem::path path_;
};

// Unix time in seconds, with sub-second precision.
double unix_time_now();

}  // namespace ember::io

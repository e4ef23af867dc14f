// Dataset reader tests: valid IDX/CIFAR round trips, every bad-input case the readers promise to
// name (type of error plus a piece of the message), gzip corner cases, SHA-256 vectors, and the
// real Fashion-MNIST files when the Debian package is installed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"
#include "support/files.h"
#include "support/child_process.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using namespace ember::data;

namespace {

// IDX bytes: 00 00 type ndim, big-endian dims, payload.
Bytes make_idx(const std::vector<uint32_t>& dims, const Bytes& payload, uint8_t type = 0x08) {
  Bytes b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes iota_bytes(size_t n, uint8_t start = 0) {
  Bytes b(n);
  std::iota(b.begin(), b.end(), start);
  return b;
}

// One gzip member at zlib's best compression (the corrupt-data tests below count bytes in it).
Bytes gzip_bytes(const Bytes& in) { return ember::test::gzip_bytes(in, 9); }

// Runs f, expects an exception of exactly type E (or derived) whose what() contains `piece`;
// returns the caught error so hints can be checked.
template <class E, class F>
E expect_error(F&& f, const std::string& piece) {
  try {
    f();
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)
        << "message: " << e.what() << "\nexpected piece: " << piece;
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type, message: " << e.what();
    return E("");
  }
  ADD_FAILURE() << "no exception thrown; expected one containing: " << piece;
  return E("");
}

bool contains(const std::string& s, const std::string& piece) { return s.find(piece) != std::string::npos; }

class DataReaders : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / ("ember_data_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, const Bytes& bytes) {
    fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(f.good());
    return p;
  }
  // A tiny valid pair: 3 images of 2 x 2, labels 0 1 2.
  std::pair<fs::path, fs::path> write_pair(const Bytes& labels = {0, 1, 2}, uint32_t n_images = 3) {
    return {write("imgs-idx3-ubyte", make_idx({n_images, 2, 2}, iota_bytes(n_images * 4))),
            write("labs-idx1-ubyte", make_idx({static_cast<uint32_t>(labels.size())}, labels))};
  }
  fs::path dir_;
};

// ---- valid IDX --------------------------------------------------------------------------------

TEST_F(DataReaders, IdxRoundTripPlain) {
  const Bytes payload = iota_bytes(2 * 3 * 4, 7);
  IdxArray a = read_idx(write("x-idx3-ubyte", make_idx({2, 3, 4}, payload)));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.data, payload);
}

TEST_F(DataReaders, IdxRoundTripGzip) {
  const Bytes payload = iota_bytes(5 * 7, 200);
  const Bytes file = gzip_bytes(make_idx({5, 7}, payload));
  ASSERT_EQ(file[0], 0x1f);
  IdxArray a = read_idx(write("x-idx2-ubyte.gz", file));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(a.data, payload);
}

TEST_F(DataReaders, GzipDetectedByContentNotName) {
  // A gzip file without .gz, and a plain file named .gz: both read correctly.
  const Bytes idx = make_idx({4}, {1, 2, 3, 4});
  EXPECT_EQ(read_idx(write("labels-no-suffix", gzip_bytes(idx))).data, (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(read_idx(write("plain-but-named.gz", idx)).data, (Bytes{1, 2, 3, 4}));
  EXPECT_EQ(read_file_bytes(write("raw.gz", gzip_bytes(idx)), /*gunzip_if_gzip=*/false), gzip_bytes(idx));
}

TEST_F(DataReaders, GzipConcatenatedMembers) {
  const Bytes idx = make_idx({3, 10}, iota_bytes(30));
  Bytes two = gzip_bytes(Bytes(idx.begin(), idx.begin() + 11));
  const Bytes second = gzip_bytes(Bytes(idx.begin() + 11, idx.end()));
  two.insert(two.end(), second.begin(), second.end());
  IdxArray a = read_idx(write("two-members.gz", two));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(a.data, iota_bytes(30));
}

TEST_F(DataReaders, IdxZeroItemsIsValidIdx) {
  IdxArray a = parse_idx(make_idx({0, 28, 28}, {}), "empty-set");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{0, 28, 28}));
  EXPECT_TRUE(a.data.empty());
}

TEST_F(DataReaders, LoadIdxPair) {
  const auto pair_imgs = write_pair();
  const fs::path& imgs = pair_imgs.first;
  const fs::path& labs = pair_imgs.second;
  LabeledImages d = load_idx_pair(imgs, labs, 3);
  EXPECT_EQ(d.n, 3);
  EXPECT_EQ(d.c, 1);
  EXPECT_EQ(d.h, 2);
  EXPECT_EQ(d.w, 2);
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(d.images, iota_bytes(12));
}

// ---- bad IDX headers ----------------------------------------------------------------------------

TEST_F(DataReaders, LabelsFileGivenAsImages) {
  const auto pair_imgs = write_pair();
  const fs::path& imgs = pair_imgs.first;
  const fs::path& labs = pair_imgs.second;
  auto e = expect_error<ember::DataError>([&] { load_idx_pair(labs, imgs); },
                                          "not an IDX image file: magic number 0x00000801 (labels, 1 dimension) "
                                          "where 0x00000803 (images, 3 dimensions) was expected");
  EXPECT_TRUE(contains(e.what(), "labs-idx1-ubyte"));
  EXPECT_TRUE(contains(e.hint(), "swap"));
}

TEST_F(DataReaders, ImagesFileGivenAsLabels) {
  const fs::path imgs = write_pair().first;
  auto e = expect_error<ember::DataError>([&] { load_idx_pair(imgs, imgs); },
                                          "not an IDX label file: magic number 0x00000803 (images, 3 dimensions)");
  EXPECT_TRUE(contains(e.hint(), "swap"));
}

TEST_F(DataReaders, NotAnIdxFile) {
  auto e = expect_error<ember::DataError>([&] { read_idx(write("page.html", {'<', 'h', 't', 'm', 'l', '>'})); },
                                          "not an IDX file: magic number 0x3c68746d");
  EXPECT_TRUE(contains(e.what(), "page.html"));
  EXPECT_TRUE(contains(e.hint(), "HTML"));
  // Gzip bytes handed to the pure parser: the hint says to use read_idx.
  auto g = expect_error<ember::DataError>([&] { parse_idx(gzip_bytes(make_idx({1}, {0})), "blob"); },
                                          "blob: not an IDX file");
  EXPECT_TRUE(contains(g.hint(), "gzip"));
}

TEST_F(DataReaders, UnsupportedTypeByte) {
  expect_error<ember::DataError>([&] { read_idx(write("f32-idx1", make_idx({1}, {0, 0, 0, 0}, 0x0D))); },
                                 "unsupported IDX element type 0x0d (float32) at byte offset 2");
  expect_error<ember::DataError>([&] { parse_idx(make_idx({1}, {0}, 0x42), "weird"); },
                                 "element type 0x42 (not an IDX type)");
}

TEST_F(DataReaders, NdimZeroOrAboveFour) {
  expect_error<ember::DataError>([&] { read_idx(write("ndim0", Bytes{0, 0, 8, 0})); },
                                 "has 0 dimensions at byte offset 3; expected 1 to 4");
  expect_error<ember::DataError>([&] { parse_idx(make_idx({1, 1, 1, 1, 1}, {9}), "ndim5"); },
                                 "ndim5: IDX header (magic 0x00000805) has 5 dimensions");
  // ndim 4 is accepted.
  EXPECT_EQ(parse_idx(make_idx({1, 1, 1, 2}, {9, 8}), "ndim4").dims.size(), 4u);
}

TEST_F(DataReaders, TruncatedHeader) {
  Bytes b = make_idx({2, 2, 2}, {});
  b.resize(9);
  expect_error<ember::DataError>([&] { parse_idx(b, "short"); },
                                 "truncated IDX header: 9 bytes, but a header with 3 dimensions needs 16 bytes");
  expect_error<ember::DataError>([&] { parse_idx(Bytes{0, 0}, "tiny"); }, "file too short: 2 bytes");
}

TEST_F(DataReaders, PayloadOneByteShort) {
  Bytes b = make_idx({2, 3, 3}, iota_bytes(17));
  auto e = expect_error<ember::DataError>(
      [&] { read_idx(write("short-idx3", b)); },
      "IDX dims 2 x 3 x 3 need 18 data bytes after the 16-byte header (34 bytes in all), but the file has 33 bytes: "
      "1 byte short: the data ends at byte offset 33");
  EXPECT_TRUE(contains(e.hint(), "download it again"));
}

TEST_F(DataReaders, PayloadOneByteExtra) {
  expect_error<ember::DataError>([&] { read_idx(write("long-idx3", make_idx({2, 3, 3}, iota_bytes(19)))); },
                                 "but the file has 35 bytes: 1 byte extra after the data, starting at byte offset 34");
}

TEST_F(DataReaders, ShortPayloadInGzipNamesDecompressedOffsets) {
  expect_error<ember::DataError>([&] { read_idx(write("s.gz", gzip_bytes(make_idx({4}, {1, 2, 3})))); },
                                 "s.gz (decompressed): IDX dims 4 need 4 data bytes");
}

TEST_F(DataReaders, AbsurdDimsRefusedBeforeAllocating) {
  // 0xFFFFFFFF images of 0xFFFFFFFF x 0xFFFFFFFF: the product overflows 64 bits.
  expect_error<ember::DataError>(
      [&] { parse_idx(make_idx({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, iota_bytes(4)), "huge"); },
      "IDX dims 4294967295 x 4294967295 x 4294967295 (header bytes 4..15) overflow");
  // Fits in 64 bits but the file does not hold it: refused by comparison, nothing allocated.
  expect_error<ember::DataError>([&] { parse_idx(make_idx({0xFFFFFFFF, 0xFFFFFFFF}, iota_bytes(4)), "big"); },
                                 "need 18446744065119617025 data bytes");
  expect_error<ember::DataError>([&] { parse_idx(make_idx({0xFFFFFFFF}, {}), "one"); },
                                 "need 4294967295 data bytes after the 8-byte header");
}

TEST_F(DataReaders, EveryTruncationFailsCleanly) {
  const Bytes idx = make_idx({3, 5}, iota_bytes(15));
  const Bytes gz = gzip_bytes(idx);
  for (size_t cut = 0; cut < idx.size(); ++cut) {
    EXPECT_THROW(parse_idx(std::span(idx).first(cut), "cut"), ember::DataError) << "cut at " << cut;
  }
  for (size_t cut = 2; cut < gz.size(); ++cut) {
    EXPECT_THROW(internal::gunzip(std::span(gz).first(cut), "cut.gz"), ember::DataError) << "cut at " << cut;
  }
}

// ---- filesystem -------------------------------------------------------------------------------

TEST_F(DataReaders, EmptyFile) {
  auto e = expect_error<ember::DataError>([&] { read_idx(write("empty-idx3-ubyte", {})); }, "empty file (0 bytes)");
  EXPECT_TRUE(contains(e.what(), "empty-idx3-ubyte"));
  EXPECT_TRUE(read_file_bytes(dir_ / "empty-idx3-ubyte").empty());
}

TEST_F(DataReaders, DirectoryInsteadOfFile) {
  fs::create_directories(dir_ / "sub");
  auto e = expect_error<ember::IOError>([&] { read_idx(dir_ / "sub"); },
                                        "is a directory, not a regular file: expected a dataset file");
  EXPECT_TRUE(contains(e.what(), (dir_ / "sub").string()));
}

TEST_F(DataReaders, MissingFile) {
  auto e = expect_error<ember::IOError>([&] { read_idx(dir_ / "nope-idx3-ubyte.gz"); },
                                        "nope-idx3-ubyte.gz: cannot open for reading: No such file or directory");
  EXPECT_FALSE(e.hint().empty());
  auto f = expect_error<ember::IOError>([&] { read_file_bytes("/usr/share/datasets/fashion-mnist/missing.gz"); },
                                        "missing.gz");
  EXPECT_TRUE(contains(f.hint(), "dataset-fashion-mnist"));
}

TEST_F(DataReaders, UnreadableFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: file permissions are bypassed, chmod 000 cannot fail a read";
  fs::path p = write("locked-idx1-ubyte", make_idx({1}, {0}));
  fs::permissions(p, fs::perms::none);
  auto e = expect_error<ember::IOError>([&] { read_idx(p); }, "cannot open for reading: Permission denied");
  EXPECT_TRUE(contains(e.hint(), "permissions"));
}

// ---- gzip -------------------------------------------------------------------------------------

TEST_F(DataReaders, TruncatedGzip) {
  Bytes gz = gzip_bytes(make_idx({64}, iota_bytes(64)));
  Bytes half(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2));
  auto e = expect_error<ember::DataError>([&] { read_idx(write("half.gz", half)); },
                                          "half.gz: truncated gzip data: the file ends at byte");
  EXPECT_TRUE(contains(e.hint(), "download it again"));
  gz.pop_back();  // only the trailer's last byte missing
  expect_error<ember::DataError>([&] { read_idx(write("nearly.gz", gz)); }, "truncated gzip data");
}

TEST_F(DataReaders, CorruptGzip) {
  const Bytes gz = gzip_bytes(make_idx({200}, iota_bytes(200)));
  Bytes crc = gz;
  crc[crc.size() - 8] ^= 0x01;  // CRC-32 field of the trailer
  expect_error<ember::DataError>([&] { read_idx(write("crc.gz", crc)); },
                                 "crc.gz: corrupt gzip data in the member that starts at byte 0, detected near "
                                 "compressed byte offset");
  expect_error<ember::DataError>([&] { read_idx(write("crc2.gz", crc)); }, "incorrect data check (CRC-32");
  Bytes len = gz;
  len[len.size() - 1] ^= 0x01;  // ISIZE field
  expect_error<ember::DataError>([&] { read_idx(write("len.gz", len)); }, "incorrect length check");
  Bytes header = gz;
  header[2] = 0x07;  // compression method must be 8 (deflate)
  expect_error<ember::DataError>([&] { read_idx(write("method.gz", header)); }, "corrupt gzip data");
  // A flipped byte inside the deflate data: corrupt or (rarely) truncated, but always a DataError.
  for (size_t i = 10; i < gz.size() - 8; ++i) {
    Bytes flipped = gz;
    flipped[i] ^= 0x55;
    EXPECT_THROW(internal::gunzip(flipped, "flip.gz"), ember::DataError) << "flipped byte " << i;
  }
}

TEST_F(DataReaders, GzipTrailingGarbage) {
  Bytes gz = gzip_bytes(make_idx({2}, {1, 2}));
  const size_t end = gz.size();
  gz.push_back(0);
  gz.push_back(0);
  expect_error<ember::DataError>([&] { read_idx(write("trail.gz", gz)); },
                                 "2 trailing bytes at byte offset " + std::to_string(end) +
                                     " after the gzip member that starts at byte 0 are not another gzip member "
                                     "(expected 1f 8b, found 00 00)");
}

TEST_F(DataReaders, GzipOutputCap) {
  const Bytes zeros(10000, 0);
  const Bytes gz = gzip_bytes(zeros);
  expect_error<ember::DataError>([&] { internal::gunzip(gz, "bomb.gz", 1000); },
                                 "bomb.gz: decompressed data exceeds the limit of 1000 bytes");
  // Exactly at the limit is fine; one byte under is not.
  EXPECT_EQ(internal::gunzip(gz, "exact.gz", 10000), zeros);
  EXPECT_THROW(internal::gunzip(gz, "under.gz", 9999), ember::DataError);
  // A forged ISIZE (4 GiB - 1) must not be trusted for allocation; the CRC still catches it.
  Bytes forged = gz;
  for (size_t i = forged.size() - 4; i < forged.size(); ++i) forged[i] = 0xff;
  expect_error<ember::DataError>([&] { internal::gunzip(forged, "forged.gz"); }, "incorrect length check");
}

// A gzip member of stored (uncompressed) deflate blocks: every byte of `in` appears verbatim in the
// output, so the bytes at the end of a truncated copy can be set at will and still be valid data.
Bytes gzip_stored(const Bytes& in) { return ember::test::gzip_bytes(in, 0); }  // level 0: stored blocks

// A partial download whose last 4 bytes, read as the gzip trailer's ISIZE, claim 3 000 000 000
// bytes. Sizing the output from ISIZE (at most 1032x the 4 MiB input) allocated and zero-filled
// 3 GB before the "truncated gzip" error; the output must grow only with the data that arrives.
TEST_F(DataReaders, TruncatedGzipWithHugeIsizeStaysSmall) {
  const uint32_t n = 60000;  // the header promises 60000 x 28 x 28 = 47 MB; the file holds 4 MiB of it
  Bytes gz = gzip_stored(make_idx({n, 28, 28}, iota_bytes(size_t(n) * 28 * 28)));
  gz.resize(4u << 20);
  const uint32_t isize = 3000000000u;
  for (int i = 0; i < 4; ++i) gz[gz.size() - 4 + i] = uint8_t(isize >> (8 * i));
  const fs::path p = write("partial-idx3-ubyte.gz", gz);
  const auto t0 = std::chrono::steady_clock::now();
  ember::test::ChildResult r = ember::test::run_in_child(
      [&]() -> std::string {
        try {
          read_idx(p);
        } catch (const ember::DataError& e) {
          return e.what();
        }
        return "no DataError";
      },
      60, /*max_extra_bytes=*/8ul << 30);  // room for the old behaviour to show, not to take the machine
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(contains(r.output, "partial-idx3-ubyte.gz: truncated gzip data: the file ends at byte 4194304"))
      << r.output;
  EXPECT_LT(r.rss_growth_kb, 100 * 1024) << "peak RSS grew by " << r.rss_growth_kb / 1024 << " MiB";
  EXPECT_LT(secs, 10);
  std::printf("truncated .gz with ISIZE 3e9: peak RSS +%ld MiB, %.2f s\n", r.rss_growth_kb / 1024, secs);
}

TEST_F(DataReaders, GzipOutputStopsAtWhatTheIdxHeaderPromises) {
  // 4 data bytes promised, a megabyte of zeros delivered (a bomb behind a small header).
  Bytes idx = make_idx({4}, {1, 2, 3, 4});
  idx.resize(idx.size() + (1u << 20), 0);
  expect_error<ember::DataError>([&] { read_idx(write("long.gz", gzip_bytes(idx))); },
                                 "long.gz: the decompressed data goes on past the 12 bytes that the IDX header "
                                 "(dims 4) promises");
  // Exactly the promise, in two gzip members, is fine.
  const Bytes exact = make_idx({2, 3}, iota_bytes(6));
  Bytes two = gzip_bytes(Bytes(exact.begin(), exact.begin() + 5));
  const Bytes second = gzip_bytes(Bytes(exact.begin() + 5, exact.end()));
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(read_idx(write("exact.gz", two)).data, iota_bytes(6));
}

TEST_F(DataReaders, GzipOfSomethingElseStopsAtItsFirstBytes) {
  // A gzipped HTML page (a login page saved as the download): the IDX parser names it from the
  // first decompressed bytes; the rest is never decompressed.
  std::string page = "<html><body>" + std::string(1u << 20, 'x') + "</body></html>";
  const Bytes html(page.begin(), page.end());
  auto e = expect_error<ember::DataError>([&] { read_idx(write("page-idx3-ubyte.gz", gzip_bytes(html))); },
                                          "page-idx3-ubyte.gz (decompressed): not an IDX file");
  EXPECT_TRUE(contains(e.hint(), "HTML"));
  const std::vector<uint8_t> prefix = internal::gunzip(gzip_bytes(html), "page.gz", internal::kMaxGunzipBytes,
                                                       [](std::span<const uint8_t>) {
                                                         return internal::SizePromise{
                                                             internal::SizePromise::Status::not_this_format, 0, {}};
                                                       });
  EXPECT_LT(prefix.size(), html.size());
  EXPECT_EQ(Bytes(html.begin(), html.begin() + long(prefix.size())), prefix);
}

// ---- pairing ----------------------------------------------------------------------------------

TEST_F(DataReaders, ImageAndLabelCountsDiffer) {
  const auto pair_imgs = write_pair({0, 1}, 3);
  const fs::path& imgs = pair_imgs.first;
  const fs::path& labs = pair_imgs.second;
  auto e = expect_error<ember::DataError>([&] { load_idx_pair(imgs, labs); }, "has 3 images but");
  EXPECT_TRUE(contains(e.what(), "has 2 labels"));
}

TEST_F(DataReaders, LabelOutOfRange) {
  const auto pair_imgs = write_pair({1, 2, 10});
  const fs::path& imgs = pair_imgs.first;
  const fs::path& labs = pair_imgs.second;
  auto e = expect_error<ember::DataError>([&] { load_idx_pair(imgs, labs, 10); },
                                          "label 10 at index 2 (byte offset 10) is out of range for 10 classes");
  EXPECT_TRUE(contains(e.what(), "labs-idx1-ubyte"));
  const auto pair_imgs2 = write_pair({255, 0, 0});
  const fs::path& imgs2 = pair_imgs2.first;
  const fs::path& labs2 = pair_imgs2.second;
  expect_error<ember::DataError>([&] { load_idx_pair(imgs2, labs2, 10); }, "label 255 at index 0");
}

TEST_F(DataReaders, ZeroImagesAndBadNumClasses) {
  const auto pair_imgs = write_pair({}, 0);
  const fs::path& imgs = pair_imgs.first;
  const fs::path& labs = pair_imgs.second;
  expect_error<ember::DataError>([&] { load_idx_pair(imgs, labs); }, "contains 0 images");
  const auto pair_imgs2 = write_pair();
  const fs::path& imgs2 = pair_imgs2.first;
  const fs::path& labs2 = pair_imgs2.second;
  expect_error<ember::ValueError>([&] { load_idx_pair(imgs2, labs2, 0); }, "num_classes 0 is out of range");
  expect_error<ember::ValueError>([&] { load_idx_pair(imgs2, labs2, 257); }, "num_classes 257");
}

// ---- CIFAR ------------------------------------------------------------------------------------

Bytes cifar_record(uint8_t label, uint8_t pixel_start, int label_bytes = 1, uint8_t coarse = 0) {
  Bytes r;
  if (label_bytes == 2) r.push_back(coarse);
  r.push_back(label);
  Bytes px = iota_bytes(3072, pixel_start);
  r.insert(r.end(), px.begin(), px.end());
  return r;
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST_F(DataReaders, CifarParseTwoRecords) {
  const Bytes file = concat({cifar_record(3, 0), cifar_record(9, 100)});
  LabeledImages d = parse_cifar(file, "two.bin", 1, 0, 10);
  EXPECT_EQ(d.n, 2);
  EXPECT_EQ(d.c, 3);
  EXPECT_EQ(d.h, 32);
  EXPECT_EQ(d.w, 32);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{3, 9}));
  ASSERT_EQ(d.images.size(), 2u * 3072);
  EXPECT_EQ(d.images[0], 0);
  EXPECT_EQ(d.images[1024], static_cast<uint8_t>(1024));  // first green pixel of image 0
  EXPECT_EQ(d.images[3072], 100);                         // first pixel of image 1
  EXPECT_EQ(d.images[2 * 3072 - 1], static_cast<uint8_t>(100 + 3071));
}

TEST_F(DataReaders, Cifar100FineAndCoarse) {
  const Bytes file = concat({cifar_record(99, 0, 2, 19), cifar_record(5, 0, 2, 1)});
  EXPECT_EQ(parse_cifar(file, "t.bin", 2, 1, 100).labels, (std::vector<int64_t>{99, 5}));
  EXPECT_EQ(parse_cifar(file, "t.bin", 2, 0, 20).labels, (std::vector<int64_t>{19, 1}));
  fs::create_directories(dir_ / "c100");
  write("c100/test.bin", file);
  LabeledImages d = load_cifar100(dir_ / "c100", /*train=*/false, /*fine_labels=*/false);
  EXPECT_EQ(d.labels, (std::vector<int64_t>{19, 1}));
  EXPECT_EQ(d.num_classes, 20);
}

TEST_F(DataReaders, CifarSizeNotMultipleOfRecord) {
  Bytes file = concat({cifar_record(1, 0), cifar_record(2, 0)});
  file.resize(file.size() + 100);
  expect_error<ember::DataError>([&] { parse_cifar(file, "odd.bin", 1, 0, 10); },
                                 "odd.bin: size 6246 bytes is not a multiple of the 3073-byte CIFAR-10 record (1 label "
                                 "byte + 3072 pixels): 2 whole records and 100 bytes of an incomplete one starting at "
                                 "byte offset 6146");
  // A CIFAR-100 file (3074-byte records) read as CIFAR-10: the hint says so.
  const Bytes c100 = concat({cifar_record(1, 0, 2), cifar_record(2, 0, 2)});
  auto e = expect_error<ember::DataError>([&] { parse_cifar(c100, "c100.bin", 1, 0, 10); },
                                          "not a multiple of the 3073-byte");
  EXPECT_TRUE(contains(e.hint(), "load_cifar100"));
  expect_error<ember::DataError>([&] { parse_cifar(Bytes(3073 * 2), "c10.bin", 2, 1, 100); },
                                 "not a multiple of the 3074-byte CIFAR-100 record (2 label bytes");
  expect_error<ember::DataError>([&] { parse_cifar({}, "empty.bin", 1, 0, 10); }, "empty file (0 bytes)");
  expect_error<ember::ValueError>([&] { parse_cifar(file, "x", 1, 1, 10); }, "label_index 1");
}

TEST_F(DataReaders, CifarLabelOutOfRange) {
  const Bytes file = concat({cifar_record(1, 0), cifar_record(10, 0)});
  expect_error<ember::DataError>([&] { parse_cifar(file, "bad.bin", 1, 0, 10); },
                                 "bad.bin: label 10 of record 1 (byte offset 3073) is out of range for 10 classes");
}

TEST_F(DataReaders, Cifar10Directory) {
  fs::create_directories(dir_ / "c10");
  for (int i = 1; i <= 5; ++i) write("c10/data_batch_" + std::to_string(i) + ".bin", cifar_record(i, i));
  write("c10/test_batch.bin", gzip_bytes(concat({cifar_record(0, 0), cifar_record(7, 0)})));  // gzip by content
  LabeledImages train = load_cifar10(dir_ / "c10", true);
  EXPECT_EQ(train.n, 5);
  EXPECT_EQ(train.labels, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(train.images[4 * 3072], 5);
  EXPECT_EQ(load_cifar10(dir_ / "c10", false).labels, (std::vector<int64_t>{0, 7}));
}

TEST_F(DataReaders, Cifar10DirectoryMissingBatch) {
  fs::create_directories(dir_ / "c10");
  for (int i = 1; i <= 4; ++i) write("c10/data_batch_" + std::to_string(i) + ".bin", cifar_record(0, 0));
  auto e = expect_error<ember::IOError>([&] { load_cifar10(dir_ / "c10", true); },
                                        "CIFAR-10 directory is missing data_batch_5.bin (expected data_batch_1.bin");
  EXPECT_TRUE(contains(e.what(), (dir_ / "c10").string()));
  expect_error<ember::IOError>([&] { load_cifar10(dir_ / "c10", false); },
                               "holds none of its files: missing test_batch.bin");
  // The Python version has data_batch_1 without .bin: the hint says so.
  fs::create_directories(dir_ / "py");
  write("py/data_batch_1", {1});
  auto p = expect_error<ember::IOError>([&] { load_cifar10(dir_ / "py", true); }, "missing data_batch_1.bin");
  EXPECT_TRUE(contains(p.hint(), "Python"));
  expect_error<ember::IOError>([&] { load_cifar10(dir_ / "absent", true); }, "directory does not exist");
  expect_error<ember::IOError>([&] { load_cifar100(dir_ / "py/data_batch_1", true); }, "found a file");
}

// ---- SHA-256 ----------------------------------------------------------------------------------

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(as_bytes("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(as_bytes("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(as_bytes(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// ---- the real Fashion-MNIST (Debian dataset-fashion-mnist) --------------------------------------

const fs::path kFashion = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnist, TrainSet) {
  if (!fs::exists(kFashion / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << kFashion << " not installed";
  const auto t0 = std::chrono::steady_clock::now();
  LabeledImages d =
      load_idx_pair(kFashion / "train-images-idx3-ubyte.gz", kFashion / "train-labels-idx1-ubyte.gz", 10);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ info     ] read+decode Fashion-MNIST train (images + labels): %.1f ms\n", ms);
  EXPECT_EQ(d.n, 60000);
  EXPECT_EQ(d.c, 1);
  EXPECT_EQ(d.h, 28);
  EXPECT_EQ(d.w, 28);
  EXPECT_EQ(d.images.size(), 60000u * 28 * 28);
  EXPECT_EQ(std::vector<int64_t>(d.labels.begin(), d.labels.begin() + 10),
            (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  std::array<int, 10> per_class{};
  for (int64_t l : d.labels) ++per_class[static_cast<size_t>(l)];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[c], 6000) << "class " << c;
  EXPECT_TRUE(std::any_of(d.images.begin(), d.images.end(), [](uint8_t v) { return v != 0; }));
}

TEST(FashionMnist, TestSet) {
  if (!fs::exists(kFashion / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << kFashion << " not installed";
  LabeledImages d = load_idx_pair(kFashion / "t10k-images-idx3-ubyte.gz", kFashion / "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(d.n, 10000);
  EXPECT_EQ(d.h * d.w, 784);
}

TEST(FashionMnist, TrainLabelsSha256) {
  if (!fs::exists(kFashion / "train-labels-idx1-ubyte.gz")) GTEST_SKIP() << kFashion << " not installed";
  const Bytes raw = read_file_bytes(kFashion / "train-labels-idx1-ubyte.gz");
  EXPECT_EQ(raw.size(), 60008u);
  EXPECT_EQ(sha256_hex(raw), "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9");
}

}  // namespace

// The pixel budget (issue 22): a 20000x20000 PNG of ~400 KB is refused from its header, before
// stb_image allocates its 400 MB of pixels, naming the file and --max-image-pixels, in a forked child
// whose peak memory is measured; a large image under the budget is decoded with a warning.
#include <gtest/gtest.h>

#include "support/child_process.h"
#include "support/files.h"
#include "support/png_bomb.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"

using namespace ember;
using namespace ember::data;
namespace fs = std::filesystem;

namespace {

// One bomb per test process (it takes a second or two to deflate 400 MB of zeros), removed at exit.
struct Bomb {
  fs::path path = fs::temp_directory_path() / ("ember_bomb_" + std::to_string(::getpid()) + ".png");
  Bomb() { EXPECT_TRUE(ember::test::write_zero_png(path, 20000, 20000)); }
  ~Bomb() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};
const fs::path& bomb_png() {
  static const Bomb bomb;
  return bomb.path;
}

}  // namespace

TEST(DataImageBudget, A20000x20000PngIsRefusedFromItsHeaderInLittleMemory) {
  const fs::path& bomb = bomb_png();
  ASSERT_LT(fs::file_size(bomb), 1u << 20) << "the bomb should be a few hundred KB on disk";
  const ember::test::ChildResult r = ember::test::run_in_child(
      [&] {
        ImageFolderOptions o;
        o.channels = 3, o.height = o.width = 32;
        return ember::test::message_of<DataError>([&] { load_image(bomb, o); });
      },
      60.0, 3ul << 30);
  ASSERT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find(bomb.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("20000x20000 = 400,000,000 pixels, more than the budget of 178,956,970"), std::string::npos)
      << r.output;
  EXPECT_LT(r.rss_growth_kb, 300 * 1024) << "the bomb was decoded before it was refused";
}

TEST(DataImageBudget, AFolderWithABombIsRefusedNamingTheFile) {
  ember::test::TempDir dir("budget");
  ember::test::write_bytes(dir.path() / "a" / "ok.png", ember::test::make_png(4, 4, 1, ember::test::Bytes(16, 9)));
  fs::create_directories(dir.path() / "b");
  fs::copy_file(bomb_png(), dir.path() / "b" / "bomb.png");
  const ember::test::ChildResult r = ember::test::run_in_child(
      [&] {
        ImageFolderOptions o;
        o.channels = 1, o.height = o.width = 8;
        return ember::test::message_of<DataError>([&] { load_image_folder(dir.path(), o); });
      },
      60.0, 3ul << 30);
  EXPECT_NE(r.output.find("b/bomb.png: the image is 20000x20000"), std::string::npos) << r.output;
  EXPECT_LT(r.rss_growth_kb, 300 * 1024);
}

TEST(DataImageBudget, TheBudgetIsAdjustableAndWarnsAboveHalf) {
  ember::test::TempDir dir("budget");
  const fs::path f = dir.path() / "ten.png";
  ember::test::write_bytes(f, ember::test::make_png(10, 10, 1, ember::test::Bytes(100, 50)));
  ImageFolderOptions o;
  o.channels = 1, o.height = o.width = 4;
  o.max_pixels = 99;  // 100 pixels: refused
  const std::string msg = ember::test::expect_error<DataError>([&] { load_image(f, o); },
                                                               "10x10 = 100 pixels, more than the budget of 99");
  o.max_pixels = 150;  // over half of it: decoded, with a warning naming the file
  testing::internal::CaptureStderr();
  Tensor t = load_image(f, o);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(t.to_vector<uint8_t>(), std::vector<uint8_t>(16, 50));
  EXPECT_NE(err.find("ten.png: a large image (10x10 = 100 pixels, over half the budget of 150"), std::string::npos)
      << err;
  o.max_pixels = 200;  // within half: silent
  testing::internal::CaptureStderr();
  load_image(f, o);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  o.max_pixels = 0;  // no limit
  load_image(f, o);
  // The folder loader takes the same budget from the split options.
  ember::test::write_bytes(dir.path() / "set" / "a" / "x.png", ember::test::make_png(10, 10, 1, ember::test::Bytes(100, 1)));
  ember::test::write_bytes(dir.path() / "set" / "b" / "y.png", ember::test::make_png(10, 10, 1, ember::test::Bytes(100, 2)));
  ember::test::write_bytes(dir.path() / "set" / "b" / "z.png", ember::test::make_png(10, 10, 1, ember::test::Bytes(100, 3)));
  ember::test::write_bytes(dir.path() / "set" / "a" / "w.png", ember::test::make_png(10, 10, 1, ember::test::Bytes(100, 4)));
  ember::test::expect_error<DataError>(
      [&] { load_image_folder_splits(dir.path() / "set", {.size = 4, .max_pixels = 50}); }, "more than the budget of 50");
}

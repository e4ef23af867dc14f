// Model spec files: a TOML description builds the same network as the zoo, and every mistake is
// a FormatError naming the line and the layer.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <fstream>

using namespace ember;

namespace {
const char* kLenet = R"(# LeNet-5 as a spec file
[[layer]]
type = "conv2d"
out_channels = 6
kernel_size = 5
padding = 2
[[layer]]
type = "relu"
[[layer]]
type = "maxpool2d"
kernel_size = 2
[[layer]]
type = "conv2d"
out_channels = 16
kernel_size = 5
[[layer]]
type = "relu"
[[layer]]
type = "maxpool2d"
kernel_size = 2
[[layer]]
type = "flatten"
[[layer]]
type = "linear"
out_features = 120
[[layer]]
type = "relu"
[[layer]]
type = "dropout"
p = 0.1
[[layer]]
type = "linear"
out_features = "classes"   # 10 for Fashion-MNIST
)";

std::string error_of(const std::string& text) {
  try {
    nn::model_from_spec(text, "net.toml", 10, 1, 28);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "<no FormatError>";
}
}  // namespace

TEST(ModelSpec, BuildsAndRuns) {
  Generator g(0);
  auto m = nn::model_from_spec(kLenet, "lenet.toml", 10, 1, 28, &g);
  EXPECT_EQ(m->num_parameters(), 6 * 25 + 6 + 16 * 6 * 25 + 16 + 400 * 120 + 120 + 120 * 10 + 10);
  m->eval();
  Tensor y = (*m)(randn({3, 1, 28, 28}));
  EXPECT_EQ(y.sizes(), (Shape{3, 10}));
  // Through models::create with a file path, as `ember train --model net.toml` does.
  auto path = std::filesystem::temp_directory_path() / "ember_spec_test.toml";
  std::ofstream(path) << kLenet;
  EXPECT_EQ(models::create(path.string(), 10, 1, 28)->num_parameters(), m->num_parameters());
  std::filesystem::remove(path);
  EXPECT_THROW(models::create("/nonexistent/net.toml"), IOError);
}

TEST(ModelSpec, ErrorsNameTheLineAndTheLayer) {
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv3d\"\n").find("net.toml:1: layer 1: unknown type 'conv3d'"), std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = 10\nwidth = 3\n")
                .find("net.toml:6: layer 2 (linear): unknown key 'width'"),
            std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n[[layer]]\ntype = \"linear\"\n"
                     "out_features = 10\n")
                .find("net.toml:5: layer 2 (linear): needs a flat input but gets [4, 26, 26]"),
            std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 31\n").find("kernel 31 is larger"),
            std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = 7\n")
                .find("outputs [7] per sample but the dataset has 10 classes"),
            std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv2d\"\nout_channels = \"many\"\nkernel_size = 3\n")
                .find("net.toml:3: layer 1 (conv2d): 'out_channels' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("type = \"relu\"\n").find("before the first [[layer]]"), std::string::npos);
  EXPECT_NE(error_of("# nothing\n").find("describes no model"), std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"dropout\"\np = 1.5.2\n").find("net.toml:3"), std::string::npos);
  // Numbers as written (issue 22: "got 1.500000").
  const std::string p = error_of("[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"dropout\"\np = 1.5\n");
  EXPECT_NE(p.find("p must be in [0, 1], got 1.5"), std::string::npos) << p;
  EXPECT_EQ(p.find("1.500000"), std::string::npos) << p;
}

// Any valid TOML is read (toml++): arrays for 2-D sizes, inline tables, `layer = [...]`.
TEST(ModelSpec, ValidTomlArraysAndInlineTablesParse) {
  const char* text = R"(
layer = [
  { type = "conv2d", out_channels = 4, kernel_size = [3, 5], padding = [1, 2], stride = [1, 1] },
  { type = "relu" },
  { type = "maxpool2d", kernel_size = [2, 2] },
  { type = "adaptiveavgpool2d", output_size = [2, 3] },
  { type = "flatten" },
  { type = "linear", out_features = "classes", bias = false },
]
)";
  Generator g(0);
  auto m = nn::model_from_spec(text, "net.toml", 10, 1, 28, &g);
  EXPECT_EQ(m->num_parameters(), 4 * 1 * 3 * 5 + 4 + 4 * 2 * 3 * 10);
  EXPECT_EQ((*m)(randn({2, 1, 28, 28})).sizes(), (Shape{2, 10}));
  // [[layer]] tables with arrays, comments after values, and a multi-line array.
  auto m2 = nn::model_from_spec("[[layer]] # first\ntype = \"conv2d\"\nout_channels = 2\nkernel_size = [\n  3,\n  3,\n]\n"
                                "[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = 10\n",
                                "net.toml", 10, 1, 28, &g);
  EXPECT_EQ((*m2)(randn({1, 1, 28, 28})).sizes(), (Shape{1, 10}));
}

TEST(ModelSpec, UnknownKeysAndTypesSuggestTheIntendedOne) {
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernal_size = 3\n")
                .find("net.toml:4: layer 1 (conv2d): missing 'kernel_size'; 'kernal_size' is not a key of this layer"),
            std::string::npos);
  try {
    nn::model_from_spec("[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\nstrde = 2\n", "n.toml", 10, 1, 28);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(e.hint().find("did you mean 'stride'?"), std::string::npos) << e.hint();
  }
  try {
    nn::model_from_spec("[[layer]]\ntype = \"con2d\"\n", "n.toml", 10, 1, 28);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(e.hint().find("did you mean 'conv2d'?"), std::string::npos) << e.hint();
  }
  EXPECT_NE(error_of("[[layers]]\ntype = \"relu\"\n").find("net.toml:1: unknown table 'layers'"), std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"maxpool2d\"\nkernel_size = [2, 3]\n")
                .find("net.toml:3: layer 1 (maxpool2d): 'kernel_size' must be square here, got [2, 3]"),
            std::string::npos);
  EXPECT_NE(error_of("[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = [3, 0]\n")
                .find("'kernel_size' must be positive, got 0"),
            std::string::npos);
  // Invalid TOML: the parser's message with the file and line.
  EXPECT_NE(error_of("[[layer]]\ntype = \"relu\"\n\nkernel_size = [3, 3\n").find("net.toml:4:"), std::string::npos)
      << error_of("[[layer]]\ntype = \"relu\"\n\nkernel_size = [3, 3\n");
}

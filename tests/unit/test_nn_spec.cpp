// Model spec files: a TOML description builds the same network as the zoo, and every mistake is
// a SpecError (a FormatError) naming the line and the layer; every number has a range.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <fstream>
#include <limits>

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
  EXPECT_NE(p.find("'p' must be at least 0 and at most 1, got 1.5"), std::string::npos) << p;
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
                .find("'kernel_size' must be between 1 and 4096, got 0 in [3, 0]"),
            std::string::npos);
  // Invalid TOML: the parser's message with the file and line.
  EXPECT_NE(error_of("[[layer]]\ntype = \"relu\"\n\nkernel_size = [3, 3\n").find("net.toml:4:"), std::string::npos)
      << error_of("[[layer]]\ntype = \"relu\"\n\nkernel_size = [3, 3\n");
}

// Issue 22: out_channels = 9223372036854775807 crashed with SIGSEGV (the weight's element count
// wrapped), padding or dilation of that size trained, and a BatchNorm eps out of range was a
// ValueError naming no file, line or layer. Every number now has a range (docs/model-spec.md),
// refused with the file, the line of the value, the layer and what it was.
TEST(ModelSpec, EveryNumberIsRangeCheckedNamingTheFileLineAndLayer) {
  const std::string big = std::to_string(std::numeric_limits<int64_t>::max());
  const std::string conv = "[[layer]]\ntype = \"conv2d\"\n";  // the value's key on line 3
  const std::string flat = "[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\n";  // on line 5
  struct Case {
    std::string text, piece;
  };
  const Case cases[] = {
      {conv + "out_channels = " + big + "\nkernel_size = 3\n",
       "net.toml:3: layer 1 (conv2d): 'out_channels' must be between 1 and 65536, got " + big},
      {conv + "out_channels = 0\nkernel_size = 3\n", "net.toml:3: layer 1 (conv2d): 'out_channels' must be between 1 and 65536, got 0"},
      {conv + "out_channels = 65537\nkernel_size = 3\n", "'out_channels' must be between 1 and 65536, got 65537"},
      {conv + "out_channels = -4\nkernel_size = 3\n", "'out_channels' must be between 1 and 65536, got -4"},
      {conv + "kernel_size = " + big + "\nout_channels = 4\n", "net.toml:3: layer 1 (conv2d): 'kernel_size' must be between 1 and 4096"},
      {conv + "kernel_size = [3, " + big + "]\nout_channels = 4\n",
       "net.toml:3: layer 1 (conv2d): 'kernel_size' must be between 1 and 4096, got " + big + " in [3, " + big + "]"},
      {conv + "padding = " + big + "\nout_channels = 4\nkernel_size = 3\n",
       "net.toml:3: layer 1 (conv2d): 'padding' must be between 0 and 4096, got " + big},
      {conv + "padding = -1\nout_channels = 4\nkernel_size = 3\n", "'padding' must be between 0 and 4096, got -1"},
      {conv + "dilation = " + big + "\nout_channels = 4\nkernel_size = 3\n",
       "net.toml:3: layer 1 (conv2d): 'dilation' must be between 1 and 4096, got " + big},
      {conv + "dilation = [1, 0]\nout_channels = 4\nkernel_size = 3\n", "'dilation' must be between 1 and 4096, got 0 in [1, 0]"},
      {conv + "stride = 0\nout_channels = 4\nkernel_size = 3\n", "net.toml:3: layer 1 (conv2d): 'stride' must be between 1 and 4096"},
      {conv + "stride = 5000\nout_channels = 4\nkernel_size = 3\n", "'stride' must be between 1 and 4096, got 5000"},
      {conv + "groups = " + big + "\nout_channels = 4\nkernel_size = 3\n",
       "net.toml:3: layer 1 (conv2d): 'groups' must be between 1 and 65536, got " + big},
      {"[[layer]]\ntype = \"residual\"\nout_channels = " + big + "\n",
       "net.toml:3: layer 1 (residual): 'out_channels' must be between 1 and 65536, got " + big},
      {"[[layer]]\ntype = \"residual\"\nstride = " + big + "\n", "net.toml:3: layer 1 (residual): 'stride' must be between 1 and 4096"},
      {"[[layer]]\ntype = \"adaptiveavgpool2d\"\noutput_size = " + big + "\n",
       "net.toml:3: layer 1 (adaptiveavgpool2d): 'output_size' must be between 1 and 4096, got " + big},
      {"[[layer]]\ntype = \"adaptiveavgpool2d\"\noutput_size = [2, 0]\n", "'output_size' must be between 1 and 4096, got 0 in [2, 0]"},
      {"[[layer]]\ntype = \"maxpool2d\"\nkernel_size = " + big + "\n",
       "net.toml:3: layer 1 (maxpool2d): 'kernel_size' must be between 1 and 4096, got " + big},
      {"[[layer]]\ntype = \"maxpool2d\"\nstride = " + big + "\nkernel_size = 2\n", "layer 1 (maxpool2d): 'stride' must be between 1 and 4096"},
      {"[[layer]]\ntype = \"avgpool2d\"\npadding = " + big + "\nkernel_size = 2\n",
       "net.toml:3: layer 1 (avgpool2d): 'padding' must be between 0 and 4096, got " + big},
      {flat + "out_features = " + big + "\n", "net.toml:5: layer 2 (linear): 'out_features' must be between 1 and 65536, got " + big},
      {flat + "out_features = 0\n", "net.toml:5: layer 2 (linear): 'out_features' must be between 1 and 65536, got 0"},
      {"[[layer]]\ntype = \"batchnorm2d\"\neps = 0\n", "net.toml:3: layer 1 (batchnorm2d): 'eps' must be above 0 and at most 1, got 0"},
      {"[[layer]]\ntype = \"batchnorm2d\"\neps = -1e-5\n", "net.toml:3: layer 1 (batchnorm2d): 'eps' must be above 0 and at most 1, got -1e-05"},
      {"[[layer]]\ntype = \"batchnorm2d\"\neps = nan\n", "net.toml:3: layer 1 (batchnorm2d): 'eps' must be above 0 and at most 1, got nan"},
      {"[[layer]]\ntype = \"batchnorm2d\"\neps = inf\n", "'eps' must be above 0 and at most 1, got inf"},
      {"[[layer]]\ntype = \"batchnorm2d\"\nmomentum = 1.5\n", "net.toml:3: layer 1 (batchnorm2d): 'momentum' must be at least 0 and at most 1, got 1.5"},
      {"[[layer]]\ntype = \"batchnorm2d\"\nmomentum = -0.1\n", "'momentum' must be at least 0 and at most 1, got -0.1"},
      {"[[layer]]\ntype = \"batchnorm2d\"\nmomentum = nan\n", "'momentum' must be at least 0 and at most 1, got nan"},
      {"[[layer]]\ntype = \"batchnorm2d\"\nmomentum = \"fast\"\n", "net.toml:3: layer 1 (batchnorm2d): 'momentum' must be a number, got \"fast\""},
      {"[[layer]]\ntype = \"dropout\"\np = 1.5\n", "net.toml:3: layer 1 (dropout): 'p' must be at least 0 and at most 1, got 1.5"},
      {"[[layer]]\ntype = \"dropout\"\np = nan\n", "'p' must be at least 0 and at most 1, got nan"},
  };
  for (const Case& c : cases) {
    try {
      nn::model_from_spec(c.text, "net.toml", 10, 1, 28);
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const nn::SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(c.piece), std::string::npos) << c.text << "\n" << e.what();
      EXPECT_EQ(std::string(e.what()).find("1.500000"), std::string::npos) << e.what();
      EXPECT_FALSE(e.hint().empty()) << e.what();
    }
  }
  // The ends of each range are accepted: a model with padding 4096 and a 1x1 output builds.
  Generator g(0);
  EXPECT_NO_THROW(nn::model_from_spec("[[layer]]\ntype = \"conv2d\"\nout_channels = 2\nkernel_size = 1\npadding = [0, 1]\n"
                                      "dilation = 4096\nstride = 4096\n[[layer]]\ntype = \"batchnorm2d\"\neps = 1\n"
                                      "momentum = 0\n[[layer]]\ntype = \"adaptiveavgpool2d\"\noutput_size = 1\n"
                                      "[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"dropout\"\np = 1\n"
                                      "[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n",
                                      "net.toml", 10, 1, 28, &g));
}

// A layer whose parameters cannot be allocated names the file, line and layer, and stays an
// out-of-memory error (the CLI's hint then names --batch-size and the model); the shape is checked
// before the weights are allocated, so a kernel larger than its input allocates nothing.
TEST(ModelSpec, LayersThatDoNotFitInMemoryNameTheLayer) {
  const std::string text = "[[layer]]\ntype = \"conv2d\"\nout_channels = 65536\nkernel_size = 3\n[[layer]]\ntype = \"flatten\"\n"
                           "[[layer]]\ntype = \"linear\"\nout_features = 65536\n";
  set_memory_cap(uint64_t(256) << 20);  // the linear layer's 2.9e12 weights are 10.6 TiB
  std::string what;
  try {
    nn::model_from_spec(text, "net.toml", 65536, 1, 28);
  } catch (const OutOfMemoryError& e) {
    what = e.what();
  }
  set_memory_cap(0);
  EXPECT_NE(what.find("net.toml:7: layer 3 (linear): CPU out of memory: tried to allocate"), std::string::npos) << what;
  set_memory_cap(uint64_t(1) << 20);  // the conv2d's 2.4 MB weight would not fit either
  what.clear();
  try {
    nn::model_from_spec("[[layer]]\ntype = \"conv2d\"\nout_channels = 65536\nkernel_size = 29\n", "net.toml", 10, 1, 28);
  } catch (const nn::SpecError& e) {
    what = e.what();
  }
  set_memory_cap(0);
  EXPECT_NE(what.find("net.toml:1: layer 1 (conv2d): kernel 29 is larger than its input"), std::string::npos) << what;
}

// Spec errors are their own type, so the CLI can exit 2 on them as on a bad --config file.
TEST(ModelSpec, ErrorsAreSpecErrors) {
  EXPECT_THROW(nn::model_from_spec("[[layer]]\ntype = \"conv3d\"\n", "net.toml", 10, 1, 28), nn::SpecError);
  EXPECT_THROW(nn::model_from_spec("[[layer]]\ntype = \"relu\"\n\nkernel_size = [3, 3\n", "net.toml", 10, 1, 28), nn::SpecError);
  EXPECT_THROW(nn::model_from_spec("[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = 7\n", "net.toml",
                                   10, 1, 28),
               nn::SpecError);
}

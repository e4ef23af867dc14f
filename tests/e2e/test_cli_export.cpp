// `ember export` end to end without Python: both formats from a run, what the files hold (the
// state dict without "model/" or optimizer keys, the metadata), a copied-out export exported again
// from its own metadata, and the usage errors. tests/export/ runs the files in onnxruntime and PyTorch.
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "e2e_util.h"
#include "ember/io/pth.h"
#include "ember/io/safetensors.h"

using e2e::Fixture;
using e2e::run;
namespace fs = std::filesystem;

class CliExport : public Fixture {};

TEST_F(CliExport, BothFormatsFromARun) {
  ASSERT_EQ(run(tiny("r")).code, 0);
  const auto onnx = dir / "m.onnx", st = dir / "m.safetensors";
  auto r = run("export " + (dir / "r").string() + " -o " + onnx.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "ONNX opset 17");
  EXPECT_HAS(r.out, "float32 (batch, 1, 28, 28), pixel / 255");
  EXPECT_HAS(r.out, "\"logits\": float32 (batch, 10)");
  const std::string bytes = e2e::read_text(onnx);
  EXPECT_HAS(bytes, "conv1.weight");
  EXPECT_HAS(bytes, "normalize_sub");

  r = run("export " + (dir / "r/checkpoints/latest.json").string() + " --format safetensors -o " + st.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const ember::io::StFile f = ember::io::st_load(st);
  std::vector<std::string> names;
  for (const auto& t : f.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.bias", "conv1.weight", "conv2.bias", "conv2.weight", "fc1.bias",
                                             "fc1.weight", "fc2.bias", "fc2.weight", "fc3.bias", "fc3.weight"}));
  EXPECT_EQ(f.metadata.at("model"), "lenet5");
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.metadata.at("input_shape"), "[1,28,28]");
  EXPECT_EQ(nlohmann::json::parse(f.metadata.at("classes")).size(), 10u);

  // The export alone (no manifest, no run) says enough to be exported again, to the same graph.
  fs::copy_file(st, dir / "alone.safetensors");
  r = run("export " + (dir / "alone.safetensors").string() + " -o " + (dir / "again.onnx").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "lenet5 trained on fashion-mnist, epoch 1, step 8");
  EXPECT_TRUE(e2e::read_text(dir / "again.onnx") == bytes) << "the re-export differs from the run's export";
}

// `-o model.pt` (issue 48, item 18): the file torch.save(model.state_dict()) writes, holding the
// safetensors export's tensors bit for bit (tests/export/check_torch.py loads it in PyTorch with
// torch.load(weights_only=True)); ember's own reader of torch.save files reads it back.
TEST_F(CliExport, TorchSaveFileFromAPtName) {
  ASSERT_EQ(run(tiny("r")).code, 0);
  const std::string rd = (dir / "r").string();
  auto r = run("export " + rd + " -o " + (dir / "m.pt").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "torch.save state dict");
  EXPECT_HAS(r.out, "weights_only=True");
  ASSERT_EQ(run("export " + rd + " -o " + (dir / "m.safetensors").string()).code, 0);
  r = run("export " + rd + " --format torch -o " + (dir / "m2.pth").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string bytes = e2e::read_text(dir / "m.pt");
  EXPECT_EQ(bytes.substr(0, 4), std::string("PK\x03\x04"));
  EXPECT_TRUE(bytes == e2e::read_text(dir / "m2.pth"));
  const ember::io::PthFile pt =
      ember::io::pth_parse(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "m.pt");
  const ember::io::StFile st = ember::io::st_load(dir / "m.safetensors");
  ASSERT_EQ(pt.tensors.size(), st.tensors.size());
  for (const auto& t : pt.tensors) {
    const ember::io::StTensor* s = st.find(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(t.dtype, s->dtype) << t.name;
    EXPECT_EQ(t.shape, s->shape) << t.name;
    EXPECT_TRUE(t.data == s->data) << t.name;
  }
}

TEST_F(CliExport, UsageErrors) {
  ASSERT_EQ(run(tiny("r")).code, 0);
  const std::string rd = (dir / "r").string();
  auto r = run("export " + rd + " -o " + (dir / "m.bin").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "cannot tell the format from");
  EXPECT_HAS(r.out, "*.pt / *.pth");
  r = run("export " + rd + " --format tflite -o " + (dir / "m.bin").string());
  EXPECT_EQ(r.code, 2) << r.out;
  // Writing over the run's own weights would destroy the checkpoint.
  const nlohmann::json latest = nlohmann::json::parse(e2e::read_text(dir / "r/checkpoints/latest.json"));
  const fs::path weights = dir / "r/checkpoints" / latest["weights"].get<std::string>();
  r = run("export " + rd + " --format safetensors -o " + weights.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "the checkpoint's own weights file");
  r = run("export " + (dir / "nothing").string() + " -o " + (dir / "m.onnx").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "does not exist");
}

// A spec model trained on an image folder: the input (3x24x24, the folder's mean/std and class
// names) comes from the run's config, the model from its copy of the spec, whose text travels in
// the metadata, so the copied-out safetensors export is exported again to the same graph.
TEST_F(CliExport, SpecModelOnAnImageFolder) {
  ember::e2e::write_shape_images(dir / "shapes" / "train", 8, 0);
  ember::e2e::write_shape_images(dir / "shapes" / "test", 3, 100);
  std::ofstream(dir / "net.toml") << "[[layer]]\ntype = \"conv2d\"\nout_channels = 4\nkernel_size = 3\n"
                                     "[[layer]]\ntype = \"relu\"\n[[layer]]\ntype = \"adaptiveavgpool2d\"\noutput_size = 2\n"
                                     "[[layer]]\ntype = \"flatten\"\n[[layer]]\ntype = \"linear\"\nout_features = \"classes\"\n";
  const std::string rd = (dir / "r").string();
  auto r = run("train --data " + (dir / "shapes").string() + " --model " + (dir / "net.toml").string() +
               " --epochs 1 --batch-size 8 --threads 2 --run-dir " + rd);
  ASSERT_EQ(r.code, 0) << r.out;
  fs::rename(dir / "net.toml", dir / "moved.toml");  // the run's own copy is what counts
  r = run("export " + rd + " -o " + (dir / "m.onnx").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "net.toml trained on image-folder");
  EXPECT_HAS(r.out, "float32 (batch, 3, 24, 24)");
  EXPECT_HAS(r.out, "\"logits\": float32 (batch, 3)");
  const std::string onnx = e2e::read_text(dir / "m.onnx");
  EXPECT_HAS(onnx, "adaptiveavgpool2d");  // metadata_props model_spec
  EXPECT_HAS(onnx, "stripes");

  r = run("export " + rd + " -o " + (dir / "m.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const ember::io::StFile f = ember::io::st_load(dir / "m.safetensors");
  EXPECT_EQ(f.metadata.at("classes"), "[\"disc\",\"ring\",\"stripes\"]");
  EXPECT_EQ(f.metadata.at("input_shape"), "[3,24,24]");
  EXPECT_EQ(f.metadata.at("model"), "net.toml");
  EXPECT_EQ(nlohmann::json::parse(f.metadata.at("mean")).size(), 3u);
  EXPECT_TRUE(f.find("0.weight") && f.find("4.bias")) << "Sequential keys as PyTorch's nn.Sequential";

  fs::copy_file(dir / "m.safetensors", dir / "alone.safetensors");
  r = run("export " + (dir / "alone.safetensors").string() + " -o " + (dir / "again.onnx").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(e2e::read_text(dir / "again.onnx") == onnx) << "the re-export differs from the run's export";
}

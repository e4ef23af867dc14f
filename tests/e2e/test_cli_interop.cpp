// Weights in and out of ember (issue 14): a weights file copied out of its run is enough for eval
// and predict (its __metadata__), --json says which model, file, device and precision produced
// the numbers, --init-from starts a new run from ember or PyTorch weights (prefixes, float16,
// partial heads), and PyTorch/ONNX files are named as such instead of "corrupt".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../golden/golden_file.h"
#include "../golden/hash_fill.h"
#include "../support/files.h"
#include "support/test_data.h"
#include "e2e_util.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/models.h"
#include "ember/train/checkpoint.h"

using namespace e2e;
using nlohmann::json;

namespace {

class CliInterop : public Fixture {
 protected:
  // The weights file the run's latest.json names.
  fs::path weights_of(const std::string& run) const {
    const json latest = json::parse(read_text(dir / run / "checkpoints" / "latest.json"));
    return dir / run / "checkpoints" / latest["weights"].get<std::string>();
  }
  // A model's weights as PyTorch's save_file(model.state_dict()) writes them, under `prefix`.
  void write_torch_style(const ember::nn::Module& m, const fs::path& path, const std::string& prefix,
                         ember::DType dtype) const {
    ember::io::StFile f;
    for (const auto& [k, t0] : m.state_dict()) {
      const bool fp = ember::is_floating(t0.dtype());
      ember::Tensor t = (fp ? t0.to(dtype) : t0).contiguous();
      ember::io::StTensor st;
      st.name = prefix + k;
      st.dtype = !fp ? ember::io::StDType::I64
                     : dtype == ember::DType::Float16 ? ember::io::StDType::F16 : ember::io::StDType::F32;
      st.shape = t.sizes();
      auto* p = static_cast<const uint8_t*>(t.raw_data());
      st.data.assign(p, p + t.nbytes());
      f.tensors.push_back(std::move(st));
    }
    ember::io::st_save(path, f);
  }
  static std::string test_accuracy(const std::string& out) {
    const size_t at = out.find("test accuracy: ");
    return at == std::string::npos ? "" : out.substr(at, out.find('%', at) - at);
  }
};

// `ember predict --model resnet18 --weights FILE photo` on torchvision's evaluation transforms:
// the top-5 probabilities of torchvision's resnet18 on the same weights and picture, from
// tests/golden/photo_v1.bin (make_golden_photo.py), within 1e-3 (issue 26), at crops 224 and 160.
TEST_F(CliInterop, PredictWithBareTorchvisionWeightsMatchesTorchvisionsTop5) {
  ember::Generator gen(0);
  auto model = ember::models::create("resnet18", 10, 3, 224, &gen);
  ember::test::fill_hashed(*model);
  const fs::path weights = dir / "resnet18_hashed.safetensors";
  write_torch_style(*model, weights, "", ember::DType::Float32);
  // The script's picture ramp320x240x3: byte (y, x, c) = (5x + 3y + 60c + (hash >> 5)) mod 256.
  const int w = 320, h = 240;
  ember::test::Bytes px(size_t(w * h * 3));
  const uint64_t seed = ember::test::fnv1a64("photo/ramp");
  for (int64_t i = 0; i < int64_t(px.size()); ++i) {
    const int64_t c = i % 3, x = (i / 3) % w, y = i / (3 * w);
    px[size_t(i)] = uint8_t((5 * x + 3 * y + 60 * c + ((ember::test::splitmix64(seed ^ uint64_t(i)) >> 56) >> 5)) % 256);
  }
  const fs::path photo = dir / "ramp320x240.png";
  ember::test::write_bytes(photo, ember::test::make_png(w, h, 3, px));
  const ember::test::GoldenFile golden(ember::test::data_path("golden/photo_v1.bin"));
  for (int crop : {224, 160}) {
    const auto want = golden.get("predict/resnet18/" + std::to_string(crop)).as_double();
    Result r = run("predict --json --model resnet18 --weights " + weights.string() + " " + photo.string() +
                   " --image-size " + std::to_string(crop));
    ASSERT_EQ(r.code, 0) << r.out;
    const json j = json::parse(r.out.substr(r.out.find('{')));
    ASSERT_EQ(j["predictions"].size(), 1u) << r.out;
    const json& top = j["predictions"][0]["top_k"];
    ASSERT_EQ(top.size(), 5u) << r.out;
    std::vector<size_t> order(want.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return want[a] > want[b]; });
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(top[k]["class"].get<size_t>(), order[k]) << "crop " << crop << " rank " << k << "\n" << r.out;
      EXPECT_NEAR(top[k]["probability"].get<double>(), want[size_t(top[k]["class"].get<int64_t>())], 1e-3)
          << "crop " << crop << " rank " << k;
    }
  }
  // The text form says what was done to the picture.
  Result r = run("predict --model resnet18 --weights " + weights.string() + " " + photo.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "320x240, resized to 256 and centre-cropped to 224x224");
  EXPECT_HAS(r.out, "class ");
  // Without --model, and with names of the wrong count: what to pass.
  r = run("predict --weights " + weights.string() + " " + photo.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--weights needs --model");
  ember::test::write_text(dir / "names.txt", "one\ntwo\n");
  r = run("predict --model resnet18 --weights " + weights.string() + " --classes " + (dir / "names.txt").string() +
          " " + photo.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "has 2 names, but the model gives 10 classes");
}

TEST_F(CliInterop, AWeightsFileCopiedOutOfItsRunIsEnoughForEvalAndPredict) {
  Result r = run(tiny("a"));
  ASSERT_EQ(r.code, 0) << r.out;
  fs::copy_file(weights_of("a"), dir / "alone.safetensors");
  fs::remove_all(dir / "a");  // no manifest, no config.json: only the file's own __metadata__
  const std::string file = (dir / "alone.safetensors").string();
  r = run("eval " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(lenet5 on fashion-mnist)");
  EXPECT_HAS(r.out, "epoch 1, step 8");
  r = run("eval --json " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  json j = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["model"], "lenet5");
  EXPECT_EQ(j["checkpoint"], file);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["samples"], 64);
  r = run("predict --json --index 3 --top-k 2 " + file);
  ASSERT_EQ(r.code, 0) << r.out;
  j = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["model"], "lenet5");
  EXPECT_EQ(j["checkpoint"], file);
  EXPECT_EQ(j["precision"], "fp32");
  ASSERT_EQ(j["predictions"].size(), 1u);
  EXPECT_EQ(j["predictions"][0]["top_k"].size(), 2u);
  EXPECT_EQ(j["predictions"][0]["true_class"], (3 * 7 + 3) % 10);
}

TEST_F(CliInterop, ASpecModelTravelsInsideItsWeightsFile) {
  const fs::path spec = dir / "tiny_net.toml";
  std::ofstream(spec) << "layer = [\n  { type = \"conv2d\", out_channels = 4, kernel_size = [3, 3] },\n"
                         "  { type = \"relu\" },\n  { type = \"flatten\" },\n"
                         "  { type = \"linear\", out_features = \"classes\" },\n]\n";
  Result r = run("train --model " + spec.string() + " --data-dir " + data.string() +
                 " --epochs 1 --batch-size 32 --threads 2 --run-dir " + (dir / "s").string());
  ASSERT_EQ(r.code, 0) << r.out;
  fs::copy_file(weights_of("s"), dir / "spec.safetensors");
  fs::remove_all(dir / "s");
  fs::remove(spec);
  r = run("eval " + (dir / "spec.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "(tiny_net.toml on fashion-mnist)");
}

TEST_F(CliInterop, InitFromStartsANewRunFromPyTorchStyleWeights) {
  Result r = run(tiny("a"));
  ASSERT_EQ(r.code, 0) << r.out;
  // The trained weights, renamed as a DataParallel PyTorch model would save them.
  auto model = ember::models::lenet5(10, 1, 28);
  {
    ember::io::StFile ck = ember::io::st_load(weights_of("a"));
    ember::StateDict sd;
    for (const auto& t : ck.tensors)
      if (t.name.starts_with("model/"))
        sd.insert(t.name.substr(6), ember::from_blob_copy(t.data.data(), t.shape,
                                                            t.dtype == ember::io::StDType::I64 ? ember::DType::Int64
                                                                                               : ember::DType::Float32));
    model->load_state_dict(sd);
  }
  write_torch_style(*model, dir / "torch.safetensors", "module.", ember::DType::Float32);
  write_torch_style(*model, dir / "torch16.safetensors", "", ember::DType::Float16);
  // A learning rate of ~0 keeps the loaded weights: the new run's test accuracy is run a's.
  const std::string still = " --optimizer sgd --schedule none --lr 1e-12 --weight-decay 0 --name b --run-dir ";
  r = run(tiny("unused") + " --init-from " + (dir / "torch.safetensors").string() + still + (dir / "b").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "init from " + (dir / "torch.safetensors").string() + ": loaded 10 tensors (key prefix 'module.' stripped)");
  const std::string acc_a = test_accuracy(run("eval " + (dir / "a").string()).out);
  ASSERT_FALSE(acc_a.empty());
  EXPECT_EQ(test_accuracy(r.out), acc_a) << r.out;
  EXPECT_EQ(json::parse(read_text(dir / "b" / "config.json"))["init_from"], (dir / "torch.safetensors").string());

  // eval reads float16 weights too (it used to refuse them: "dtype mismatch", with a hint about --model).
  r = run("eval --model lenet5 --data-dir " + data.string() + " " + (dir / "torch16.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "note: cast 10 tensors from float16 to float32");
  EXPECT_EQ(test_accuracy(r.out), acc_a) << r.out;
  r = run(tiny("c") + " --init-from " + (dir / "torch16.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "note: cast 10 tensors from float16 to float32 (the model's dtype)");
  // An ember checkpoint or run directory works as well; its optimizer state is left out.
  r = run(tiny("d") + " --init-from " + (dir / "a").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "key prefix 'model/' stripped");
  EXPECT_HAS(r.out, "optimizer/scheduler tensors of the checkpoint not used");
  EXPECT_HAS(r.out, "the run's best checkpoint: epoch");  // as `ember eval` reads a run (inference.h)

  r = run("train --epochs 2 --init-from " + (dir / "torch.safetensors").string() + " --resume " + (dir / "a").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_HAS(r.out, "--init-from starts a new run; --resume continues one");
}

TEST_F(CliInterop, InitFromReplacesAHeadOfAnotherClassCountAndListsKeysThatDoNotFit) {
  auto five = ember::models::lenet5(5, 1, 28);  // a head for 5 classes, the data has 10
  write_torch_style(*five, dir / "five.safetensors", "model.", ember::DType::Float32);
  // Another class count only: the classifier is replaced (issue 26: fine-tuning needs no extra flag).
  Result r = run(tiny("a") + " --init-from " + (dir / "five.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "the classifier 'fc3' differs in shape from the file's (another number of classes): replaced");
  EXPECT_HAS(r.out, "shape differs, reinitialised: fc3.weight: file [5, 84], model [10, 84], fc3.bias");
  r = run(tiny("b") + " --init-from " + (dir / "five.safetensors").string() + " --init-from-partial");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "loaded 8 tensors (key prefix 'model.' stripped)");
  EXPECT_HAS(r.out, "shape differs, reinitialised: fc3.weight: file [5, 84], model [10, 84], fc3.bias");
  // Another architecture: every key named, not only the first.
  auto mlp = ember::models::mlp(10, 1, 28);
  write_torch_style(*mlp, dir / "mlp.safetensors", "", ember::DType::Float32);
  r = run(tiny("c") + " --init-from " + (dir / "mlp.safetensors").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "missing from the file (10): conv1.weight, conv1.bias");
  EXPECT_HAS(r.out, "not in the model (4): ");
}

TEST_F(CliInterop, PyTorchPicklesAndOnnxFilesAreNamedNotCalledCorrupt) {
  std::string zip = std::string("PK\x03\x04", 4) + std::string(22, '\0') + std::string("\x10\0\0\0", 4) + "archive/data.pkl";
  std::ofstream(dir / "model.pt", std::ios::binary) << zip;
  std::ofstream(dir / "old.pth", std::ios::binary) << std::string("\x80\x02\x8a\x0a", 4) << "lots of pickle";
  for (const char* f : {"model.pt", "old.pth"}) {
    const std::string path = (dir / f).string();
    for (const std::string& cmd : {tiny("x") + " --init-from " + path, "eval " + path}) {
      Result r = run(cmd);
      EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
      if (f == std::string("model.pt")) {  // a torch.save zip, cut short: the .pth reader says so
        EXPECT_HAS(r.out, "not a readable torch.save archive: no end-of-central-directory record (the archive is truncated)");
        EXPECT_HAS(r.out, "torch.save(model.state_dict(), \"weights.pth\")");  // issue 48: the one-line conversion
        EXPECT_LACKS(r.out, "pth: ");
      } else {  // a pickle without torch's magic number
        EXPECT_HAS(r.out, "not a safetensors file");
        EXPECT_HAS(r.out, "Python pickle");
        EXPECT_HAS(r.out, "save_file(");
      }
      EXPECT_EQ(r.out.find("HeaderTooLarge"), std::string::npos) << r.out;
    }
    Result r = run("train --resume " + path);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_HAS(r.out, "not an ember run or checkpoint");
    EXPECT_HAS(r.out, "--init-from");
  }
  std::ofstream(dir / "net.onnx", std::ios::binary) << std::string("\x08\x08\x12\x07pytorch", 11);
  Result r = run(tiny("y") + " --init-from " + (dir / "net.onnx").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "is an ONNX model, not a safetensors file");
}

// `ember weights info` on the torch.save fixtures (tests/fixtures/pth) and on ember-style safetensors;
// `--init-from` of a .pth: a hostile one is refused by name before anything runs, another model's
// weights get the same key-by-key message as safetensors.
TEST_F(CliInterop, WeightsInfoAndInitFromReadPyTorchPthFiles) {
  const fs::path fixtures = fs::path(ember::test::data_dir()) / "fixtures" / "pth";
  Result r = run("weights info " + (fixtures / "nested.pth").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "PyTorch torch.save zip archive, the state dict under key 'state_dict'");
  EXPECT_HAS(r.out, "1.weight");
  EXPECT_HAS(r.out, "float32");
  EXPECT_HAS(r.out, "[256, 4]");
  EXPECT_HAS(r.out, "4 tensors, 1,794 parameters");
  EXPECT_HAS(r.out, "fits --model mlp on 1x2x2 inputs with 2 classes");

  auto lenet = ember::models::lenet5(10, 1, 28);
  write_torch_style(*lenet, dir / "lenet.safetensors", "", ember::DType::Float32);
  r = run("weights info " + (dir / "lenet.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, ": safetensors");
  EXPECT_HAS(r.out, "conv1.weight");
  EXPECT_HAS(r.out, "[6, 1, 5, 5]");
  EXPECT_HAS(r.out, "fits --model lenet5 on 1x28x28 inputs with 10 classes");

  const fs::path marker = "/tmp/ember-pth-hostile-ran";  // what the hostile pickle's command would create
  fs::remove(marker);
  for (const std::string& cmd : {tiny("h") + " --init-from " + (fixtures / "hostile_os_system.pth").string(),
                                 "weights info " + (fixtures / "hostile_os_system.pth").string()}) {
    r = run(cmd);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_HAS(r.out, "hostile_os_system.pth: refused: the pickle refers to 'posix.system'");
    EXPECT_LACKS(r.out, "ForbiddenGlobal");  // issue 48: an internal name, not the user's
    EXPECT_HAS(r.out, "torch.save(model.state_dict(), \"weights.pth\")");
    EXPECT_FALSE(fs::exists(marker));
  }
  r = run(tiny("m") + " --init-from " + (fixtures / "mlp.pth").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_HAS(r.out, "missing from the file (10): conv1.weight, conv1.bias");
  r = run("weights info " + (dir / "missing.pth").string());
  EXPECT_EQ(r.code, 1) << r.out;
  r = run("weights --help");
  EXPECT_HAS(r.out, "info");
}

}  // namespace

// Issue 48, item 13: torchvision's ImageNet weights are called what they are (built for 3x224x224,
// never "fit 3x28x28"), and a grey dataset takes them with the stem summed over RGB (timm's
// adapt_input_conv for one channel), said in the banner; with the backbone frozen the run's conv1 is
// exactly the file's summed over its input channels.
TEST_F(CliInterop, ImageNetWeightsOnGreyImagesGetTheirStemSummedOverRgb) {
  ember::Generator gen(0);
  auto model = ember::models::create("resnet18", 1000, 3, 224, &gen);
  const fs::path file = dir / "resnet18_imagenet.safetensors";
  write_torch_style(*model, file, "", ember::DType::Float32);
  Result r = run("weights info " + file.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "fits --model resnet18 with 1000 classes: torchvision's architecture, built for 3x224x224 photos");
  EXPECT_HAS(r.out, "1000 classes: torchvision's ImageNet weights, trained at 224x224");
  EXPECT_LACKS(r.out, "3x28x28");
  EXPECT_LACKS(r.out, "3x32x32");

  // Fashion-MNIST-like grey 28x28 images (the fixture's IDX files).
  r = run("train --model resnet18 --init-from " + file.string() + " --data-dir " + data.string() +
          " --freeze-backbone --epochs 1 --limit-train 64 --limit-test 32 --batch-size 32 --threads 2 --run-dir " +
          (dir / "grey").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_HAS(r.out, "conv1.weight: the file's RGB stem [64, 3, 7, 7] summed over its 3 input channels");
  const ember::train::Checkpoint ck = ember::train::load_checkpoint(weights_of("grey"));
  ember::Tensor got;
  for (const auto& [k, t] : ck.tensors)
    if (k == "model/conv1.weight") got = t;
  ASSERT_TRUE(got.defined());
  const ember::Tensor want = model->state_dict().at("conv1.weight").sum({1}, true);
  EXPECT_TRUE(ember::allclose(got, want, 1e-6, 1e-6));
}

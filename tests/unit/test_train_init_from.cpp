// Weights in: --init-from's loader (prefixes, dtype casts, missing/extra/mis-shaped keys by name,
// the partial mode for a new head), the recognition of non-safetensors files (PyTorch pickles and
// zips, ONNX), and the __metadata__ every ember weights file carries.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/io/file_kind.h"
#include "ember/io/safetensors.h"
#include "ember/nn/models.h"
#include "ember/train/checkpoint.h"
#include "ember/train/init_from.h"
#include "ember/train/resume.h"
#include "ember/train/weights_info.h"
#include "support/files.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what()) + " | hint: " + e.hint();
  }
  return "(no exception)";
}

// A model's state dict as safetensors tensors, keys prefixed, cast to `dtype` (as a PyTorch
// `save_file(model.half().state_dict())` would write them).
io::StFile as_file(const nn::Module& m, const std::string& prefix, DType dtype = DType::Float32) {
  io::StFile f;
  for (const auto& [k, t0] : m.state_dict()) {
    Tensor t = is_floating(t0.dtype()) ? t0.to(dtype).contiguous() : t0.contiguous();
    io::StTensor st;
    st.name = prefix + k;
    st.dtype = t.dtype() == DType::Float16    ? io::StDType::F16
               : t.dtype() == DType::BFloat16 ? io::StDType::BF16
               : t.dtype() == DType::Float64  ? io::StDType::F64
               : t.dtype() == DType::Int64    ? io::StDType::I64
                                              : io::StDType::F32;
    st.shape = t.sizes();
    auto* p = static_cast<const uint8_t*>(t.raw_data());
    st.data.assign(p, p + t.nbytes());
    f.tensors.push_back(std::move(st));
  }
  return f;
}

NamedTensors as_named(const io::StFile& f) {
  NamedTensors out;
  for (const auto& st : f.tensors) {
    DType d = st.dtype == io::StDType::F16    ? DType::Float16
              : st.dtype == io::StDType::BF16 ? DType::BFloat16
              : st.dtype == io::StDType::F64  ? DType::Float64
              : st.dtype == io::StDType::I64  ? DType::Int64
                                              : DType::Float32;
    out.emplace_back(st.name, from_blob_copy(st.data.data(), st.shape, d));
  }
  return out;
}

bool same_weights(const nn::Module& a, const nn::Module& b, double atol = 0) {
  auto sa = a.state_dict(), sb = b.state_dict();
  for (const auto& [k, t] : sa)
    if (!allclose(t.to(DType::Float64), sb.at(k).to(DType::Float64), 0, atol)) return false;
  return true;
}

}  // namespace

TEST(InitFrom, PyTorchKeysWithAPrefixAndFloat16AreLoadedAndCast) {
  Generator g1(1), g2(2);
  auto src = models::lenet5(10, 1, 28, &g1), dst = models::lenet5(10, 1, 28, &g2);
  for (const char* prefix : {"", "module.", "model.", "model/"}) {
    auto fresh = models::lenet5(10, 1, 28, &g2);
    WeightLoadReport r = load_weights(*fresh, as_named(as_file(*src, prefix, DType::Float16)), "w.safetensors");
    EXPECT_EQ(r.prefix, prefix);
    EXPECT_EQ(r.loaded.size(), src->state_dict().size());
    EXPECT_TRUE(r.missing.empty() && r.unexpected.empty() && r.mismatched.empty());
    ASSERT_EQ(r.notes.size(), 1u) << r.summary();
    EXPECT_NE(r.notes[0].find("cast 10 tensors from float16 to float32"), std::string::npos) << r.notes[0];
    EXPECT_TRUE(same_weights(*src, *fresh, 1e-3));
    EXPECT_FALSE(same_weights(*src, *dst, 1e-3));
  }
  for (DType d : {DType::BFloat16, DType::Float64}) {
    auto fresh = models::lenet5(10, 1, 28, &g2);
    load_weights(*fresh, as_named(as_file(*src, "", d)), "w");
    EXPECT_TRUE(same_weights(*src, *fresh, d == DType::Float64 ? 0 : 2e-2));
  }
}

TEST(InitFrom, ACheckpointsOptimizerStateIsSetAsideNotUnexpected) {
  Generator g1(1), g2(2);
  auto src = models::mlp(10, 1, 28, &g1), dst = models::mlp(10, 1, 28, &g2);
  io::StFile f = as_file(*src, "model/");
  io::StFile opt = as_file(*src, "optim/0/exp_avg/");
  f.tensors.insert(f.tensors.end(), opt.tensors.begin(), opt.tensors.end());
  WeightLoadReport r = load_weights(*dst, as_named(f), "ck");
  EXPECT_EQ(r.prefix, "model/");
  EXPECT_TRUE(r.unexpected.empty());
  EXPECT_TRUE(same_weights(*src, *dst));
  EXPECT_NE(r.summary().find("optimizer/scheduler tensors of the checkpoint not used"), std::string::npos);
}

TEST(InitFrom, StrictListsEveryMissingExtraAndMisshapedKeyByName) {
  Generator g(1);
  auto ten = models::lenet5(10, 1, 28, &g), five = models::lenet5(5, 1, 28, &g);
  io::StFile f = as_file(*five, "");
  // Drop conv1.bias, add an extra tensor.
  f.tensors.erase(std::remove_if(f.tensors.begin(), f.tensors.end(), [](auto& t) { return t.name == "conv1.bias"; }),
                  f.tensors.end());
  f.tensors.push_back(f.tensors.front());
  f.tensors.back().name = "aux.weight";
  const Tensor before = ten->state_dict().at("fc1.weight").clone();
  const std::string msg = message_of([&] { load_weights(*ten, as_named(f), "pt.safetensors"); });
  for (const char* want : {"weights 'pt.safetensors' do not fit", "missing from the file (1): conv1.bias",
                           "not in the model (1): aux.weight", "fc3.weight: file [5, 84], model [10, 84]",
                           "fc3.bias: file [5], model [10]", "--init-from-partial"})
    EXPECT_NE(msg.find(want), std::string::npos) << want << "\n" << msg;
  // Nothing is copied when the load is refused.
  EXPECT_TRUE(allclose(before, ten->state_dict().at("fc1.weight"), 0, 0));
}

TEST(InitFrom, PartialReinitialisesOnlyTheHead) {
  Generator g1(1), g2(2);
  auto five = models::lenet5(5, 1, 28, &g1), ten = models::lenet5(10, 1, 28, &g2);
  const Tensor head_before = ten->state_dict().at("fc3.weight").clone();
  WeightLoadReport r = load_weights(*ten, as_named(as_file(*five, "")), "pt", {.partial = true});
  EXPECT_EQ(r.mismatched.size(), 2u);
  EXPECT_NE(r.summary().find("shape differs, reinitialised: fc3.weight: file [5, 84], model [10, 84]"),
            std::string::npos)
      << r.summary();
  EXPECT_TRUE(allclose(five->state_dict().at("conv1.weight"), ten->state_dict().at("conv1.weight"), 0, 0));
  EXPECT_TRUE(allclose(head_before, ten->state_dict().at("fc3.weight"), 0, 0));
  // A body of another shape is still refused: that is another architecture, not a new head.
  auto mnist = models::mnistnet(10, 1, 28, &g1);
  const std::string msg = message_of([&] { load_weights(*ten, as_named(as_file(*mnist, "")), "pt", {.partial = true}); });
  EXPECT_NE(msg.find("conv1.weight: file [32, 1, 3, 3], model [6, 1, 5, 5]"), std::string::npos) << msg;
  // Missing keys are allowed in partial mode (a new head the file does not have).
  io::StFile body = as_file(*five, "");
  std::erase_if(body.tensors, [](auto& t) { return t.name.starts_with("fc3."); });
  auto other = models::lenet5(10, 1, 28, &g2);
  r = load_weights(*other, as_named(body), "pt", {.partial = true});
  EXPECT_EQ(r.missing, (std::vector<std::string>{"fc3.weight", "fc3.bias"}));
}

// --init-from in ember train: a file that differs only in the classifier's class count loads, with
// the head replaced and said so; any other difference is still refused, naming every key.
TEST(InitFrom, ReplaceHeadTakesAnotherClassCountOnly) {
  Generator g1(1), g2(2);
  auto five = models::lenet5(5, 1, 28, &g1), ten = models::lenet5(10, 1, 28, &g2);
  const Tensor head_before = ten->state_dict().at("fc3.weight").clone();
  WeightLoadReport r = load_weights(*ten, as_named(as_file(*five, "model.")), "pt", {.replace_head = true});
  EXPECT_EQ(r.loaded.size(), 8u);
  EXPECT_NE(r.summary().find("the classifier 'fc3' differs in shape from the file's (another number of classes): "
                             "replaced"), std::string::npos) << r.summary();
  EXPECT_TRUE(allclose(five->state_dict().at("fc2.weight"), ten->state_dict().at("fc2.weight"), 0, 0));
  EXPECT_TRUE(allclose(head_before, ten->state_dict().at("fc3.weight"), 0, 0));
  // Same shapes: nothing to replace, no note.
  auto ten2 = models::lenet5(10, 1, 28, &g1);
  r = load_weights(*ten2, as_named(as_file(*ten, "")), "pt", {.replace_head = true});
  EXPECT_EQ(r.summary().find("replaced"), std::string::npos) << r.summary();
  // A missing body key besides the new head: refused, as without replace_head.
  io::StFile f = as_file(*five, "");
  std::erase_if(f.tensors, [](auto& t) { return t.name == "conv1.bias"; });
  const std::string msg = message_of([&] { load_weights(*ten, as_named(f), "pt", {.replace_head = true}); });
  EXPECT_NE(msg.find("missing from the file (1): conv1.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fc3.weight: file [5, 84], model [10, 84]"), std::string::npos) << msg;
  // Another architecture is not a new head.
  auto mnist = models::mnistnet(10, 1, 28, &g1);
  EXPECT_THROW(load_weights(*ten, as_named(as_file(*mnist, "")), "pt", {.replace_head = true}), FormatError);
}

// `{k: v.float() for k, v in sd.items()}` makes BatchNorm's counter float32; an older or hand-made
// state dict may lack it. Both load (issue 22: they were "do not fit"), and the notes say so.
TEST(InitFrom, BatchNormCountersMayBeFloatOrMissing) {
  Generator g1(1), g2(2);
  auto src = models::bncnn(10, 1, 28, &g1);
  io::StFile f = as_file(*src, "");
  int counters = 0;
  for (auto& t : f.tensors)
    if (t.name.ends_with("num_batches_tracked")) {
      const float v = 7.0f;  // float32, as .float() leaves it
      t.dtype = io::StDType::F32;
      t.data.assign(reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 4);
      ++counters;
    }
  ASSERT_GT(counters, 0);
  auto dst = models::bncnn(10, 1, 28, &g2);
  WeightLoadReport r = load_weights(*dst, as_named(f), "float.safetensors");
  EXPECT_TRUE(r.mismatched.empty()) << r.summary();
  EXPECT_NE(r.summary().find(fmt::format("cast {} BatchNorm num_batches_tracked from float to int64", counters)),
            std::string::npos)
      << r.summary();
  for (const auto& [k, t] : dst->state_dict())
    if (k.ends_with("num_batches_tracked")) {
      EXPECT_EQ(t.dtype(), DType::Int64);
      EXPECT_EQ(t.to_vector<int64_t>()[0], 7) << k;
    }
  // A counter that is not a whole number is not a counter: still refused.
  io::StFile half = f;
  for (auto& t : half.tensors)
    if (t.name.ends_with("num_batches_tracked")) {
      const float v = 0.5f;
      t.data.assign(reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 4);
    }
  EXPECT_NE(message_of([&] { load_weights(*models::bncnn(10, 1, 28, &g2), as_named(half), "half"); }).find("do not fit"),
            std::string::npos);
  // Missing: kept at the fresh value (0), everything else loaded strictly.
  std::erase_if(f.tensors, [](auto& t) { return t.name.ends_with("num_batches_tracked"); });
  auto fresh = models::bncnn(10, 1, 28, &g2);
  r = load_weights(*fresh, as_named(f), "old.safetensors");
  EXPECT_TRUE(r.missing.empty()) << r.summary();
  EXPECT_NE(r.summary().find(fmt::format("{} BatchNorm num_batches_tracked not in the file: kept", counters)),
            std::string::npos)
      << r.summary();
  EXPECT_TRUE(allclose(src->state_dict().at("conv1.weight"), fresh->state_dict().at("conv1.weight"), 0, 0));
}

// Weights that do not fit the run's model say which zoo model, or which input geometry, they fit.
TEST(InitFrom, AFileThatFitsAnotherModelOrGeometrySaysWhich) {
  Generator g(1);
  // The README's line: a PyTorch lenet5 state dict (no metadata) given to the default model.
  const NamedTensors lenet = as_named(as_file(*models::lenet5(10, 1, 28, &g), ""));
  EXPECT_EQ(weights_fit_hint(lenet, {}, "bncnn48_fc128", {10, 1, 28, false}), "these weights fit --model lenet5");
  // A Fashion-MNIST run's weights (1x28x28, metadata says so) into a 3-class RGB photo folder at 32.
  std::map<std::string, std::string> meta = to_metadata({.model = "lenet5", .dataset = "fashion-mnist",
                                                         .input_shape = {1, 28, 28}});
  EXPECT_EQ(weights_fit_hint(lenet, meta, "lenet5", {3, 3, 32, true}),
            "these weights were trained on 1x28x28 inputs: pass --channels 1 --image-size 28, with "
            "--init-from-partial (a new head 'fc3.*' for 3 classes)");
  // Another model at another geometry.
  EXPECT_EQ(weights_fit_hint(lenet, meta, "mlp", {10, 3, 32, true}),
            "these weights fit --model lenet5 on 1x28x28 inputs: pass --channels 1 --image-size 28");
  // Nothing in the zoo: no hint.
  NamedTensors odd = {{"w", zeros({3, 3})}};
  EXPECT_EQ(weights_fit_hint(odd, {}, "lenet5", {10, 1, 28, false}), "");
}

TEST(InitFrom, ReadsAFileAndNamesPyTorchPicklesZipsAndOnnx) {
  test::TempDir d;
  Generator g(1);
  auto src = models::mlp(10, 1, 28, &g), dst = models::mlp(10, 1, 28, &g);
  io::st_save(d.path() / "pt.safetensors", as_file(*src, "module.", DType::BFloat16));
  WeightLoadReport r = init_from_file(*dst, d.path() / "pt.safetensors");
  EXPECT_EQ(r.prefix, "module.");
  EXPECT_TRUE(same_weights(*src, *dst, 2e-2));

  struct Case {
    const char* file;
    std::string bytes;
    const char* what;
  };
  auto bytes = [](std::initializer_list<int> b, const std::string& tail = "") {
    std::string s;
    for (int x : b) s += char(x);
    return s + tail;
  };
  // torch.save's zip: a local file header (30 bytes, the name length at 26) and "archive/data.pkl".
  std::string zip = bytes({'P', 'K', 3, 4, 20, 0});
  zip.resize(26, '\0');
  zip += bytes({16, 0, 0, 0}, "archive/data.pkl");
  // A torch.save zip is read by the .pth reader (io/pth.h): this one is cut off after its first header.
  test::write_text(d.path() / "zip.pt", zip);
  const std::string cut = message_of([&] { init_from_file(*dst, d.path() / "zip.pt"); });
  // Issue 48: the reader's words, not its internal names ("pth: ", "Archive: ").
  EXPECT_EQ(cut.find("pth: "), std::string::npos) << cut;
  EXPECT_NE(cut.find("zip.pt: not a readable torch.save archive: no end-of-central-directory record (the archive is "
                     "truncated)"), std::string::npos) << cut;
  const std::string resume_zip = message_of([&] { find_resume_point(d.path() / "zip.pt"); });
  EXPECT_NE(resume_zip.find("is a PyTorch torch.save file, not an ember run"), std::string::npos) << resume_zip;
  // The legacy magic number cut short, and other pickles, are named and converted by hand.
  const std::vector<Case> cases = {
      {"legacy.pt", bytes({0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8}), "is a Python pickle"},
      {"model.onnx", bytes({0x08, 0x08, 0x12, 0x07}, "pytorch") + bytes({0x1a, 0x03}, "2.1"), "is an ONNX model"},
  };
  for (const auto& c : cases) {
    test::write_text(d.path() / c.file, c.bytes);
    const std::string msg = message_of([&] { init_from_file(*dst, d.path() / c.file); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.file << ": " << msg;
    EXPECT_NE(msg.find("not a safetensors file"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("HeaderTooLarge"), std::string::npos) << msg;
    if (std::string(c.file).ends_with(".pt")) {
      EXPECT_NE(msg.find("save_file"), std::string::npos) << msg;  // how to convert it
      // --resume names it too, and points at --init-from.
      const std::string resume = message_of([&] { find_resume_point(d.path() / c.file); });
      EXPECT_NE(resume.find(c.what), std::string::npos) << resume;
      EXPECT_NE(resume.find("--init-from"), std::string::npos) << resume;
    }
  }
  // Damaged safetensors stay "corrupt or truncated".
  test::write_text(d.path() / "bad.safetensors", bytes({0x10, 0, 0, 0, 0, 0, 0, 0}, "{\"a\":"));
  EXPECT_NE(message_of([&] { init_from_file(*dst, d.path() / "bad.safetensors"); }).find("corrupt or truncated"),
            std::string::npos);
}

TEST(WeightsInfo, MetadataRoundTripsAndRejectsWrongValues) {
  WeightsInfo w;
  w.ember_version = "0.1.0";
  w.model = "my_net.toml";
  w.model_spec = "[[layer]]\ntype = \"flatten\"\n";
  w.dataset = "fashion-mnist";
  w.input_shape = {1, 28, 28};
  w.mean = {0.25f};
  w.std = {0.5f};
  w.classes = {"T-shirt/top", "Trouser"};
  w.config_json = R"({"lr":0.01})";
  auto m = to_metadata(w);
  EXPECT_EQ(m.at("input_shape"), "[1,28,28]");
  EXPECT_EQ(m.at("classes"), R"(["T-shirt/top","Trouser"])");
  WeightsInfo back = weights_info_from_metadata(m, "f");
  EXPECT_EQ(back.model_spec, w.model_spec);
  EXPECT_EQ(back.input_shape, w.input_shape);
  EXPECT_EQ(back.mean, w.mean);
  EXPECT_EQ(back.classes, w.classes);
  EXPECT_TRUE(weights_info_from_metadata({{"format", "pt"}}, "f").empty());  // another tool's keys
  // Any text survives the header: quotes, newlines, a NUL (escaped as \u0000, never a raw NUL,
  // which the reader rejects because nlohmann would stop parsing at it).
  w.model_spec = std::string("# \"quoted\"\n\ttab \0 nul\n", 22);
  io::StFile f;
  f.metadata = to_metadata(w);
  const std::vector<uint8_t> bytes = io::st_serialize(f);
  EXPECT_EQ(std::find(bytes.begin() + 8, bytes.end(), 0), bytes.end());
  EXPECT_EQ(weights_info_from_metadata(io::st_parse(bytes, "m").metadata, "m").model_spec, w.model_spec);
  m["input_shape"] = "[1,-28]";
  EXPECT_NE(message_of([&] { weights_info_from_metadata(m, "x.safetensors"); })
                .find("'x.safetensors': __metadata__ \"input_shape\" must be a JSON list of positive integers"),
            std::string::npos);
}

TEST(WeightsInfo, CheckpointWeightsCarryMetadata) {
  test::TempDir d;
  Generator g(1);
  auto model = models::mlp(10, 1, 28, &g);
  CheckpointManifest m;
  m.ember_version = version();
  m.model = "mlp";
  m.dataset = "fashion-mnist";
  m.weights_metadata = {{"classes", R"(["a","b"])"}};
  NamedTensors t;
  for (const auto& [k, v] : model->state_dict()) t.emplace_back("model/" + k, v);
  save_checkpoint(d.path(), "latest", m, t);
  Checkpoint ck = load_checkpoint(d.path() / "latest.json");
  const fs::path weights = ck.weights_path;
  io::StFile f = io::st_load(weights);
  EXPECT_EQ(f.metadata.at("model"), "mlp");
  EXPECT_EQ(f.metadata.at("dataset"), "fashion-mnist");
  EXPECT_EQ(f.metadata.at("ember_version"), version());
  EXPECT_EQ(f.metadata.at("classes"), R"(["a","b"])");
  // Copied out of its run, the bare file still says what it is.
  fs::copy_file(weights, d.path() / "copy.safetensors");
  Checkpoint bare = load_checkpoint(d.path() / "copy.safetensors");
  EXPECT_TRUE(bare.manifest.model.empty());
  EXPECT_EQ(weights_info_from_metadata(bare.metadata, "copy").model, "mlp");
}

// Writes what the Python export checks (tests/export/*.py) compare against, from ember itself:
//   zoo OUTDIR      every zoo model and two model specs (every layer kind a spec can hold), seeded,
//                   with non-trivial BatchNorm statistics: CASE.onnx, CASE.safetensors (the exports)
//                   and CASE.io.safetensors (input pixel/255, the normalised input, ember's logits);
//                   cases.json lists them with their geometry.
//   run RUN OUT     a trained run's test set through ember: OUT holds its images (uint8), labels and
//                   logits, computed by the model load_export_source rebuilds.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/autograd/node.h"
#include "ember/ember.h"
#include "ember/io/onnx.h"
#include "ember/io/safetensors.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/train/dataset.h"
#include "ember/train/export.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

// Every layer kind of a spec: grouped + dilated conv without bias, GELU, padded pooling, residual
// blocks with and without a downsample, and an adaptive pool whose sizes do not divide (7 -> 3);
// the MobileNet activations (hardswish, relu6, silu, hardsigmoid) between them.
const char* kSpecAll = R"(
[[layer]]
type = "conv2d"
out_channels = 8
kernel_size = 3
padding = 1
[[layer]]
type = "batchnorm2d"
[[layer]]
type = "relu"
[[layer]]
type = "conv2d"
out_channels = 8
kernel_size = 3
dilation = 2
groups = 2
bias = false
[[layer]]
type = "gelu"
[[layer]]
type = "hardswish"
[[layer]]
type = "maxpool2d"
kernel_size = 3
stride = 2
padding = 1
[[layer]]
type = "residual"
out_channels = 16
stride = 2
[[layer]]
type = "relu6"
[[layer]]
type = "residual"
[[layer]]
type = "silu"
[[layer]]
type = "avgpool2d"
kernel_size = 2
stride = 1
padding = 1
[[layer]]
type = "adaptiveavgpool2d"
output_size = 3
[[layer]]
type = "dropout"
p = 0.3
[[layer]]
type = "flatten"
[[layer]]
type = "linear"
out_features = 32
[[layer]]
type = "relu"
[[layer]]
type = "hardsigmoid"
[[layer]]
type = "linear"
out_features = "classes"
bias = false
)";
// An adaptive pool whose sizes divide (8 -> 2: one AveragePool) and a batch norm with its own eps.
const char* kSpecPool = R"(
[[layer]]
type = "conv2d"
out_channels = 4
kernel_size = 3
stride = 2
padding = 1
[[layer]]
type = "batchnorm2d"
eps = 0.001
[[layer]]
type = "adaptiveavgpool2d"
output_size = 2
[[layer]]
type = "flatten"
[[layer]]
type = "linear"
out_features = "classes"
)";

struct Case {
  std::string name, model, spec;
  int64_t channels, size, classes;
};
const std::vector<Case> kCases = {
    {"mlp", "mlp", "", 1, 8, 10},
    {"lenet5", "lenet5", "", 1, 28, 10},
    {"mnistnet", "mnistnet", "", 1, 28, 10},
    {"bncnn", "bncnn", "", 1, 28, 10},
    {"bncnn_fc128", "bncnn_fc128", "", 3, 16, 7},
    {"bncnn48_fc128", "bncnn48_fc128", "", 1, 28, 10},
    {"resnet_small", "resnet_small", "", 3, 16, 7},
    {"alexnet_cifar", "alexnet_cifar", "", 3, 16, 10},
    // torchvision's: a Fashion-MNIST-shaped resnet18, the Bottleneck, the CIFAR stem (no maxpool),
    // and alexnet at 100x100, where avgpool maps 2x2 to 6x6 (sizes that do not divide).
    {"resnet18", "resnet18", "", 1, 28, 10},
    {"resnet34", "resnet34", "", 3, 32, 10},
    {"resnet50", "resnet50", "", 3, 64, 5},
    {"resnet18_cifar", "resnet18_cifar", "", 3, 32, 10},
    {"alexnet", "alexnet", "", 3, 100, 10},
    {"mobilenet_v2", "mobilenet_v2", "", 3, 32, 10},
    {"mobilenet_v3_small", "mobilenet_v3_small", "", 3, 32, 10},
    {"efficientnet_b0", "efficientnet_b0", "", 1, 32, 6},
    {"spec_all", "spec_all.toml", kSpecAll, 3, 20, 5},
    {"spec_pool", "spec_pool.toml", kSpecPool, 2, 16, 3},
};

io::StTensor st_tensor(const std::string& name, const Tensor& t) {
  Tensor c = t.contiguous();
  io::StTensor st;
  st.name = name;
  st.dtype = c.dtype() == DType::Int64 ? io::StDType::I64 : c.dtype() == DType::UInt8 ? io::StDType::U8 : io::StDType::F32;
  st.shape = c.sizes();
  const auto* p = static_cast<const uint8_t*>(c.raw_data());
  st.data.assign(p, p + c.nbytes());
  return st;
}

// (x - mean[c]) / std[c] per channel of (N, C, H, W) float32.
Tensor normalise(const Tensor& x, const std::vector<float>& mean, const std::vector<float>& sd) {
  std::vector<float> v = x.to_vector<float>();
  const int64_t c = x.size(1), hw = x.size(2) * x.size(3);
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t ch = size_t((int64_t(i) / hw) % c);
    v[i] = (v[i] - mean[ch]) / sd[ch];
  }
  return from_blob_copy(v.data(), x.sizes(), DType::Float32);
}

// BatchNorm's running statistics away from (0, 1), so an export that ignores them fails.
void perturb_batch_norms(nn::Module& m, Generator& gen) {
  for (auto& [name, t] : m.named_buffers()) {
    if (name.ends_with("running_mean")) t.detach().copy_(randn(t.sizes(), {}, &gen) * 0.3);
    if (name.ends_with("running_var")) t.detach().copy_(rand(t.sizes(), {}, &gen) + 0.5);
    if (name.ends_with("num_batches_tracked")) t.detach().fill_(7);
  }
  for (auto& [name, t] : m.named_parameters())
    if (name.find("bn") != std::string::npos || t.dim() == 1) t.detach().copy_(t.detach() + randn(t.sizes(), {}, &gen) * 0.1);
}

int zoo(const fs::path& out) {
  fs::create_directories(out);
  autograd::NoGradGuard ng;
  nlohmann::json cases = nlohmann::json::array();
  for (const Case& c : kCases) {
    Generator gen(1234);
    std::shared_ptr<nn::Module> model =
        c.spec.empty() ? models::create(c.model, c.classes, c.channels, c.size, &gen)
                       : nn::model_from_spec(c.spec, c.model, c.classes, c.channels, c.size, &gen);
    perturb_batch_norms(*model, gen);
    model->eval();
    train::ExportSource s;
    s.model = model;
    s.model_name = c.model;
    s.model_spec = c.spec;
    s.dataset = "synthetic";
    s.input_shape = {c.channels, c.size, c.size};
    for (int64_t i = 0; i < c.channels; ++i) {
      s.mean.push_back(0.25f + 0.1f * float(i));
      s.std.push_back(0.3f + 0.05f * float(i));
    }
    for (int64_t i = 0; i < c.classes; ++i) s.classes.push_back("class " + std::to_string(i));
    // Pixels as a camera gives them (whole values / 255), four samples.
    std::vector<float> px = rand({4, c.channels, c.size, c.size}, {}, &gen).to_vector<float>();
    for (float& v : px) v = std::floor(v * 256.0f) / 255.0f;
    Tensor x = from_blob_copy(px.data(), {4, c.channels, c.size, c.size}, DType::Float32);
    Tensor xn = normalise(x, s.mean, s.std);
    Tensor logits = (*model)(xn);
    io::onnx_save(out / (c.name + ".onnx"), train::export_onnx(s));
    io::st_save(out / (c.name + ".safetensors"), train::export_state_dict(s));
    io::StFile io;
    io.tensors = {st_tensor("input", x), st_tensor("input_normalised", xn), st_tensor("logits", logits)};
    io::st_save(out / (c.name + ".io.safetensors"), io);
    cases.push_back({{"name", c.name}, {"model", c.model}, {"channels", c.channels}, {"size", c.size},
                     {"classes", c.classes}, {"spec", c.spec}});
    fmt::print("{}: {} parameters, logits {}\n", c.name, model->num_parameters(), shape_str(logits.sizes()));
  }
  std::ofstream(out / "cases.json") << cases.dump(1);
  return 0;
}

int run(const fs::path& run_dir, const fs::path& out) {
  autograd::NoGradGuard ng;
  train::ExportSource s = train::load_export_source(run_dir);
  const nlohmann::json cfg = nlohmann::json::parse(s.manifest.config_json);
  data::Dataset test = train::load_split(s.dataset, cfg.value("data_dir", std::string()), false,
                                        cfg.value("limit_test", int64_t(0)), cfg.value("seed", uint64_t(0)));
  Tensor x = test.images.to(DType::Float32) / 255.0;
  std::vector<Tensor> parts;
  const int64_t n = x.size(0), batch = 500;
  std::vector<float> all;
  for (int64_t i = 0; i < n; i += batch) {
    Tensor xb = x.slice(0, i, std::min(n, i + batch));
    std::vector<float> l = (*s.model)(normalise(xb, s.mean, s.std)).to_vector<float>();
    all.insert(all.end(), l.begin(), l.end());
  }
  Tensor logits = from_blob_copy(all.data(), {n, int64_t(s.classes.size())}, DType::Float32);
  io::StFile f;
  f.tensors = {st_tensor("images", test.images), st_tensor("labels", test.labels), st_tensor("logits", logits)};
  io::st_save(out, f);
  fmt::print("{}: {} test samples of {}\n", run_dir.string(), n, s.dataset);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "zoo" && argc == 3) return zoo(argv[2]);
    if (mode == "run" && argc == 4) return run(argv[2], argv[3]);
    fmt::print(stderr, "usage: {} zoo OUTDIR | run RUN_DIR OUT.safetensors\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "export_fixture: {}\n", e.what());
    return 1;
  }
}

// `ember export` below the CLI: a checkpoint's model rebuilt with its weights and its input
// description (from the manifest, the run's config or the file's __metadata__), then written as
// an ONNX graph or a PyTorch-keyed safetensors state dict.
#include "ember/train/export.h"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ember/data/dataset.h"
#include "ember/io/user_file.h"
#include "ember/nn/export_onnx.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/train/resume.h"
#include "ember/train/weights_info.h"

namespace ember::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string meta_str(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  return it == meta.end() ? std::string() : it->second;
}

}  // namespace

ExportSource load_export_source(const fs::path& path, const ExportOverrides& ov) {
  Checkpoint ck = load_checkpoint(path);
  ExportSource s;
  s.manifest = ck.manifest;
  s.weights = ck.weights_path;
  // A bare weights file has no manifest: what it says about itself is in its __metadata__.
  const std::map<std::string, std::string>& meta = ck.metadata;
  const WeightsInfo info = weights_info_from_metadata(meta, ck.weights_path.string());
  const std::string config_json = !ck.manifest.config_json.empty() ? ck.manifest.config_json : info.config_json;

  if (ck.manifest.epoch == 0 && ck.manifest.step == 0) {  // an earlier export says where it came from
    s.manifest.epoch = std::atoll(meta_str(meta, "epoch").c_str());
    s.manifest.step = std::atoll(meta_str(meta, "step").c_str());
  }
  s.dataset = !ov.data.empty() ? ov.data : !ck.manifest.dataset.empty() ? ck.manifest.dataset : info.dataset;
  const StoredInput in = stored_input(info, config_json, s.dataset, path.string());
  s.input_shape = in.input_shape, s.mean = in.mean, s.std = in.std, s.classes = in.classes;
  // The data settings travel with an export, so eval finds the run's test set from the file alone.
  const json cfg = json::parse(config_json.empty() ? "{}" : config_json, nullptr, false);
  if (cfg.is_object()) {
    json data = json::object();
    for (const char* key : {"data", "data_dir", "seed", "image_folder"})
      if (cfg.contains(key)) data[key] = cfg[key];
    if (!data.empty()) s.config_json = data.dump();
  }

  // The model: --model, else the manifest's (a spec model from the run's copy), else the metadata's.
  std::string model_arg;
  if (!ov.model.empty()) {
    s.model_name = model_arg = ov.model;
  } else if (!ck.manifest.model.empty()) {
    s.model_name = ck.manifest.model;
    model_arg = run_model(ck.manifest.model, run_dir_of(path).value_or(fs::path()));
  } else {
    s.model_name = meta_str(meta, "model");
    s.model_spec = meta_str(meta, "model_spec");
    model_arg = s.model_name;
  }
  if (s.model_name.empty())
    throw ValueError(fmt::format("'{}' does not say which model it holds", path.string()),
                     "pass --model NAME (a zoo model or the model spec file it was trained with)");
  const int64_t classes = int64_t(s.classes.size());
  Generator gen(0);  // the initial values are overwritten by the checkpoint's
  if (!s.model_spec.empty()) {
    s.model = nn::model_from_spec(s.model_spec, s.model_name, classes, s.input_shape[0], s.input_shape[1], &gen);
  } else {
    if (nn::is_spec_file(model_arg)) s.model_spec = io::read_user_text(model_arg, io::kModelSpecFile);
    s.model = models::create(model_arg, classes, s.input_shape[0], s.input_shape[1], &gen);
  }

  // Checkpoints keep the model under "model/" next to the optimizer state; exports and other
  // tools' files hold the bare keys.
  StateDict sd;
  const std::vector<std::string> keys = s.model->state_dict().keys();
  const bool prefixed = !keys.empty() && ck.find("model/" + keys.front()) != nullptr;
  for (const auto& [k, t] : ck.tensors) {
    if (prefixed && !k.starts_with("model/")) continue;
    sd.insert(prefixed ? k.substr(6) : k, t);
  }
  try {
    s.model->load_state_dict(sd);
  } catch (const Error& e) {
    throw FormatError(fmt::format("checkpoint '{}' does not fit model '{}' for {} inputs of {}: {}", path.string(),
                                  s.model_name, s.dataset, shape_str(s.input_shape), e.what()),
                      "pass the --model (and --data) the checkpoint was trained with");
  }
  s.model->eval();
  return s;
}

std::map<std::string, std::string> export_metadata(const ExportSource& s) {
  std::map<std::string, std::string> m = {{"ember_version", version()},  {"model", s.model_name},
                                          {"dataset", s.dataset},        {"input_shape", json(s.input_shape).dump()},
                                          {"mean", json(s.mean).dump()}, {"std", json(s.std).dump()},
                                          {"classes", json(s.classes).dump()}};
  if (!s.model_spec.empty()) m["model_spec"] = s.model_spec;
  if (s.manifest.epoch || s.manifest.step) {
    m["epoch"] = std::to_string(s.manifest.epoch);
    m["step"] = std::to_string(s.manifest.step);
  }
  return m;
}

io::OnnxModel export_onnx(const ExportSource& s, bool fold_batch_norm) {
  nn::OnnxExportOptions o;
  o.fold_batch_norm = fold_batch_norm;
  o.input_shape = s.input_shape;
  o.mean = s.mean, o.std = s.std;
  o.graph_name = s.model_name;
  o.doc_string = fmt::format("{} trained by ember on {}. input: float32 (N, {}, {}, {}), pixel / 255 (normalised "
                             "inside the graph); output: logits (N, {}).",
                             s.model_name, s.dataset, s.input_shape[0], s.input_shape[1], s.input_shape[2],
                             s.classes.size());
  for (auto& [k, v] : export_metadata(s)) o.metadata.emplace_back(k, v);
  o.metadata.emplace_back("input", "float32 (N, C, H, W), pixel / 255; normalised inside the graph");
  return nn::to_onnx(*s.model, o);
}

io::StFile export_state_dict(const ExportSource& s) {
  io::StFile f;
  for (const auto& [name, t] : s.model->state_dict()) {
    const bool is_float = is_floating(t.dtype());
    Tensor c = t.detach().cpu().to(is_float ? DType::Float32 : DType::Int64).contiguous();
    io::StTensor st;
    st.name = name;
    st.dtype = is_float ? io::StDType::F32 : io::StDType::I64;
    st.shape = c.sizes();
    const auto* p = static_cast<const uint8_t*>(c.raw_data());
    st.data.assign(p, p + c.nbytes());
    f.tensors.push_back(std::move(st));
  }
  f.metadata = export_metadata(s);
  if (!s.config_json.empty()) f.metadata["config"] = s.config_json;  // read back by ember eval/predict
  f.metadata["format"] = "pt";  // what Hugging Face's loaders look for in a PyTorch state dict
  f.metadata["input"] = "float32 (N, C, H, W), (pixel / 255 - mean) / std";
  return f;
}

}  // namespace ember::train

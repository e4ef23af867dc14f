// `ember export` below the CLI: a checkpoint's model rebuilt with its weights and its input
// description (from the manifest, the run's config or the file's __metadata__), then written as
// an ONNX graph, a PyTorch-keyed safetensors state dict or PyTorch's own torch.save file; and which
// of them a call asks for.
#include "ember/train/export.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ember/data/dataset.h"
#include "ember/io/pth.h"
#include "ember/io/user_file.h"
#include "ember/nn/export_onnx.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/train/inference.h"
#include "ember/train/resume.h"
#include "ember/train/settings.h"
#include "ember/train/weights_info.h"

namespace ember::train {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> export_format_names() { return {"onnx", "safetensors", "torch"}; }

ExportFormat export_format(const std::string& format, const fs::path& output, FrontEnd front_end) {
  const bool cli = front_end == FrontEnd::Cli;
  if (!format.empty()) {
    if (format == "onnx") return ExportFormat::Onnx;
    if (format == "safetensors") return ExportFormat::Safetensors;
    if (format == "torch" || format == "pt" || format == "pth") return ExportFormat::Torch;
    throw SettingError(fmt::format("{}{} is not a format ember exports", cli ? "--format " : "format=", format),
                       cli ? "pass --format onnx, safetensors or torch" : "pass format='onnx', 'safetensors' or 'torch'");
  }
  std::string ext = output.extension().string();
  for (auto& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".onnx") return ExportFormat::Onnx;
  if (ext == ".safetensors") return ExportFormat::Safetensors;
  if (ext == ".pt" || ext == ".pth") return ExportFormat::Torch;
  throw SettingError(fmt::format("cannot tell the format from '{}'", output.string()),
                     fmt::format("{} (or name the file *.onnx, *.safetensors, or *.pt / *.pth for torch.save's "
                                 "format)",
                                 cli ? "pass --format onnx, safetensors or torch"
                                     : "pass format='onnx', 'safetensors' or 'torch'"));
}

ExportSource load_export_source(const fs::path& path, const ExportOverrides& ov) {
  // Opened as eval and predict open it (inference.h): the same model, input and data rules.
  InferenceOptions o;
  o.path = path.string();
  o.model = ov.model, o.data = ov.data, o.checkpoint = ov.checkpoint;
  o.device = "cpu", o.precision = "fp32";
  o.read_look = false;
  InferenceModel l = open_for_inference(o, /*need_test=*/false);
  ExportSource s;
  s.model = std::move(l.model);
  // The name the run recorded ("net.toml" for a spec run, not the path of the run's copy).
  s.model_name = !ov.model.empty() ? ov.model : !l.recorded_model.empty() ? l.recorded_model : l.model_name;
  s.model_spec = l.model_spec;
  s.dataset = l.data;
  s.input_shape = l.input.input_shape, s.mean = l.input.mean, s.std = l.input.std, s.classes = l.input.classes;
  s.manifest = l.manifest;
  s.weights = l.weights;
  s.notes = l.notes;
  s.chosen = l.chosen;
  // The data settings travel with an export, so eval finds the run's test set from the file alone.
  const json cfg = json::parse(l.config_json.empty() ? "{}" : l.config_json, nullptr, false);
  if (cfg.is_object()) {
    json data = json::object();
    for (const char* key : {"data", "data_dir", "seed", "image_folder"})
      if (cfg.contains(key)) data[key] = cfg[key];
    if (!data.empty()) s.config_json = data.dump();
  }
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

std::vector<uint8_t> export_torch(const ExportSource& s) {
  return io::pth_serialize(export_state_dict(s).tensors);
}

}  // namespace ember::train

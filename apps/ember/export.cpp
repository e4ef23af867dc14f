// ember export RUN|CHECKPOINT --format onnx|safetensors|torch -o FILE: a trained model as an ONNX
// graph (onnxruntime and other runtimes), a PyTorch-keyed safetensors state dict (load_state_dict),
// or torch.save's own file (torch.load). The format and the files are the library's (train/export.h).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "ember/io/atomic_file.h"
#include "ember/io/onnx.h"
#include "ember/io/safetensors.h"
#include "ember/train/export.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

struct ExportOpts {
  std::string path, format, output, model, data;
  std::string checkpoint;  // --checkpoint best|last ("": best)
  bool fold_bn = false;    // --fold-bn (ONNX only)
};

int run_export(const ExportOpts& o) {
  const train::ExportFormat format = train::export_format(o.format, o.output, train::FrontEnd::Cli);
  // The checkpoint a path names, opened by the library's rule (ember/train/open_weights.h).
  train::ExportSource s = train::load_export_source(o.path, {o.model, o.data, o.checkpoint});
  const train::ChosenCheckpoint& chosen = s.chosen;
  for (const auto& note : s.notes) fmt::print(stderr, "ember: note: {}\n", note);
  const std::string trained_on = s.dataset.empty() ? "data it does not name (bare weights)" : s.dataset;
  std::error_code ec;
  const bool to_stdout = io::names_stdout(o.output);  // -o - (or /dev/stdout): the bytes, the summary on stderr
  if (!to_stdout && fs::exists(o.output) && fs::equivalent(o.output, s.weights, ec))
    throw UsageError(fmt::format("-o '{}' is the checkpoint's own weights file", o.output),
                     "write the export to a new file");
  std::FILE* out = to_stdout ? stderr : stdout;
  const std::string shown = to_stdout ? "standard output" : o.output;
  auto write = [&](const std::vector<uint8_t>& bytes, const std::string& what) {
    if (to_stdout) io::write_stdout(bytes, what);
    else io::write_file_atomic(o.output, bytes);
  };
  const int64_t params = s.model->num_parameters();
  const std::string input = fmt::format("({}, {}, {})", s.input_shape[0], s.input_shape[1], s.input_shape[2]);
  if (format == train::ExportFormat::Onnx) {
    const io::OnnxModel m = train::export_onnx(s, o.fold_bn);
    const std::vector<uint8_t> bytes = io::onnx_serialize(m);
    write(bytes, "the ONNX model");
    fmt::print(out, "wrote {} (ONNX opset {}, IR {}, {} nodes, {} parameters, {:.2f} MB)\n", shown, m.opset,
               m.ir_version, m.graph.nodes.size(), params, double(bytes.size()) / 1e6);
    fmt::print(out, "  model  {} trained on {}, epoch {}, step {}\n", s.model_name, trained_on, s.manifest.epoch,
               s.manifest.step);
    fmt::print(out, "  input  \"input\": float32 (batch, {}, {}, {}), pixel / 255; normalised inside the graph\n"
               "         (mean {}, std {})\n",
               s.input_shape[0], s.input_shape[1], s.input_shape[2], fmt::join(s.mean, ", "), fmt::join(s.std, ", "));
    fmt::print(out, "  output \"logits\": float32 (batch, {})\n", s.classes.size());
    if (!chosen.summary.empty()) fmt::print(out, "  from   {}\n", chosen.summary);
  } else if (format == train::ExportFormat::Torch) {
    const std::vector<uint8_t> bytes = train::export_torch(s);
    write(bytes, "the torch.save file");
    fmt::print(out, "wrote {} (torch.save state dict, {} parameters, {:.2f} MB)\n", shown, params,
               double(bytes.size()) / 1e6);
    fmt::print(out, "  model  {} trained on {}, epoch {}, step {}\n  input  {} normalised with mean {}, std {}\n",
               s.model_name, trained_on, s.manifest.epoch, s.manifest.step, input, fmt::join(s.mean, ", "),
               fmt::join(s.std, ", "));
    fmt::print(out, "  load   model.load_state_dict(torch.load(\"{}\", weights_only=True))\n", shown);
    if (!chosen.summary.empty()) fmt::print(out, "  from   {}\n", chosen.summary);
  } else {
    const io::StFile f = train::export_state_dict(s);
    write(io::st_serialize(f), "the safetensors file");
    fmt::print(out, "wrote {} (safetensors, {} tensors, {} parameters, PyTorch state_dict keys)\n", shown,
               f.tensors.size(), params);
    fmt::print(out, "  model  {} trained on {}, epoch {}, step {}\n  input  {} normalised with mean {}, std {}\n",
               s.model_name, trained_on, s.manifest.epoch, s.manifest.step, input, fmt::join(s.mean, ", "),
               fmt::join(s.std, ", "));
    if (!chosen.summary.empty()) fmt::print(out, "  from   {}\n", chosen.summary);
  }
  return kExitOk;
}

}  // namespace

void register_export(CLI::App& root, Runner& run) {
  auto o = std::make_shared<ExportOpts>();
  auto* e = root.add_subcommand("export", "Write a trained model as ONNX (opset 17), a PyTorch safetensors state dict or a torch.save file");
  e->add_option("path", o->path, "Run directory (runs/<name>) or checkpoint (.json or .safetensors)")->required();
  e->add_option("--format", o->format,
                "onnx, safetensors or torch (torch.save's state dict) (default: from the -o file's extension: "
                ".onnx, .safetensors, .pt or .pth)")
      ->check(CLI::IsMember(train::export_format_names()));
  e->add_option("-o,--output", o->output,
                "The file to write (a symlink is written through; - for standard output when it is a pipe or file)")
      ->required();
  e->add_option("--model", o->model, "Model name or spec file (default: from the checkpoint)");
  e->add_option("--data", o->data, "Dataset the model was trained on (default: from the checkpoint)");
  e->add_flag("--fold-bn", o->fold_bn,
              "ONNX: fold each convolution's batch norm into its weight and bias (no BatchNormalization nodes "
              "after a Conv; the same logits within float32 rounding)");
  e->add_option("--checkpoint", o->checkpoint, "Which of a run's checkpoints: best (the epoch validation chose) or last")
      ->check(CLI::IsMember({"best", "last"}))->default_str("best");
  e->footer(
      "ONNX: input \"input\" float32 (batch, C, H, W) holding pixel / 255, normalised inside the graph; output "
      "\"logits\". safetensors: the model's state_dict with PyTorch's key names (load_state_dict(strict=True)); "
      "__metadata__ holds the model, dataset, input shape, mean, std and class names. torch (.pt, .pth): the "
      "same state dict as torch.save writes it, for torch.load(weights_only=True). See docs/export.md.");
  e->callback([&run, o] { run = [o] { return run_export(*o); }; });
}

}  // namespace ember::cli

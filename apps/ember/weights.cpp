// ember weights info FILE: what a weights file holds (safetensors, a PyTorch .pth/.pt, a run
// directory) — each tensor's name, dtype and shape, the parameter count — and which zoo models
// take it, so a user can pick --model before `ember train --init-from FILE`.
#include <fmt/format.h>

#include "cli.h"
#include "ember/core/tensor.h"
#include "ember/train/checkpoint.h"
#include "ember/train/init_from.h"

namespace ember::cli {
namespace {

struct WeightsOpts {
  std::string file;
};

int run_info(const WeightsOpts& o) {
  const train::Checkpoint ck = train::load_checkpoint(o.file);
  fmt::print("{}: {}\n", ck.weights_path.string(), ck.source_note.empty() ? "safetensors" : ck.source_note);
  size_t name_width = 4;
  for (const auto& [name, t] : ck.tensors) name_width = std::max(name_width, name.size());
  name_width = std::min<size_t>(name_width, 48);  // long names run past the column, not the terminal
  fmt::print("  {} {:<9} {}\n", pad_right("name", int(name_width)), "dtype", "shape");
  int64_t values = 0;
  for (const auto& [name, t] : ck.tensors) {
    fmt::print("  {} {:<9} {}\n", pad_right(name, int(name_width)), dtype_name(t.dtype()), shape_str(t.sizes()));
    values += t.numel();
  }
  fmt::print("{}, {} parameters (every tensor's elements, buffers included)\n", plural(int64_t(ck.tensors.size()), "tensor"),
             thousands(values));
  for (const auto& [key, value] : ck.metadata) fmt::print("metadata  {} = {}\n", key, truncate_to_width(value, 60));
  const std::vector<train::WeightsFit> fits = train::zoo_fits(ck.tensors, ck.metadata);
  if (fits.empty())
    fmt::print("fits no zoo model (tried at the input size the weights imply, 1x28x28, 3x32x32 and, for\n"
               "  torchvision's architectures, 3x224x224);\n"
               "  a model spec (--model FILE.toml) with these names and shapes can take them\n");
  for (const auto& f : fits) {
    if (f.imagenet_architecture)  // a file that does not say what it was trained on
      fmt::print("fits --model {} with {} classes: torchvision's architecture, built for {}x{}x{} photos{}\n"
                 "  (it takes other sizes too; for grey images its stem is summed over RGB when loaded)\n",
                 f.model, f.num_classes, f.channels, f.image_size, f.image_size,
                 f.num_classes == 1000 ? " (1000 classes: torchvision's ImageNet weights, trained at 224x224)" : "");
    else
      fmt::print("fits --model {} on {}x{}x{} inputs with {} classes\n", f.model, f.channels, f.image_size,
                 f.image_size, f.num_classes);
  }
  return kExitOk;
}

}  // namespace

void register_weights(CLI::App& root, Runner& run) {
  auto* w = root.add_subcommand("weights", "Weights files (safetensors, PyTorch .pth/.pt): info");
  w->require_subcommand(1);
  auto o = std::make_shared<WeightsOpts>();
  auto* info = w->add_subcommand(
      "info", "List a weights file's tensors (name, dtype, shape), its parameter count and the zoo models it fits");
  info->add_option("file", o->file, "A .safetensors or PyTorch .pth/.pt file (read without running code), or a run directory")
      ->required();
  info->callback([&run, o] { run = [o] { return run_info(*o); }; });
}

}  // namespace ember::cli

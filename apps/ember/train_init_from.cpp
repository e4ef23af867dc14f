// `ember train --init-from FILE [--init-from-partial]`: a new run whose model starts from the
// weights in FILE (ember or PyTorch safetensors, a PyTorch .pth/.pt, a run directory); the loading rules are the
// library's (ember/train/init_from.h), the flags are rows of the settings table, this file holds
// the checks between them and the banner lines.
#include "train_init_from.h"

#include <fmt/format.h>

#include "ember/train/checkpoint.h"
#include "ember/train/init_from.h"

namespace ember::cli {

std::string init_model_from(nn::Module& model, const train::TrainSettings& s, bool resuming,
                            const train::RunGeometry& geometry) {
  const struct { const std::string& file; bool partial; } f{s.init_from, s.init_from_partial};
  if (f.file.empty()) {
    if (f.partial) throw UsageError("--init-from-partial needs --init-from FILE");
    return "";
  }
  if (resuming)
    throw UsageError("--init-from starts a new run; --resume continues one: pass only one of them",
                     "drop --init-from to continue the run, or --resume to start a new run from the weights");
  const train::Checkpoint ck = train::load_checkpoint(f.file);
  train::WeightLoadReport rep;
  try {
    rep = train::load_weights(model, ck.tensors, ck.weights_path.string(), {.partial = f.partial});
  } catch (const FormatError& e) {
    // Weights of another zoo model, or of this one at another input size: say which.
    const std::string fit = train::weights_fit_hint(ck.tensors, ck.metadata, s.model, geometry);
    if (fit.empty()) throw;
    throw FormatError(e.what(), fit);
  }
  // A .pth says how it was read (and which key of a checkpoint dict held the state dict).
  const std::string how = ck.source_note.empty() ? "" : " (" + ck.source_note + ")";
  std::string lines = fmt::format("init from {}{}: {}", f.file, how, rep.summary());
  std::string out;
  for (size_t a = 0, b; a <= lines.size(); a = b + 1) {  // indent continuation lines under the banner
    b = lines.find('\n', a);
    if (b == std::string::npos) b = lines.size();
    out += (a == 0 ? "" : "           ") + lines.substr(a, b - a) + "\n";
  }
  return out;
}

}  // namespace ember::cli

// `ember train --init-from FILE [--init-from-partial]`: a new run whose model starts from the
// weights in FILE (ember or PyTorch safetensors, a PyTorch .pth/.pt, a run directory); the loading rules are the
// library's (ember/train/init_from.h), the flags are rows of the settings table, this file holds
// the checks between them and the banner lines.
#include "ember/train/run_init.h"

#include <fmt/format.h>

#include "ember/train/checkpoint.h"
#include "ember/train/open_weights.h"
#include "ember/train/init_from.h"
#include "ember/train/settings.h"
#include "ember/train/transfer.h"
#include "ember/train/wording.h"

namespace ember::train {

std::string init_model_from(nn::Module& model, const train::TrainSettings& s, bool resuming,
                            const train::RunGeometry& geometry) {
  const struct { const std::string& file; bool partial; } f{s.init_from, s.init_from_partial};
  if (f.file.empty()) {
    if (f.partial) throw SettingError("--init-from-partial needs --init-from FILE");
    return "";
  }
  if (resuming)
    throw SettingError("--init-from starts a new run; --resume continues one: pass only one of them",
                     "drop --init-from to continue the run, or --resume to start a new run from the weights");
  // The file a path names by eval's rule (open_weights.h): a run directory gives its best checkpoint.
  const train::OpenedWeights opened = train::open_weights(f.file);
  const train::Checkpoint& ck = opened.checkpoint;
  train::WeightLoadReport rep;
  try {
    rep = train::load_weights(model, ck.tensors, ck.weights_path.string(), {.partial = f.partial, .replace_head = true});
  } catch (const FormatError& e) {
    // Weights of another zoo model, or of this one at another input size: say which.
    const std::string fit = train::weights_fit_hint(ck.tensors, ck.metadata, s.model, geometry);
    if (fit.empty()) throw;
    throw FormatError(e.what(), fit);
  }
  // A .pth says how it was read (and which key of a checkpoint dict held the state dict).
  const std::string how = ck.source_note.empty() ? "" : " (" + ck.source_note + ")";
  // A run directory: which of its checkpoints (the best one, as `ember eval` reads).
  const std::string which =
      opened.chosen.which.empty() ? ""
      : opened.chosen.which == "best"
          ? fmt::format("\nthe run's best checkpoint: epoch {}, step {}", ck.manifest.epoch, ck.manifest.step)
          : fmt::format("\nthe run's last checkpoint (no epoch had ended, so no best): epoch {}, step {}",
                        ck.manifest.epoch, ck.manifest.step);
  std::string lines = fmt::format("init from {}{}: {}{}", f.file, how, rep.summary(), which);
  std::string out;
  for (size_t a = 0, b; a <= lines.size(); a = b + 1) {  // indent continuation lines under the banner
    b = lines.find('\n', a);
    if (b == std::string::npos) b = lines.size();
    out += (a == 0 ? "" : "           ") + lines.substr(a, b - a) + "\n";
  }
  return out;
}

std::string fine_tune_setup(nn::Module& model, const train::TrainSettings& s, bool distributed, int64_t start_epoch) {
  if (s.unfreeze_after > 0 && !s.freeze_backbone)
    throw SettingError(fmt::format("--unfreeze-after {} needs --freeze-backbone (nothing is frozen to unfreeze)",
                                 s.unfreeze_after),
                     "add --freeze-backbone to train the classifier alone for the first epochs");
  std::string out;
  if (s.lr_backbone > 0) {
    const train::FreezeCounts n = train::count_backbone(model);
    if (n.head.empty() || n.backbone_params == 0)
      throw SettingError(fmt::format("--lr-backbone: {} has no separate classifier module to keep at --lr",
                                   model.type_name()), "drop --lr-backbone");
    out += fmt::format("fine-tune  backbone lr {:g}, classifier '{}' lr {:g}\n", s.lr_backbone, n.head, s.lr);
  }
  if (!s.freeze_backbone) return out;
  if (distributed)
    throw SettingError("--freeze-backbone runs on one rank: the gradient all-reduce expects a gradient for every "
                     "parameter", "drop --nproc-per-node, or train the whole model");
  if (s.unfreeze_after > 0 && start_epoch >= s.unfreeze_after)  // a resumed run past the frozen epochs
    return out + fmt::format("fine-tune  the whole model trains (its backbone was frozen for {} epoch{})\n",
                             s.unfreeze_after, s.unfreeze_after == 1 ? "" : "s");
  train::FreezeCounts n;
  try {
    n = train::freeze_backbone(model);
  } catch (const ValueError& e) {
    throw SettingError(e.what(), "drop --freeze-backbone for this model");
  }
  out += fmt::format("fine-tune  backbone frozen ({} parameters, batch norms in eval mode){}\n"
                     "           training the classifier '{}' ({} parameters)\n",
                     thousands(n.backbone_params),
                     s.unfreeze_after > 0 ? fmt::format(" for {} epoch{}, then all", s.unfreeze_after,
                                                        s.unfreeze_after == 1 ? "" : "s")
                                          : "",
                     n.head, thousands(n.head_params));
  return out;
}

}  // namespace ember::train

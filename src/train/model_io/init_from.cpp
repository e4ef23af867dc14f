// Weights from a file into a model (see init_from.h): find the key prefix, cast floating dtypes,
// and list every missing, unexpected and mis-shaped key by name before copying anything.
#include "ember/train/init_from.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "ember/autograd/node.h"
#include "ember/core/generator.h"
#include "ember/nn/models.h"
#include "ember/ops.h"
#include "ember/train/transfer.h"
#include "ember/train/weights_info.h"
#include "ember/train/open_weights.h"

namespace ember::train {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The prefix P for which the most file keys are P + a model key (P empty or ending in '.' or '/');
// ties go to the shorter prefix. "model/" in an ember checkpoint, "module." from DataParallel, ...
std::string find_prefix(const NamedTensors& file, const std::vector<std::pair<std::string, Tensor>>& own) {
  std::map<std::string, int> votes;
  std::set<std::string> own_keys;
  for (const auto& [k, t] : own) own_keys.insert(k);
  for (const auto& [fk, t] : file)
    for (const auto& mk : own_keys)
      if (fk.size() >= mk.size() && fk.compare(fk.size() - mk.size(), mk.size(), mk) == 0) {
        std::string p = fk.substr(0, fk.size() - mk.size());
        if (p.empty() || p.back() == '.' || p.back() == '/') ++votes[p];
      }
  std::string best;
  int best_votes = votes.count("") ? votes[""] : 0;
  for (const auto& [p, n] : votes)
    if (n > best_votes || (n == best_votes && p.size() < best.size())) best = p, best_votes = n;
  return best;
}

bool castable(DType from, DType to) {
  return from == to || (is_floating(from) && is_floating(to)) || (is_integral(from) && is_integral(to));
}

// BatchNorm's batch counter: PyTorch itself loads state dicts without it (a fresh count), and
// `{k: v.float() for k, v in sd.items()}` turns it into float32. ember's BatchNorm never reads it
// (momentum is fixed), so a missing one keeps its fresh value and a float one is cast back.
bool is_batch_counter(const std::string& key) {
  return key == "num_batches_tracked" || key.ends_with(".num_batches_tracked");
}

// A float batch counter that holds whole numbers: cast to the model's integer dtype.
bool counter_castable(const std::string& key, const Tensor& src, DType to) {
  if (!is_batch_counter(key) || !is_floating(src.dtype()) || !is_integral(to)) return false;
  for (double v : src.to(DType::Float64).contiguous().to_vector<double>())
    if (!(v >= 0 && v == std::floor(v) && v < 9.0e15)) return false;
  return true;
}

// An RGB stem for grey inputs (issue 48): the model's first convolution takes 1 channel where the
// file's takes 3, all else equal. Its weights are summed over the three inputs, as timm's
// adapt_input_conv does for in_chans=1: the same as feeding each grey image as three equal
// channels, so the pretrained filters and the batch-norm statistics after them still fit (an
// average would scale the stem's output by a third).
bool grey_stem(const std::string& key, const std::string& stem, const Tensor& src, const Tensor& model_t) {
  if (key != stem || src.dim() != 4 || model_t.dim() != 4 || src.size(1) != 3 || model_t.size(1) != 1) return false;
  return src.size(0) == model_t.size(0) && src.size(2) == model_t.size(2) && src.size(3) == model_t.size(3) &&
         is_floating(src.dtype()) && is_floating(model_t.dtype());
}

// What loading `file` into `model` would do, before anything is copied.
struct LoadPlan {
  WeightLoadReport rep;
  std::vector<std::string> bad_shape;             // mis-shaped keys that are not allowed
  std::vector<std::pair<Tensor, Tensor>> copies;  // (model tensor, file tensor cast to its dtype)
  size_t model_tensors = 0;
  std::string head;
  bool head_mismatched = false;  // a key of the head differs in shape or dtype
};

LoadPlan plan_load(nn::Module& model, const NamedTensors& file, const WeightLoadOptions& opt) {
  auto own = model.state_dict().items();
  LoadPlan plan;
  WeightLoadReport& rep = plan.rep;
  plan.model_tensors = own.size();
  rep.prefix = find_prefix(file, own);
  // An ember checkpoint: optimizer and scheduler state sit beside "model/"; they are not weights.
  const bool checkpoint = rep.prefix == "model/";
  std::map<std::string, const Tensor*> by_key;
  for (const auto& [k, t] : file) {
    if (k.starts_with(rep.prefix)) by_key.emplace(k.substr(rep.prefix.size()), &t);
    else if (checkpoint && (k.starts_with("optim/") || k.starts_with("sched/"))) ++rep.checkpoint_state;
    else rep.unexpected.push_back(k);
  }
  plan.head = head_prefix(model);
  std::string stem;  // the first convolution's weight
  for (const auto& [k, t] : own)
    if (t.dim() == 4) {
      stem = k;
      break;
    }
  std::map<std::pair<DType, DType>, int> casts;
  std::set<std::string> own_keys;
  int counters_missing = 0, counters_cast = 0;
  for (const auto& [k, t] : own) {
    own_keys.insert(k);
    auto it = by_key.find(k);
    if (it == by_key.end()) {
      if (is_batch_counter(k)) ++counters_missing;
      else rep.missing.push_back(k);
      continue;
    }
    const Tensor& src = *it->second;
    if (grey_stem(k, stem, src, t)) {
      plan.copies.emplace_back(t, src.to(DType::Float32).sum({1}, /*keepdim=*/true).to(t.dtype()));
      rep.loaded.push_back(k);
      rep.notes.push_back(fmt::format("{}: the file's RGB stem {} summed over its 3 input channels into the model's "
                                      "{} for grey images (timm's adapt_input_conv: the same as feeding each grey "
                                      "image as three equal channels)",
                                      k, shape_str(src.sizes()), shape_str(t.sizes())));
      continue;
    }
    const bool counter = src.sizes() == t.sizes() && counter_castable(k, src, t.dtype());
    if (src.sizes() != t.sizes() || !(castable(src.dtype(), t.dtype()) || counter)) {
      const std::string what = src.sizes() != t.sizes()
                                   ? fmt::format("{}: file {}, model {}", k, shape_str(src.sizes()), shape_str(t.sizes()))
                                   : fmt::format("{}: file {}, model {}", k, dtype_name(src.dtype()), dtype_name(t.dtype()));
      rep.mismatched.push_back(what);
      if (!plan.head.empty() && k.starts_with(plan.head)) plan.head_mismatched = true;
      if (!(opt.partial && !plan.head.empty() && k.starts_with(plan.head))) plan.bad_shape.push_back(what);
      continue;
    }
    if (counter) ++counters_cast;
    else if (src.dtype() != t.dtype()) ++casts[{src.dtype(), t.dtype()}];
    plan.copies.emplace_back(t, src.dtype() == t.dtype() ? src : src.to(t.dtype()));
    rep.loaded.push_back(k);
  }
  for (const auto& [k, t] : by_key)
    if (!own_keys.count(k)) rep.unexpected.push_back(rep.prefix + k);
  for (const auto& [ft, n] : casts)
    rep.notes.push_back(fmt::format("cast {} tensor{} from {} to {} (the model's dtype)", n, n == 1 ? "" : "s",
                                    dtype_name(ft.first), dtype_name(ft.second)));
  if (counters_cast)
    rep.notes.push_back(fmt::format("cast {} BatchNorm num_batches_tracked from float to int64 (whole numbers)",
                                    counters_cast));
  if (counters_missing)
    rep.notes.push_back(fmt::format("{} BatchNorm num_batches_tracked not in the file: kept at their fresh value "
                                    "(a batch count; ember's BatchNorm does not read it)",
                                    counters_missing));
  return plan;
}

}  // namespace

std::string WeightLoadReport::summary() const {
  std::string s = fmt::format("loaded {} tensors{}", loaded.size(),
                              prefix.empty() ? "" : fmt::format(" (key prefix '{}' stripped)", prefix));
  for (const auto& n : notes) s += "\nnote: " + n;
  if (checkpoint_state)
    s += fmt::format("\nnote: {} optimizer/scheduler tensors of the checkpoint not used (a new run starts its own; "
                     "`--resume` continues the old run)", checkpoint_state);
  if (!missing.empty()) s += "\nnot in the file, kept as initialised: " + join(missing);
  if (!mismatched.empty()) s += "\nshape differs, reinitialised: " + join(mismatched);
  if (!unexpected.empty()) s += "\nin the file but not in the model, ignored: " + join(unexpected);
  return s;
}

WeightLoadReport load_weights(nn::Module& model, const NamedTensors& file, const std::string& source,
                              const WeightLoadOptions& opt) {
  LoadPlan plan = plan_load(model, file, opt);
  // A new classifier (another class count) is the one difference fine-tuning expects: with
  // replace_head, a file that fits everywhere else loads as with `partial`, and says so.
  if (opt.replace_head && !opt.partial && plan.head_mismatched && plan.rep.missing.empty() &&
      plan.rep.unexpected.empty()) {
    bool only_head = true;
    for (const std::string& what : plan.bad_shape) only_head = only_head && what.starts_with(plan.head);
    if (only_head) {
      WeightLoadOptions as_partial = opt;
      as_partial.partial = true;
      plan = plan_load(model, file, as_partial);
      plan.rep.notes.push_back(fmt::format("the classifier '{}' differs in shape from the file's (another number of "
                                           "classes): replaced, it starts from fresh weights",
                                           plan.head.substr(0, plan.head.size() - 1)));
    }
  }
  WeightLoadReport& rep = plan.rep;
  const std::vector<std::string>& bad_shape = plan.bad_shape;
  const std::string& head = plan.head;
  std::string errors;
  if (!bad_shape.empty())
    errors += fmt::format("\n  shape or dtype differs ({}): {}", bad_shape.size(), join(bad_shape, "; "));
  if (!opt.partial && !rep.missing.empty())
    errors += fmt::format("\n  missing from the file ({}): {}", rep.missing.size(), join(rep.missing));
  if (!opt.partial && !rep.unexpected.empty())
    errors += fmt::format("\n  not in the model ({}): {}", rep.unexpected.size(), join(rep.unexpected));
  if (rep.loaded.empty() && errors.empty())
    errors = "\n  no tensor of the file matches a tensor of the model";
  if (!errors.empty()) {
    std::string hint = "check that --model is the architecture the weights were saved from";
    if (!opt.partial)
      hint += "; to fine-tune with a new head (another number of classes), pass --init-from-partial";
    else if (!bad_shape.empty())
      hint += fmt::format(" (--init-from-partial reinitialises only the head, '{}*')", head);
    throw FormatError(fmt::format("weights '{}' do not fit the model ({} of its {} tensors match{}):{}", source,
                                  rep.loaded.size(), plan.model_tensors,
                                  rep.prefix.empty() ? "" : fmt::format(", key prefix '{}'", rep.prefix), errors),
                      hint);
  }
  autograd::NoGradGuard ng;
  for (auto& [dst, src] : plan.copies) {
    Tensor target = dst.detach();  // the model's own storage: an in-place load
    target.copy_(src);
  }
  return rep;
}

std::string weights_fit_hint(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& model, const RunGeometry& run) {
  struct Geometry {
    int64_t channels, size;
    bool operator==(const Geometry&) const = default;
  };
  const Geometry own{run.channels, run.image_size};
  std::vector<Geometry> geometries{own};
  auto add = [&](Geometry g) {
    if (g.channels >= 1 && g.size >= 1 && std::find(geometries.begin(), geometries.end(), g) == geometries.end())
      geometries.push_back(g);
  };
  bool described = false;
  try {
    const WeightsInfo info = weights_info_from_metadata(metadata, "");
    if (info.input_shape.size() == 3 && info.input_shape[1] == info.input_shape[2])
      add({info.input_shape[0], info.input_shape[1]}), described = true;
  } catch (const Error&) {
    // metadata ember did not write: the usual geometries below
  }
  if (!described) add({1, 28}), add({3, 32});  // Fashion-MNIST and MNIST, CIFAR-10
  // The run's own model first (at another geometry), then the others at the run's geometry first.
  std::vector<std::string> names = models::names();
  std::stable_partition(names.begin(), names.end(), [&](const std::string& n) { return n == model; });
  for (const std::string& name : names)
    for (const Geometry& g : geometries) {
      if (name == model && g == own) continue;  // that is the fit that failed
      // torchvision's ImageNet classifiers take their weights at any input size and, through the
      // summed stem, on grey images: another geometry never makes them fit.
      if (models::design_size(name) == 224 && !(g == own)) continue;
      std::shared_ptr<nn::Module> candidate;
      try {
        Generator gen(0);
        candidate = models::create(name, run.num_classes, g.channels, g.size, &gen);
      } catch (const Error&) {
        continue;  // the model does not take that geometry
      }
      const LoadPlan plan = plan_load(*candidate, tensors, {.partial = true});
      if (plan.rep.loaded.empty() || !plan.bad_shape.empty() || !plan.rep.missing.empty() ||
          !plan.rep.unexpected.empty())
        continue;
      const std::string shape = fmt::format("{}x{}x{}", g.channels, g.size, g.size);
      std::string hint;
      if (g == own) {
        hint = fmt::format("these weights fit --model {}", name);
      } else {
        const std::string how = run.image_folder
                                    ? fmt::format("pass --channels {} --image-size {}", g.channels, g.size)
                                    : fmt::format("this dataset's images are {}x{}x{}: train on data of that shape",
                                                  run.channels, run.image_size, run.image_size);
        hint = name == model ? fmt::format("these weights were trained on {} inputs: {}", shape, how)
                             : fmt::format("these weights fit --model {} on {} inputs: {}", name, shape, how);
      }
      if (!plan.rep.mismatched.empty())
        hint += fmt::format(", with --init-from-partial (a new head '{}*' for {} classes)", plan.head, run.num_classes);
      return hint;
    }
  return "";
}

std::vector<WeightsFit> zoo_fits(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<int64_t, int64_t>> geometries;  // (channels, image size)
  auto add = [&](int64_t c, int64_t size) {
    if (c >= 1 && size >= 1 && size <= 512 &&
        std::find(geometries.begin(), geometries.end(), std::make_pair(c, size)) == geometries.end())
      geometries.emplace_back(c, size);
  };
  std::optional<std::pair<int64_t, int64_t>> recorded;  // the geometry the metadata says it was trained at
  try {
    const WeightsInfo info = weights_info_from_metadata(metadata, "");
    if (info.input_shape.size() == 3 && info.input_shape[1] == info.input_shape[2]) {
      add(info.input_shape[0], info.input_shape[1]);
      recorded = std::make_pair(info.input_shape[0], info.input_shape[1]);
    }
  } catch (const Error&) {
    // metadata ember did not write: the guesses below
  }
  // The first weight says the input's channels (a conv: [out, in, k, k]) or, for an MLP, its
  // flattened size (a linear layer: [out, C*S*S]).
  int64_t stem_channels = 3;
  for (const auto& [name, t] : tensors) {
    if (t.dim() == 4) {
      add(t.size(1), 28), add(t.size(1), 32);
      stem_channels = t.size(1);
      break;
    }
    if (t.dim() == 2) {
      for (int64_t c : {1, 3})
        for (int64_t s = 1; s * s * c <= t.size(1); ++s)
          if (s * s * c == t.size(1)) add(c, s);
      break;
    }
  }
  add(1, 28), add(3, 32);
  std::vector<WeightsFit> fits;
  for (const std::string& name : models::names()) {
    // torchvision's ImageNet classifiers: the size the weights were trained at when the file says,
    // else the size the architecture is built for, never a guessed 28 or 32.
    const bool imagenet = models::design_size(name) == 224 && !recorded;
    const std::vector<std::pair<int64_t, int64_t>> tried =
        models::design_size(name) != 224 ? geometries
        : recorded                       ? std::vector<std::pair<int64_t, int64_t>>{*recorded}
                                         : std::vector<std::pair<int64_t, int64_t>>{{stem_channels, 224}};
    for (const auto& [c, size] : tried) {
      auto fits_with = [&](int64_t classes) -> std::optional<LoadPlan> {
        std::shared_ptr<nn::Module> m;
        try {
          Generator gen(0);
          m = models::create(name, classes, c, size, &gen);
        } catch (const Error&) {
          return std::nullopt;  // the model does not take that geometry
        }
        LoadPlan plan = plan_load(*m, tensors, {.partial = true});
        if (plan.rep.loaded.empty() || !plan.bad_shape.empty() || !plan.rep.missing.empty() ||
            !plan.rep.unexpected.empty())
          return std::nullopt;
        return plan;
      };
      auto plan = fits_with(10);
      if (!plan) continue;
      int64_t classes = 10;
      if (!plan->rep.mismatched.empty()) {  // only the head differs: its weight's rows are the classes
        const std::string head = plan->rep.prefix + plan->head + "weight";
        auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto& kv) { return kv.first == head; });
        if (it == tensors.end() || it->second.dim() < 1 || it->second.size(0) < 1) continue;
        classes = it->second.size(0);
        plan = fits_with(classes);
        if (!plan || !plan->rep.mismatched.empty()) continue;
      }
      fits.push_back({name, c, size, classes, imagenet});
    }
  }
  return fits;
}

WeightLoadReport init_from_file(nn::Module& model, const std::filesystem::path& path, const WeightLoadOptions& opt) {
  const OpenedWeights w = open_weights(path.string());  // a run directory: its best checkpoint
  return load_weights(model, w.checkpoint.tensors, w.checkpoint.weights_path.string(), opt);
}

}  // namespace ember::train

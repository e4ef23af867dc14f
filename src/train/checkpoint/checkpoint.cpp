// Checkpoint save/load: safetensors weights named by a JSON manifest; both written atomically, the
// manifest last, so latest.json always names a complete file (see the header for the protocol).
#include "ember/train/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/io/file_kind.h"
#include "ember/io/sha256.h"
#include "ember/io/atomic_file.h"
#include "ember/io/pth.h"
#include "io/json_fields.h"
#include "ember/io/safetensors.h"
#include "ember/io/user_file.h"
#include "ember/train/run_files.h"

namespace ember::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

io::StDType to_st(DType d) {
  switch (d) {
    case DType::Float32: return io::StDType::F32;
    case DType::Float64: return io::StDType::F64;
    case DType::Int64: return io::StDType::I64;
    case DType::Int32: return io::StDType::I32;
    case DType::UInt8: return io::StDType::U8;
    case DType::Bool: return io::StDType::BOOL;
    case DType::BFloat16: return io::StDType::BF16;
    case DType::Float16: return io::StDType::F16;
  }
  throw InternalError("checkpoint: unknown dtype");
}

std::optional<DType> from_st(io::StDType d) {
  switch (d) {
    case io::StDType::F32: return DType::Float32;
    case io::StDType::F64: return DType::Float64;
    case io::StDType::I64: return DType::Int64;
    case io::StDType::I32: return DType::Int32;
    case io::StDType::U8: return DType::UInt8;
    case io::StDType::BOOL: return DType::Bool;
    case io::StDType::BF16: return DType::BFloat16;
    case io::StDType::F16: return DType::Float16;
    default: return std::nullopt;
  }
}

const char* kHint = "the checkpoint is damaged; resume from another run or checkpoint, or start a new run";

json fit_state_to_json(const FitState& f) {
  json j = {{"micro_batch", f.micro_batch}, {"accumulate", f.accumulate}, {"val_split", f.val_split},
            {"world_size", f.world_size}};
  if (f.val_size) j["val_size"] = *f.val_size;
  if (f.best_epoch) j["best_epoch"] = *f.best_epoch;
  if (f.best_test_acc) j["best_test_acc"] = *f.best_test_acc;
  if (!f.rank_rng.empty()) {
    json r = json::array();
    for (const auto& g : f.rank_rng) r.push_back({{"seed", g.seed}, {"offset", g.offset}});
    j["rank_rng"] = std::move(r);
  }
  if (f.epoch)
    j["epoch"] = {{"loss_sum", f.epoch->loss_sum}, {"correct", f.epoch->correct}, {"seen", f.epoch->seen},
                  {"data_time", f.epoch->data_time}, {"train_time", f.epoch->train_time},
                  {"skipped", f.epoch->skipped}};
  if (!f.loss_scaler.empty()) j["loss_scaler"] = f.loss_scaler;
  return j;
}

FitState fit_state_from_json(const json& j, const std::string& where) {
  FitState f;
  auto get = [&](const json& obj, const char* key, auto fallback, const std::string& path) {
    using T = decltype(fallback);
    // JSON has no NaN: nlohmann writes it as null (a loss or accuracy of an empty or diverged epoch).
    if constexpr (std::is_floating_point_v<T>)
      if (obj.is_object() && obj.contains(key) && obj[key].is_null()) return std::numeric_limits<T>::quiet_NaN();
    return io::json_get_or<T>(obj, key, fallback, where, kHint, path);
  };
  f.micro_batch = get(j, "micro_batch", int64_t(0), "fit_state.micro_batch");
  f.accumulate = get(j, "accumulate", int64_t(0), "fit_state.accumulate");
  f.val_split = get(j, "val_split", 0.0, "fit_state.val_split");
  f.world_size = get(j, "world_size", int64_t(1), "fit_state.world_size");
  if (j.contains("val_size")) f.val_size = get(j, "val_size", int64_t(0), "fit_state.val_size");
  if (j.contains("best_epoch")) f.best_epoch = get(j, "best_epoch", int64_t(0), "fit_state.best_epoch");
  if (j.contains("best_test_acc")) f.best_test_acc = get(j, "best_test_acc", 0.0, "fit_state.best_test_acc");
  if (f.micro_batch < 0 || f.accumulate < 0 || f.world_size < 1 || f.world_size > 65536)
    throw FormatError(fmt::format("{} is not valid: fit_state has micro_batch {}, accumulate {}, world_size {}", where,
                                  f.micro_batch, f.accumulate, f.world_size), kHint);
  if (j.contains("rank_rng")) {
    const json& r = j["rank_rng"];
    if (!r.is_array())
      throw FormatError(fmt::format("{}: \"fit_state.rank_rng\" must be an array, it is {}", where, r.dump()), kHint);
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string at = fmt::format("fit_state.rank_rng[{}]", i);
      f.rank_rng.push_back({io::json_get<uint64_t>(r[i], "seed", where, kHint, at + ".seed"),
                            io::json_get<uint64_t>(r[i], "offset", where, kHint, at + ".offset")});
    }
  }
  // Every rank but 0 resumes its own dropout stream: a missing or extra one is a damaged file.
  if (int64_t(f.rank_rng.size()) != f.world_size - 1)
    throw FormatError(fmt::format("{} is not valid: fit_state has {} rank_rng entries for world_size {} (one per rank "
                                  "after rank 0)", where, f.rank_rng.size(), f.world_size), kHint);
  if (j.contains("epoch")) {
    const json e = io::json_get<json>(j, "epoch", where, kHint, "fit_state.epoch");
    FitState::EpochSums s;
    s.loss_sum = get(e, "loss_sum", 0.0, "fit_state.epoch.loss_sum");
    // A count; format 2 before it was an integer wrote it as a whole double ("correct": 40.0).
    const double correct = get(e, "correct", 0.0, "fit_state.epoch.correct");
    if (!(correct >= 0 && correct == std::floor(correct) && correct < 9.0e15))
      throw FormatError(fmt::format("{}: \"fit_state.epoch.correct\" must be a count of samples, it is {}", where,
                                    correct), kHint);
    s.correct = int64_t(correct);
    s.seen = get(e, "seen", int64_t(0), "fit_state.epoch.seen");
    s.data_time = get(e, "data_time", 0.0, "fit_state.epoch.data_time");
    s.train_time = get(e, "train_time", 0.0, "fit_state.epoch.train_time");
    s.skipped = get(e, "skipped", int64_t(0), "fit_state.epoch.skipped");
    f.epoch = s;
  }
  f.loss_scaler = get(j, "loss_scaler", std::map<std::string, double>{}, "fit_state.loss_scaler");
  return f;
}

// A format-1 manifest's "fit.*" optimizer scalars as a FitState; they are erased from `scalars`.
FitState fit_state_from_scalars(std::map<std::string, double>& scalars) {
  FitState f;
  auto take = [&](const std::string& key) -> std::optional<double> {
    auto it = scalars.find("fit." + key);
    if (it == scalars.end()) return std::nullopt;
    const double v = it->second;
    scalars.erase(it);
    return v;
  };
  f.micro_batch = int64_t(take("micro_batch").value_or(0));
  f.accumulate = int64_t(take("accumulate").value_or(0));
  f.val_split = take("val_split").value_or(0);
  if (auto v = take("val_size")) f.val_size = int64_t(*v);
  if (auto v = take("best_epoch")) f.best_epoch = int64_t(*v);
  f.best_test_acc = take("best_test_acc");
  f.world_size = std::max<int64_t>(1, int64_t(take("world_size").value_or(1)));
  // Each rank > 0's dropout stream, as 32-bit halves (the scalars are doubles).
  auto word = [&](const std::string& key, int64_t rank) {
    return (uint64_t(take(fmt::format("{}_hi.rank{}", key, rank)).value_or(0)) << 32) |
           uint64_t(take(fmt::format("{}_lo.rank{}", key, rank)).value_or(0));
  };
  for (int64_t r = 1; r < f.world_size && r < 65536; ++r) f.rank_rng.push_back({word("rng_seed", r), word("rng_offset", r)});
  const auto loss_sum = take("loss_sum"), seen = take("seen"), correct = take("correct");
  const auto data_time = take("data_time"), train_time = take("train_time"), skipped = take("skipped_in_epoch");
  if (loss_sum || seen || correct || data_time || train_time || skipped)
    f.epoch = FitState::EpochSums{loss_sum.value_or(0), int64_t(correct.value_or(0)), data_time.value_or(0),
                                  train_time.value_or(0), int64_t(seen.value_or(0)), int64_t(skipped.value_or(0))};
  for (auto it = scalars.begin(); it != scalars.end();) {
    if (it->first.rfind("fit.loss_scale", 0) == 0) {
      f.loss_scaler[it->first.substr(4)] = it->second;
      it = scalars.erase(it);
    } else {
      ++it;
    }
  }
  return f;
}

}  // namespace

const Tensor* Checkpoint::find(const std::string& name) const {
  for (const auto& [k, t] : tensors)
    if (k == name) return &t;
  return nullptr;
}

std::string manifest_to_json(const CheckpointManifest& m) {
  json j = {{"format", m.format}, {"ember_version", m.ember_version}, {"device", m.device}, {"model", m.model},
            {"dataset", m.dataset}, {"epoch", m.epoch}, {"step", m.step}, {"batch_in_epoch", m.batch_in_epoch},
            {"seed", m.seed}, {"rng", {{"seed", m.rng_seed}, {"offset", m.rng_offset}}}, {"threads", m.threads},
            {"best_metric", m.best_metric}, {"last_metric", m.last_metric},
            {"optimizer", m.optimizer_scalars}, {"weights", m.weights}, {"weights_sha256", m.weights_sha256}};
  if (m.format >= 2) j["fit_state"] = fit_state_to_json(m.fit);
  j["config"] = m.config_json.empty() ? json::object() : json::parse(m.config_json);
  return j.dump(2) + "\n";
}

CheckpointManifest manifest_from_json(const std::string& text, const std::string& source) {
  const std::string where = fmt::format("checkpoint manifest '{}'", source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{} is not valid JSON: {}", where, e.what()), kHint);
  }
  if (!j.is_object()) throw FormatError(fmt::format("{} is not valid: not a JSON object", where), kHint);
  // Every field is read with its type checked: a wrong-typed value names the key, the type and the file.
  auto get = [&](const char* key, auto fallback, bool required) {
    using T = decltype(fallback);
    return required ? io::json_get<T>(j, key, where, kHint) : io::json_get_or<T>(j, key, fallback, where, kHint);
  };
  CheckpointManifest m;
  m.format = get("format", int(0), true);
  if (m.format != 1 && m.format != 2)
    throw FormatError(fmt::format("{} is not valid: unsupported format {}", where, m.format),
                      "it was written by another version of ember; use that version or start a new run");
  m.ember_version = get("ember_version", std::string(), false);
  m.device = get("device", std::string(), false);
  m.model = get("model", std::string(), false);
  m.dataset = get("dataset", std::string(), false);
  m.epoch = get("epoch", int64_t(0), true);
  m.step = get("step", int64_t(0), true);
  m.batch_in_epoch = get("batch_in_epoch", int64_t(0), true);
  m.seed = get("seed", uint64_t(0), true);
  const json rng = io::json_get<json>(j, "rng", where, kHint);
  m.rng_seed = io::json_get<uint64_t>(rng, "seed", where, kHint, "rng.seed");
  m.rng_offset = io::json_get<uint64_t>(rng, "offset", where, kHint, "rng.offset");
  m.threads = get("threads", int(0), false);
  m.best_metric = get("best_metric", 0.0, false);
  m.last_metric = get("last_metric", 0.0, false);
  m.optimizer_scalars = get("optimizer", std::map<std::string, double>{}, false);
  if (m.format == 1) {
    m.fit = fit_state_from_scalars(m.optimizer_scalars);
    m.format = 2;  // read into the current form; written back as it
  } else if (j.contains("fit_state")) {
    m.fit = fit_state_from_json(io::json_get<json>(j, "fit_state", where, kHint), where);
  }
  m.weights = get("weights", std::string(), true);
  m.weights_sha256 = get("weights_sha256", std::string(), true);
  if (j.contains("config")) {
    if (!j["config"].is_object())
      throw FormatError(fmt::format("{}: \"config\" must be an object, it is {}", where, j["config"].dump()), kHint);
    m.config_json = j["config"].dump();
  }
  if (m.epoch < 0 || m.step < 0 || m.batch_in_epoch < 0)
    throw FormatError(fmt::format("{} is not valid: epoch, step and batch_in_epoch must not be negative", where), kHint);
  if (m.weights.empty() || m.weights.find('/') != std::string::npos)
    throw FormatError(fmt::format("{} is not valid: 'weights' must be a file name in the same directory", where), kHint);
  return m;
}

void save_checkpoint(const fs::path& dir, const std::string& tag, CheckpointManifest m, const NamedTensors& tensors) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw IOError(fmt::format("cannot create checkpoint directory '{}': {}", dir.string(), ec.message()),
                  "choose a writable --run-dir");
  io::StFile file;
  file.metadata = m.weights_metadata;
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"ember_version", &m.ember_version},
                                   {"model", &m.model}, {"dataset", &m.dataset}})
    if (!value->empty()) file.metadata.emplace(key, *value);  // keeps a value already there
  file.metadata["epoch"] = std::to_string(m.epoch);  // where a copied-out file came from
  file.metadata["step"] = std::to_string(m.step);
  for (const auto& [name, t] : tensors) {
    Tensor c = t.detach().cpu().contiguous();
    io::StTensor st;
    st.name = name;
    st.dtype = to_st(c.dtype());
    st.shape = c.sizes();
    const auto* p = static_cast<const uint8_t*>(c.raw_data());
    st.data.assign(p, p + c.nbytes());
    file.tensors.push_back(std::move(st));
  }
  std::vector<uint8_t> bytes = io::st_serialize(file);
  m.weights = fmt::format("step-{:09}.safetensors", m.step);
  m.weights_sha256 = io::sha256_hex(bytes);
  io::write_file_atomic(dir / m.weights, bytes);
  std::string text = manifest_to_json(m);
  io::write_file_atomic(dir / (tag + ".json"), std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  prune_checkpoints(dir);
}

void tag_checkpoint(const fs::path& dir, const std::string& from_tag, const std::string& to_tag) {
  std::vector<uint8_t> bytes = io::read_user_file(dir / (from_tag + ".json"), io::kManifestFile);
  io::write_file_atomic(dir / (to_tag + ".json"), bytes);
  prune_checkpoints(dir);
}

void prune_checkpoints(const fs::path& dir) {
  std::set<std::string> keep;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    try {
      auto bytes = io::read_user_file(e.path(), io::kManifestFile);
      keep.insert(manifest_from_json(std::string(bytes.begin(), bytes.end()), e.path().string()).weights);
    } catch (const Error&) {
      return;  // an unreadable manifest: delete nothing rather than guess
    }
  }
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    bool stale_weights = name.starts_with("step-") && name.ends_with(".safetensors") && !keep.count(name);
    bool stale_tmp = name.find(".tmp.") != std::string::npos;
    if (stale_weights || stale_tmp) fs::remove(e.path(), ec);
  }
}

Checkpoint load_checkpoint(const fs::path& path_in) {
  fs::path path = path_in;
  // io::path_type, not std::filesystem: a symlink loop is named as one, not "does not exist".
  auto exists = [](const fs::path& p) { return io::path_type(p) != io::PathType::missing; };
  if (io::path_type(path) == io::PathType::directory) {
    if (exists(latest_manifest(path))) path = latest_manifest(path);
    else if (exists(path / kLatestManifest)) path = path / kLatestManifest;
    else
      throw IOError(fmt::format("no checkpoint in '{}': neither checkpoints/latest.json nor latest.json exists",
                                path.string()),
                    "give a run directory (runs/<name>), its checkpoints/ directory, or a .json/.safetensors file");
  }
  if (!exists(path))
    throw IOError(fmt::format("checkpoint '{}' does not exist", path.string()),
                  "give a run directory (runs/<name>) or a checkpoint file; `ls runs/` lists the runs");
  Checkpoint ck;
  fs::path weights = path;
  std::vector<uint8_t> bytes;
  if (path.extension() == ".json") {
    auto text = io::read_user_file(path, io::kManifestFile);
    ck.manifest = manifest_from_json(std::string(text.begin(), text.end()), path.string());
    weights = path.parent_path() / ck.manifest.weights;
    if (!exists(weights))
      throw FormatError(fmt::format("checkpoint '{}' names weights '{}', which do not exist", path.string(),
                                    weights.string()),
                        kHint);
    bytes = io::read_user_file(weights, io::kCheckpointFile);
    std::string sha = io::sha256_hex(bytes);
    if (sha != ck.manifest.weights_sha256)
      throw FormatError(fmt::format("checkpoint weights '{}' are corrupt or truncated: SHA-256 {} does not match "
                                    "the manifest's {} ({} bytes on disk)",
                                    weights.string(), sha.substr(0, 16), ck.manifest.weights_sha256.substr(0, 16),
                                    bytes.size()),
                        kHint);
  } else {
    bytes = io::read_user_file(path, io::kCheckpointFile);
  }
  ck.weights_path = weights;
  io::StFile file;
  if (ck.manifest.weights_sha256.empty() && io::pth_sniff(bytes)) {
    // A PyTorch .pth/.pt (by content, not extension): the restricted unpickler, nothing executed.
    io::PthFile pth = io::pth_parse(bytes, weights.string());
    ck.source_note = "PyTorch " + pth.format;
    if (!pth.nested_key.empty()) ck.source_note += ", the state dict under key '" + pth.nested_key + "'";
    file.tensors = std::move(pth.tensors);
  } else try {
    file = io::st_parse(bytes, weights.string());
  } catch (const io::SafetensorsDTypeError& e) {  // a valid file in a dtype ember does not read
    throw FormatError(fmt::format("'{}': tensor '{}' has the unsupported dtype {}; ember reads float32, float64, "
                                  "float16, bfloat16, integer and bool tensors",
                                  weights.string(), e.tensor(), e.dtype()),
                      "save the weights in another dtype first, e.g. in Python: save_file({k: v.float() for k, v in "
                      "load_file(FILE).items()}, FILE)");
  } catch (const io::SafetensorsError& e) {
    auto kind = io::sniff_foreign_weights(bytes, weights.string());
    if (kind && !(kind->text && weights.extension() == ".safetensors"))  // a damaged one stays "corrupt"
      throw FormatError(fmt::format("'{}' is {}, not a safetensors file", weights.string(), kind->what),
                        kind->hint);
    throw FormatError(fmt::format("checkpoint '{}' is corrupt or truncated: {}", weights.string(), e.what()), kHint);
  }
  ck.metadata = file.metadata;
  for (auto& st : file.tensors) {
    auto dt = from_st(st.dtype);
    if (!dt)
      throw FormatError(fmt::format("checkpoint '{}': tensor '{}' has dtype {}, which ember does not load",
                                    weights.string(), st.name, io::st_dtype_name(st.dtype)));
    ck.tensors.emplace_back(st.name, from_blob_copy(st.data.data(), st.shape, *dt));
  }
  return ck;
}

void restore_tensors(const Checkpoint& ck, const std::string& prefix, const NamedTensors& dst) {
  std::set<std::string> used;
  for (const auto& [name, t] : dst) {
    const Tensor* src = ck.find(prefix + name);
    if (!src)
      throw FormatError(fmt::format("checkpoint has no tensor '{}{}' (it was saved from another model or optimizer?)",
                                    prefix, name),
                        "resume with the same --model and --optimizer the run was started with");
    if (src->sizes() != t.sizes() || src->dtype() != t.dtype())
      throw FormatError(fmt::format("checkpoint tensor '{}{}' is {} {}, the model expects {} {}", prefix, name,
                                    dtype_name(src->dtype()), shape_str(src->sizes()), dtype_name(t.dtype()),
                                    shape_str(t.sizes())),
                        "resume with the same --model the run was started with");
    Tensor target = t.detach();  // same storage, no autograd history: an in-place load
    target.copy_(*src);
    used.insert(prefix + name);
  }
  for (const auto& [name, t] : ck.tensors)
    if (name.starts_with(prefix) && !used.count(name))
      throw FormatError(fmt::format("checkpoint has a tensor '{}' the model does not have", name),
                        "resume with the same --model the run was started with");
}

}  // namespace ember::train

// ember bench data: how fast the photo pipeline delivers training batches from a folder of photos
// (root/<class>/*.jpg): the DataLoader's images/s over whole epochs (decode + RandomResizedCrop +
// flip + normalise into batches, in --workers threads), and, on one core, decode alone and decode
// + augment, so the table says where the time goes. torchvision's DataLoader on the same folder is
// bench/data_torchvision.py; bench/photos.sh runs both (docs/benchmarks.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.h"
#include "cli.h"
#include "ember/data/dataset.h"
#include "ember/data/loader.h"
#include "ember/data/photo_cache.h"
#include "ember/data/photo_transforms.h"
#include "ember/ember.h"

namespace ember::cli {
namespace {

struct DataBenchOpts {
  std::string data;
  std::string augment = "standard";
  std::string color_jitter;  // "" none, else parse_color_jitter's form
  int64_t image_size = 224, batch_size = 32, epochs = 2, limit = 0;
  int workers = 2;
  bool json = false;
};

// /proc/cpuinfo's "model name", for the figures' record.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_data_bench(const DataBenchOpts& o) {
  if (o.data.empty()) throw UsageError("bench data needs --data FOLDER", "a folder of photos: FOLDER/<class>/*.jpg");
  data::Dataset ds;
  ds.name = "bench:" + o.data;
  std::vector<int64_t> labels;
  if (data::is_photo_cache(o.data)) {  // a one-file cache (ember data cache)
    auto cache = std::make_shared<const data::PhotoCache>(o.data);
    const int64_t n = o.limit > 0 ? std::min(o.limit, cache->size()) : cache->size();
    std::vector<int64_t> rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) rows[size_t(i)] = i, labels.push_back(cache->label(i));
    ds.classes = cache->classes();
    ds.photos = data::PhotoSet(cache).take(rows);
  } else {
    const data::ImageFolderListing listing = data::list_image_folder(o.data);
    if (listing.files.empty())
      throw UsageError(fmt::format("no image files in {}/<class>/", o.data), "pass a folder of photos: FOLDER/<class>/*.jpg");
    std::vector<std::filesystem::path> files;
    for (const auto& [f, l] : listing.files) {
      if (o.limit > 0 && int64_t(files.size()) >= o.limit) break;
      files.push_back(f), labels.push_back(l);
    }
    ds.classes = listing.classes;
    ds.photos = std::make_shared<const data::PhotoSet>(files);
  }
  ds.labels = from_blob_copy(labels.data(), {int64_t(labels.size())}, DType::Int64, Device::cpu());
  ds.recipe.size = o.image_size;
  ds.recipe.train = true;
  ds.recipe.augment = data::parse_augment(o.augment);
  if (!o.color_jitter.empty()) ds.recipe.jitter = data::parse_color_jitter(o.color_jitter);
  ds.mean = data::kImageNetMean, ds.std = data::kImageNetStd;
  const int64_t n = ds.size();

  // One core: decode alone, then decode + augment + normalise (the work of one sample).
  const int64_t probe = std::min<int64_t>(n, 200);
  auto t0 = std::chrono::steady_clock::now();
  int64_t pixels = 0;
  for (int64_t i = 0; i < probe; ++i) pixels += ds.photos->picture(i, ds.recipe.max_pixels).width;
  const double decode_rate = double(probe) / seconds_since(t0);
  std::vector<float> planes(size_t(3 * o.image_size * o.image_size));
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < probe; ++i)
    data::photo_sample(ds.photos->picture(i, ds.recipe.max_pixels), ds.recipe, ds.mean, ds.std, 0, 0, i, planes.data());
  const double sample_rate = double(probe) / seconds_since(t0);
  (void)pixels;

  // The loader: whole epochs, shuffled, into float batches (what training reads).
  data::LoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.workers = o.workers;
  lo.prefetch = std::max(2, 2 * o.workers);
  lo.shuffle = true;
  data::DataLoader loader(ds, lo);
  std::vector<double> rates;
  for (int64_t e = 0; e < o.epochs; ++e) {
    loader.begin_epoch(e);
    t0 = std::chrono::steady_clock::now();
    int64_t seen = 0;
    for (data::Batch& b : loader) seen += b.x.size(0);
    rates.push_back(double(seen) / seconds_since(t0));
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const double loader_rate = sorted[sorted.size() / 2];
  const std::string cpu = cpu_model();
  if (o.json) {
    nlohmann::json j = {{"data", o.data},           {"images", n},
                        {"image_size", o.image_size}, {"augment", o.augment}, {"recipe", ds.recipe.describe()},
                        {"batch_size", o.batch_size}, {"workers", o.workers},
                        {"cpu", cpu},               {"loader_images_per_s", loader_rate},
                        {"loader_epochs_images_per_s", rates},
                        {"decode_images_per_s_one_core", decode_rate},
                        {"decode_augment_images_per_s_one_core", sample_rate}};
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("photo pipeline on {} ({} images, {} classes), {}\n", o.data, n, ds.num_classes(), cpu);
  fmt::print("  {} -> {}x{} floats, ImageNet mean/std\n", ds.recipe.describe(), o.image_size, o.image_size);
  fmt::print("  DataLoader, {} workers, batch {}: {:8.1f} images/s (median of {} epoch{})\n", o.workers, o.batch_size,
             loader_rate, rates.size(), rates.size() == 1 ? "" : "s");
  fmt::print("  one core, decode only:          {:8.1f} images/s ({} images)\n", decode_rate, probe);
  fmt::print("  one core, decode + augment:     {:8.1f} images/s\n", sample_rate);
  return kExitOk;
}

}  // namespace

void register_bench_data(CLI::App& bench, Runner& run) {
  auto o = std::make_shared<DataBenchOpts>();
  auto* d = bench.add_subcommand("data", "Photo pipeline images/s: the DataLoader over a folder of photos, and decoding");
  d->add_option("--data", o->data, "A folder of photos (FOLDER/<class>/*.jpg) or a cache file (ember data cache)")
      ->required();
  add_number(d, "--workers", o->workers, "Loader threads (decode + augment)", at_least(0))->capture_default_str();
  add_number(d, "--image-size", o->image_size, "The crop's side", at_least(1))->capture_default_str();
  add_number(d, "-b,--batch-size", o->batch_size, "Batch size", at_least(1))->capture_default_str();
  add_number(d, "--epochs", o->epochs, "Epochs timed (the median is shown)", at_least(1))->capture_default_str();
  add_number(d, "--limit", o->limit, "Use the first N images only (0: all)", at_least(0))->capture_default_str();
  d->add_option("--augment", o->augment, "standard, light, trivial (+ TrivialAugmentWide) or none")
      ->check(CLI::IsMember({"standard", "light", "trivial", "none"}))
      ->capture_default_str();
  d->add_option("--color-jitter", o->color_jitter, "ColorJitter on top: B or B,C,S or B,C,S,H (e.g. 0.4)");
  d->add_flag("--json", o->json, "Print JSON");
  d->callback([&run, o] { run = [o] { return run_data_bench(*o); }; });
}

}  // namespace ember::cli

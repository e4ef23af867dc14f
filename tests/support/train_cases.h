// Tiny training problems for engine tests: a learnable synthetic image set held in memory and a
// small MLP, so a whole fit runs in milliseconds on the CPU without the CLI or dataset files.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ember/core/generator.h"
#include "ember/data/dataset.h"
#include "ember/nn/layers.h"
#include "ember/train/fit.h"

namespace ember::test {

// The engine tests' FitOptions: `epochs` of `batch` x `accumulate`, seeded, batches assembled on the
// calling thread (workers 0), evaluation in batches of 64, metrics every `log_every` steps (0: off).
inline train::FitOptions fit_options(int64_t batch, int64_t accumulate = 1, int64_t epochs = 1, uint64_t seed = 3,
                                     int64_t log_every = 0) {
  train::FitOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.accumulate = accumulate;
  o.seed = seed;
  o.workers = 0;
  o.log_every = log_every;
  o.eval_batch_size = 64;
  return o;
}

// n images (1, 4, 4) in `classes` classes: class k lights pixel row k % 4 (and column k / 4) over
// a deterministic noise floor, so an MLP learns it in a few epochs. Label i % classes.
inline data::Dataset synthetic_dataset(int64_t n, int64_t classes = 3, uint32_t salt = 0) {
  std::vector<uint8_t> px(static_cast<size_t>(n * 16));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  uint32_t h = 2166136261u ^ salt;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i % classes;
    labels[size_t(i)] = k;
    for (int64_t p = 0; p < 16; ++p) {
      h = (h ^ uint32_t(i * 16 + p)) * 16777619u;
      const bool lit = p / 4 == k % 4 || p % 4 == k / 4;
      px[size_t(i * 16 + p)] = uint8_t((lit ? 150 : 0) + (h >> 26));  // noise 0..63
    }
  }
  return data::dataset_from_tensors(from_blob_copy(px.data(), {n, 1, 4, 4}, DType::UInt8), tensor(labels, {n}), classes);
}

// Flatten -> Linear(16, hidden) -> ReLU -> [Dropout(p)] -> Linear(hidden, classes), seeded.
inline std::shared_ptr<nn::Sequential> tiny_mlp(uint64_t seed, int64_t hidden = 32, int64_t classes = 3,
                                                double dropout = 0.0) {
  Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16, hidden, true, &gen));
  m->push_back(std::make_shared<nn::ReLU>());
  if (dropout > 0) m->push_back(std::make_shared<nn::Dropout>(dropout));
  m->push_back(std::make_shared<nn::Linear>(hidden, classes, true, &gen));
  return m;
}

// Every parameter of `m`, flattened in parameters() order (to compare two runs' weights).
inline std::vector<float> flat_weights(nn::Module& m) {
  std::vector<float> out;
  for (const auto& p : m.parameters()) {
    auto v = p.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace ember::test

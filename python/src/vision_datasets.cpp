// ember._core._vision_datasets: the readers behind ember.vision.datasets (python/ember/vision/
// datasets/). Conversion only: the formats, their checks and the downloads are the library's
// (ember/data/readers.h, ember/data/fetch.h); arrays come back as NumPy arrays owning the buffers.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "ember/data/fetch.h"
#include "ember/data/readers.h"

namespace ember::python {

using namespace nb::literals;

namespace {

// A NumPy array that owns `values` (moved into the capsule that frees it), of the given shape.
template <class T>
nb::object owned_array(std::vector<T>&& values, std::vector<size_t> shape) {
  auto* owner = new std::vector<T>(std::move(values));
  nb::capsule free_it(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(owner->data(), shape.size(), shape.data(), free_it));
}

// (images uint8 (N, H, W) for one channel else (N, C, H, W), labels int64 (N,)).
std::tuple<nb::object, nb::object> to_arrays(data::LabeledImages&& li) {
  std::vector<size_t> shape = {size_t(li.n), size_t(li.c), size_t(li.h), size_t(li.w)};
  if (li.c == 1) shape.erase(shape.begin() + 1);
  const size_t n = size_t(li.n);
  return {owned_array(std::move(li.images), shape), owned_array(std::move(li.labels), {n})};
}

}  // namespace

void register_vision_datasets(nb::module_& m) {
  nb::module_ v = m.def_submodule("_vision_datasets", "The readers behind ember.vision.datasets");

  v.def(
      "load_idx_pair",
      [](const std::string& images, const std::string& labels, int64_t num_classes) {
        data::LabeledImages li;
        {
          nb::gil_scoped_release release;
          li = data::load_idx_pair(images, labels, num_classes);
        }
        return to_arrays(std::move(li));
      },
      "images"_a, "labels"_a, "num_classes"_a = 10,
      "An IDX image file and its label file (plain or gzip): (uint8 (N, H, W), int64 (N,)).");

  v.def(
      "load_cifar",
      [](const std::string& dir, bool cifar100, bool train, bool python_version) {
        data::LabeledImages li;
        {
          nb::gil_scoped_release release;
          li = python_version ? data::load_cifar_python(dir, cifar100, train)
               : cifar100     ? data::load_cifar100(dir, train, true)
                              : data::load_cifar10(dir, train);
        }
        return to_arrays(std::move(li));
      },
      "dir"_a, "cifar100"_a, "train"_a, "python_version"_a,
      "A CIFAR folder, the pickled batches (python_version) or the binary ones: (uint8 (N, 3, 32, 32), "
      "int64 (N,)); CIFAR-100's fine labels.");

  v.def(
      "cifar_classes",
      [](const std::string& dir, bool cifar100) {
        nb::gil_scoped_release release;
        return data::load_cifar_classes(dir, cifar100);
      },
      "dir"_a, "cifar100"_a, "The class names of a CIFAR folder (its meta file or text list).");

  v.def("canonical_base_url", &data::canonical_base_url, "dataset"_a);

  v.def(
      "fetch",
      [](const std::string& dataset, const std::string& dir, const std::string& base_url) {
        data::FetchReport report;
        {
          nb::gil_scoped_release release;
          data::FetchOptions opt;
          opt.progress = true;
          report = data::fetch_files(data::dataset_files(dataset),
                                     base_url.empty() ? data::canonical_base_url(dataset) : base_url, dir, opt);
        }
        std::vector<std::tuple<std::string, std::string>> out;
        for (const auto& f : report.files) out.emplace_back(f.name, f.status);
        return out;
      },
      "dataset"_a, "dir"_a, "base_url"_a = "",
      "Downloads a dataset's files into dir with `ember data fetch`'s checks (SHA-256, full parse, atomic "
      "writes); files that verify are kept. Returns [(name, status)].");
}

}  // namespace ember::python

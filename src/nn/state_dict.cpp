// StateDict: ordered name -> tensor map shared by modules, optimizers and LR schedulers.
#include "ember/nn/state_dict.h"

#include "ember/ops.h"

namespace ember {

void StateDict::insert(std::string key, Tensor value) {
  EMBER_CHECK(!contains(key), ValueError, "StateDict: duplicate key '", key, "'");
  index_.emplace(key, items_.size());
  items_.emplace_back(std::move(key), std::move(value));
}

void StateDict::set(const std::string& key, Tensor value) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    insert(key, std::move(value));
  } else {
    items_[it->second].second = std::move(value);
  }
}

const Tensor& StateDict::at(const std::string& key) const {
  const Tensor* t = find(key);
  EMBER_CHECK(t != nullptr, IndexError, "StateDict: no key '", key, "'");
  return *t;
}

const Tensor* StateDict::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

void StateDict::set_scalar(const std::string& key, double value) {
  set(key, scalar_tensor(value, {.dtype = DType::Float64}));
}
void StateDict::set_int(const std::string& key, int64_t value) {
  set(key, tensor(std::vector<int64_t>{value}, Shape{}));
}
double StateDict::scalar(const std::string& key) const {
  const Tensor& t = at(key);
  EMBER_CHECK(t.numel() == 1, ShapeError, "StateDict: '", key, "' should hold one value, it has shape ",
              shape_str(t.sizes()));
  return t.to(DType::Float64).item<double>();
}
int64_t StateDict::integer(const std::string& key) const {
  const Tensor& t = at(key);
  EMBER_CHECK(t.numel() == 1, ShapeError, "StateDict: '", key, "' should hold one value, it has shape ",
              shape_str(t.sizes()));
  return t.to(DType::Int64).item<int64_t>();
}

}  // namespace ember

// StateDict: an ordered name -> Tensor map, the exchange format of module weights, optimizer state
// and scheduler state (as PyTorch's state_dict()). Order is insertion order; keys are unique.
// Scalars (lr, step, last_epoch) are stored as 0-d tensors (float64 or int64), so a whole training
// state can be written to one safetensors file.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  // Throws ValueError when `key` is already present.
  void insert(std::string key, Tensor value);
  // Inserts or replaces (keeps the original position when replacing).
  void set(const std::string& key, Tensor value);
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  // Throws IndexError naming the key when absent.
  const Tensor& at(const std::string& key) const;
  const Tensor* find(const std::string& key) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;

  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }

  // Scalar helpers: a 0-d float64 (set_scalar) or int64 (set_int) tensor.
  void set_scalar(const std::string& key, double value);
  void set_int(const std::string& key, int64_t value);
  // Read a 0-d (or one-element) tensor back; throws IndexError naming the key when absent.
  double scalar(const std::string& key) const;
  int64_t integer(const std::string& key) const;

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace ember

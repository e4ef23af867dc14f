// The model spec reader (see spec.h): a TOML subset — comments, [[layer]] tables, and
// key = integer | float | "string" | true/false — read line by line so every error names its line.
#include "ember/nn/spec.h"

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "ember/io/user_file.h"
#include "ember/nn/layers.h"

namespace ember::nn {

namespace {

using Value = std::variant<int64_t, double, std::string, bool>;
struct Entry {
  Value value;
  int line = 0;
};
struct LayerSpec {
  int line = 0;  // of its [[layer]] header
  std::map<std::string, Entry> keys;
};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

[[noreturn]] void fail(const std::string& source, int line, const std::string& msg, const std::string& hint = "") {
  throw FormatError(source + ":" + std::to_string(line) + ": " + msg, hint);
}

std::vector<LayerSpec> parse(const std::string& text, const std::string& source) {
  std::vector<LayerSpec> layers;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    // Drop a comment that is not inside a string.
    bool quoted = false;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '"') quoted = !quoted;
      if (raw[i] == '#' && !quoted) {
        raw.resize(i);
        break;
      }
    }
    std::string s = trim(raw);
    if (s.empty()) continue;
    if (s == "[[layer]]") {
      layers.push_back({line, {}});
      continue;
    }
    if (s.front() == '[')
      fail(source, line, "unexpected table " + s, "each layer starts with a [[layer]] line");
    size_t eq = s.find('=');
    if (eq == std::string::npos) fail(source, line, "expected `key = value`, found '" + s + "'");
    std::string key = trim(s.substr(0, eq)), val = trim(s.substr(eq + 1));
    if (layers.empty()) fail(source, line, "'" + key + "' before the first [[layer]]", "start the file with [[layer]]");
    if (key.empty() || val.empty()) fail(source, line, "expected `key = value`, found '" + s + "'");
    Value v;
    if (val.size() >= 2 && val.front() == '"' && val.back() == '"') {
      v = val.substr(1, val.size() - 2);
    } else if (val == "true" || val == "false") {
      v = val == "true";
    } else {
      try {
        size_t pos = 0;
        if (val.find_first_of(".eE") == std::string::npos) {
          v = int64_t(std::stoll(val, &pos));
        } else {
          v = std::stod(val, &pos);
        }
        if (pos != val.size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        fail(source, line, "'" + val + "' is not a number, a \"string\" or true/false (key '" + key + "')");
      }
    }
    if (layers.back().keys.count(key)) fail(source, line, "key '" + key + "' given twice in this layer");
    layers.back().keys[key] = {v, line};
  }
  if (layers.empty()) fail(source, line, "no [[layer]] tables: the file describes no model");
  return layers;
}

// Reads the typed keys of one layer and complains about anything left over.
class LayerReader {
 public:
  LayerReader(const LayerSpec& l, const std::string& source, size_t index, std::string type)
      : l_(l), source_(source), type_(std::move(type)) {
    where_ = "layer " + std::to_string(index + 1) + " (" + type_ + ")";
    used_.insert("type");
  }
  int64_t integer(const std::string& key, std::optional<int64_t> def, int64_t classes = -1) {
    used_.insert(key);
    auto it = l_.keys.find(key);
    if (it == l_.keys.end()) {
      if (!def) fail(source_, l_.line, where_ + ": missing '" + key + "'");
      return *def;
    }
    if (classes >= 0 && std::holds_alternative<std::string>(it->second.value) &&
        std::get<std::string>(it->second.value) == "classes")
      return classes;
    if (!std::holds_alternative<int64_t>(it->second.value))
      fail(source_, it->second.line, where_ + ": '" + key + "' must be an integer");
    int64_t v = std::get<int64_t>(it->second.value);
    if (v < 0 || (v == 0 && key != "padding")) fail(source_, it->second.line, where_ + ": '" + key + "' must be positive, got " + std::to_string(v));
    return v;
  }
  double real(const std::string& key, double def) {
    used_.insert(key);
    auto it = l_.keys.find(key);
    if (it == l_.keys.end()) return def;
    if (std::holds_alternative<int64_t>(it->second.value)) return double(std::get<int64_t>(it->second.value));
    if (!std::holds_alternative<double>(it->second.value))
      fail(source_, it->second.line, where_ + ": '" + key + "' must be a number");
    return std::get<double>(it->second.value);
  }
  bool flag(const std::string& key, bool def) {
    used_.insert(key);
    auto it = l_.keys.find(key);
    if (it == l_.keys.end()) return def;
    if (!std::holds_alternative<bool>(it->second.value))
      fail(source_, it->second.line, where_ + ": '" + key + "' must be true or false");
    return std::get<bool>(it->second.value);
  }
  void done() {
    for (const auto& [k, e] : l_.keys)
      if (!used_.count(k)) fail(source_, e.line, where_ + ": unknown key '" + k + "'");
  }
  [[noreturn]] void shape_error(const std::string& msg, const std::string& hint = "") {
    fail(source_, l_.line, where_ + ": " + msg, hint);
  }

 private:
  const LayerSpec& l_;
  const std::string& source_;
  std::string type_, where_;
  std::set<std::string> used_;
};

std::string dims(const Shape& s) { return shape_str(s); }

}  // namespace

bool is_spec_file(const std::string& name) { return name.size() > 5 && name.ends_with(".toml"); }

std::shared_ptr<Module> model_from_spec(const std::string& text, const std::string& source, int64_t num_classes,
                                        int64_t in_channels, int64_t image_size, Generator* gen) {
  std::vector<LayerSpec> layers = parse(text, source);
  auto model = std::make_shared<Sequential>();
  Shape shape{in_channels, image_size, image_size};  // per sample: (C, H, W) or (F)
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    auto t = l.keys.find("type");
    if (t == l.keys.end() || !std::holds_alternative<std::string>(t->second.value))
      fail(source, l.line, "layer " + std::to_string(i + 1) + ": missing type = \"...\"");
    const std::string type = std::get<std::string>(t->second.value);
    LayerReader r(l, source, i, type);
    auto need_image = [&] {
      if (shape.size() != 3)
        r.shape_error("needs an image input (C, H, W) but gets " + dims(shape) + " (after a flatten or linear layer)",
                      "move it before the flatten layer");
    };
    auto pooled = [&](int64_t size, int64_t k, int64_t s, int64_t p) {
      int64_t o = (size + 2 * p - k) / s + 1;
      if (size + 2 * p < k || o < 1)
        r.shape_error("kernel " + std::to_string(k) + " is larger than its input " + dims(shape),
                      "use a smaller kernel_size or more padding, or remove a pooling layer");
      return o;
    };
    std::shared_ptr<Module> m;
    if (type == "conv2d") {
      need_image();
      int64_t out = r.integer("out_channels", std::nullopt), k = r.integer("kernel_size", std::nullopt);
      int64_t s = r.integer("stride", 1), p = r.integer("padding", 0), d = r.integer("dilation", 1),
              g = r.integer("groups", 1);
      Conv2dOptions o;
      o.stride = {s, s}, o.padding = {p, p}, o.dilation = {d, d}, o.groups = g, o.bias = r.flag("bias", true);
      if (shape[0] % g != 0 || out % g != 0)
        r.shape_error("groups = " + std::to_string(g) + " must divide the input channels (" + std::to_string(shape[0]) +
                      ") and out_channels (" + std::to_string(out) + ")");
      const int64_t ke = d * (k - 1) + 1;
      m = std::make_shared<Conv2d>(shape[0], out, k, o, gen);
      shape = {out, pooled(shape[1], ke, s, p), pooled(shape[2], ke, s, p)};
    } else if (type == "maxpool2d" || type == "avgpool2d") {
      need_image();
      int64_t k = r.integer("kernel_size", std::nullopt), s = r.integer("stride", k), p = r.integer("padding", 0);
      if (2 * p > k) r.shape_error("padding " + std::to_string(p) + " must be at most half of kernel_size " + std::to_string(k));
      if (type == "maxpool2d") m = std::make_shared<MaxPool2d>(k, s, p);
      else m = std::make_shared<AvgPool2d>(k, s, p);
      shape = {shape[0], pooled(shape[1], k, s, p), pooled(shape[2], k, s, p)};
    } else if (type == "adaptiveavgpool2d") {
      need_image();
      int64_t o = r.integer("output_size", 1);
      m = std::make_shared<AdaptiveAvgPool2d>(o);
      shape = {shape[0], o, o};
    } else if (type == "batchnorm2d") {
      need_image();
      m = std::make_shared<BatchNorm2d>(shape[0], r.real("eps", 1e-5), r.real("momentum", 0.1));
    } else if (type == "residual") {
      need_image();
      int64_t out = r.integer("out_channels", shape[0]), s = r.integer("stride", 1);
      m = std::make_shared<ResidualBlock>(shape[0], out, s, gen);
      shape = {out, pooled(shape[1], 3, s, 1), pooled(shape[2], 3, s, 1)};
    } else if (type == "flatten") {
      m = std::make_shared<Flatten>();
      shape = {shape_numel(shape)};
    } else if (type == "linear") {
      if (shape.size() != 1)
        r.shape_error("needs a flat input but gets " + dims(shape), "add a [[layer]] type = \"flatten\" before it");
      int64_t out = r.integer("out_features", std::nullopt, num_classes);
      m = std::make_shared<Linear>(shape[0], out, r.flag("bias", true), gen);
      shape = {out};
    } else if (type == "relu") {
      m = std::make_shared<ReLU>();
    } else if (type == "gelu") {
      m = std::make_shared<GELU>();
    } else if (type == "dropout") {
      double p = r.real("p", 0.5);
      if (p < 0 || p > 1) r.shape_error("p must be in [0, 1], got " + std::to_string(p));
      m = std::make_shared<Dropout>(p);
    } else {
      fail(source, l.line, "layer " + std::to_string(i + 1) + ": unknown type '" + type + "'",
           "known types: conv2d, linear, batchnorm2d, relu, gelu, dropout, maxpool2d, avgpool2d, "
           "adaptiveavgpool2d, flatten, residual");
    }
    r.done();
    model->push_back(m);
  }
  if (shape != Shape{num_classes})
    fail(source, layers.back().line, "the model outputs " + dims(shape) + " per sample but the dataset has " +
         std::to_string(num_classes) + " classes",
         "end with a flatten (if needed) and a linear layer with out_features = \"classes\"");
  return model;
}

}  // namespace ember::nn

namespace ember::nn {
std::shared_ptr<Module> load_model_spec(const std::filesystem::path& path, int64_t num_classes, int64_t in_channels,
                                        int64_t image_size, Generator* gen) {
  return model_from_spec(io::read_user_text(path, io::kModelSpecFile), path.string(), num_classes, in_channels,
                         image_size, gen);
}
}  // namespace ember::nn

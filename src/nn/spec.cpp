// The model spec reader (see spec.h and docs/model-spec.md): the file is TOML, parsed by toml++
// (any valid TOML: [[layer]] tables or `layer = [{...}, ...]`, arrays such as kernel_size = [3, 3]),
// then checked key by key so every error names the file, the line and the layer.
#include "ember/nn/spec.h"

#include <toml++/toml.h>  // the compiled library (CMakeLists.txt: TOML_HEADER_ONLY=0 for every file)

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "core/edit_distance.h"
#include "ember/io/user_file.h"
#include "ember/nn/layers.h"

namespace ember::nn {

namespace {

using IntPair = std::array<int64_t, 2>;
using Value = std::variant<int64_t, double, std::string, bool, IntPair, std::monostate /* anything else */>;
struct Entry {
  Value value;
  int line = 0;
  std::string shown;  // how the value was written, for messages
};
struct LayerSpec {
  int line = 0;  // of its [[layer]] header (or its inline table)
  std::map<std::string, Entry> keys;
};

[[noreturn]] void fail(const std::string& source, int line, const std::string& msg, const std::string& hint = "") {
  throw SpecError(source + ":" + std::to_string(line) + ": " + msg, hint);
}

// The ranges of the numbers (docs/model-spec.md). Channels and features: 65536 is 64 times the
// widest layer of the zoo's models and keeps a conv2d's or linear's weight far from int64's limit.
// Window sizes, strides, padding, dilation and output sizes: at most 4096, the largest
// --image-size; a window wider than its input is refused by the shape check anyway.
struct IntRange {
  int64_t min, max;
};
constexpr IntRange kWidthRange{1, 65536};   // out_channels, out_features, groups
constexpr IntRange kExtentRange{1, 4096};   // kernel_size, stride, dilation, output_size
constexpr IntRange kPaddingRange{0, 4096};  // padding
constexpr const char* kRangeHint = "docs/model-spec.md gives each key's range";


// "did you mean 'kernel_size'?" when one candidate is close to `typed`, else the list of candidates.
std::string suggest(const std::string& typed, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
  for (const auto& c : candidates)
    if (size_t dist = edit_distance(typed, c); dist < best_d) best = c, best_d = dist;
  if (!best.empty()) return "did you mean '" + best + "'?";
  std::string all;
  for (const auto& c : candidates) all += (all.empty() ? "" : ", ") + c;
  return "known: " + all;
}

// Keys Keras and PyTorch users write for what ember calls otherwise (issue 48): the key ember reads,
// or "" for what ember infers from the previous layer.
struct ForeignKey {
  const char* key;
  const char* ours;
  const char* whose;
};
constexpr ForeignKey kForeignKeys[] = {
    {"filters", "out_channels", "Keras's Conv2D"},     {"units", "out_features", "Keras's Dense"},
    {"strides", "stride", "Keras's"},                  {"pool_size", "kernel_size", "Keras's pooling layers'"},
    {"use_bias", "bias", "Keras's"},                   {"rate", "p", "Keras's Dropout"},
    {"in_channels", "", "PyTorch's Conv2d"},           {"in_features", "", "PyTorch's Linear"},
    {"num_features", "", "PyTorch's BatchNorm2d"},
};
// Layer types as Keras names them, for the unknown-type error.
constexpr std::pair<const char*, const char*> kForeignTypes[] = {
    {"dense", "linear"},           {"maxpooling2d", "maxpool2d"}, {"averagepooling2d", "avgpool2d"},
    {"batchnormalization", "batchnorm2d"}, {"globalaveragepooling2d", "adaptiveavgpool2d"},
};

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

int line_of(const toml::node& n, int fallback) {
  const auto& src = n.source();
  return src.begin.line ? int(src.begin.line) : fallback;
}

Entry to_entry(const toml::node& n, int fallback_line) {
  Entry e;
  e.line = line_of(n, fallback_line);
  std::ostringstream os;
  if (auto* a = n.as_array()) os << toml::toml_formatter(*a, toml::format_flags::none);
  else if (n.is_table()) os << "{ ... }";
  else n.visit([&](const auto& v) { os << v; });
  e.shown = os.str();
  if (auto v = n.value_exact<int64_t>()) e.value = *v;
  else if (auto d = n.value_exact<double>()) e.value = *d;
  else if (auto str = n.value_exact<std::string>()) e.value = *str, e.shown = "\"" + *str + "\"";
  else if (auto b = n.value_exact<bool>()) e.value = *b;
  else if (auto* a = n.as_array(); a && a->size() == 2 && (*a)[0].is_integer() && (*a)[1].is_integer())
    e.value = IntPair{(*a)[0].value_exact<int64_t>().value(), (*a)[1].value_exact<int64_t>().value()};
  else e.value = std::monostate{};
  return e;
}

std::vector<LayerSpec> parse(const std::string& text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    fail(source, int(e.source().begin.line), std::string(e.description()),
         "the file must be valid TOML (https://toml.io); see docs/model-spec.md");
  }
  std::vector<LayerSpec> layers;
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "layer") continue;
    if (node.is_table() || node.is_array())
      fail(source, line_of(node, 1), "unknown table '" + k + "': " + suggest(k, {"layer"}),
           "each layer starts with a [[layer]] line");
    fail(source, line_of(node, 1), "'" + k + "' before the first [[layer]]", "start the file with [[layer]]");
  }
  const toml::node* all = root.get("layer");
  if (!all) fail(source, int(std::count(text.begin(), text.end(), '\n')), "no [[layer]] tables: the file describes no model");
  const toml::array* arr = all->as_array();
  if (!arr)
    fail(source, line_of(*all, 1), "'layer' must be an array of tables ([[layer]] sections or layer = [{...}, ...])");
  for (const toml::node& item : *arr) {
    const toml::table* t = item.as_table();
    if (!t) fail(source, line_of(item, line_of(*all, 1)), "each entry of 'layer' must be a table such as { type = \"relu\" }");
    LayerSpec l;
    l.line = line_of(*t, line_of(*all, 1));
    for (const auto& [key, node] : *t) l.keys[std::string(key.str())] = to_entry(node, l.line);
    layers.push_back(std::move(l));
  }
  if (layers.empty()) fail(source, line_of(*all, 1), "'layer' is empty: the file describes no model");
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
  // An integer inside `range` ("classes" too where classes >= 0: the dataset's count).
  int64_t integer(const std::string& key, std::optional<int64_t> def, IntRange range, int64_t classes = -1) {
    used_.insert(key);
    auto it = l_.keys.find(key);
    if (it == l_.keys.end()) {
      if (!def) missing(key);
      return *def;
    }
    if (classes >= 0 && std::holds_alternative<std::string>(it->second.value) &&
        std::get<std::string>(it->second.value) == "classes")
      return classes;
    if (!std::holds_alternative<int64_t>(it->second.value))
      fail(source_, it->second.line, where_ + ": '" + key + "' must be an integer, got " + it->second.shown);
    return checked(key, std::get<int64_t>(it->second.value), range, it->second.line);
  }
  // One integer (both sides) or [height, width], each inside `range`.
  IntPair pair(const std::string& key, std::optional<int64_t> def, IntRange range) {
    auto it = l_.keys.find(key);
    if (it != l_.keys.end() && std::holds_alternative<IntPair>(it->second.value)) {
      used_.insert(key);
      const IntPair v = std::get<IntPair>(it->second.value);
      const std::string shown = "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
      return {checked(key, v[0], range, it->second.line, " in " + shown), checked(key, v[1], range, it->second.line, " in " + shown)};
    }
    if (it != l_.keys.end() && !std::holds_alternative<int64_t>(it->second.value))
      fail(source_, it->second.line,
           where_ + ": '" + key + "' must be an integer or [height, width], got " + it->second.shown);
    const int64_t v = integer(key, def, range);
    return {v, v};
  }
  // Pooling layers take square windows: an integer, or [k, k].
  int64_t square(const std::string& key, std::optional<int64_t> def, IntRange range) {
    const IntPair v = pair(key, def, range);
    if (v[0] != v[1])
      fail(source_, l_.keys.at(key).line,
           where_ + ": '" + key + "' must be square here, got [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]",
           "pooling layers take one size for both sides");
    return v[0];
  }
  // A number in [min, max] (above min when min_open); TOML's nan and inf are refused.
  double real(const std::string& key, double def, double min, double max, bool min_open = false) {
    used_.insert(key);
    auto it = l_.keys.find(key);
    if (it == l_.keys.end()) return def;
    const Entry& e = it->second;
    double v = 0;
    if (std::holds_alternative<int64_t>(e.value)) v = double(std::get<int64_t>(e.value));
    else if (std::holds_alternative<double>(e.value)) v = std::get<double>(e.value);
    else fail(source_, e.line, where_ + ": '" + key + "' must be a number, got " + e.shown, kRangeHint);
    if (!(min_open ? v > min : v >= min) || !(v <= max))  // NaN fails both
      fail(source_, e.line,
           where_ + ": '" + key + "' must be " + (min_open ? "above " : "at least ") + number_text(min) +
               " and at most " + number_text(max) + ", got " + number_text(v),
           kRangeHint);
    return v;
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
    for (const auto& [k, e] : l_.keys) {
      if (used_.count(k)) continue;
      for (const ForeignKey& f : kForeignKeys) {
        if (k != f.key) continue;
        if (*f.ours == '\0')
          fail(source_, e.line, where_ + ": '" + k + "' (" + f.whose + " argument) is not a key of ember's layers",
               "ember infers it from the previous layer's output: remove it (docs/model-spec.md lists every key)");
        if (used_.count(f.ours))
          fail(source_, e.line, where_ + ": unknown key '" + k + "'",
               "'" + k + "' is " + f.whose + " name; ember's is '" + f.ours + "': write " + f.ours + " = " + e.shown +
                   " (docs/model-spec.md lists every key)");
      }
      fail(source_, e.line, where_ + ": unknown key '" + k + "'",
           suggest(k, std::vector<std::string>(used_.begin(), used_.end())) + " (docs/model-spec.md lists every key)");
    }
  }
  [[noreturn]] void shape_error(const std::string& msg, const std::string& hint = "") {
    fail(source_, l_.line, where_ + ": " + msg, hint);
  }

 private:
  const LayerSpec& l_;
  const std::string& source_;
  std::string type_, where_;
  std::set<std::string> used_;

  // A required key is absent; a key of the layer spelled like it is probably the typo.
  [[noreturn]] void missing(const std::string& key) const {
    for (const ForeignKey& f : kForeignKeys)  // `filters = 32` for out_channels
      if (auto it = l_.keys.find(f.key); it != l_.keys.end() && key == f.ours)
        fail(source_, it->second.line, where_ + ": missing '" + key + "'; '" + f.key + "' is " + f.whose + " name for it",
             "write " + key + " = " + it->second.shown + " (docs/model-spec.md lists every key)");
    for (const auto& [k, e] : l_.keys)
      if (k != key && suggest(k, {key}).starts_with("did you mean"))
        fail(source_, e.line, where_ + ": missing '" + key + "'; '" + k + "' is not a key of this layer",
             "did you mean '" + key + "'? (docs/model-spec.md lists every key)");
    fail(source_, l_.line, where_ + ": missing '" + key + "'");
  }

  // `in` names the pair the value is one side of (" in [3, 0]"), or is empty.
  int64_t checked(const std::string& key, int64_t v, IntRange range, int line, const std::string& in = "") const {
    if (v < range.min || v > range.max)
      fail(source_, line,
           where_ + ": '" + key + "' must be between " + std::to_string(range.min) + " and " +
               std::to_string(range.max) + ", got " + std::to_string(v) + in,
           kRangeHint);
    return v;
  }
  // The shortest text that reads back as v: 1.5, -1e-05, nan, inf (not "1.500000").
  static std::string number_text(double v) {
    std::array<char, 32> buf;
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), r.ptr);
  }
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
    // "Conv2D", "ReLU", "BatchNorm2d" as Keras and PyTorch spell them: the type names ignore case.
    const std::string type = lower(std::get<std::string>(t->second.value));
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
    // A layer's constructor allocates its parameters: an error there (out of memory, a size it
    // refuses) is named by the file, the line and the layer too.
    auto build = [&](auto make) -> std::shared_ptr<Module> {
      try {
        return make();
      } catch (const OutOfMemoryError& e) {
        throw OutOfMemoryError(source + ":" + std::to_string(l.line) + ": layer " + std::to_string(i + 1) + " (" +
                                   type + "): " + e.what(),
                               e.hint());
      } catch (const SpecError&) {
        throw;
      } catch (const Error& e) {
        r.shape_error(e.what(), e.hint().empty() ? kRangeHint : e.hint());
      }
    };
    if (type == "conv2d") {
      need_image();
      const int64_t out = r.integer("out_channels", std::nullopt, kWidthRange);
      const IntPair k = r.pair("kernel_size", std::nullopt, kExtentRange), s = r.pair("stride", 1, kExtentRange),
                    p = r.pair("padding", 0, kPaddingRange), d = r.pair("dilation", 1, kExtentRange);
      const int64_t g = r.integer("groups", 1, kWidthRange);
      Conv2dOptions o;
      o.stride = s, o.padding = p, o.dilation = d, o.groups = g, o.bias = r.flag("bias", true);
      if (shape[0] % g != 0 || out % g != 0)
        r.shape_error("groups = " + std::to_string(g) + " must divide the input channels (" + std::to_string(shape[0]) +
                      ") and out_channels (" + std::to_string(out) + ")");
      const IntPair ke = {d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1};
      const int64_t in = shape[0];  // the shape is checked before the weights are allocated
      shape = {out, pooled(shape[1], ke[0], s[0], p[0]), pooled(shape[2], ke[1], s[1], p[1])};
      m = build([&] { return std::make_shared<Conv2d>(in, out, k, o, gen); });
    } else if (type == "maxpool2d" || type == "avgpool2d") {
      need_image();
      const int64_t k = r.square("kernel_size", std::nullopt, kExtentRange), s = r.square("stride", k, kExtentRange),
                    p = r.square("padding", 0, kPaddingRange);
      if (2 * p > k) r.shape_error("padding " + std::to_string(p) + " must be at most half of kernel_size " + std::to_string(k));
      if (type == "maxpool2d") m = std::make_shared<MaxPool2d>(k, s, p);
      else m = std::make_shared<AvgPool2d>(k, s, p);
      shape = {shape[0], pooled(shape[1], k, s, p), pooled(shape[2], k, s, p)};
    } else if (type == "adaptiveavgpool2d") {
      need_image();
      const IntPair o = r.pair("output_size", 1, kExtentRange);
      m = build([&] { return std::make_shared<AdaptiveAvgPool2d>(o); });
      shape = {shape[0], o[0], o[1]};
    } else if (type == "batchnorm2d") {
      need_image();
      const double eps = r.real("eps", 1e-5, 0, 1, /*min_open=*/true), momentum = r.real("momentum", 0.1, 0, 1);
      m = build([&] { return std::make_shared<BatchNorm2d>(shape[0], eps, momentum); });
    } else if (type == "residual") {
      need_image();
      const int64_t in = shape[0], out = r.integer("out_channels", in, kWidthRange),
                    s = r.integer("stride", 1, kExtentRange);
      shape = {out, pooled(shape[1], 3, s, 1), pooled(shape[2], 3, s, 1)};
      m = build([&] { return std::make_shared<ResidualBlock>(in, out, s, gen); });
    } else if (type == "flatten") {
      m = std::make_shared<Flatten>();
      try {
        shape = {shape_numel(shape)};
      } catch (const ShapeError& e) {
        r.shape_error(e.what());
      }
    } else if (type == "linear") {
      if (shape.size() != 1)
        r.shape_error("needs a flat input but gets " + dims(shape), "add a [[layer]] type = \"flatten\" before it");
      const int64_t out = r.integer("out_features", std::nullopt, kWidthRange, num_classes);
      const bool bias = r.flag("bias", true);
      m = build([&] { return std::make_shared<Linear>(shape[0], out, bias, gen); });
      shape = {out};
    } else if (type == "relu") {
      m = std::make_shared<ReLU>();
    } else if (type == "gelu") {
      m = std::make_shared<GELU>();
    } else if (type == "relu6") {
      m = std::make_shared<ReLU6>();
    } else if (type == "hardsigmoid") {
      m = std::make_shared<Hardsigmoid>();
    } else if (type == "hardswish") {
      m = std::make_shared<Hardswish>();
    } else if (type == "silu") {
      m = std::make_shared<SiLU>();
    } else if (type == "dropout") {
      const double p = r.real("p", 0.5, 0, 1);
      m = build([&] { return std::make_shared<Dropout>(p); });
    } else {
      const std::string typed = std::get<std::string>(t->second.value);
      for (const auto& [keras, ours] : kForeignTypes)
        if (type == keras)
          fail(source, l.line, "layer " + std::to_string(i + 1) + ": unknown type '" + typed + "'",
               "Keras's " + typed + " is ember's '" + ours + "'" +
                   (type == "globalaveragepooling2d" ? " (output_size = 1) followed by a flatten" : "") +
                   " (docs/model-spec.md lists every type)");
      fail(source, l.line, "layer " + std::to_string(i + 1) + ": unknown type '" + typed + "'",
           suggest(type, {"conv2d", "linear", "batchnorm2d", "relu", "gelu", "relu6", "hardsigmoid", "hardswish",
                          "silu", "dropout", "maxpool2d", "avgpool2d", "adaptiveavgpool2d", "flatten", "residual"}));
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

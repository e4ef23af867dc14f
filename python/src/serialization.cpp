// ember.save / ember.load (python/ember/serialization.py): Python objects to and from the tree of
// values of a torch.save file (io::PthTree, ember/io/pth.h). Conversion only: the format, its
// checks and the atomic write are the library's (io::pth_serialize_tree, io::pth_parse_tree,
// io::write_file_atomic).
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bindings.h"
#include "ember/io/atomic_file.h"
#include "ember/io/pth.h"
#include "ember/io/safetensors.h"
#include "ember/io/user_file.h"

namespace ember::python {

using namespace nb::literals;

namespace {

io::StDType st_dtype(DType d) {
  switch (d) {
    case DType::Float32: return io::StDType::F32;
    case DType::Float64: return io::StDType::F64;
    case DType::Float16: return io::StDType::F16;
    case DType::BFloat16: return io::StDType::BF16;
    case DType::Int64: return io::StDType::I64;
    case DType::Int32: return io::StDType::I32;
    case DType::UInt8: return io::StDType::U8;
    case DType::Bool: return io::StDType::BOOL;
  }
  throw InternalError("ember.save: a dtype without a storage type");
}

// What the depth of a Python object may reach before ember.save calls it runaway (the file format's
// own limit, which ember.load enforces too).
constexpr int kMaxDepth = io::kPthMaxDepth;

// Python object -> PthTree. `path` names where a value is ("obj['model']['fc.weight']"), for the
// TypeError of a value torch.load(weights_only=True) could not read back.
class ToTree {
 public:
  io::PthTree tree;

  ToTree() {
    nb::module_ collections = nb::module_::import_("collections");
    ordered_dict_ = collections.attr("OrderedDict");
    size_ = nb::module_::import_("ember._tensor").attr("Size");
  }

  uint32_t add(nb::handle h, const std::string& path, int depth) {
    if (depth > kMaxDepth)
      throw nb::value_error((path + ": nested deeper than " + std::to_string(kMaxDepth) + " levels").c_str());
    PyObject* o = h.ptr();
    // Containers and tensors reached twice are one value (torch.load gives back one object).
    if (auto it = memo_.find(o); it != memo_.end()) return it->second;
    io::PthValue v;
    if (h.is_none()) {
      v.kind = io::PthKind::None;
    } else if (PyBool_Check(o)) {
      v.kind = io::PthKind::Bool, v.i = h.ptr() == Py_True;
    } else if (PyLong_CheckExact(o)) {
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow)
        throw nb::type_error((path + ": int " + nb::cast<std::string>(nb::repr(h)) +
                              " does not fit in 64 bits, which torch.load reads")
                                 .c_str());
      v.kind = io::PthKind::Int, v.i = x;
    } else if (PyFloat_Check(o)) {
      v.kind = io::PthKind::Float, v.f = PyFloat_AsDouble(o);
    } else if (PyUnicode_CheckExact(o)) {
      v.kind = io::PthKind::Str, v.s = nb::cast<std::string>(h);
    } else if (PyBytes_CheckExact(o)) {
      v.kind = io::PthKind::Bytes, v.s = std::string(PyBytes_AsString(o), size_t(PyBytes_Size(o)));
    } else if (nb::isinstance<Tensor>(h)) {
      return tensor(h, path);
    } else if (nb::isinstance<PyDType>(h)) {
      v.kind = io::PthKind::DType, v.s = std::string(dtype_name(nb::cast<PyDType>(h).value));
    } else if (nb::isinstance<Device>(h)) {
      const Device d = nb::cast<Device>(h);
      v.kind = io::PthKind::Device, v.s = d.is_cpu() ? "cpu" : "cuda", v.i = d.is_cpu() ? -1 : d.index;
    } else if (Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(size_.ptr())) {
      return sequence(h, io::PthKind::Size, path, depth);
    } else if (PyTuple_CheckExact(o)) {
      return sequence(h, io::PthKind::Tuple, path, depth);
    } else if (PyList_CheckExact(o)) {
      return sequence(h, io::PthKind::List, path, depth);
    } else if (PyDict_CheckExact(o) || Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(ordered_dict_.ptr())) {
      return dict(h, PyDict_CheckExact(o) ? io::PthKind::Dict : io::PthKind::OrderedDict, path, depth);
    } else {
      unsaveable(h, path);
    }
    return push(std::move(v));
  }

 private:
  uint32_t push(io::PthValue v) {
    tree.values.push_back(std::move(v));
    return uint32_t(tree.values.size() - 1);
  }

  [[noreturn]] void unsaveable(nb::handle h, const std::string& path) {
    const std::string type = nb::cast<std::string>(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(h.ptr()))).attr("__name__"));
    throw nb::type_error((path + ": " + type +
                          " is not saveable (ember.save writes what torch.load(weights_only=True) reads: tensors, dicts, "
                          "OrderedDicts, lists, tuples, int, float, bool, str, bytes, None, dtypes and devices; convert "
                          "it to one of those first)")
                             .c_str());
  }

  uint32_t sequence(nb::handle h, io::PthKind kind, const std::string& path, int depth) {
    // A tuple is complete only when its items are: only a list may be reached again while it is built
    // (the file format's rule, pth_serialize_tree).
    if (kind != io::PthKind::List && !building_.insert(h.ptr()).second)
      throw nb::value_error((path + ": a " + std::string(io::pth_kind_name(kind)) +
                             " that contains itself cannot be saved (only a list or a dict can)")
                                .c_str());
    const uint32_t index = push({kind, 0, 0, {}, {}});
    if (kind == io::PthKind::List) memo_.emplace(h.ptr(), index);
    std::vector<uint32_t> items;
    size_t i = 0;
    for (nb::handle item : h) {
      if (kind == io::PthKind::Size && !PyLong_Check(item.ptr()))
        throw nb::type_error((path + ": a Size of " + nb::cast<std::string>(nb::repr(item)) + " is not saveable").c_str());
      items.push_back(add(item, path + "[" + std::to_string(i++) + "]", depth + 1));
    }
    tree.values[index].items = std::move(items);
    memo_.emplace(h.ptr(), index);
    building_.erase(h.ptr());
    return index;
  }

  uint32_t dict(nb::handle h, io::PthKind kind, const std::string& path, int depth) {
    const uint32_t index = push({kind, 0, 0, {}, {}});
    memo_.emplace(h.ptr(), index);
    std::vector<uint32_t> items;
    // items(), not the dict's own order: an OrderedDict's move_to_end reorders only its items().
    for (nb::handle kv : h.attr("items")()) {
      const nb::handle k(PyTuple_GET_ITEM(kv.ptr(), 0)), value(PyTuple_GET_ITEM(kv.ptr(), 1));
      std::string key_path = path + "[" + nb::cast<std::string>(nb::repr(k)) + "]";
      items.push_back(add(k, key_path + " (its key)", depth + 1));
      items.push_back(add(value, key_path, depth + 1));
    }
    tree.values[index].items = std::move(items);
    return index;
  }

  // The tensor's values, copied to the host and made contiguous (a view gets its own storage).
  uint32_t tensor(nb::handle h, const std::string& path) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    if (auto it = tensors_.find(t.impl_ptr().get()); it != tensors_.end()) return it->second;
    io::PthTensor pt;
    pt.data.name = path;
    pt.data.dtype = st_dtype(t.dtype());
    pt.data.shape = t.sizes();
    pt.location = t.device().str();
    pt.requires_grad = t.requires_grad();
    {
      nb::gil_scoped_release unlocked;
      const Tensor host = t.detach().to(Device::cpu()).contiguous();
      const auto* at = static_cast<const uint8_t*>(host.raw_data());
      pt.data.data.assign(at, at + host.nbytes());
    }
    io::PthValue v;
    v.kind = io::PthKind::Tensor, v.i = int64_t(tree.tensors.size());
    tree.tensors.push_back(std::move(pt));
    const uint32_t index = push(std::move(v));
    tensors_.emplace(t.impl_ptr().get(), index);
    memo_.emplace(h.ptr(), index);
    return index;
  }

  nb::object ordered_dict_, size_;
  std::unordered_map<PyObject*, uint32_t> memo_;
  std::unordered_set<PyObject*> building_;  // tuples and Sizes whose items are being converted
  std::unordered_map<const TensorImpl*, uint32_t> tensors_;
};

io::PthTree to_tree(nb::handle obj) {
  ToTree w;
  w.tree.root = w.add(obj, "obj", 0);
  return std::move(w.tree);
}

std::optional<DType> ember_dtype(io::StDType d) {
  switch (d) {
    case io::StDType::F32: return DType::Float32;
    case io::StDType::F64: return DType::Float64;
    case io::StDType::F16: return DType::Float16;
    case io::StDType::BF16: return DType::BFloat16;
    case io::StDType::I64: return DType::Int64;
    case io::StDType::I32: return DType::Int32;
    case io::StDType::U8: return DType::UInt8;
    case io::StDType::BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

// PthTree -> Python objects, as torch.load returns them: each value once (a value reached twice is
// one object; a list or dict may contain itself). The tree's depth is bounded (kPthMaxDepth), so
// recursion is safe. `place(tensor, location)` puts each tensor where map_location says.
class FromTree {
 public:
  FromTree(const io::PthTree& tree, nb::handle place, const std::string& source)
      : t_(tree), place_(place), source_(source), built_(tree.values.size()), building_(tree.values.size(), 0) {
    ordered_dict_ = nb::module_::import_("collections").attr("OrderedDict");
    ember_ = nb::module_::import_("ember");
  }

  nb::object build(uint32_t v) {
    if (built_[v].is_valid()) return built_[v];
    const io::PthValue& x = t_.values[v];
    if (building_[v]) bad(std::string("a ") + std::string(io::pth_kind_name(x.kind)) + " that contains itself");
    building_[v] = 1;
    nb::object out;
    switch (x.kind) {
      case io::PthKind::None: out = nb::none(); break;
      case io::PthKind::Bool: out = nb::bool_(x.i != 0); break;
      case io::PthKind::Int: out = nb::int_(x.i); break;
      case io::PthKind::Float: out = nb::float_(x.f); break;
      case io::PthKind::Str: out = nb::str(x.s.data(), x.s.size()); break;
      case io::PthKind::Bytes: out = nb::bytes(x.s.data(), x.s.size()); break;
      case io::PthKind::List: {
        nb::list l;
        built_[v] = l;
        for (uint32_t c : x.items) l.append(build(c));
        out = l;
        break;
      }
      case io::PthKind::Dict:
      case io::PthKind::OrderedDict: {
        nb::object d = x.kind == io::PthKind::Dict ? nb::dict() : ordered_dict_();
        built_[v] = d;
        for (size_t i = 0; i + 1 < x.items.size(); i += 2) d[build(x.items[i])] = build(x.items[i + 1]);
        out = d;
        break;
      }
      case io::PthKind::Tuple:
      case io::PthKind::Size: {
        nb::list items;
        for (uint32_t c : x.items) items.append(build(c));
        out = nb::tuple(items);
        if (x.kind == io::PthKind::Size) out = ember_.attr("Size")(out);
        break;
      }
      case io::PthKind::Device:
        out = x.s == "cpu" || x.i < 0 ? ember_.attr("device")(x.s) : ember_.attr("device")(x.s, x.i);
        break;
      case io::PthKind::DType:
        if (!nb::hasattr(ember_, x.s.c_str()) || !nb::isinstance<PyDType>(ember_.attr(x.s.c_str())))
          bad("torch." + x.s + " is a dtype ember does not have");
        out = ember_.attr(x.s.c_str());
        break;
      case io::PthKind::Tensor: out = tensor(t_.tensors[size_t(x.i)]); break;
    }
    built_[v] = out;
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    throw io::PthError(io::PthErrorKind::NotAStateDict, source_ + ": " + what);
  }

  nb::object tensor(const io::PthTensor& pt) {
    const std::optional<DType> dtype = ember_dtype(pt.data.dtype);
    if (!dtype)
      throw io::PthError(io::PthErrorKind::Tensor,
                         source_ + ": tensor " + pt.data.name + " is " + std::string(io::st_dtype_name(pt.data.dtype)) +
                             ", a dtype ember does not have",
                         "convert it in PyTorch first (t.to(torch.int32) or t.float()) and save it again");
    Tensor t;
    {
      nb::gil_scoped_release unlocked;
      t = from_blob_copy(pt.data.data.data(), pt.data.shape, *dtype);
    }
    nb::object placed = place_(nb::cast(std::move(t)), pt.location);
    if (pt.requires_grad) placed.attr("requires_grad_")(true);
    return placed;
  }

  const io::PthTree& t_;
  nb::handle place_;
  const std::string& source_;
  std::vector<nb::object> built_;
  std::vector<uint8_t> building_;
  nb::object ordered_dict_, ember_;
};

nb::object from_bytes(const uint8_t* data, size_t size, const std::string& source, nb::handle place) {
  io::PthTree tree;
  {
    nb::gil_scoped_release unlocked;
    tree = io::pth_parse_tree(std::span<const uint8_t>(data, size), source);
  }
  return FromTree(tree, place, source).build(tree.root);
}

}  // namespace

void register_serialization(nb::module_& m) {
  m.def("_save_bytes", [](nb::handle obj) {
        const io::PthTree tree = to_tree(obj);
        std::vector<uint8_t> bytes;
        {
          nb::gil_scoped_release unlocked;
          bytes = io::pth_serialize_tree(tree);
        }
        return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      }, "obj"_a, "The bytes torch.save(obj, f) writes (ember.save).");
  m.def("_save_file", [](nb::handle obj, const std::string& path) {
        const io::PthTree tree = to_tree(obj);
        nb::gil_scoped_release unlocked;
        io::write_file_atomic(path, io::pth_serialize_tree(tree));
      }, "obj"_a, "path"_a, "Writes torch.save(obj)'s file at path, atomically (ember.save).");
  m.def("_load_bytes", [](nb::bytes data, const std::string& source, nb::handle place) {
        return from_bytes(reinterpret_cast<const uint8_t*>(data.c_str()), data.size(), source, place);
      }, "data"_a, "source"_a, "place"_a, "The object a torch.save file holds (ember.load); place(tensor, location).");
  m.def("_load_file", [](const std::string& path, nb::handle place) {
        std::vector<uint8_t> bytes;
        {
          nb::gil_scoped_release unlocked;
          bytes = io::read_user_file(path, io::kCheckpointFile);
        }
        return from_bytes(bytes.data(), bytes.size(), path, place);
      }, "path"_a, "place"_a, "The object the torch.save file at path holds (ember.load).");
  m.def("_pth_sniff", [](nb::bytes head) {
        return io::pth_sniff(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(head.c_str()), head.size()));
      }, "head"_a, "Whether bytes start like a torch.save file (zip or legacy), by content.");
}

}  // namespace ember::python

// ember.Tensor with PyTorch's names (docs/python.md, "PyTorch's tensors and autograd"): the dtype
// objects (ember.float32 ...), creation functions, operators with PyTorch's promotion of Python
// numbers (ember::result_type decides), and the math, reduction and shape methods of ember/ops.h.
// Python converts arguments here and calls the C++ ops; the GIL is released inside each op.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/autograd/node.h"
#include "ember/core/generator.h"
#include "ember/core/memory.h"
#include "ember/core/promotion.h"
#include "ember/factories.h"
#include "ember/train/wording.h"
#include "ember/core/tensor.h"
#include "ember/cuda.h"
#include "ember/ops.h"

namespace ember::python {

using namespace nb::literals;

DType g_default_dtype = DType::Float32;

namespace {

using Release = nb::call_guard<nb::gil_scoped_release>;
using Dims = std::vector<int64_t>;

// ---- dtype objects ---------------------------------------------------------------------------------
// One Python object per dtype (ember.float32 is t.dtype holds), leaked on purpose: they live as long
// as the interpreter and must not be released after it is gone.
nb::object* g_dtype_objects[kNumDTypes] = {};

}  // namespace

nb::object dtype_object(DType t) { return *g_dtype_objects[int(t)]; }

DType parse_dtype_name(const std::string& name) {
  static const std::pair<const char*, DType> names[] = {
      {"float32", DType::Float32}, {"float", DType::Float32},   {"float64", DType::Float64},
      {"double", DType::Float64},  {"float16", DType::Float16}, {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"int64", DType::Int64},  {"long", DType::Int64},
      {"int32", DType::Int32},     {"int", DType::Int32},       {"uint8", DType::UInt8},
      {"bool", DType::Bool}};
  std::string n = name.rfind("ember.", 0) == 0 ? name.substr(6) : name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
  for (auto& [s, t] : names)
    if (n == s) return t;
  throw DTypeError("unknown dtype '" + name + "'",
                   "use ember.float32, float64, float16, bfloat16, int64, int32, uint8 or bool");
}

DType to_dtype(nb::handle h) {
  if (nb::isinstance<PyDType>(h)) return nb::cast<PyDType>(h).value;
  if (nb::isinstance<nb::str>(h)) return parse_dtype_name(nb::cast<std::string>(h));
  if (h.ptr() == (PyObject*)&PyFloat_Type) return g_default_dtype;
  if (h.ptr() == (PyObject*)&PyLong_Type) return DType::Int64;
  if (h.ptr() == (PyObject*)&PyBool_Type) return DType::Bool;
  if (nb::hasattr(h, "dtype") || nb::isinstance<nb::type_object>(h)) {  // NumPy's dtypes and scalar types
    try {
      nb::object np_dtype = nb::module_::import_("numpy").attr("dtype")(h);
      return parse_dtype_name(nb::cast<std::string>(np_dtype.attr("name")));
    } catch (const nb::python_error&) {
    }
  }
  throw nb::type_error(("dtype must be an ember.dtype (ember.float32, ...), got " +
                        nb::cast<std::string>(nb::repr(h)))
                           .c_str());
}

Device to_device(nb::handle h) {
  if (nb::isinstance<Device>(h)) return nb::cast<Device>(h);
  if (nb::isinstance<nb::str>(h)) return Device::parse(nb::cast<std::string>(h));
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return Device::cuda(nb::cast<int>(h));
  throw nb::type_error(("device must be an ember.device, a string (\"cpu\", \"cuda:0\") or a CUDA index, got " +
                        nb::cast<std::string>(nb::repr(h)))
                           .c_str());
}

// A Tensor's move to a device, refused with ember.cuda.unavailable_reason() in Python's terms when
// there is no usable GPU (DeviceError, a RuntimeError).
void check_device_usable(Device d) {
  if (!d.is_cuda()) return;
  const int n = cuda::device_count();
  if (n == 0)
    throw DeviceError("cannot use " + d.str() + ": no usable CUDA device (" + cuda::unavailable_reason() + ")",
                      train::device_unavailable_hint(train::FrontEnd::Python));
  if (d.index >= n)
    throw DeviceError("cannot use " + d.str() + ": this machine has " + std::to_string(n) + " usable CUDA device" +
                          (n == 1 ? "" : "s"),
                      "pick one of cuda:0 .. cuda:" + std::to_string(n - 1));
}

Tensor convert(const Tensor& t, std::optional<Device> device, std::optional<DType> dtype) {
  Device d = device.value_or(t.device());
  if (d != t.device()) check_device_usable(d);
  nb::gil_scoped_release unlocked;
  return t.to(d, dtype.value_or(t.dtype()));
}

namespace {

// In place on a tensor that requires grad while grad mode is on: the change must be recorded
// (in_place_with_history, ember/ops.h: a non-leaf as PyTorch records it; a leaf raises PyTorch's error).
bool records_history(const Tensor& t) { return t.requires_grad() && autograd::grad_mode_enabled(); }

// The in-place ops ember does not record (scatter_, index_put_, assignment by index, ...): PyTorch's
// words for a leaf; a non-leaf refused, in Python's terms.
void check_inplace(const Tensor& t, const char* op) {
  if (!records_history(t)) return;
  if (t.is_leaf())
    throw AutogradError("a leaf Variable that requires grad is being used in an in-place operation.",
                        std::string("update it under `with ember.no_grad():` (") + op + ")");
  throw AutogradError(std::string(op) + ": ember does not record this in-place operation on a tensor that requires "
                          "grad while grad mode is on (PyTorch does; ember records +=, -=, *=, /=, add_, sub_, mul_, "
                          "div_, pow_, clamp_, relu_, zero_, fill_, copy_ and masked_fill_)",
                      "use the out-of-place form (y = y.scatter(...) instead of y.scatter_(...)), or ember.no_grad() "
                      "when no gradient should flow through the change");
}

// `fn(value)` written into t as a recorded in-place change (records_history(t) holds), GIL released.
nb::object recorded_in_place(nb::handle self_h, const char* op, const std::function<Tensor(const Tensor&)>& fn) {
  Tensor& self = nb::cast<Tensor&>(self_h);
  if (self.is_leaf()) check_inplace(self, op);  // PyTorch's words, the hint in Python's terms
  {
    nb::gil_scoped_release unlocked;
    in_place_with_history(self, fn, op);
  }
  return nb::borrow(self_h);
}

// convert() of a Python tensor object: the same object when nothing changes (t.float() is t, as PyTorch).
nb::object convert_object(nb::handle self, std::optional<Device> device, std::optional<DType> dtype) {
  const Tensor& t = nb::cast<const Tensor&>(self);
  Tensor r = convert(t, device, dtype);
  if (r.is_same(t)) return nb::borrow(self);
  return nb::cast(std::move(r));
}

// ---- operands: tensors and Python numbers ------------------------------------------------------------
struct Scalar {
  double value;
  DType kind;  // Bool, Int64 or Float64: the number's category
};

std::optional<Scalar> as_number(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar{o == Py_True ? 1.0 : 0.0, DType::Bool};
  if (PyLong_Check(o)) return Scalar{double(nb::cast<int64_t>(h)), DType::Int64};
  if (PyFloat_Check(o)) return Scalar{PyFloat_AsDouble(o), DType::Float64};
  // NumPy's scalars (np.float32(2), np.int64(3)) count as Python numbers of their category.
  if (nb::hasattr(h, "item") && nb::hasattr(h, "ndim") && nb::cast<int>(h.attr("ndim")) == 0 &&
      !nb::isinstance<Tensor>(h))
    return as_number(h.attr("item")());
  return std::nullopt;
}

Operand operand_of(const Tensor& t) { return {t.dtype(), t.dim() == 0 ? OperandRank::ZeroDim : OperandRank::Dimensioned}; }

// Both operands of a binary op as tensors of their result_type (`compute`: the dtype computed in,
// which true division raises to the default float for integers).
struct Pair {
  Tensor a, b;
  DType dtype;  // the result type; a half type is computed in float32 (a storage type for most kernels)
  // The floating result back to dtype (the half types), as PyTorch's result dtype says.
  Tensor finish(Tensor r) const { return is_half(dtype) && is_floating(r.dtype()) ? r.to(dtype) : r; }
};

bool operand(nb::handle h, const Tensor& like, Tensor& t, std::optional<Scalar>& s) {
  if (nb::isinstance<Tensor>(h)) {
    t = nb::cast<Tensor>(h);
    return true;
  }
  s = as_number(h);
  return s.has_value();
}

std::optional<Pair> promote(const Tensor& self, nb::handle other, bool true_division = false, bool reflected = false) {
  Tensor o;
  std::optional<Scalar> s;
  if (!operand(other, self, o, s)) return std::nullopt;
  Operand oa = operand_of(self);
  Operand ob = s ? Operand{s->kind, OperandRank::Number} : operand_of(o);
  DType dt = result_type(oa, ob, g_default_dtype);
  if (true_division && !is_floating(dt)) dt = g_default_dtype;
  nb::gil_scoped_release unlocked;
  const DType compute = is_half(dt) ? DType::Float32 : dt;
  Tensor a = self.dtype() == compute ? self : self.to(compute);
  Tensor b = s ? full({}, s->value, {.dtype = compute, .device = self.device()}) : (o.dtype() == compute ? o : o.to(compute));
  if (reflected) std::swap(a, b);
  return Pair{a, b, dt};
}

[[noreturn]] void bad_operand(const char* op, nb::handle other) {
  throw nb::type_error((std::string(op) + "(): argument 'other' must be a Tensor or a number, not " +
                        nb::cast<std::string>(nb::type_name(other.type())))
                           .c_str());
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

// An operator's method: NotImplemented for an operand it does not know (Python then asks the other).
template <BinaryFn Fn, bool TrueDiv = false, bool Reflected = false>
nb::object binary_operator(const Tensor& self, nb::handle other) {
  auto p = promote(self, other, TrueDiv, Reflected);
  if (!p) return nb::borrow(Py_NotImplemented);
  Tensor r;
  {
    nb::gil_scoped_release unlocked;
    r = p->finish(Fn(p->a, p->b));
  }
  return nb::cast(std::move(r));
}

// The same as a named method (t.add(x)): a TypeError for an operand it does not know.
template <BinaryFn Fn, bool TrueDiv = false>
Tensor binary_method(const Tensor& self, nb::handle other, const char* name) {
  auto p = promote(self, other, TrueDiv);
  if (!p) bad_operand(name, other);
  nb::gil_scoped_release unlocked;
  return p->finish(Fn(p->a, p->b));
}

Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor sub2(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor mul2(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor div2(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor pow2(const Tensor& a, const Tensor& b) { return pow(a, b); }
Tensor matmul2(const Tensor& a, const Tensor& b) { return matmul(a, b); }
Tensor and2(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor or2(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor xor2(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }

// In place: the result of self op other must be castable to self's dtype (PyTorch's rule).
template <BinaryFn Fn, bool TrueDiv = false>
nb::object inplace_operator(nb::handle self_h, nb::handle other, const char* name) {
  Tensor& self = nb::cast<Tensor&>(self_h);
  auto p = promote(self, other, TrueDiv);
  if (!p) bad_operand(name, other);
  if (!can_cast(p->dtype, self.dtype()))
    throw DTypeError(std::string(name) + ": result type " + std::string(dtype_name(p->dtype)) +
                     " can't be cast to the desired output type " + std::string(dtype_name(self.dtype())));
  if (records_history(self)) {
    const Tensor b = p->b;
    return recorded_in_place(self_h, name, [&](const Tensor& v) {
      return Fn(v.dtype() == b.dtype() ? v : v.to(b.dtype()), b);
    });
  }
  {
    nb::gil_scoped_release unlocked;
    if constexpr (Fn == add2) {
      self.add_(p->b.to(self.dtype()));
    } else if constexpr (Fn == sub2) {
      self.sub_(p->b.to(self.dtype()));
    } else if constexpr (Fn == mul2) {
      self.mul_(p->b.to(self.dtype()));
    } else if constexpr (Fn == div2) {
      self.div_(p->b.to(self.dtype()));
    } else {
      Tensor r = Fn(p->a, p->b);
      EMBER_CHECK(r.sizes() == self.sizes(), ShapeError, name, ": output with shape ", shape_str(self.sizes()),
                  " doesn't match the broadcast shape ", shape_str(r.sizes()));
      self.copy_(r);
    }
  }
  return nb::borrow(self_h);
}

// ---- argument shapes ---------------------------------------------------------------------------------
int64_t to_int(nb::handle h, const char* what) {
  if (PyBool_Check(h.ptr()) || !(PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())))
    throw nb::type_error((std::string(what) + " must be an int, got " +
                          nb::cast<std::string>(nb::type_name(h.type())))
                             .c_str());
  return nb::cast<int64_t>(nb::int_(h));
}

bool is_sequence(nb::handle h) { return nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h); }

// f(2, 3) and f((2, 3)) and f([2, 3]): PyTorch's size arguments.
Dims ints_of(nb::handle h, const char* what) {
  Dims out;
  if (is_sequence(h)) {
    for (nb::handle x : h) out.push_back(to_int(x, what));
  } else {
    out.push_back(to_int(h, what));
  }
  return out;
}
Dims varargs_ints(const nb::args& args, const char* what) {
  if (args.size() == 1 && is_sequence(args[0])) return ints_of(args[0], what);
  Dims out;
  for (nb::handle x : args) out.push_back(to_int(x, what));
  return out;
}
// dim=None (every dim), an int, or a tuple of ints.
Dims dims_of(nb::handle h) { return h.is_none() ? Dims{} : ints_of(h, "dim"); }

// A Python object of ember._tensor, looked up once and kept (leaked: it lives as long as Python).
nb::handle tensor_module_attr(const char* name) {
  nb::object obj = nb::module_::import_("ember._tensor").attr(name);
  return obj.release();
}
nb::object size_object(const Shape& s) {
  static nb::handle size_type = tensor_module_attr("Size");
  PyObject* t = PyTuple_New(Py_ssize_t(s.size()));
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(t, Py_ssize_t(i), PyLong_FromLongLong(s[i]));
  return size_type(nb::steal(t));
}

// ---- values to Python -----------------------------------------------------------------------------
nb::object scalar_to_python(double v, DType t) {
  if (t == DType::Bool) return nb::bool_(v != 0);
  if (!is_floating(t)) return nb::int_(int64_t(v));
  return nb::float_(v);
}

nb::object nested_list(const std::vector<double>& v, const Shape& s, DType t, size_t dim, size_t& pos) {
  if (dim == s.size()) return scalar_to_python(v[pos++], t);
  nb::list out;
  for (int64_t i = 0; i < s[dim]; ++i) out.append(nested_list(v, s, t, dim + 1, pos));
  return std::move(out);
}

nb::object tolist(const Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DType::Int64) {  // exactly, beyond 2^53
    std::vector<int64_t> iv;
    {
      nb::gil_scoped_release unlocked;
      iv = t.to_vector<int64_t>();
    }
    if (t.dim() == 0) return nb::int_(iv[0]);
    size_t pos = 0;
    std::function<nb::object(size_t)> rec = [&](size_t dim) -> nb::object {
      if (dim == t.sizes().size()) return nb::int_(iv[pos++]);
      nb::list out;
      for (int64_t i = 0; i < t.sizes()[dim]; ++i) out.append(rec(dim + 1));
      return std::move(out);
    };
    return rec(0);
  }
  {
    nb::gil_scoped_release unlocked;
    v = t.detach().to(DType::Float64).to_vector<double>();
  }
  size_t pos = 0;
  return nested_list(v, t.sizes(), t.dtype(), 0, pos);
}

nb::object item(const Tensor& t) {
  if (t.numel() != 1)
    throw ValueError("a Tensor with " + std::to_string(t.numel()) + " elements cannot be converted to Scalar",
                     "reduce it first (t.sum(), t[0]) or use t.tolist()");
  return tolist(t.reshape({}));
}

// PyTorch's repr: tensor([1., 2.]), dtype=ember.float64 for a dtype that is not the default's.
std::string repr(const Tensor& t) {
  std::string s;
  {
    nb::gil_scoped_release unlocked;
    s = t.str();
  }
  const std::string key = ", dtype=";
  size_t at = s.find(key);
  if (at != std::string::npos) s.insert(at + key.size(), "ember.");
  if (t.dtype() == DType::Float32 && g_default_dtype != DType::Float32) {
    size_t close = s.rfind(')');
    size_t grad = s.find(", grad_fn=");
    if (grad == std::string::npos) grad = s.find(", requires_grad=");
    s.insert(grad == std::string::npos ? close : grad, ", dtype=ember.float32");
  }
  return s;
}

// Integer and bool tensors computed on as the default float dtype by the math that PyTorch promotes
// (exp, log, sqrt, ... of an int tensor are float32).
Tensor floating(const Tensor& t) { return is_floating(t.dtype()) ? t : t.to(g_default_dtype); }

using UnaryFn = Tensor (*)(const Tensor&);
// The half types are computed in float32 and stored back (PyTorch's result dtype).
template <UnaryFn Fn, bool Promote>
Tensor unary(const Tensor& t) {
  if (is_half(t.dtype())) {
    Tensor r = Fn(t.to(DType::Float32));
    return is_floating(r.dtype()) ? r.to(t.dtype()) : r;
  }
  return Fn(Promote ? floating(t) : t);
}

// A named tuple class of (values, indices), as torch.return_types.max.
nb::object values_indices(const char* name, ValuesIndices r) {
  static nb::handle types = tensor_module_attr("return_types");
  nb::object nt = types.attr(name);
  return nt(nb::cast(std::move(r.values)), nb::cast(std::move(r.indices)));
}

// Reductions of integer and bool tensors sum in int64 (PyTorch's sum and prod).
Tensor reduce_input(const Tensor& t, nb::handle dtype) {
  if (!dtype.is_none()) return t.to(to_dtype(dtype));
  return is_floating(t.dtype()) ? t : t.to(DType::Int64);
}

Tensor new_tensor_fill(const nb::args& shape_args, double value, nb::handle dtype, nb::handle device,
                       bool requires_grad, DType fallback) {
  TensorOptions opt{.dtype = dtype.is_none() ? fallback : to_dtype(dtype),
                    .device = device.is_none() ? Device::cpu() : to_device(device)};
  check_device_usable(opt.device);
  Dims shape = varargs_ints(shape_args, "size");
  Tensor t;
  {
    nb::gil_scoped_release unlocked;
    t = std::isnan(value) ? empty(shape, opt) : full(shape, value, opt);
  }
  if (requires_grad) t.requires_grad_(true);
  return t;
}

TensorOptions options(nb::handle dtype, nb::handle device, DType fallback) {
  TensorOptions opt{.dtype = dtype.is_none() ? fallback : to_dtype(dtype),
                    .device = device.is_none() ? Device::cpu() : to_device(device)};
  check_device_usable(opt.device);
  return opt;
}
TensorOptions like_options(const Tensor& t, nb::handle dtype, nb::handle device) {
  TensorOptions opt{.dtype = dtype.is_none() ? t.dtype() : to_dtype(dtype),
                    .device = device.is_none() ? t.device() : to_device(device)};
  check_device_usable(opt.device);
  return opt;
}
Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

double number(nb::handle h, const char* what) {
  auto s = as_number(h);
  if (!s) throw nb::type_error((std::string(what) + " must be a number, got " +
                                nb::cast<std::string>(nb::type_name(h.type())))
                                   .c_str());
  return s->value;
}
std::optional<double> opt_number(nb::handle h, const char* what) {
  if (h.is_none()) return std::nullopt;
  return number(h, what);
}

// A value for masked_fill / clamp / where: a number or a tensor.
Tensor value_tensor(nb::handle h, const Tensor& like) {
  if (nb::isinstance<Tensor>(h)) return nb::cast<Tensor>(h);
  return full({}, number(h, "value"), {.dtype = like.dtype(), .device = like.device()});
}

}  // namespace

void register_tensor_api(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- dtype -----------------------------------------------------------------------------------------
  nb::class_<PyDType>(m, "dtype", "An element type: ember.float32, float64, float16, bfloat16, int64, int32, uint8, bool.")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.value); })
      .def_prop_ro("is_signed", [](const PyDType& d) { return d.value != DType::UInt8 && d.value != DType::Bool; })
      .def_prop_ro("itemsize", [](const PyDType& d) { return dtype_size(d.value); })
      .def("__repr__", [](const PyDType& d) { return "ember." + std::string(dtype_name(d.value)); })
      .def("__str__", [](const PyDType& d) { return "ember." + std::string(dtype_name(d.value)); })
      // ember's earlier API compared t.dtype with a string ("float32"): still equal.
      .def("__eq__", [](const PyDType& d, nb::handle o) {
             if (nb::isinstance<PyDType>(o)) return nb::cast<PyDType>(o).value == d.value;
             if (nb::isinstance<nb::str>(o)) return nb::cast<std::string>(o) == dtype_name(d.value);
             return false;
           })
      .def("__ne__", [](const PyDType& d, nb::handle o) {
             if (nb::isinstance<PyDType>(o)) return nb::cast<PyDType>(o).value != d.value;
             if (nb::isinstance<nb::str>(o)) return nb::cast<std::string>(o) != dtype_name(d.value);
             return true;
           })
      .def("__hash__", [](const PyDType& d) { return int(d.value); })
      .def("__reduce__", [](const PyDType& d) {
             return nb::make_tuple(nb::module_::import_("builtins").attr("getattr"),
                                   nb::make_tuple(nb::module_::import_("ember"), std::string(dtype_name(d.value))));
           });
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool, DType::BFloat16,
                  DType::Float16}) {
    g_dtype_objects[int(t)] = new nb::object(nb::cast(PyDType{t}));
    m.attr(std::string(dtype_name(t)).c_str()) = *g_dtype_objects[int(t)];
  }
  m.def("get_default_dtype", [] { return dtype_object(g_default_dtype); },
        "The dtype Python floats become (ember.float32 unless set_default_dtype changed it).");
  m.def("set_default_dtype", [](nb::handle d) {
        DType t = to_dtype(d);
        if (t != DType::Float32 && t != DType::Float64)
          throw nb::type_error("only floating-point types are supported as the default type (float32, float64)");
        g_default_dtype = t;
      }, nb::arg("d"));
  m.def("result_type", [](nb::handle a, nb::handle b) {
        auto op = [](nb::handle h) -> Operand {
          if (nb::isinstance<Tensor>(h)) return operand_of(nb::cast<Tensor>(h));
          auto s = as_number(h);
          if (!s) throw nb::type_error("result_type: expected a Tensor or a number");
          return {s->kind, OperandRank::Number};
        };
        return dtype_object(result_type(op(a), op(b), g_default_dtype));
      }, nb::arg("tensor1"), nb::arg("tensor2"), "PyTorch's torch.result_type (one C++ function: ember::result_type).");
  m.def("promote_types", [](nb::handle a, nb::handle b) { return dtype_object(promote_types(to_dtype(a), to_dtype(b))); });
  m.def("can_cast", [](nb::handle from, nb::handle to) { return can_cast(to_dtype(from), to_dtype(to)); });
  m.def("_to_dtype", [](nb::handle h) { return dtype_object(to_dtype(h)); });
  m.def("_to_device", &to_device);

  // ---- creation --------------------------------------------------------------------------------------
  m.def("zeros", [](nb::args size, nb::handle dtype, nb::handle device, bool rg) {
        return new_tensor_fill(size, 0.0, dtype, device, rg, g_default_dtype);
      }, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("ones", [](nb::args size, nb::handle dtype, nb::handle device, bool rg) {
        return new_tensor_fill(size, 1.0, dtype, device, rg, g_default_dtype);
      }, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("empty", [](nb::args size, nb::handle dtype, nb::handle device, bool rg) {
        return new_tensor_fill(size, NAN, dtype, device, rg, g_default_dtype);
      }, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("full", [](nb::handle size, nb::handle value, nb::handle dtype, nb::handle device, bool rg) {
        auto s = as_number(value);
        if (!s) throw nb::type_error("full(): fill_value must be a number");
        DType fallback = s->kind == DType::Float64 ? g_default_dtype : s->kind;
        TensorOptions opt = options(dtype, device, fallback);
        Dims shape = ints_of(size, "size");
        return finish(full(shape, s->value, opt), rg);
      }, "size"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("zeros_like", [](const Tensor& t, nb::handle dtype, nb::handle device, bool rg) {
        return finish(zeros(t.sizes(), like_options(t, dtype, device)), rg);
      }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("ones_like", [](const Tensor& t, nb::handle dtype, nb::handle device, bool rg) {
        return finish(ones(t.sizes(), like_options(t, dtype, device)), rg);
      }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("empty_like", [](const Tensor& t, nb::handle dtype, nb::handle device, bool rg) {
        return finish(empty(t.sizes(), like_options(t, dtype, device)), rg);
      }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("full_like", [](const Tensor& t, nb::handle value, nb::handle dtype, nb::handle device, bool rg) {
        return finish(full(t.sizes(), number(value, "fill_value"), like_options(t, dtype, device)), rg);
      }, "input"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("arange", [](nb::handle a, nb::handle b, nb::handle c, nb::handle dtype, nb::handle device, bool rg) {
        double start = 0, end, step = 1;
        bool any_float = false;
        auto num = [&](nb::handle h) {
          auto s = as_number(h);
          if (!s) throw nb::type_error("arange(): start, end and step must be numbers");
          any_float |= s->kind == DType::Float64;
          return s->value;
        };
        if (b.is_none()) {
          end = num(a);
        } else {
          start = num(a);
          end = num(b);
        }
        if (!c.is_none()) step = num(c);
        TensorOptions opt = options(dtype, device, any_float ? g_default_dtype : DType::Int64);
        nb::gil_scoped_release unlocked;
        return finish(arange(start, end, step, opt), rg);
      }, "start"_a, "end"_a = nb::none(), "step"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(),
        "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("linspace", [](nb::handle start, nb::handle end, int64_t steps, nb::handle dtype, nb::handle device, bool rg) {
        return finish(linspace(number(start, "start"), number(end, "end"), steps, options(dtype, device, g_default_dtype)), rg);
      }, "start"_a, "end"_a, "steps"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
        "requires_grad"_a = false);
  m.def("eye", [](int64_t n, std::optional<int64_t> mcols, nb::handle dtype, nb::handle device, bool rg) {
        return finish(eye(n, mcols.value_or(-1), options(dtype, device, g_default_dtype)), rg);
      }, "n"_a, "m"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("rand", [](nb::args size, nb::handle dtype, nb::handle device, bool rg) {
        TensorOptions o = options(dtype, device, g_default_dtype);
        Dims s = varargs_ints(size, "size");
        return finish(rand(s, o), rg);
      }, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("randn", [](nb::args size, nb::handle dtype, nb::handle device, bool rg) {
        TensorOptions o = options(dtype, device, g_default_dtype);
        Dims s = varargs_ints(size, "size");
        return finish(randn(s, o), rg);
      }, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("_randint", [](int64_t low, int64_t high, nb::handle size, nb::handle dtype, nb::handle device, bool rg) {
        EMBER_CHECK(high > low, ValueError, "randint: random_ expects 'from' to be less than 'to', but got from=", low,
                    " >= to=", high);
        return finish(randint(low, high, ints_of(size, "size"), options(dtype, device, DType::Int64)), rg);
      }, "low"_a, "high"_a, "size"_a, "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("randperm", [](int64_t n, nb::handle dtype, nb::handle device, bool rg) {
        TensorOptions o = options(dtype, device, DType::Int64);
        Tensor p = randperm(n).to(o.device, o.dtype);
        return finish(p, rg);
      }, "n"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def("manual_seed", [](uint64_t seed) { manual_seed(seed); }, "seed"_a,
        "Seeds ember's generator (one Philox stream for the CPU and every GPU).");
  m.def("initial_seed", [] { return default_generator().seed(); });
  m.def("set_num_threads", [](int n) {
        EMBER_CHECK(n > 0, ValueError, "set_num_threads expects a positive integer, got ", n);
        set_num_threads(n);
      }, "n"_a);
  m.def("get_num_threads", &get_num_threads);
  m.def("_memory_allocated", [](int device) { return memory_usage(Device::cuda(device)).live; });
  m.def("_max_memory_allocated", [](int device) { return memory_usage(Device::cuda(device)).peak; });
  m.def("_empty_cache", [] { empty_cache(); });

  // ---- module functions over several tensors --------------------------------------------------------
  m.def("cat", [](const std::vector<Tensor>& ts, int64_t dim) {
        nb::gil_scoped_release u;
        // PyTorch's cat promotes its inputs to their common dtype.
        DType dt = ts.empty() ? DType::Float32 : ts[0].dtype();
        for (const Tensor& t : ts) dt = promote_types(dt, t.dtype());
        std::vector<Tensor> same;
        for (const Tensor& t : ts) same.push_back(t.dtype() == dt ? t : t.to(dt));
        return cat(same, dim);
      }, "tensors"_a, "dim"_a = 0);
  m.attr("concat") = m.attr("cat");
  m.def("stack", [](const std::vector<Tensor>& ts, int64_t dim) { return stack(ts, dim); }, "tensors"_a, "dim"_a = 0, Release());
  m.def("where", [](const Tensor& cond, nb::handle x, nb::handle y) {
        const Tensor& like = nb::isinstance<Tensor>(x) ? nb::cast<Tensor&>(x) : nb::cast<Tensor&>(y);
        auto p = promote(like, nb::isinstance<Tensor>(x) ? y : x);
        if (!p) throw nb::type_error("where(): expected tensors or numbers");
        Tensor a = nb::isinstance<Tensor>(x) ? p->a : p->b, b = nb::isinstance<Tensor>(x) ? p->b : p->a;
        nb::gil_scoped_release u;
        return p->finish(where(cond.dtype() == DType::Bool ? cond : cond.to(DType::Bool), a, b));
      }, "condition"_a, "input"_a, "other"_a);
  m.def("_result_operands", [](const Tensor& self, nb::handle other) {
        auto p = promote(self, other);
        if (!p) bad_operand("op", other);
        return std::pair<Tensor, Tensor>(p->a, p->b);
      });

  // ---- Tensor: properties and conversion ----------------------------------------------------------------
  cls.def_prop_ro("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); }, "The element type (ember.float32, ...).")
      .def_prop_ro("shape", [](const Tensor& t) { return size_object(t.sizes()); }, "The sizes (an ember.Size, a tuple).")
      .def("size", [](const Tensor& t, std::optional<int64_t> dim) -> nb::object {
             if (dim) return nb::int_(t.size(*dim));
             return size_object(t.sizes());
           }, "dim"_a = nb::none())
      .def("stride", [](const Tensor& t, std::optional<int64_t> dim) -> nb::object {
             if (dim) return nb::int_(t.stride(*dim));
             return nb::tuple(nb::cast(t.strides()));
           }, "dim"_a = nb::none())
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::itemsize)
      .def("storage_offset", &Tensor::storage_offset)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); },
           "The address of the first element.")
      .def_prop_ro("is_cuda", &Tensor::is_cuda)
      .def_prop_ro("is_cpu", &Tensor::is_cpu)
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("get_device", [](const Tensor& t) { return t.is_cuda() ? t.device().index : -1; })
      .def_prop_rw("requires_grad", &Tensor::requires_grad,
                   [](Tensor& t, bool on) { t.requires_grad_(on); })
      .def("requires_grad_", [](nb::handle self, bool on) {
             nb::cast<Tensor&>(self).requires_grad_(on);
             return nb::borrow(self);
           }, "requires_grad"_a = true)
      .def_prop_rw("grad", [](const Tensor& t) -> nb::object {
             Tensor g = t.grad();
             return g.defined() ? nb::cast(g) : nb::none();
           },
           [](const Tensor& t, nb::handle g) {
             if (g.is_none()) {
               t.set_grad(Tensor());
               return;
             }
             Tensor gt = nb::cast<Tensor>(g);
             EMBER_CHECK(gt.sizes() == t.sizes(), ShapeError, "assigned grad has data of a different size: ",
                         shape_str(gt.sizes()), " for a tensor of ", shape_str(t.sizes()));
             EMBER_CHECK(gt.dtype() == t.dtype(), DTypeError, "assigned grad has data of a different type: ",
                         dtype_name(gt.dtype()), " for a tensor of ", dtype_name(t.dtype()));
             t.set_grad(gt);
           },
           nb::for_setter(nb::arg("value").none()))
      .def("retain_grad", &Tensor::retain_grad)
      .def_prop_rw("data", [](const Tensor& t) { return t.detach(); },
                   [](Tensor& t, const Tensor& other) {
                     // `p.data = x` swaps what p views, keeping p's autograd identity (PyTorch's set_data).
                     TensorImpl& i = t.impl();
                     const TensorImpl& o = other.impl();
                     i.storage = o.storage;
                     i.sizes = o.sizes;
                     i.strides = o.strides;
                     i.offset = o.offset;
                     i.dtype = o.dtype;
                   })
      .def("detach", [](const Tensor& t) { return t.detach(); })
      .def("detach_", [](nb::handle self) {
             Tensor& t = nb::cast<Tensor&>(self);
             t.impl().grad_fn = nullptr;
             t.impl().requires_grad = false;
             return nb::borrow(self);
           })
      .def("clone", [](const Tensor& t) { return t.clone(); }, Release())
      .def("contiguous", [](const Tensor& t) { return t.contiguous(); }, Release())
      .def("item", &item)
      .def("tolist", &tolist)
      .def("__repr__", &repr)
      .def("__str__", &repr)
      .def("__len__", [](const Tensor& t) {
             if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__hash__", [](nb::handle h) { return reinterpret_cast<intptr_t>(h.ptr()) >> 4; })
      .def("__bool__", [](const Tensor& t) {
             if (t.numel() != 1)
               throw ValueError("Boolean value of Tensor with more than one value is ambiguous",
                                "use t.any() or t.all()");
             return t.detach().to(DType::Float64).item<double>() != 0;
           })
      .def("__float__", [](const Tensor& t) {
             EMBER_CHECK(t.numel() == 1, ValueError, "only one element tensors can be converted to Python scalars");
             return t.detach().to(DType::Float64).item<double>();
           })
      .def("__int__", [](const Tensor& t) {
             EMBER_CHECK(t.numel() == 1, ValueError, "only one element tensors can be converted to Python scalars");
             return int64_t(t.detach().to(DType::Float64).item<double>());
           })
      .def("__index__", [](const Tensor& t) {
             if (is_floating(t.dtype()) || t.numel() != 1)
               throw nb::type_error("only integer tensors of a single element can be converted to an index");
             return t.detach().to(DType::Int64).item<int64_t>();
           })
      .def("_to", [](nb::handle self, nb::handle device, nb::handle dtype) {
             return convert_object(self, device.is_none() ? std::nullopt : std::optional<Device>(to_device(device)),
                                   dtype.is_none() ? std::nullopt : std::optional<DType>(to_dtype(dtype)));
           }, "device"_a = nb::none(), "dtype"_a = nb::none())
      .def("type_as", [](nb::handle t, const Tensor& o) { return convert_object(t, std::nullopt, o.dtype()); }, "other"_a)
      .def("float", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Float32); })
      .def("double", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Float64); })
      .def("half", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Float16); })
      .def("bfloat16", [](nb::handle t) { return convert_object(t, std::nullopt, DType::BFloat16); })
      .def("long", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Int64); })
      .def("int", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Int32); })
      .def("byte", [](nb::handle t) { return convert_object(t, std::nullopt, DType::UInt8); })
      .def("bool", [](nb::handle t) { return convert_object(t, std::nullopt, DType::Bool); })
      .def("cpu", [](nb::handle t) { return convert_object(t, Device::cpu(), std::nullopt); })
      .def("cuda", [](nb::handle t, nb::handle device, bool) {
             Device d = device.is_none() ? Device::cuda(0) : to_device(device);
             if (d.is_cpu()) throw ValueError("cuda(): expected a CUDA device, got cpu");
             return convert_object(t, d, std::nullopt);
           }, "device"_a = nb::none(), "non_blocking"_a = false);

  // ---- operators ----------------------------------------------------------------------------------------
  cls.def("__add__", &binary_operator<add2>)
      .def("__radd__", &binary_operator<add2, false, true>)
      .def("__sub__", &binary_operator<sub2>)
      .def("__rsub__", &binary_operator<sub2, false, true>)
      .def("__mul__", &binary_operator<mul2>)
      .def("__rmul__", &binary_operator<mul2, false, true>)
      .def("__truediv__", &binary_operator<div2, true>)
      .def("__rtruediv__", &binary_operator<div2, true, true>)
      .def("__floordiv__", &binary_operator<floor_divide>)
      .def("__rfloordiv__", &binary_operator<floor_divide, false, true>)
      .def("__mod__", &binary_operator<remainder>)
      .def("__rmod__", &binary_operator<remainder, false, true>)
      .def("__pow__", &binary_operator<pow2>)
      .def("__rpow__", &binary_operator<pow2, false, true>)
      .def("__matmul__", &binary_operator<matmul2>)
      .def("__rmatmul__", &binary_operator<matmul2, false, true>)
      .def("__and__", &binary_operator<and2>)
      .def("__rand__", &binary_operator<and2, false, true>)
      .def("__or__", &binary_operator<or2>)
      .def("__ror__", &binary_operator<or2, false, true>)
      .def("__xor__", &binary_operator<xor2>)
      .def("__rxor__", &binary_operator<xor2, false, true>)
      .def("__eq__", &binary_operator<static_cast<BinaryFn>(eq)>)
      .def("__ne__", &binary_operator<static_cast<BinaryFn>(ne)>)
      .def("__lt__", &binary_operator<static_cast<BinaryFn>(lt)>)
      .def("__le__", &binary_operator<static_cast<BinaryFn>(le)>)
      .def("__gt__", &binary_operator<static_cast<BinaryFn>(gt)>)
      .def("__ge__", &binary_operator<static_cast<BinaryFn>(ge)>)
      .def("__neg__", [](const Tensor& t) { return neg(t); }, Release())
      .def("__pos__", [](const Tensor& t) { return t; })
      .def("__abs__", [](const Tensor& t) { return abs(t); }, Release())
      .def("__invert__", [](const Tensor& t) { return bitwise_not(t); }, Release())
      .def("__iadd__", [](nb::handle s, nb::handle o) { return inplace_operator<add2>(s, o, "add_"); })
      .def("__isub__", [](nb::handle s, nb::handle o) { return inplace_operator<sub2>(s, o, "sub_"); })
      .def("__imul__", [](nb::handle s, nb::handle o) { return inplace_operator<mul2>(s, o, "mul_"); })
      .def("__itruediv__", [](nb::handle s, nb::handle o) { return inplace_operator<div2, true>(s, o, "div_"); })
      .def("__ifloordiv__", [](nb::handle s, nb::handle o) { return inplace_operator<floor_divide>(s, o, "floor_divide_"); })
      .def("__imod__", [](nb::handle s, nb::handle o) { return inplace_operator<remainder>(s, o, "remainder_"); })
      .def("__ipow__", [](nb::handle s, nb::handle o) { return inplace_operator<pow2>(s, o, "pow_"); })
      .def("__iand__", [](nb::handle s, nb::handle o) { return inplace_operator<and2>(s, o, "bitwise_and_"); })
      .def("__ior__", [](nb::handle s, nb::handle o) { return inplace_operator<or2>(s, o, "bitwise_or_"); })
      .def("add", [](const Tensor& t, nb::handle o, nb::handle alpha) {
             if (alpha.is_none()) return binary_method<add2>(t, o, "add");
             auto p = promote(t, o);
             if (!p) bad_operand("add", o);
             return add(p->a, p->b, number(alpha, "alpha"));
           }, "other"_a, nb::kw_only(), "alpha"_a = nb::none())
      .def("sub", [](const Tensor& t, nb::handle o, nb::handle alpha) {
             if (alpha.is_none()) return binary_method<sub2>(t, o, "sub");
             auto p = promote(t, o);
             if (!p) bad_operand("sub", o);
             return add(p->a, p->b, -number(alpha, "alpha"));
           }, "other"_a, nb::kw_only(), "alpha"_a = nb::none())
      .def("mul", [](const Tensor& t, nb::handle o) { return binary_method<mul2>(t, o, "mul"); }, "other"_a)
      .def("div", [](const Tensor& t, nb::handle o, std::optional<std::string> rounding_mode) {
             if (!rounding_mode) return binary_method<div2, true>(t, o, "div");
             if (*rounding_mode == "floor") return binary_method<floor_divide>(t, o, "div");
             if (*rounding_mode == "trunc") return trunc(binary_method<div2, true>(t, o, "div")).to(promote(t, o)->dtype);
             throw ValueError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" +
                              *rounding_mode + "'");
           }, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none())
      .def("true_divide", [](const Tensor& t, nb::handle o) { return binary_method<div2, true>(t, o, "true_divide"); })
      .def("floor_divide", [](const Tensor& t, nb::handle o) { return binary_method<floor_divide>(t, o, "floor_divide"); })
      .def("remainder", [](const Tensor& t, nb::handle o) { return binary_method<remainder>(t, o, "remainder"); })
      .def("fmod", [](const Tensor& t, nb::handle o) {
             auto p = promote(t, o);
             if (!p) bad_operand("fmod", o);
             // fmod keeps the dividend's sign: a - trunc(a / b) * b.
             if (is_floating(p->dtype)) return sub(p->a, mul(trunc(div(p->a, p->b)), p->b));
             Tensor r = remainder(p->a, p->b);
             Tensor fix = bitwise_and(ne(r, zeros_like(r)), ne(lt(p->a, zeros_like(p->a)), lt(p->b, zeros_like(p->b))));
             return where(fix, sub(r, p->b.expand(r.sizes())), r);
           })
      .def("pow", [](const Tensor& t, nb::handle o) { return binary_method<pow2>(t, o, "pow"); }, "exponent"_a)
      .def("maximum", [](const Tensor& t, const Tensor& o) { return binary_method<maximum>(t, nb::cast(o), "maximum"); })
      .def("minimum", [](const Tensor& t, const Tensor& o) { return binary_method<minimum>(t, nb::cast(o), "minimum"); })
      .def("matmul", [](const Tensor& t, const Tensor& o) { return binary_method<matmul2>(t, nb::cast(o), "matmul"); })
      .def("mm", [](const Tensor& a, const Tensor& b) {
             EMBER_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "mm: both arguments must be 2-D, got ", a.dim(), "-D and ",
                         b.dim(), "-D");
             return matmul(a, b);
           }, Release())
      .def("bmm", [](const Tensor& a, const Tensor& b) {
             EMBER_CHECK(a.dim() == 3 && b.dim() == 3, ShapeError, "bmm: both arguments must be 3-D, got ", a.dim(),
                         "-D and ", b.dim(), "-D");
             EMBER_CHECK(a.size(0) == b.size(0), ShapeError, "bmm: batch sizes differ: ", a.size(0), " and ", b.size(0));
             return matmul(a, b);
           }, Release())
      .def("eq", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(eq)>(t, o, "eq"); })
      .def("ne", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(ne)>(t, o, "ne"); })
      .def("lt", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(lt)>(t, o, "lt"); })
      .def("le", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(le)>(t, o, "le"); })
      .def("gt", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(gt)>(t, o, "gt"); })
      .def("ge", [](const Tensor& t, nb::handle o) { return binary_method<static_cast<BinaryFn>(ge)>(t, o, "ge"); })
      .def("equal", [](const Tensor& a, const Tensor& b) {
             if (a.sizes() != b.sizes()) return false;
             return all(eq(a, b)).item<bool>();
           })
      .def("allclose", [](const Tensor& a, const Tensor& b, double rtol, double atol) { return allclose(a, b, rtol, atol); },
           "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, Release())
      .def("logical_and", [](const Tensor& a, const Tensor& b) { return bitwise_and(a.to(DType::Bool), b.to(DType::Bool)); })
      .def("logical_or", [](const Tensor& a, const Tensor& b) { return bitwise_or(a.to(DType::Bool), b.to(DType::Bool)); })
      .def("logical_xor", [](const Tensor& a, const Tensor& b) { return bitwise_xor(a.to(DType::Bool), b.to(DType::Bool)); })
      .def("logical_not", [](const Tensor& a) { return logical_not(a); }, Release())
      .def("bitwise_not", [](const Tensor& a) { return bitwise_not(a); }, Release())
      .def("bitwise_and", [](const Tensor& t, nb::handle o) { return binary_method<and2>(t, o, "bitwise_and"); })
      .def("bitwise_or", [](const Tensor& t, nb::handle o) { return binary_method<or2>(t, o, "bitwise_or"); })
      .def("bitwise_xor", [](const Tensor& t, nb::handle o) { return binary_method<xor2>(t, o, "bitwise_xor"); });

  // ---- in place ----------------------------------------------------------------------------------------
  cls.def("add_", [](nb::handle s, nb::handle o, nb::handle alpha) {
        if (alpha.is_none()) return inplace_operator<add2>(s, o, "add_");
        Tensor& self = nb::cast<Tensor&>(s);
        Tensor other = value_tensor(o, self);
        EMBER_CHECK(can_cast(other.dtype(), self.dtype()), DTypeError, "add_: result type ", dtype_name(other.dtype()),
                    " can't be cast to the desired output type ", dtype_name(self.dtype()));
        if (records_history(self)) {
          const double a = number(alpha, "alpha");
          return recorded_in_place(s, "add_", [&](const Tensor& v) { return add(v, other.to(self.dtype()), a); });
        }
        self.add_(other.to(self.dtype()), number(alpha, "alpha"));
        return nb::borrow(s);
      }, "other"_a, nb::kw_only(), "alpha"_a = nb::none())
      .def("sub_", [](nb::handle s, nb::handle o, nb::handle alpha) {
        if (alpha.is_none()) return inplace_operator<sub2>(s, o, "sub_");
        Tensor& self = nb::cast<Tensor&>(s);
        if (records_history(self)) {
          const Tensor other = value_tensor(o, self).to(self.dtype());
          const double a = number(alpha, "alpha");
          return recorded_in_place(s, "sub_", [&](const Tensor& v) { return add(v, other, -a); });
        }
        self.add_(value_tensor(o, self).to(self.dtype()), -number(alpha, "alpha"));
        return nb::borrow(s);
      }, "other"_a, nb::kw_only(), "alpha"_a = nb::none())
      .def("mul_", [](nb::handle s, nb::handle o) { return inplace_operator<mul2>(s, o, "mul_"); }, "other"_a)
      .def("div_", [](nb::handle s, nb::handle o) { return inplace_operator<div2, true>(s, o, "div_"); }, "other"_a)
      .def("pow_", [](nb::handle s, nb::handle o) { return inplace_operator<pow2>(s, o, "pow_"); }, "exponent"_a)
      .def("zero_", [](nb::handle s) {
        if (records_history(nb::cast<Tensor&>(s)))  // zeros whose gradient to the old values is zero
          return recorded_in_place(s, "zero_", [](const Tensor& v) { return masked_fill(v, ones_like(v).to(DType::Bool), 0.0); });
        nb::cast<Tensor&>(s).zero_();
        return nb::borrow(s);
      })
      .def("fill_", [](nb::handle s, nb::handle v) {
        Tensor& t = nb::cast<Tensor&>(s);
        if (records_history(t)) {
          const Tensor value = nb::isinstance<Tensor>(v) ? nb::cast<Tensor>(v) : value_tensor(v, t);
          return recorded_in_place(s, "fill_", [&](const Tensor& x) {
            return masked_fill(x, ones_like(x).to(DType::Bool), value.to(x.dtype()));
          });
        }
        t.fill_(nb::isinstance<Tensor>(v) ? nb::cast<Tensor>(v).detach().to(DType::Float64).item<double>() : number(v, "value"));
        return nb::borrow(s);
      }, "value"_a)
      .def("copy_", [](nb::handle s, const Tensor& src, bool) {
        Tensor& t = nb::cast<Tensor&>(s);
        if (records_history(t))  // src's values (and gradient); none to the old values
          return recorded_in_place(s, "copy_", [&](const Tensor& x) {
            return add(masked_fill(x, ones_like(x).to(DType::Bool), 0.0), src.to(x.device(), x.dtype()));
          });
        {
          nb::gil_scoped_release u;
          t.copy_(src);
        }
        return nb::borrow(s);
      }, "src"_a, "non_blocking"_a = false)
      .def("clamp_", [](nb::handle s, nb::handle lo, nb::handle hi) {
        if (records_history(nb::cast<Tensor&>(s))) {
          const auto lo_v = opt_number(lo, "min"), hi_v = opt_number(hi, "max");
          return recorded_in_place(s, "clamp_", [&](const Tensor& v) { return clamp(v, lo_v, hi_v); });
        }
        nb::cast<Tensor&>(s).clamp_(opt_number(lo, "min"), opt_number(hi, "max"));
        return nb::borrow(s);
      }, "min"_a = nb::none(), "max"_a = nb::none())
      .def("relu_", [](nb::handle s) {
        if (records_history(nb::cast<Tensor&>(s)))
          return recorded_in_place(s, "relu_", [](const Tensor& v) { return relu(v); });
        nb::cast<Tensor&>(s).relu_();
        return nb::borrow(s);
      })
      .def("masked_fill_", [](nb::handle s, const Tensor& mask, nb::handle v) {
        Tensor& t = nb::cast<Tensor&>(s);
        if (records_history(t)) {
          const Tensor value = value_tensor(v, t).to(t.dtype());
          return recorded_in_place(s, "masked_fill_", [&](const Tensor& x) { return masked_fill(x, mask, value); });
        }
        t.masked_fill_(mask, value_tensor(v, t).to(t.dtype()));
        return nb::borrow(s);
      }, "mask"_a, "value"_a)
      .def("scatter_", [](nb::handle s, int64_t dim, const Tensor& index, nb::handle src) {
        Tensor& t = nb::cast<Tensor&>(s);
        check_inplace(t, "scatter_");
        if (nb::isinstance<Tensor>(src)) t.scatter_(dim, index, nb::cast<Tensor>(src));
        else t.scatter_(dim, index, number(src, "value"));
        return nb::borrow(s);
      }, "dim"_a, "index"_a, "src"_a)
      .def("scatter_add_", [](nb::handle s, int64_t dim, const Tensor& index, const Tensor& src) {
        check_inplace(nb::cast<Tensor&>(s), "scatter_add_");
        nb::cast<Tensor&>(s).scatter_add_(dim, index, src);
        return nb::borrow(s);
      }, "dim"_a, "index"_a, "src"_a)
      .def("index_put_", [](nb::handle s, const std::vector<std::optional<Tensor>>& indices, nb::handle values, bool acc) {
        Tensor& t = nb::cast<Tensor&>(s);
        check_inplace(t, "index_put_");
        std::vector<Tensor> idx;
        for (auto& i : indices) idx.push_back(i.value_or(Tensor()));
        Tensor v = value_tensor(values, t);
        {
          nb::gil_scoped_release u;
          t.index_put_(idx, v.dtype() == t.dtype() ? v : v.to(t.dtype()), acc);
        }
        return nb::borrow(s);
      }, "indices"_a, "values"_a, "accumulate"_a = false)
      .def("uniform_", [](nb::handle s, double a, double b) {
        check_inplace(nb::cast<Tensor&>(s), "uniform_");
        uniform_(nb::cast<Tensor&>(s), a, b);
        return nb::borrow(s);
      }, "from"_a = 0.0, "to"_a = 1.0)
      .def("normal_", [](nb::handle s, double mean, double std) {
        check_inplace(nb::cast<Tensor&>(s), "normal_");
        normal_(nb::cast<Tensor&>(s), mean, std);
        return nb::borrow(s);
      }, "mean"_a = 0.0, "std"_a = 1.0);

  // ---- element-wise math ----------------------------------------------------------------------------------
  cls.def("exp", &unary<exp, true>, Release())
      .def("log", &unary<log, true>, Release())
      .def("sqrt", &unary<sqrt, true>, Release())
      .def("rsqrt", &unary<rsqrt, true>, Release())
      .def("sigmoid", &unary<sigmoid, true>, Release())
      .def("tanh", &unary<tanh, true>, Release())
      .def("sin", &unary<sin, false>, Release())
      .def("cos", &unary<cos, false>, Release())
      .def("log1p", &unary<log1p, false>, Release())
      .def("expm1", &unary<expm1, false>, Release())
      .def("reciprocal", &unary<reciprocal, false>, Release())
      .def("abs", &unary<abs, false>, Release())
      .def("neg", &unary<neg, false>, Release())
      .def("relu", &unary<relu, false>, Release())
      .def("sign", &unary<sign, false>, Release())
      .def("floor", &unary<floor, false>, Release())
      .def("ceil", &unary<ceil, false>, Release())
      .def("trunc", &unary<trunc, false>, Release())
      .def("round", [](const Tensor& t, int64_t decimals) { return round(t, decimals); }, nb::kw_only(), "decimals"_a = 0,
           Release())
      .def("isnan", &unary<isnan, false>, Release())
      .def("isinf", &unary<isinf, false>, Release())
      .def("isfinite", &unary<isfinite, false>, Release())
      .def("square", [](const Tensor& t) { return mul(t, t); }, Release())
      .def("clamp", [](const Tensor& t, nb::handle lo, nb::handle hi) {
             if (nb::isinstance<Tensor>(lo) || nb::isinstance<Tensor>(hi)) {
               Tensor r = t;
               if (!lo.is_none()) r = maximum(r, nb::cast<Tensor>(lo));
               if (!hi.is_none()) r = minimum(r, nb::cast<Tensor>(hi));
               return r;
             }
             EMBER_CHECK(!(lo.is_none() && hi.is_none()), ValueError, "clamp: at least one of 'min' or 'max' must not be None");
             return clamp(t, opt_number(lo, "min"), opt_number(hi, "max"));
           }, "min"_a = nb::none(), "max"_a = nb::none())
      .def("lerp", [](const Tensor& t, const Tensor& end, nb::handle w) {
             if (nb::isinstance<Tensor>(w)) return lerp(t, end, nb::cast<Tensor>(w));
             return lerp(t, end, number(w, "weight"));
           }, "end"_a, "weight"_a);

  // ---- reductions ---------------------------------------------------------------------------------------
  cls.def("sum", [](const Tensor& t, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor x = reduce_input(t, dtype);
        Dims d = dims_of(dim);
        nb::gil_scoped_release u;
        if (is_half(x.dtype())) return sum(x.to(DType::Float32), d, keepdim).to(x.dtype());
        return sum(x, d, keepdim);
      }, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none())
      .def("mean", [](const Tensor& t, nb::handle dim, bool keepdim, nb::handle dtype) {
        Tensor x = dtype.is_none() ? t : t.to(to_dtype(dtype));
        EMBER_CHECK(is_floating(x.dtype()), DTypeError, "mean(): could not infer output dtype. Input dtype must be either "
                    "a floating point or complex dtype. Got: ", dtype_name(x.dtype()));
        Dims d = dims_of(dim);
        nb::gil_scoped_release u;
        if (is_half(x.dtype())) return mean(x.to(DType::Float32), d, keepdim).to(x.dtype());
        return mean(x, d, keepdim);
      }, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none())
      .def("prod", [](const Tensor& t, std::optional<int64_t> dim, bool keepdim, nb::handle dtype) {
        Tensor x = reduce_input(t, dtype);
        nb::gil_scoped_release u;
        return dim ? prod(x, *dim, keepdim) : prod(x);
      }, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none())
      .def("amax", [](const Tensor& t, nb::handle dim, bool keepdim) { return amax(t, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("amin", [](const Tensor& t, nb::handle dim, bool keepdim) { return amin(t, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("max", [](const Tensor& t, nb::handle dim, bool keepdim) -> nb::object {
        if (dim.is_none()) return nb::cast(max(t));
        if (nb::isinstance<Tensor>(dim)) return nb::cast(binary_method<maximum>(t, dim, "max"));
        return values_indices("max", max(t, to_int(dim, "dim"), keepdim));
      }, "dim"_a = nb::none(), "keepdim"_a = false)
      .def("min", [](const Tensor& t, nb::handle dim, bool keepdim) -> nb::object {
        if (dim.is_none()) return nb::cast(min(t));
        if (nb::isinstance<Tensor>(dim)) return nb::cast(binary_method<minimum>(t, dim, "min"));
        return values_indices("min", min(t, to_int(dim, "dim"), keepdim));
      }, "dim"_a = nb::none(), "keepdim"_a = false)
      .def("argmax", [](const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
        if (!dim) return argmax(t.reshape({-1}), 0, false);
        return argmax(t, *dim, keepdim);
      }, "dim"_a = nb::none(), "keepdim"_a = false)
      .def("argmin", [](const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
        if (!dim) return argmin(t.reshape({-1}), 0, false);
        return argmin(t, *dim, keepdim);
      }, "dim"_a = nb::none(), "keepdim"_a = false)
      .def("var", [](const Tensor& t, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
        int64_t c = !correction.is_none() ? to_int(correction, "correction") : unbiased.is_none() ? 1 : nb::cast<bool>(unbiased) ? 1 : 0;
        if (PyBool_Check(dim.ptr())) {  // t.var(False): PyTorch's positional unbiased
          c = dim.ptr() == Py_True ? 1 : 0;
          return var(t, {}, c, keepdim);
        }
        return var(t, dims_of(dim), c, keepdim);
      }, "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "correction"_a = nb::none())
      .def("std", [](const Tensor& t, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
        int64_t c = !correction.is_none() ? to_int(correction, "correction") : unbiased.is_none() ? 1 : nb::cast<bool>(unbiased) ? 1 : 0;
        if (PyBool_Check(dim.ptr())) {
          c = dim.ptr() == Py_True ? 1 : 0;
          return ember::std(t, {}, c, keepdim);
        }
        return ember::std(t, dims_of(dim), c, keepdim);
      }, "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "correction"_a = nb::none())
      .def("all", [](const Tensor& t, nb::handle dim, bool keepdim) { return all(t, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("any", [](const Tensor& t, nb::handle dim, bool keepdim) { return any(t, dims_of(dim), keepdim); },
           "dim"_a = nb::none(), "keepdim"_a = false)
      .def("count_nonzero", [](const Tensor& t, nb::handle dim) { return count_nonzero(t, dims_of(dim)); }, "dim"_a = nb::none())
      .def("norm", [](const Tensor& t, nb::handle p, nb::handle dim, bool keepdim) {
        if (nb::isinstance<nb::str>(p)) return norm(t, nb::cast<std::string>(p), dims_of(dim), keepdim);
        return norm(t, p.is_none() ? 2.0 : number(p, "p"), dims_of(dim), keepdim);
      }, "p"_a = nb::none(), "dim"_a = nb::none(), "keepdim"_a = false)
      .def("logsumexp", [](const Tensor& t, nb::handle dim, bool keepdim) { return logsumexp(floating(t), dims_of(dim), keepdim); },
           "dim"_a, "keepdim"_a = false)
      .def("cumsum", [](const Tensor& t, int64_t dim, nb::handle dtype) {
        return cumsum(dtype.is_none() ? t : t.to(to_dtype(dtype)), dim);
      }, "dim"_a, nb::kw_only(), "dtype"_a = nb::none())
      .def("cumprod", [](const Tensor& t, int64_t dim, nb::handle dtype) {
        return cumprod(dtype.is_none() ? t : t.to(to_dtype(dtype)), dim);
      }, "dim"_a, nb::kw_only(), "dtype"_a = nb::none());

  // ---- shape -------------------------------------------------------------------------------------------
  cls.def("view", [](const Tensor& t, nb::args shape) -> Tensor {
        return t.view(varargs_ints(shape, "shape"));
      })
      .def("reshape", [](const Tensor& t, nb::args shape) { return t.reshape(varargs_ints(shape, "shape")); })
      .def("view_as", [](const Tensor& t, const Tensor& o) { return t.view(o.sizes()); }, "other"_a)
      .def("reshape_as", [](const Tensor& t, const Tensor& o) { return t.reshape(o.sizes()); }, "other"_a)
      .def("expand", [](const Tensor& t, nb::args shape) { return t.expand(varargs_ints(shape, "size")); })
      .def("expand_as", [](const Tensor& t, const Tensor& o) { return t.expand(o.sizes()); }, "other"_a)
      .def("repeat", [](const Tensor& t, nb::args r) { return repeat(t, varargs_ints(r, "repeats")); })
      .def("permute", [](const Tensor& t, nb::args dims) { return t.permute(varargs_ints(dims, "dims")); })
      .def("flip", [](const Tensor& t, nb::args dims) { return flip(t, varargs_ints(dims, "dims")); })
      .def("transpose", [](const Tensor& t, int64_t a, int64_t b) { return t.transpose(a, b); }, "dim0"_a, "dim1"_a)
      .def("swapaxes", [](const Tensor& t, int64_t a, int64_t b) { return t.transpose(a, b); })
      .def("t", [](const Tensor& t) {
        EMBER_CHECK(t.dim() <= 2, ShapeError, "t() expects a tensor with <= 2 dimensions, but self is ", t.dim(), "D");
        return t.dim() < 2 ? t : t.t();
      })
      .def_prop_ro("T", [](const Tensor& t) {
        Dims d(size_t(t.dim()));
        for (int64_t i = 0; i < t.dim(); ++i) d[size_t(i)] = t.dim() - 1 - i;
        return t.permute(d);
      })
      .def_prop_ro("mT", [](const Tensor& t) { return t.transpose(-2, -1); })
      .def("flatten", [](const Tensor& t, int64_t s, int64_t e) { return t.dim() == 0 ? t.reshape({1}) : t.flatten(s, e); },
           "start_dim"_a = 0, "end_dim"_a = -1)
      .def("ravel", [](const Tensor& t) { return t.reshape({-1}); })
      .def("unflatten", [](const Tensor& t, int64_t dim, nb::handle sizes) { return unflatten(t, dim, ints_of(sizes, "sizes")); },
           "dim"_a, "sizes"_a)
      .def("squeeze", [](const Tensor& t, nb::handle dim) { return dim.is_none() ? squeeze(t) : squeeze(t, ints_of(dim, "dim")); },
           "dim"_a = nb::none())
      .def("unsqueeze", [](const Tensor& t, int64_t dim) { return t.unsqueeze(dim); }, "dim"_a)
      .def("narrow", [](const Tensor& t, int64_t dim, int64_t start, int64_t length) { return t.narrow(dim, start, length); },
           "dim"_a, "start"_a, "length"_a)
      .def("select", [](const Tensor& t, int64_t dim, int64_t index) { return t.select(dim, index); }, "dim"_a, "index"_a)
      .def("_slice", [](const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
        return t.slice(dim, start, end, step);
      })
      .def("movedim", [](const Tensor& t, nb::handle s, nb::handle d) { return movedim(t, ints_of(s, "source"), ints_of(d, "destination")); },
           "source"_a, "destination"_a)
      .def("split", [](const Tensor& t, nb::handle size, int64_t dim) {
        if (is_sequence(size)) return split_with_sizes(t, ints_of(size, "split_size"), dim);
        return split(t, to_int(size, "split_size"), dim);
      }, "split_size_or_sections"_a, "dim"_a = 0)
      .def("chunk", [](const Tensor& t, int64_t chunks, int64_t dim) { return chunk(t, chunks, dim); }, "chunks"_a, "dim"_a = 0)
      .def("unbind", [](const Tensor& t, int64_t dim) {
        std::vector<Tensor> out;
        for (int64_t i = 0; i < t.size(dim); ++i) out.push_back(t.select(dim, i));
        return out;
      }, "dim"_a = 0)
      .def("tril", [](const Tensor& t, int64_t d) { return tril(t, d); }, "diagonal"_a = 0)
      .def("triu", [](const Tensor& t, int64_t d) { return triu(t, d); }, "diagonal"_a = 0)
      .def("roll", [](const Tensor& t, nb::handle shifts, nb::handle dims) {
        return roll(t, ints_of(shifts, "shifts"), dims.is_none() ? Dims{} : ints_of(dims, "dims"));
      }, "shifts"_a, "dims"_a = nb::none());

  // ---- indexing ---------------------------------------------------------------------------------------
  cls.def("gather", [](const Tensor& t, int64_t dim, const Tensor& index) { return gather(t, dim, index); }, "dim"_a, "index"_a,
          Release())
      .def("scatter", [](const Tensor& t, int64_t dim, const Tensor& index, nb::handle src) {
        if (nb::isinstance<Tensor>(src)) return scatter(t, dim, index, nb::cast<Tensor>(src));
        return scatter(t, dim, index, number(src, "value"));
      }, "dim"_a, "index"_a, "src"_a)
      .def("scatter_add", [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
        return scatter_add(t, dim, index, src);
      }, "dim"_a, "index"_a, "src"_a, Release())
      .def("index_select", [](const Tensor& t, int64_t dim, const Tensor& index) { return index_select(t, dim, index); },
           "dim"_a, "index"_a, Release())
      .def("index_add", [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
        return index_add(t, dim, index, source, alpha);
      }, "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1.0, Release())
      .def("masked_fill", [](const Tensor& t, const Tensor& mask, nb::handle v) {
        if (nb::isinstance<Tensor>(v)) return masked_fill(t, mask, nb::cast<Tensor>(v).to(t.dtype()));
        return masked_fill(t, mask, number(v, "value"));
      }, "mask"_a, "value"_a)
      .def("masked_select", [](const Tensor& t, const Tensor& mask) { return masked_select(t, mask); }, "mask"_a, Release())
      .def("nonzero", [](const Tensor& t, bool as_tuple) -> nb::object {
        Tensor nz = nonzero(t);
        if (!as_tuple) return nb::cast(nz);
        nb::list out;
        for (int64_t i = 0; i < t.dim(); ++i) out.append(nb::cast(nz.select(1, i)));
        return nb::tuple(out);
      }, nb::kw_only(), "as_tuple"_a = false)
      .def("_index", [](const Tensor& t, const std::vector<std::optional<Tensor>>& indices) {
        std::vector<Tensor> idx;
        for (auto& i : indices) idx.push_back(i.value_or(Tensor()));
        nb::gil_scoped_release u;
        return index(t, idx);
      });
}

}  // namespace ember::python

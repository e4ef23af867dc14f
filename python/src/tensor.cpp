// ember.Tensor and its zero-copy exchange with NumPy and DLPack (PyTorch, JAX, CuPy, NumPy):
//   np.asarray(t)          __array_interface__: NumPy's array keeps the ember.Tensor alive (its base)
//   torch.from_dlpack(t)   __dlpack__: a capsule owning a handle on the tensor's storage
//   ember.from_dlpack(x)   x.__dlpack__(): the storage calls the producer's deleter when its last
//                          view is gone, so the source may be deleted first
// No data is copied either way; dtype, shape, strides and device are kept. The DLPack structs are
// written out here (the ABI of dlpack.h's legacy DLManagedTensor capsule, which every framework
// reads) because nanobind's ndarray keeps its own managed tensor private and cannot hand a capsule
// owned by an ember storage to another framework.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/core/tensor.h"
#include "ember/cuda.h"

namespace ember::python {
namespace {

// ---- the DLPack ABI (dlpack.h v0.8) ---------------------------------------------------------------
struct DLDevice {
  int32_t device_type;  // kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: row-major contiguous
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3;
constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

DLDataType to_dlpack_dtype(DType t) {
  switch (t) {
    case DType::Float32: return {2, 32, 1};
    case DType::Float64: return {2, 64, 1};
    case DType::Float16: return {2, 16, 1};
    case DType::BFloat16: return {4, 16, 1};
    case DType::Int64: return {0, 64, 1};
    case DType::Int32: return {0, 32, 1};
    case DType::UInt8: return {1, 8, 1};
    case DType::Bool: return {6, 8, 1};
  }
  throw InternalError("to_dlpack_dtype: unknown dtype");
}

DType from_dlpack_dtype(DLDataType t) {
  if (t.lanes != 1) throw DTypeError("from_dlpack: vector dtypes (lanes > 1) have no ember dtype");
  const int key = t.code * 1000 + t.bits;
  switch (key) {
    case 2032: return DType::Float32;
    case 2064: return DType::Float64;
    case 2016: return DType::Float16;
    case 4016: return DType::BFloat16;
    case 64: return DType::Int64;
    case 32: return DType::Int32;
    case 1008: return DType::UInt8;
    case 6008: return DType::Bool;
  }
  throw DTypeError("from_dlpack: DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) +
                       " bits) has no ember dtype",
                   "ember holds float32, float64, float16, bfloat16, int64, int32, uint8 and bool");
}

// ---- ember -> DLPack --------------------------------------------------------------------------------
// The capsule's context: a handle on the tensor (so its storage lives), and the shape and strides
// the DLTensor points at.
struct ExportContext {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

void delete_export(DLManagedTensor* m) { delete static_cast<ExportContext*>(m->manager_ctx); }

// A capsule never consumed deletes its tensor; a consumed one ("used_dltensor") is the consumer's.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (m && m->deleter) m->deleter(m);
}

nb::object to_dlpack(const Tensor& t) {
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = t;
  ctx->shape = t.sizes();
  ctx->strides = t.strides();
  DLTensor& d = ctx->managed.dl_tensor;
  d.data = t.storage()->data();
  d.byte_offset = uint64_t(t.storage_offset()) * t.itemsize();
  d.device = t.is_cuda() ? DLDevice{kDLCUDA, t.device().index} : DLDevice{kDLCPU, 0};
  d.ndim = int32_t(t.dim());
  d.dtype = to_dlpack_dtype(t.dtype());
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = delete_export;
  PyObject* capsule = PyCapsule_New(&ctx->managed, kCapsuleName, capsule_destructor);
  if (!capsule) throw nb::python_error();
  ctx.release();  // the capsule (or its consumer) owns it now
  return nb::steal(capsule);
}

// ---- DLPack -> ember --------------------------------------------------------------------------------
// The producer's deleter may release a Python object (NumPy's does): call it holding the GIL, from
// whichever thread drops the storage's last view.
void release_managed(DLManagedTensor* m) {
  if (!m->deleter) return;
  if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to release into
  PyGILState_STATE state = PyGILState_Ensure();
  m->deleter(m);
  PyGILState_Release(state);
}

Tensor from_capsule(nb::handle capsule_handle) {
  // The backends register with the first allocation; a tensor made from foreign memory allocates
  // nothing, and its first op (a clone) must find the kernels.
  (void)empty({0});
  PyObject* capsule = capsule_handle.ptr();
  if (!PyCapsule_IsValid(capsule, kCapsuleName))
    throw ValueError("from_dlpack: not an unused DLPack capsule (a capsule can be consumed once)");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  const DLTensor& d = m->dl_tensor;
  Device device = Device::cpu();
  if (d.device.device_type == kDLCUDA) {
    if (d.device.device_id >= cuda::device_count())
      throw DeviceError("from_dlpack: the tensor is on cuda:" + std::to_string(d.device.device_id) +
                            ", which this ember cannot use (" +
                            (cuda::device_count() ? "no such device" : cuda::unavailable_reason()) + ")",
                        "copy it to the CPU first (x.cpu())");
    device = Device::cuda(d.device.device_id);
  } else if (d.device.device_type != kDLCPU && d.device.device_type != kDLCUDAHost) {
    throw DeviceError("from_dlpack: DLPack device type " + std::to_string(d.device.device_type) +
                      " is neither the CPU nor CUDA");
  }
  const DType dtype = from_dlpack_dtype(d.dtype);
  Shape sizes(d.shape, d.shape + d.ndim), strides(size_t(d.ndim));
  int64_t extent = 1;  // elements from the first to one past the last
  bool empty = false;
  for (int64_t i = d.ndim - 1, contiguous = 1; i >= 0; --i) {
    strides[size_t(i)] = d.strides ? d.strides[i] : contiguous;
    contiguous *= sizes[size_t(i)];
    if (sizes[size_t(i)] == 0) empty = true;
    if (strides[size_t(i)] < 0)
      throw ValueError("from_dlpack: negative strides (a reversed view) are not supported", "pass a copy");
    extent += (sizes[size_t(i)] - 1) * strides[size_t(i)];
  }
  if (empty) extent = 0;
  void* base = static_cast<char*>(d.data) + d.byte_offset;
  const size_t nbytes = size_t(extent) * dtype_size(dtype);
  // The capsule is ours from here: renamed as consumed, released with the storage's last view.
  if (PyCapsule_SetName(capsule, kUsedCapsuleName) != 0) throw nb::python_error();
  Storage storage(new StorageImpl(base, nbytes, device, nullptr), [m](StorageImpl* s) {
    delete s;
    release_managed(m);
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor from_dlpack(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj);
  if (!nb::hasattr(obj, "__dlpack__"))
    throw ValueError("from_dlpack: the object has no __dlpack__ method (a PyTorch, NumPy, JAX or CuPy array has)");
  return from_capsule(obj.attr("__dlpack__")());
}

Tensor from_numpy(nb::handle array) {
  nb::object np = nb::module_::import_("numpy");
  if (!nb::isinstance(array, np.attr("ndarray"))) throw ValueError("from_numpy: expected a numpy.ndarray");
  return from_dlpack(array);
}

// ---- NumPy's array interface (version 3) -----------------------------------------------------------
std::string typestr(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int64: return "<i8";
    case DType::Int32: return "<i4";
    case DType::UInt8: return "|u1";
    case DType::Bool: return "|b1";
    case DType::BFloat16: break;
  }
  throw DTypeError("NumPy has no bfloat16 dtype", "convert first: t.to(\"float32\"), or hand it over with DLPack "
                                                  "(torch.from_dlpack(t))");
}

nb::dict array_interface(const Tensor& t) {
  if (!t.is_cpu())
    throw DeviceError("np.asarray: the tensor is on " + t.device().str() + "; NumPy reads host memory",
                      "copy it first (t.cpu()), or hand it to PyTorch with torch.from_dlpack(t)");
  nb::dict d;
  nb::list shape, strides;
  for (int64_t s : t.sizes()) shape.append(s);
  for (int64_t s : t.strides()) strides.append(s * int64_t(t.itemsize()));
  d["shape"] = nb::tuple(shape);
  d["strides"] = nb::tuple(strides);
  d["typestr"] = typestr(t.dtype());
  d["data"] = nb::make_tuple(reinterpret_cast<uintptr_t>(t.raw_data()), false);
  d["version"] = 3;
  return d;
}

}  // namespace

void register_tensor(nb::module_& m) {
  nb::class_<Device>(m, "Device", "A device: ember.Device(\"cpu\"), ember.Device(\"cuda:1\").")
      .def("__init__", [](Device* d, const std::string& spec) { new (d) Device(Device::parse(spec)); },
           nb::arg("spec"), "Parses \"cpu\", \"cuda\" or \"cuda:N\" (ember.ValueError otherwise).")
      .def("__init__", [](Device* d, const std::string& type, int index) {
             Device parsed = Device::parse(type);
             new (d) Device(parsed.type, index);
           }, nb::arg("type"), nb::arg("index"), "ember.device(\"cuda\", 1), as torch.device.")
      .def_prop_ro("type", [](const Device& d) { return d.is_cpu() ? "cpu" : "cuda"; }, "\"cpu\" or \"cuda\".")
      .def_prop_ro("index", [](const Device& d) { return d.index; }, "The device's index (0 for the CPU).")
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "ember.Device(\"" + d.str() + "\")"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); });

  nb::class_<Tensor> cls(m, "Tensor",
                     "A strided view of ember memory on one device. np.asarray(t) and torch.from_dlpack(t) share "
                     "its data without copying; the data lives while any view of it does.");
  cls.def_prop_ro("strides", [](const Tensor& t) { return nb::tuple(nb::cast(t.strides())); },
                   "The strides in elements (as PyTorch's stride()), a tuple.")
      .def_prop_ro("device", [](const Tensor& t) { return t.device(); }, "Where the data is.")
      .def_prop_ro("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("numpy", [](nb::handle self, bool force) -> nb::object {
             const Tensor& t = nb::cast<const Tensor&>(self);
             if (force) return nb::module_::import_("numpy").attr("asarray")(nb::cast(t.detach().cpu()));
             EMBER_CHECK(!t.requires_grad(), AutogradError,
                         "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
             return nb::module_::import_("numpy").attr("asarray")(self);
           }, nb::kw_only(), nb::arg("force") = false,
           "np.asarray(t): a NumPy array sharing the data (CPU tensors).")
      .def_prop_ro("__array_interface__", &array_interface)
      .def("__dlpack__", [](const Tensor& t, nb::kwargs) { return to_dlpack(t); },
           "A DLPack capsule sharing the data (torch.from_dlpack(t) calls it).")
      .def("__dlpack_device__", [](const Tensor& t) {
             return t.is_cuda() ? nb::make_tuple(kDLCUDA, t.device().index) : nb::make_tuple(kDLCPU, 0);
           })
      ;
  register_tensor_api(m, cls);

  m.def("from_numpy", &from_numpy, nb::arg("array"),
        "An ember.Tensor sharing a NumPy array's data (no copy); the array lives as long as the tensor.");
  m.def("from_dlpack", &from_dlpack, nb::arg("x"),
        "An ember.Tensor sharing the data of any DLPack producer (a PyTorch tensor, a NumPy array, a capsule), "
        "on its device, with its dtype and strides; the source lives as long as the tensor.");
}

}  // namespace ember::python

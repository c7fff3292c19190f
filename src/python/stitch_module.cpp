// The `stitch._stitch` Python extension (docs/python.md): the public C++
// library (include/stitch/stitch.h) seen from Python through pybind11. Only
// public headers are used, so the extension links libstitch.so like any other
// program. Arrays cross as numpy arrays, copied in and out; a UserError becomes
// stitch.Error with the CLI's message ("file:line:col: error: ..."), and an
// internal failure a RuntimeError, never a crash of the interpreter.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "by_address.h"
#include "stitch/stitch.h"

namespace py = pybind11;

namespace {

using stitch::DType;
using stitch::Tensor;
using stitch_python::PyExecutable;

// numpy's name for each dtype; bf16's is ml_dtypes' (numpy has none).
const char* numpy_name(DType t) {
  switch (t) {
    case DType::f16: return "float16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
    case DType::bf16: return "bfloat16";
  }
  return nullptr;
}

DType dtype_of(const py::dtype& d) {
  const char kind = d.kind();
  const size_t size = static_cast<size_t>(d.itemsize());
  // ml_dtypes.bfloat16, a numpy extension type (kind 'V').
  if (size == 2 && d.attr("name").cast<std::string>() == "bfloat16") return DType::bf16;
  if (kind == 'f' && size == 2) return DType::f16;
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 8) return DType::f64;
  if (kind == 'i' && size == 1) return DType::i8;
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'i' && size == 8) return DType::i64;
  if (kind == 'b') return DType::boolean;
  throw stitch::UserError("a numpy array of dtype " + d.attr("name").cast<std::string>() +
                          " has no Stitch dtype (f16, f32, f64, i8, i32, i64, bool; bf16 as ml_dtypes.bfloat16)");
}

// numpy's dtype for `t`; bf16 needs the ml_dtypes package.
py::dtype numpy_dtype(DType t) {
  if (t != DType::bf16) return py::dtype(numpy_name(t));
  try {
    return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  } catch (py::error_already_set&) {
    throw stitch::UserError("bf16 arrays cross into Python as numpy arrays of ml_dtypes.bfloat16, and ml_dtypes is not "
                            "installed: pip install ml_dtypes");
  }
}

DType parse_dtype_name(const std::string& name) {
  if (name == "float32") return DType::f32;
  if (name == "float64") return DType::f64;
  if (name == "float16") return DType::f16;
  if (name == "int8") return DType::i8;
  if (name == "int32") return DType::i32;
  if (name == "int64") return DType::i64;
  if (name == "bfloat16") return DType::bf16;
  if (std::optional<DType> t = stitch::parse_dtype(name)) return *t;
  throw stitch::UserError("unknown dtype '" + name + "'");
}

// A copy of a numpy array (any strides; made C-contiguous).
Tensor to_tensor(const py::array& a) {
  const DType dtype = dtype_of(a.dtype());
  py::array c = py::array::ensure(a, py::array::c_style);
  std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
  Tensor t = Tensor::uninitialized(dtype, shape);
  if (t.nbytes() > 0) std::memcpy(t.raw(), c.data(), t.nbytes());
  return t;
}

py::array to_numpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(numpy_dtype(t.dtype()), shape);
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

// A numpy array of a Stitch dtype whose memory is `data`, kept alive by `owner`.
py::array numpy_on(std::byte* data, DType dtype, const std::vector<int64_t>& shape, const py::object& owner) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array(numpy_dtype(dtype), dims, data, owner);
}

// DLPack's C ABI (the unversioned "dltensor" capsule of __dlpack__()), for
// the tensors numpy cannot take: bf16 has no numpy dtype of its own.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: C-contiguous
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr int32_t kDLCPU = 1;
constexpr uint8_t kDLBfloat = 4;

// A bf16 DLPack tensor in CPU memory as a numpy array of ml_dtypes.bfloat16
// over the same memory (no copy), which keeps the tensor alive.
py::array bf16_from_dlpack(const py::object& obj, const std::string& numpy_failure) {
  py::object capsule = obj.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  // Consumed (the protocol's rename): the array's owner frees it from here on.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  py::capsule owner(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU) {
    throw stitch::UserError("an argument in device memory (DLPack device type " + std::to_string(t.device.device_type) +
                            "): pass tensors in CPU memory");
  }
  if (t.dtype.code != kDLBfloat || t.dtype.bits != 16 || t.dtype.lanes != 1) {
    throw stitch::UserError("an argument numpy cannot read through DLPack (" + numpy_failure + ")");
  }
  std::vector<py::ssize_t> shape(t.shape, t.shape + t.ndim), strides(static_cast<size_t>(t.ndim));
  py::ssize_t step = 2;
  for (int d = t.ndim - 1; d >= 0; --d) {
    strides[d] = t.strides ? static_cast<py::ssize_t>(t.strides[d]) * 2 : step;
    step *= shape[d];
  }
  return py::array(numpy_dtype(DType::bf16), shape, strides, static_cast<std::byte*>(t.data) + t.byte_offset, owner);
}

// An argument that offers DLPack, as a numpy array over its memory.
py::array array_from_dlpack(const py::object& obj) {
  try {
    return py::module_::import("numpy").attr("from_dlpack")(obj);
  } catch (py::error_already_set& e) {
    return bf16_from_dlpack(obj, e.what());
  }
}

// The arguments of a compiled graph as dense row-major arrays, each in place
// where it already is one (a C-contiguous, aligned numpy array, or CPU memory
// through DLPack, such as a torch tensor), else a contiguous copy. Holds what
// the views point into for the call.
struct CallerArrays {
  std::vector<py::array> arrays;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<stitch::ArrayView> views;

  explicit CallerArrays(const py::args& args) {
    std::vector<DType> dtypes;
    for (const py::handle& h : args) {
      // A bad argument's message names which one it is.
      try {
        arrays.push_back(in_place(h));
        dtypes.push_back(dtype_of(arrays.back().dtype()));
      } catch (const stitch::UserError& e) {
        throw stitch::UserError("argument " + std::to_string(dtypes.size()) + ": " + e.what());
      }
    }
    for (const py::array& a : arrays) shapes.emplace_back(a.shape(), a.shape() + a.ndim());
    for (size_t i = 0; i < arrays.size(); ++i) {
      views.push_back({static_cast<std::byte*>(const_cast<void*>(arrays[i].data())), dtypes[i], shapes[i].data(),
                       static_cast<int>(shapes[i].size())});
    }
  }

  static py::array in_place(const py::handle& h) {
    py::object obj = py::reinterpret_borrow<py::object>(h);
    if (!py::isinstance<py::array>(obj) && py::hasattr(obj, "__dlpack__")) obj = array_from_dlpack(obj);
    py::array a = py::array::ensure(obj);
    if (!a) {
      throw stitch::UserError("an argument of a compiled graph must be an array, not " +
                              std::string(py::str(py::type::of(h).attr("__name__"))));
    }
    constexpr int kAligned = py::detail::npy_api::NPY_ARRAY_ALIGNED_;
    if ((a.flags() & py::array::c_style) == 0 || (a.flags() & kAligned) == 0) {
      a = py::array::ensure(a, py::array::c_style);
    }
    return a;
  }
};

stitch::Backend parse_backend(const std::string& name) {
  if (name == "cpu") return stitch::Backend::Cpu;
  if (name == "cuda") return stitch::Backend::Cuda;
  throw stitch::UserError("unknown backend '" + name + "' (cpu or cuda)");
}

stitch::LazyOptions::Mode parse_mode(const std::string& name) {
  using Mode = stitch::LazyOptions::Mode;
  if (name == "fused") return Mode::Fused;
  if (name == "unfused") return Mode::Unfused;
  if (name == "eager") return Mode::Eager;
  if (name == "reference") return Mode::Reference;
  if (name == "fused_reference") return Mode::FusedReference;
  throw stitch::UserError("unknown lazy mode '" + name + "' (fused, unfused, eager, reference, fused_reference)");
}

// A Python value as a lazy call's argument: an Array, the future of a
// reduction, or a number (bool and int as integers).
stitch::LazyArg lazy_arg(const py::handle& h) {
  if (py::isinstance<stitch::Array>(h)) return stitch::LazyArg(h.cast<stitch::Array>());
  if (py::isinstance<stitch::Scalar>(h)) return stitch::LazyArg(h.cast<stitch::Scalar>());
  if (py::isinstance<py::bool_>(h)) return stitch::LazyArg(static_cast<int64_t>(h.cast<bool>()));
  if (py::isinstance<py::int_>(h)) return stitch::LazyArg(h.cast<int64_t>());
  if (py::isinstance<py::float_>(h)) return stitch::LazyArg(h.cast<double>());
  // numpy scalars and anything else that is a number
  if (py::hasattr(h, "__index__")) return stitch::LazyArg(py::int_(py::reinterpret_borrow<py::object>(h)).cast<int64_t>());
  if (py::hasattr(h, "__float__")) return stitch::LazyArg(py::float_(py::reinterpret_borrow<py::object>(h)).cast<double>());
  throw stitch::UserError("a lazy call's argument must be a stitch Array, a reduction's value or a number, not " +
                          std::string(py::str(py::type::of(h).attr("__name__"))));
}

std::vector<stitch::LazyArg> lazy_args(const py::args& args) {
  std::vector<stitch::LazyArg> out;
  for (const py::handle& h : args) out.push_back(lazy_arg(h));
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// A dtype given as a name ("f32", "float32") or as numpy's dtype or scalar type.
std::optional<DType> dtype_from_python(const py::handle& h) {
  if (py::isinstance<py::str>(h)) {
    const std::string name = h.cast<std::string>();
    if (std::optional<DType> t = stitch::parse_dtype(name)) return t;
    for (DType t : {DType::f16, DType::f32, DType::f64, DType::i8, DType::i32, DType::i64, DType::boolean, DType::bf16}) {
      if (name == numpy_name(t)) return t;
    }
    return std::nullopt;
  }
  if (py::isinstance<py::dtype>(h) || (py::isinstance<py::type>(h) && py::hasattr(h, "dtype"))) {
    return dtype_of(py::dtype::from_args(py::reinterpret_borrow<py::object>(h)));
  }
  return std::nullopt;
}

DType dtype_argument(const py::handle& h) {
  if (std::optional<DType> t = dtype_from_python(h)) return *t;
  throw stitch::UserError("unknown dtype " + std::string(py::repr(h)));
}

// A shape: ints are extents, strings symbols bound at run time.
stitch::Shape shape_argument(const py::handle& h) {
  stitch::Shape shape;
  for (const py::handle& d : h) {
    if (py::isinstance<py::str>(d)) {
      shape.push_back(stitch::Dim::symbol(d.cast<std::string>()));
    } else {
      shape.push_back(stitch::Dim(d.cast<int64_t>()));
    }
  }
  return shape;
}

// An op attribute from Python, as the text format spells them: a bool, an
// int, a float, a dtype (a dtype name or numpy dtype), another string, or a
// list of ints, of floats, or of dims (a shape with symbols).
stitch::AttrValue attr_value(const std::string& name, const py::handle& h) {
  if (py::isinstance<py::bool_>(h)) return stitch::AttrValue(h.cast<bool>());
  if (py::isinstance<py::int_>(h)) return stitch::AttrValue(h.cast<int64_t>());
  if (py::isinstance<py::float_>(h)) return stitch::AttrValue(h.cast<double>());
  if (std::optional<DType> t = dtype_from_python(h)) return stitch::AttrValue(*t);
  if (py::isinstance<py::str>(h)) return stitch::AttrValue(h.cast<std::string>());
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    bool any_symbol = false;
    bool any_float = false;
    for (const py::handle& item : h) {
      any_symbol = any_symbol || py::isinstance<py::str>(item);
      any_float = any_float || py::isinstance<py::float_>(item);
    }
    if (any_symbol) return stitch::AttrValue(shape_argument(h));
    if (any_float) return stitch::AttrValue(h.cast<std::vector<double>>());
    return stitch::AttrValue(h.cast<std::vector<int64_t>>());
  }
  throw stitch::UserError("attribute '" + name + "': " + std::string(py::str(py::type::of(h).attr("__name__"))) +
                          " is not an attribute value (bool, int, float, dtype, str, or a list)");
}

// A value of a graph being built, as Python holds it.
struct PyValue {
  stitch::ValueId id;
  std::string name;
  std::string dtype;
  std::vector<std::string> shape;
  uint64_t builder = 0;  // the serial number of the builder it belongs to
};

// stitch.GraphBuilder: GraphBuilder spent by finish().
struct PyGraphBuilder {
  std::unique_ptr<stitch::GraphBuilder> builder;
  uint64_t serial = next_serial();

  static uint64_t next_serial() {
    static uint64_t count = 0;
    return ++count;
  }

  stitch::GraphBuilder& live() {
    if (!builder) throw stitch::UserError("this GraphBuilder is spent: finish() was called");
    return *builder;
  }
  PyValue value(stitch::ValueId v) {
    const stitch::Graph& g = live().graph();
    PyValue out{v, g.value_name(v), std::string(stitch::dtype_name(g.type(v).dtype)), {}, serial};
    for (const stitch::Dim& d : g.type(v).shape) out.shape.push_back(d.is_static() ? std::to_string(d.extent()) : d.name());
    return out;
  }
  stitch::Operand operand(const py::handle& h) {
    if (py::isinstance<PyValue>(h)) {
      const PyValue& v = h.cast<const PyValue&>();
      if (v.builder != serial) throw stitch::UserError("value '" + v.name + "' belongs to another GraphBuilder");
      return stitch::Operand(v.id);
    }
    if (py::isinstance<py::bool_>(h)) return stitch::Operand(int64_t{h.cast<bool>()});
    if (py::isinstance<py::int_>(h)) return stitch::Operand(h.cast<int64_t>());
    if (py::isinstance<py::float_>(h)) return stitch::Operand(h.cast<double>());
    throw stitch::UserError("an op's operand must be a value of this builder or a number, not " +
                            std::string(py::str(py::type::of(h).attr("__name__"))));
  }
};

// Graphs, values and the graph builder, kernels, parsing, and the report.
void bind_graphs(py::module_& m) {
  py::class_<stitch::Graph>(m, "Graph", "A tensor program (graph IR): parse it from text or a .stitch file")
      .def_property_readonly("name", &stitch::Graph::name)
      .def_property_readonly(
          "params",
          [](const stitch::Graph& g) {
            std::vector<std::string> out;
            for (stitch::ValueId v : g.params()) out.push_back(g.value(v).name + ": " + g.type(v).str());
            return out;
          },
          "Each parameter as 'name: dtype[shape]'")
      .def("__str__", &stitch::print_graph)
      .def("__repr__", [](const stitch::Graph& g) { return "<stitch.Graph " + g.name() + ">"; });

  py::class_<PyValue>(m, "Value", "A value of a graph being built (GraphBuilder)")
      .def_readonly("name", &PyValue::name)
      .def_readonly("dtype", &PyValue::dtype)
      .def_property_readonly("shape",
                             [](const PyValue& v) {
                               py::list out;
                               for (const std::string& d : v.shape) {
                                 const bool extent = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
                                 out.append(extent ? py::object(py::int_(std::stoll(d))) : py::object(py::str(d)));
                               }
                               return py::tuple(out);
                             })
      .def("__repr__", [](const PyValue& v) {
        std::string dims;
        for (size_t i = 0; i < v.shape.size(); ++i) dims += (i ? ", " : "") + v.shape[i];
        return "<stitch.Value " + v.name + ": " + v.dtype + "[" + dims + "]>";
      });

  py::class_<PyGraphBuilder>(m, "GraphBuilder",
                             "Builds a graph op by op, each checked as it is added (the text format's ops and "
                             "attributes, DESIGN.md)")
      .def(py::init([](const std::string& name) {
             return PyGraphBuilder{std::make_unique<stitch::GraphBuilder>(name)};
           }),
           py::arg("name") = "main")
      .def(
          "param",
          [](PyGraphBuilder& b, const std::string& name, const py::object& dtype, const py::object& shape) {
            return b.value(b.live().param(name, dtype_argument(dtype), shape_argument(shape)));
          },
          py::arg("name"), py::arg("dtype"), py::arg("shape"),
          "A parameter: dtype as 'f32' or numpy's, shape as extents and symbol names")
      .def(
          "op",
          [](PyGraphBuilder& b, const std::string& op_name, const py::args& operands, const py::kwargs& kwargs) {
            std::vector<stitch::Operand> args;
            for (const py::handle& h : operands) args.push_back(b.operand(h));
            stitch::Attrs attrs;
            std::string result_name;
            for (const auto& [key, value] : kwargs) {
              const std::string k = key.cast<std::string>();
              if (k == "name") {
                result_name = value.cast<std::string>();
              } else {
                attrs.set(k, attr_value(k, value));
              }
            }
            if (!stitch::GraphBuilder::is_known_op(op_name)) {
              throw stitch::UserError("unknown op '" + op_name + "'");
            }
            return b.value(b.live().op(op_name, std::move(args), std::move(attrs), result_name));
          },
          py::arg("op"),
          "Adds an op by its text name on values and numbers; keywords are its attributes (name= names the result)")
      .def(
          "constant",
          [](PyGraphBuilder& b, double value, const py::object& dtype, const py::object& shape, const std::string& name) {
            return b.value(b.live().constant(value, dtype_argument(dtype), shape_argument(shape), name));
          },
          py::arg("value"), py::arg("dtype") = "f32", py::arg("shape") = py::tuple(), py::arg("name") = "",
          "A constant: every element `value` (the text format's constant op)")
      .def(
          "output", [](PyGraphBuilder& b, const PyValue& v, const std::string& name) { b.live().output(v.id, name); },
          py::arg("value"), py::arg("name") = "", "Marks a value as an output of the graph")
      .def(
          "finish",
          [](PyGraphBuilder& b) {
            stitch::Graph g = b.live().finish();
            b.builder.reset();
            return g;
          },
          "Checks the graph and returns it; the builder is spent");

  py::class_<stitch::UserKernel, std::shared_ptr<stitch::UserKernel>>(m, "Kernel", "A user kernel (the kernel language)")
      .def_property_readonly("name", [](const stitch::UserKernel& k) { return k.name; })
      .def_property_readonly("is_reduction", &stitch::UserKernel::is_reduction)
      .def("__str__", &stitch::print_kernel)
      .def("__repr__", [](const stitch::UserKernel& k) { return "<stitch.Kernel " + k.name + ">"; });

  py::class_<stitch::Module>(m, "Module", "What a .stitch text holds: graphs and kernels, by name")
      .def_property_readonly("graphs",
                             [](const stitch::Module& mod) {
                               std::map<std::string, stitch::Graph> out;
                               for (const stitch::Graph& g : mod.graphs) out.emplace(g.name(), g);
                               return out;
                             })
      .def_property_readonly("kernels",
                             [](const stitch::Module& mod) {
                               std::map<std::string, std::shared_ptr<stitch::UserKernel>> out;
                               for (const stitch::UserKernel& k : mod.kernels) {
                                 out.emplace(k.name, std::make_shared<stitch::UserKernel>(k));
                               }
                               return out;
                             })
      .def("__str__", &stitch::print_module);

  m.def("parse", &stitch::parse_module, py::arg("text"), py::arg("file") = "<input>",
        "Parses .stitch text (graphs and kernels)");
  m.def("load", &stitch::parse_file, py::arg("path"), "Parses a .stitch file");
  m.def("cuda_available", &stitch::cuda_available,
        "Whether the cuda back end can compile here: a build with CUDA support, a driver and a device");
  m.def("report_sections", &stitch::fusion_report_sections, py::arg("graph"), py::arg("planner") = "xla",
        py::arg("backend") = "cpu", py::arg("anchor") = "",
        "The HTML sections of a graph's fusion report (docs/report.md); nothing is compiled");
  m.def("report_page", &stitch::fusion_report_page, py::arg("title"), py::arg("body"),
        "A self-contained HTML page around report sections");
  m.def("version", &stitch::version);
  m.attr("__version__") = stitch::version();
}

// The reference interpreter and ONNX import.
void bind_interpreter_and_onnx(py::module_& m) {
  m.def(
      "interpret",
      [](const stitch::Graph& g, const py::args& args) -> py::object {
        std::vector<Tensor> inputs;
        for (const py::handle& h : args) inputs.push_back(to_tensor(py::array::ensure(h)));
        std::vector<Tensor> outputs = stitch::interpret(g, inputs);
        if (outputs.size() == 1) return to_numpy(outputs[0]);
        py::tuple out(outputs.size());
        for (size_t i = 0; i < outputs.size(); ++i) out[i] = to_numpy(outputs[i]);
        return out;
      },
      py::arg("graph"), "Runs a graph in the reference interpreter (every op rounded to its dtype)");

  py::class_<stitch::OnnxModel>(m, "OnnxModel", "An ONNX model imported as a graph, with the tensors it binds itself")
      .def_readonly("graph", &stitch::OnnxModel::graph)
      .def_property_readonly("bound",
                             [](const stitch::OnnxModel& model) {
                               py::dict d;
                               for (const auto& [name, t] : model.bound) d[py::str(name)] = to_numpy(t);
                               return d;
                             })
      .def_readonly("input_names", &stitch::OnnxModel::input_names, "ONNX input name -> parameter name, where they differ")
      .def_property_readonly("inputs", &stitch::OnnxModel::inputs, "The parameters a caller supplies, in order")
      .def(
          "arguments",
          [](const stitch::OnnxModel& model, const py::args& args) {
            std::vector<Tensor> inputs;
            for (const py::handle& h : args) inputs.push_back(to_tensor(py::array::ensure(h)));
            py::list out;
            for (const Tensor& t : model.arguments(inputs)) out.append(to_numpy(t));
            return out;
          },
          "Every parameter's array in order: the inputs given, with the bound tensors in their places");

  m.def(
      "load_onnx",
      [](const std::string& path, const std::map<std::string, py::array>& known_inputs) {
        std::map<std::string, Tensor> known;
        for (const auto& [name, a] : known_inputs) known.emplace(name, to_tensor(a));
        return stitch::load_onnx(path, known);
      },
      py::arg("path"), py::arg("known_inputs") = std::map<std::string, py::array>{},
      "Imports an ONNX model (opsets 13 to 17)");
}

// Executables: compile, run on numpy arrays, and by address (by_address.h).
void bind_executables(py::module_& m) {
  py::class_<PyExecutable> executable(m, "Executable", "A graph compiled for a back end: call it on numpy arrays");
  executable
      .def(
          "__call__",
          [](PyExecutable& self, const py::args& args, const py::object& out) -> py::object {
            CallerArrays inputs(args);
            const size_t count = self.exe->graph().outputs().size();
            std::vector<py::object> results(count);
            std::vector<py::array> given;
            if (!out.is_none()) {
              for (const py::handle& h : out) {
                // Written in place, so never a copy: an array, or memory through DLPack.
                py::object o = py::reinterpret_borrow<py::object>(h);
                if (!py::isinstance<py::array>(o) && py::hasattr(o, "__dlpack__")) o = array_from_dlpack(o);
                if (!py::isinstance<py::array>(o)) {
                  throw stitch::UserError("out[" + std::to_string(given.size()) + "] must be an array or a DLPack "
                                          "tensor, not " + std::string(py::str(py::type::of(h).attr("__name__"))));
                }
                given.push_back(o.cast<py::array>());
              }
              if (given.size() != count) {
                throw stitch::UserError("out= holds " + std::to_string(given.size()) + " array" +
                                        (given.size() == 1 ? "" : "s") + ", the graph has " + std::to_string(count) +
                                        " output" + (count == 1 ? "" : "s"));
              }
            }
            // Each output's memory: the array given for it (checked), or a
            // fresh numpy array; the kernels write it in place.
            auto memory = [&](size_t i, DType dtype, const std::vector<int64_t>& shape) -> std::byte* {
              py::gil_scoped_acquire gil;
              if (!given.empty()) {
                py::array& a = given[i];
                const std::vector<int64_t> has(a.shape(), a.shape() + a.ndim());
                const bool fits = dtype_of(a.dtype()) == dtype && has == shape && (a.flags() & py::array::c_style) &&
                                  a.writeable();
                if (!fits) {
                  throw stitch::UserError("out[" + std::to_string(i) + "] must be a writable C-contiguous " +
                                          std::string(numpy_name(dtype)) + " array of shape " +
                                          shape_text(shape));
                }
                const auto* begin = static_cast<const std::byte*>(a.data());
                const auto* end = begin + a.nbytes();
                for (const stitch::ArrayView& in : inputs.views) {
                  if (begin < in.data + in.nbytes() && in.data < end) {
                    throw stitch::UserError("out[" + std::to_string(i) + "] overlaps an input; outputs need memory of "
                                            "their own");
                  }
                }
                results[i] = a;
              } else if (!results[i]) {
                // Stitch's storage (huge pages, freed mappings kept for the next
                // run), which numpy's allocator would fault in afresh each call.
                auto* storage = new Tensor(Tensor::uninitialized(dtype, shape));
                py::capsule owner(storage, [](void* p) { delete static_cast<Tensor*>(p); });
                results[i] = numpy_on(storage->raw(), dtype, shape, owner);
              }
              return static_cast<std::byte*>(results[i].cast<py::array>().mutable_data());
            };
            {
              py::gil_scoped_release released;
              self.exe->run_into(inputs.views, memory);
            }
            if (count == 1) return results[0];
            py::tuple tuple(count);
            for (size_t i = 0; i < count; ++i) tuple[i] = results[i];
            return tuple;
          },
          py::arg("out") = py::none(),
          "Runs the graph: one array per parameter in (numpy, or anything with __dlpack__ in CPU memory; read in "
          "place when C-contiguous), one numpy array per output out (a tuple when several), or written into the "
          "arrays of out=")
      .def_property_readonly("backend", [](const PyExecutable& self) { return stitch::backend_name(self.exe->backend()); })
      .def_property_readonly("planner", [](const PyExecutable& self) { return self.exe->planner(); })
      .def_property_readonly("kernel_count", [](const PyExecutable& self) { return self.exe->kernel_count(); },
                             "Kernels launched plus library calls per run")
      .def_property_readonly("plan", [](const PyExecutable& self) { return self.exe->plan_text(); })
      .def_property_readonly("fallback", [](const PyExecutable& self) { return self.exe->fallback(); });
  stitch_python::bind_by_address(m, executable);

  m.def(
      "compile",
      [](const stitch::Graph& g, const std::string& backend, const std::string& planner, bool tune,
         const std::string& cache_dir, const std::vector<std::string>& constants, bool f32_intermediates) {
        stitch::CompileOptions o;
        o.backend = parse_backend(backend);
        o.planner = planner;
        o.tune = tune;
        o.cache_dir = cache_dir;
        o.constant_params = constants;
        o.f32_intermediates = f32_intermediates;
        return PyExecutable{std::make_shared<stitch::Executable>(stitch::Executable::compile(g, o)), std::nullopt};
      },
      py::arg("graph"), py::arg("backend") = "cpu", py::arg("planner") = "stitch", py::arg("tune") = false,
      py::arg("cache_dir") = "", py::arg("constants") = std::vector<std::string>{}, py::arg("f32_intermediates") = false,
      "Compiles a graph for a back end (cpu, cuda) and planner (none, xla, stitch, ilp, greedy); `constants` names "
      "parameters passed as the same, unchanged array on every call (an ONNX model's bound tensors), whose "
      "convolution weights the CPU then packs once; `f32_intermediates` computes f16 and bf16 values in f32 between "
      "ops (docs/semantics.md)");
  m.def(
      "load_package",
      [](const std::string& path) {
        return PyExecutable{std::make_shared<stitch::Executable>(stitch::Executable::load(path)), std::nullopt};
      },
      py::arg("path"),
      "Loads a package that `stitch package` wrote: its graph, plan and compiled kernels, run with no compiler "
      "(docs/packages.md)");
}

// Lazy arrays, their scalars and the lazy runtime.
void bind_lazy(py::module_& m) {
  py::class_<stitch::Array>(m, "Array", "A lazy array: its value is computed when read")
      .def_property_readonly("shape", [](const stitch::Array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const stitch::Array& a) { return std::string(stitch::dtype_name(a.dtype())); })
      .def("numpy", [](const stitch::Array& a) { return to_numpy(a.to_host()); },
           "Runs what the value depends on, then copies it out")
      .def(
          "__array__",
          [](py::object self, const py::object& dtype) -> py::object {
            const stitch::ArrayView v = self.cast<stitch::Array&>().host_memory();
            py::array a = numpy_on(v.data, v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank), self);
            if (dtype.is_none()) return a;
            return a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(),
          "The array's own memory, no copy (np.asarray(a)), after running the pending calls that touch it; "
          "writes through it are seen by calls that run after them (docs/python.md, Lazy arrays)")
      .def(
          "host_memory",
          [](py::object self) {
            const stitch::ArrayView v = self.cast<stitch::Array&>().host_memory();
            return numpy_on(v.data, v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank), self);
          },
          "The same as np.asarray(a)")
      .def("assign", [](stitch::Array& a, const py::array& data) { a.assign(to_tensor(data)); })
      .def("reshape", [](const stitch::Array& a, const std::vector<int64_t>& shape) { return a.reshape(shape); })
      .def("slice", &stitch::Array::slice, py::arg("begin"), py::arg("end"), "Rows [begin, end) of axis 0, a view")
      .def("__repr__", [](const stitch::Array& a) {
        return "<stitch.Array " + std::string(stitch::dtype_name(a.dtype())) + shape_text(a.shape()) + ">";
      });

  py::class_<stitch::Scalar>(m, "Scalar", "The future value of a reduction")
      .def("value", [](const stitch::Scalar& s) -> py::object {
        Tensor v = s.value();
        if (stitch::is_float(v.dtype())) return py::float_(v.get_f64(0));
        if (v.dtype() == DType::boolean) return py::bool_(v.get_i64(0) != 0);
        return py::int_(v.get_i64(0));
      })
      .def("__float__", &stitch::Scalar::to_double);

  py::class_<stitch::LazyRuntime>(m, "LazyRuntime", "Records kernel calls on lazy arrays and runs them fused when read")
      .def(py::init([](const std::string& mode, const std::string& backend, const std::string& cache_dir) {
             stitch::LazyOptions o;
             o.mode = parse_mode(mode);
             o.backend = parse_backend(backend);
             o.cache_dir = cache_dir;
             return std::make_unique<stitch::LazyRuntime>(o);
           }),
           py::arg("mode") = "fused", py::arg("backend") = "cpu", py::arg("cache_dir") = "")
      .def("array", [](stitch::LazyRuntime& rt, const py::array& data) { return rt.array(to_tensor(data)); },
           "A lazy array holding a copy of a numpy array")
      .def(
          "zeros",
          [](stitch::LazyRuntime& rt, const std::vector<int64_t>& shape, const std::string& dtype) {
            return rt.zeros(parse_dtype_name(dtype), shape);
          },
          py::arg("shape"), py::arg("dtype") = "f32")
      .def(
          "call",
          [](stitch::LazyRuntime& rt, const std::shared_ptr<stitch::UserKernel>& k, const py::args& args) {
            rt.call(k, lazy_args(args));
          },
          "Records a parallel_for call")
      .def(
          "reduce",
          [](stitch::LazyRuntime& rt, const std::shared_ptr<stitch::UserKernel>& k, const py::args& args) {
            return rt.reduce(k, lazy_args(args));
          },
          "Records a parallel_reduce call; returns its future value")
      .def("apply", &stitch::LazyRuntime::apply, py::arg("graph"), py::arg("inputs"),
           "A graph on lazy arrays, recorded like a call; returns its outputs")
      .def("flush", &stitch::LazyRuntime::flush, "Runs every recorded call")
      .def("stats", [](const stitch::LazyRuntime& rt) {
        const stitch::LazyStats& s = rt.stats();
        py::dict d;
        d["calls"] = s.calls;
        d["partitions"] = s.partitions;
        d["kernels"] = s.kernels;
        d["plan_cache_hits"] = s.plan_cache_hits;
        d["arrays_in_registers"] = s.arrays_in_registers;
        d["checked_kernels"] = s.checked_kernels;
        d["record_seconds"] = s.record_seconds;
        d["analysis_seconds"] = s.analysis_seconds;
        d["compile_seconds"] = s.compile_seconds;
        d["run_seconds"] = s.run_seconds;
        return d;
      });
}

}  // namespace

PYBIND11_MODULE(_stitch, m) {
  m.doc() = "Stitch: a kernel-fusion compiler and runtime for memory-bound tensor programs";
  // The exception type lives as long as the interpreter, made once (pybind11's
  // pattern for a type a translator raises).
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> error;
  error.call_once_and_store_result([&]() { return py::exception<stitch::UserError>(m, "Error", PyExc_ValueError); });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const stitch::UserError& e) {
      py::set_error(error.get_stored(), e.formatted().c_str());
    } catch (const stitch::InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("stitch: internal error: ") + e.what()).c_str());
    }
  });

  bind_graphs(m);
  bind_interpreter_and_onnx(m);
  bind_executables(m);
  bind_lazy(m);
}

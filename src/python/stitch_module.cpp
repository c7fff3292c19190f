// The `stitch._stitch` Python extension (docs/python.md): the public C++
// library (include/stitch/stitch.h) seen from Python through pybind11. Only
// public headers are used, so the extension links libstitch.so like any other
// program. Arrays cross as numpy arrays, copied in and out; a UserError becomes
// stitch.Error with the CLI's message ("file:line:col: error: ..."), and an
// internal failure a RuntimeError, never a crash of the interpreter.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace py = pybind11;

namespace {

using stitch::DType;
using stitch::Tensor;

// numpy's name for each dtype; bf16 has none.
const char* numpy_name(DType t) {
  switch (t) {
    case DType::f16: return "float16";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
    case DType::bf16: return nullptr;
  }
  return nullptr;
}

DType dtype_of(const py::dtype& d) {
  const char kind = d.kind();
  const size_t size = static_cast<size_t>(d.itemsize());
  if (kind == 'f' && size == 2) return DType::f16;
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 8) return DType::f64;
  if (kind == 'i' && size == 1) return DType::i8;
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'i' && size == 8) return DType::i64;
  if (kind == 'b') return DType::boolean;
  throw stitch::UserError("a numpy array of dtype " + d.attr("name").cast<std::string>() +
                          " has no Stitch dtype (f16, f32, f64, i8, i32, i64, bool)");
}

DType parse_dtype_name(const std::string& name) {
  if (name == "float32") return DType::f32;
  if (name == "float64") return DType::f64;
  if (name == "float16") return DType::f16;
  if (name == "int8") return DType::i8;
  if (name == "int32") return DType::i32;
  if (name == "int64") return DType::i64;
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
  const char* name = numpy_name(t.dtype());
  if (name == nullptr) {
    throw stitch::UserError(std::string("a ") + std::string(stitch::dtype_name(t.dtype())) +
                            " tensor has no numpy dtype");
  }
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(py::dtype(name), shape);
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

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

// A compiled graph, shared so Python can hold it freely (Executable is move-only).
struct PyExecutable {
  std::shared_ptr<stitch::Executable> exe;
};

}  // namespace

PYBIND11_MODULE(_stitch, m) {
  m.doc() = "Stitch: a kernel-fusion compiler and runtime for memory-bound tensor programs";
  static py::exception<stitch::UserError> error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const stitch::UserError& e) {
      error(e.formatted().c_str());
    } catch (const stitch::InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("stitch: internal error: ") + e.what()).c_str());
    }
  });

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

  py::class_<PyExecutable>(m, "Executable", "A graph compiled for a back end: call it on numpy arrays")
      .def(
          "__call__",
          [](PyExecutable& self, const py::args& args) -> py::object {
            std::vector<Tensor> inputs;
            for (const py::handle& h : args) inputs.push_back(to_tensor(py::array::ensure(h)));
            std::vector<Tensor> outputs = self.exe->run(inputs);
            if (outputs.size() == 1) return to_numpy(outputs[0]);
            py::tuple out(outputs.size());
            for (size_t i = 0; i < outputs.size(); ++i) out[i] = to_numpy(outputs[i]);
            return out;
          },
          "Runs the graph: one numpy array per parameter in, one per output out (a tuple when several)")
      .def_property_readonly("backend", [](const PyExecutable& self) { return stitch::backend_name(self.exe->backend()); })
      .def_property_readonly("planner", [](const PyExecutable& self) { return self.exe->planner(); })
      .def_property_readonly("kernel_count", [](const PyExecutable& self) { return self.exe->kernel_count(); },
                             "Kernels launched plus library calls per run")
      .def_property_readonly("plan", [](const PyExecutable& self) { return self.exe->plan_text(); })
      .def_property_readonly("fallback", [](const PyExecutable& self) { return self.exe->fallback(); });

  m.def(
      "compile",
      [](const stitch::Graph& g, const std::string& backend, const std::string& planner, bool tune,
         const std::string& cache_dir) {
        stitch::CompileOptions o;
        o.backend = parse_backend(backend);
        o.planner = planner;
        o.tune = tune;
        o.cache_dir = cache_dir;
        o.dump = "none";
        return PyExecutable{std::make_shared<stitch::Executable>(stitch::Executable::compile(g, o))};
      },
      py::arg("graph"), py::arg("backend") = "cpu", py::arg("planner") = "stitch", py::arg("tune") = false,
      py::arg("cache_dir") = "", "Compiles a graph for a back end (cpu, cuda) and planner (none, xla, stitch, ilp, greedy)");

  py::class_<stitch::Array>(m, "Array", "A lazy array: its value is computed when read")
      .def_property_readonly("shape", [](const stitch::Array& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const stitch::Array& a) { return std::string(stitch::dtype_name(a.dtype())); })
      .def("numpy", [](const stitch::Array& a) { return to_numpy(a.to_host()); },
           "Runs what the value depends on, then copies it out")
      .def("__array__", [](const stitch::Array& a, const py::object&) { return to_numpy(a.to_host()); },
           py::arg("dtype") = py::none())
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

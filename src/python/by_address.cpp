// Executable.run_at and PlainCall (by_address.h).
#include "by_address.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>

namespace py = pybind11;

namespace stitch_python {
namespace {

using stitch::DType;

// A value's dtype and shape: static, or with its symbols from `symbols`
// (every symbol of the graph bound there, else a UserError naming the one missing).
StaticType bound_type(const stitch::Graph& g, stitch::ValueId v, const std::string& what,
                                    const stitch::SymbolBindings* symbols) {
  StaticType t{g.type(v).dtype, {}};
  for (const stitch::Dim& d : g.type(v).shape) {
    if (d.is_static()) {
      t.shape.push_back(d.extent());
      continue;
    }
    if (!symbols || !symbols->contains(d.name())) {
      throw stitch::UserError("run_at: " + what + " has the symbol " + d.name() + ", which `symbols` does not bind");
    }
    const int64_t extent = symbols->at(d.name());
    stitch::check_extent("run_at: symbol " + d.name(), extent);
    t.shape.push_back(extent);
  }
  return t;
}

GraphTypes bound_types(
    const stitch::Graph& g, const stitch::SymbolBindings* symbols) {
  std::vector<StaticType> params, results;
  for (size_t i = 0; i < g.params().size(); ++i) {
    params.push_back(bound_type(g, g.params()[i], "parameter " + std::to_string(i), symbols));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    results.push_back(bound_type(g, g.outputs()[i].value, "output " + std::to_string(i), symbols));
  }
  if (symbols) {
    for (size_t i = 0; i < params.size(); ++i) {
      stitch::check_tensor_size("run_at: parameter " + std::to_string(i), params[i].dtype, params[i].shape);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      stitch::check_tensor_size("run_at: output " + std::to_string(i), results[i].dtype, results[i].shape);
    }
  }
  return {std::move(params), std::move(results)};
}

// Executable.run_at: the graph on memory given by address (docs/python.md,
// Running on memory by address), for a caller that owns it and knows its
// layout, such as the torch backend: no conversion, no check but the count
// and that no output overlaps an input. A graph with symbolic dims takes their
// extents in `symbols` (the types of a static graph are made once and kept).
void run_at(PyExecutable& self, const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
            const std::optional<stitch::SymbolBindings>& symbols, bool device, uintptr_t stream) {
  const stitch::Graph& g = self.exe->graph();
  std::optional<GraphTypes> bound;
  if (symbols && !symbols->empty()) {
    bound.emplace(bound_types(g, &*symbols));
  } else if (!self.static_types) {
    self.static_types.emplace(bound_types(g, nullptr));
  }
  const auto& [params, results] = bound ? *bound : *self.static_types;
  if (inputs.size() != params.size() || outputs.size() != results.size()) {
    throw stitch::UserError("run_at: " + std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
                            " outputs for a graph of " + std::to_string(params.size()) + " parameters and " +
                            std::to_string(results.size()) + " outputs");
  }
  std::vector<stitch::ArrayView> views;
  for (size_t i = 0; i < params.size(); ++i) {
    views.push_back({reinterpret_cast<std::byte*>(inputs[i]), params[i].dtype, params[i].shape.data(),
                     static_cast<int>(params[i].shape.size())});
  }
  auto at = [&](size_t i, DType, const std::vector<int64_t>&) { return reinterpret_cast<std::byte*>(outputs.at(i)); };
  if (device) {  // the CUDA executable checks the outputs against the inputs itself
    py::gil_scoped_release released;
    self.exe->run_on_device(views, at, stream);
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto* begin = reinterpret_cast<const std::byte*>(outputs[i]);
    const auto* end = begin + results[i].nbytes();
    for (const stitch::ArrayView& in : views) {
      if (begin < in.data + in.nbytes() && in.data < end) {
        throw stitch::UserError("run_at: output " + std::to_string(i) + " overlaps an input");
      }
    }
  }
  py::gil_scoped_release released;
  self.exe->run_into(views, at);
}


// A kept set of outputs (PlainCall): the tensors, their storages' addresses
// (torch's use-count function takes them), the use counts when only the set
// holds them, and the tensors' data addresses.
struct KeptOutputs {
  std::vector<py::object> tensors;
  std::vector<py::object> storages;
  std::vector<py::object> counts;
  std::vector<std::byte*> data;
};

// The torch backend's common partition call (static shapes, on the CPU, no
// argument or output a permute: torch_backend.py, _run_plain) as one call, not
// a dozen Python steps around run_at (docs/torch.md, Not yet): the arguments'
// addresses, a kept output set that no tensor outside holds any more, the run,
// and new tensors over the set's memory (so the set is known free once they are
// gone; torch's caching allocator's reuse: memory already faulted in).
class PlainCall {
 public:
  PlainCall(const PyExecutable& exe, std::vector<size_t> params, py::object use_count, size_t keep)
      : exe_(exe.exe), params_(std::move(params)), use_count_(std::move(use_count)), keep_(std::max<size_t>(keep, 1)) {
    types_ = bound_types(exe_->graph(), nullptr);
    if (params_.size() != types_.first.size()) {
      throw stitch::UserError("PlainCall: " + std::to_string(params_.size()) + " argument positions for a graph of " +
                              std::to_string(types_.first.size()) + " parameters");
    }
  }

  // The outputs, or None where the caller goes the general way: an argument is
  // not contiguous, or no kept set is free (the caller adopts a new one).
  py::object call(const py::tuple& args) {
    static const py::str is_contiguous("is_contiguous"), data_ptr("data_ptr"), detach("detach");
    std::vector<stitch::ArrayView> views;
    views.reserve(params_.size());
    for (size_t k = 0; k < params_.size(); ++k) {
      if (params_[k] >= args.size()) {
        throw stitch::UserError("PlainCall: argument " + std::to_string(params_[k]) + " of " + std::to_string(args.size()));
      }
      py::handle t = args[params_[k]];
      if (!t.attr(is_contiguous)().cast<bool>()) return py::none();
      const StaticType& type = types_.first[k];
      views.push_back({reinterpret_cast<std::byte*>(t.attr(data_ptr)().cast<uintptr_t>()), type.dtype, type.shape.data(),
                       static_cast<int>(type.shape.size())});
    }
    const size_t free = free_set();
    if (free == kept_.size()) return py::none();
    // A kept set is free only when nothing but this call holds its storages,
    // so no argument can be one of its outputs: no overlap to check.
    std::rotate(kept_.begin() + static_cast<std::ptrdiff_t>(free), kept_.begin() + static_cast<std::ptrdiff_t>(free) + 1,
                kept_.end());
    const KeptOutputs& set = kept_.back();
    {
      py::gil_scoped_release released;
      exe_->run_into(views, [&](size_t i, DType, const std::vector<int64_t>&) { return set.data.at(i); });
    }
    py::tuple out(set.tensors.size());
    for (size_t i = 0; i < set.tensors.size(); ++i) out[i] = set.tensors[i].attr(detach)();
    return out;
  }

  // A new output set (tensors of the outputs' dtypes and shapes, contiguous,
  // that nothing else holds), the newest; the oldest goes past `keep` sets.
  void adopt(const py::list& tensors) {
    if (tensors.size() != types_.second.size()) {
      throw stitch::UserError("PlainCall.adopt: " + std::to_string(tensors.size()) + " tensors for " +
                              std::to_string(types_.second.size()) + " outputs");
    }
    KeptOutputs set;
    for (const py::handle t : tensors) {
      set.tensors.push_back(py::reinterpret_borrow<py::object>(t));
      set.storages.push_back(t.attr("untyped_storage")().attr("_cdata"));
      set.data.push_back(reinterpret_cast<std::byte*>(t.attr("data_ptr")().cast<uintptr_t>()));
    }
    // Counted once the storage objects made above are gone.
    for (const py::object& s : set.storages) set.counts.push_back(use_count_(s));
    kept_.push_back(std::move(set));
    if (kept_.size() > keep_) kept_.erase(kept_.begin());
  }

  size_t kept() const { return kept_.size(); }

 private:
  // The newest kept set whose storages nothing else holds, or kept_.size().
  size_t free_set() const {
    for (size_t j = kept_.size(); j-- > 0;) {
      const KeptOutputs& set = kept_[j];
      bool free = true;
      for (size_t i = 0; i < set.storages.size() && free; ++i) free = use_count_(set.storages[i]).equal(set.counts[i]);
      if (free) return j;
    }
    return kept_.size();
  }

  std::shared_ptr<stitch::Executable> exe_;
  std::vector<size_t> params_;  // which call arguments are the graph's parameters
  py::object use_count_;        // torch._C._storage_Use_Count
  size_t keep_;
  GraphTypes types_;
  std::vector<KeptOutputs> kept_;  // the oldest first
};

}  // namespace

void bind_by_address(py::module_& m, py::class_<PyExecutable>& executable) {
  executable.def("run_at", &run_at, py::arg("inputs"), py::arg("outputs"), py::arg("symbols") = py::none(),
                 py::kw_only(), py::arg("device") = false, py::arg("stream") = 0,
                 "Runs the graph on memory given by address: each input a dense row-major array of its parameter's dtype "
                 "and shape at that address, each output written at its address; a graph with symbolic dims takes their "
                 "extents in `symbols` (a dict). Nothing is checked but the counts, the symbols and that outputs do not "
                 "overlap inputs: for callers that own the memory. device=True (a cuda executable): the addresses are "
                 "device memory of device 0, and the work runs after what `stream` (a CUstream as an int, 0 the legacy "
                 "default stream) has queued and before what is queued on it next, without waiting for the device");
  py::class_<PlainCall>(m, "PlainCall",
                        "A CPU executable of static shapes called on torch tensors by address, into kept outputs "
                        "(the torch backend's common partition call)")
      .def(py::init<const PyExecutable&, std::vector<size_t>, py::object, size_t>(), py::arg("executable"),
           py::arg("params"), py::arg("use_count"), py::arg("keep") = 2,
           "params: which call arguments are the graph's parameters; use_count: torch._C._storage_Use_Count; keep: "
           "how many output sets are kept")
      .def("__call__", &PlainCall::call, py::arg("args"),
           "The outputs as new tensors over a free kept set, or None when an argument is not contiguous or no kept "
           "set is free")
      .def("adopt", &PlainCall::adopt, py::arg("tensors"), "Keeps a new output set (contiguous tensors nothing else holds)")
      .def_property_readonly("kept", &PlainCall::kept, "How many output sets are kept");
}

}  // namespace stitch_python

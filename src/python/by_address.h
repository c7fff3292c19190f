// Calls on memory given by address (docs/python.md, Running on memory by address):
// Executable.run_at, for a caller that owns the memory and knows its layout, and
// PlainCall, the torch backend's common partition call in one step.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "stitch/stitch.h"

namespace stitch_python {

// A value's dtype and concrete shape.
struct StaticType {
  stitch::DType dtype;
  std::vector<int64_t> shape;
  size_t nbytes() const {
    size_t n = stitch::dtype_size(dtype);
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
};

// Every parameter's and every output's type.
using GraphTypes = std::pair<std::vector<StaticType>, std::vector<StaticType>>;

// A compiled graph, shared so Python can hold it freely (Executable is move-only).
struct PyExecutable {
  std::shared_ptr<stitch::Executable> exe;
  // run_at's view of a graph without symbols, made on its first call.
  std::optional<GraphTypes> static_types;
};

// Binds Executable.run_at on `executable` and the class PlainCall in `m`.
void bind_by_address(pybind11::module_& m, pybind11::class_<PyExecutable>& executable);

}  // namespace stitch_python

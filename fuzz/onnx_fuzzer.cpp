// libFuzzer target for the ONNX importer (docs/fuzzing.md, The ONNX importer):
// any byte string, read as a serialized ModelProto, must import into a graph
// or fail with a UserError. Anything else is a finding: a crash, a sanitizer
// report, an InternalError or other exception (protobuf's included) escaping,
// an imported graph the verifier rejects, or one whose printed text does not
// parse back to an equal graph.
//
// Inputs whose sizes would make a legal but huge model are skipped (see
// within_work_budget): folding a ConstantOfShape of 2^28 elements is not a
// bug, only slow under the sanitizers, and would end the run as a timeout.
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "ir/verifier.h"
#include "onnx/importer.h"
#include "stitch/text.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "onnx_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// import_onnx reads a path; an in-memory file under /proc/self/fd keeps each
// input off the disk without a second entry point into the importer.
const std::string& model_path() {
  static const std::string path = [] {
    int fd = memfd_create("onnx_fuzzer_model", 0);
    if (fd < 0) finding("memfd_create failed", "");
    return "/proc/self/fd/" + std::to_string(fd);
  }();
  return path;
}

void write_model(const uint8_t* data, size_t size) {
  const std::string& path = model_path();
  int fd = std::stoi(path.substr(path.rfind('/') + 1));
  if (ftruncate(fd, 0) != 0) finding("ftruncate failed", "");
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) finding("pwrite failed", "");
    done += static_cast<size_t>(n);
  }
}

// Every size a model can ask for comes from an integer in it (a dim, an
// initializer or Constant holding a shape, an attribute) or from a float in
// a short tensor (Range's bounds and step, or cast to integers). The product of their magnitudes bounds the
// work of any one tensor. Values of 2^48 and more are left out, since the
// importer must refuse an extent that large (docs/limits.md), except in a
// model with Range, whose count is a quotient: (2^52 - 0) / 2^16 is 2^36.
// Shapes are short; longer float tensors are weights.
constexpr int kShapeLike = 8;

class WorkBudget {
 public:
  void add_int(int64_t v) {
    const double m = std::fabs(static_cast<double>(v));
    if (m < 0x1p48 || has_range) add(m);
  }
  // A float becomes a size through a Cast to an integer, or through Range:
  // (limit - start) / delta elements, where a small delta counts as large.
  void add_float(double v) {
    if (!std::isfinite(v)) return;
    add(std::fabs(v));
    if (has_range && v != 0) add(1 / std::fabs(v));
  }
  void add_tensor(const ::onnx::TensorProto& t) {
    for (int64_t d : t.dims()) add_int(d);
    for (int64_t v : t.int64_data()) add_int(v);
    for (int32_t v : t.int32_data()) add_int(v);
    const std::string& raw = t.raw_data();
    if (t.data_type() == ::onnx::TensorProto::INT64) {
      for (size_t i = 0; i + 8 <= raw.size(); i += 8) add_int(load<int64_t>(raw.data() + i));
    } else if (t.data_type() == ::onnx::TensorProto::INT32) {
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) add_int(load<int32_t>(raw.data() + i));
    }
    if (t.float_data_size() <= kShapeLike) {
      for (float v : t.float_data()) add_float(v);
    }
    if (t.double_data_size() <= kShapeLike) {
      for (double v : t.double_data()) add_float(v);
    }
    if (t.data_type() == ::onnx::TensorProto::FLOAT && raw.size() <= 4 * kShapeLike) {
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) add_float(load<float>(raw.data() + i));
    } else if (t.data_type() == ::onnx::TensorProto::DOUBLE && raw.size() <= 8 * kShapeLike) {
      for (size_t i = 0; i + 8 <= raw.size(); i += 8) add_float(load<double>(raw.data() + i));
    }
  }
  bool within(double limit) const { return product_ <= limit; }
  bool has_range = false;

 private:
  template <typename T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  void add(double m) { product_ *= std::max(m, 1.0); }
  double product_ = 1;
};

bool within_work_budget(const uint8_t* data, size_t size) {
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return true;  // the importer refuses it too
  WorkBudget budget;
  const ::onnx::GraphProto& g = model.graph();
  for (const auto& n : g.node()) budget.has_range |= n.op_type() == "Range";
  for (const auto& t : g.initializer()) budget.add_tensor(t);
  for (const auto& v : g.input()) {
    for (const auto& d : v.type().tensor_type().shape().dim()) budget.add_int(d.dim_value());
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      budget.add_int(a.i());
      for (int64_t v : a.ints()) budget.add_int(v);
      budget.add_float(a.f());
      if (a.floats_size() <= kShapeLike) {
        for (float v : a.floats()) budget.add_float(v);
      }
      if (a.has_t()) budget.add_tensor(a.t());
    }
  }
  // 2^24 elements take about a second through the sanitized interpreter.
  return budget.within(0x1p24);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!within_work_budget(data, size)) return 0;
  write_model(data, size);
  stitch::onnx_import::ImportedModel model;
  try {
    model = stitch::onnx_import::import_onnx(model_path());
  } catch (const stitch::UserError&) {
    return 0;
  } catch (const stitch::InternalError& e) {
    finding("InternalError escaped the importer", e.what());
  } catch (const std::exception& e) {
    finding("exception escaped the importer", e.what());
  }
  std::vector<std::string> problems = stitch::verify(model.graph);
  if (!problems.empty()) finding("imported graph fails verification", problems.front());
  std::string printed = stitch::print_graph(model.graph);
  stitch::Module again;
  try {
    again = stitch::parse_module(printed, "printed.stitch");
  } catch (const stitch::UserError& e) {
    finding("printed graph does not parse", e.formatted() + "\n" + printed);
  }
  // The text form names each output by its value; an ONNX output that is
  // another value under its own name (an Identity of an input) keeps only
  // the value's name.
  stitch::Graph expected = model.graph;
  expected.clear_outputs();
  for (const stitch::GraphOutput& o : model.graph.outputs()) {
    expected.add_output(model.graph.value_name(o.value), o.value);
  }
  if (again.graphs.size() != 1 || again.graphs[0] != expected) finding("round trip changed the graph", printed);
  return 0;
}

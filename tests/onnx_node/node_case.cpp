#include "node_case.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>

#include "onnx/importer.h"
#include "stitch/error.h"

namespace stitch::onnx_node {

namespace fs = std::filesystem;

bool NodeCase::expanded() const {
  const std::string suffix = "_expanded";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<NodeCase> discover_cases(const fs::path& root) {
  std::vector<NodeCase> cases;
  for (const fs::path& dir : {root, root / "node"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::is_regular_file(entry.path() / "model.onnx")) {
        cases.push_back(NodeCase{entry.path().filename().string(), entry.path()});
      }
    }
  }
  if (cases.empty()) {
    throw UserError(fmt::format("{}: no node test cases (a folder with a model.onnx); generate them with "
                                "/usr/bin/python3 scripts/gen_onnx_node_tests.py",
                                root.string()));
  }
  std::sort(cases.begin(), cases.end(), [](const NodeCase& a, const NodeCase& b) { return a.name < b.name; });
  return cases;
}

std::vector<NodeCase> shard_of(const std::vector<NodeCase>& cases, int index, int count) {
  std::vector<NodeCase> mine;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(count)) == index) mine.push_back(cases[i]);
  }
  return mine;
}

namespace {

// onnx 1.12 writes the bfloat16 tensors of its Cast/CastLike cases as UINT16
// bit patterns (numpy has no bfloat16; onnx/backend/test/case/node/cast.py).
// Stitch has no uint16, so a UINT16 tensor in a case the importer accepted
// can only be that: it is read back as the bfloat16 it encodes. Everything
// else goes through the importer's own reader.
Tensor load_tensor(const fs::path& file) {
  try {
    return onnx_import::load_tensor_pb(file.string());
  } catch (const UserError&) {
    ::onnx::TensorProto p;
    std::ifstream in(file, std::ios::binary);
    if (!p.ParseFromIstream(&in) || p.data_type() != ::onnx::TensorProto::UINT16) throw;
    Tensor t(DType::bf16, std::vector<int64_t>(p.dims().begin(), p.dims().end()));
    if (p.has_raw_data()) {
      if (p.raw_data().size() != t.nbytes()) throw;
      std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    } else {
      if (p.int32_data_size() != t.numel()) throw;
      for (int64_t i = 0; i < t.numel(); ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
    }
    return t;
  }
}

// prefix_0.pb, prefix_1.pb, ... up to the first one missing.
std::vector<Tensor> load_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int i = 0;; ++i) {
    fs::path file = dir / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(file)) break;
    tensors.push_back(load_tensor(file));
  }
  return tensors;
}

}  // namespace

std::vector<DataSet> load_data_sets(const NodeCase& c) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(c.dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_")) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<DataSet> sets;
  for (const fs::path& dir : dirs) {
    sets.push_back(DataSet{dir.filename().string(), load_numbered(dir, "input"), load_numbered(dir, "output")});
  }
  return sets;
}

std::vector<DeclaredInput> declared_inputs(const NodeCase& c) {
  ::onnx::ModelProto model;
  std::ifstream in(c.dir / "model.onnx", std::ios::binary);
  if (!model.ParseFromIstream(&in)) throw UserError(fmt::format("{}: does not parse", (c.dir / "model.onnx").string()));
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<DeclaredInput> inputs;
  for (const auto& info : model.graph().input()) {
    if (initializers.count(info.name())) continue;
    DeclaredInput d{info.name(), info.type().tensor_type().has_shape(), {}};
    for (const auto& dim : info.type().tensor_type().shape().dim()) d.extents.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    inputs.push_back(std::move(d));
  }
  return inputs;
}

std::string data_contradicts_model(const std::vector<DeclaredInput>& declared, const std::vector<DataSet>& sets) {
  for (const DataSet& s : sets) {
    if (s.inputs.size() != declared.size()) {
      return fmt::format("{} has {} inputs, the model declares {}", s.name, s.inputs.size(), declared.size());
    }
    for (size_t i = 0; i < declared.size(); ++i) {
      const DeclaredInput& d = declared[i];
      const std::vector<int64_t>& given = s.inputs[i].shape();
      bool contradicts = d.extents.size() != given.size();
      for (size_t k = 0; !contradicts && k < given.size(); ++k) contradicts = d.extents[k] >= 0 && d.extents[k] != given[k];
      if (!d.ranked || !contradicts) continue;
      return fmt::format("the case contradicts itself: input '{}' is [{}] in {}, the model declares [{}]", d.name,
                         fmt::join(given, ", "), s.name, fmt::join(d.extents, ", "));
    }
  }
  return "";
}

}  // namespace stitch::onnx_node

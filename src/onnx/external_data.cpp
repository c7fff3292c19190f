#include "onnx/external_data.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include "stitch/shape.h"
#include "stitch/tensor.h"

namespace stitch::onnx_import {

namespace {

namespace fs = std::filesystem;
using ::onnx::TensorProto;

struct Where {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

uint64_t number_entry(const TensorProto& t, const std::string& key, const std::string& value) {
  uint64_t v = 0;
  bool ok = !value.empty() && value.size() <= 19;
  for (char c : value) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!ok) throw UserError(fmt::format("tensor '{}': external data {} '{}' is not a byte count", t.name(), key, value));
  return v;
}

Where where_of(const TensorProto& t) {
  Where w;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") {
      w.location = e.value();
    } else if (e.key() == "offset") {
      w.offset = number_entry(t, e.key(), e.value());
    } else if (e.key() == "length") {
      w.length = number_entry(t, e.key(), e.value());
    } else if (e.key() != "checksum") {
      throw UserError(fmt::format("tensor '{}': unknown external data key '{}'", t.name(), e.key()));
    }
  }
  if (w.location.empty()) throw UserError(fmt::format("tensor '{}': external data without a location", t.name()));
  fs::path p(w.location);
  bool inside = p.is_relative() && !p.has_root_name();
  for (const fs::path& part : p) inside = inside && part != "..";
  if (!inside) {
    throw UserError(fmt::format("tensor '{}': external data location '{}' is not a path inside the model's folder",
                                t.name(), w.location));
  }
  return w;
}

class Files {
 public:
  explicit Files(fs::path folder) : folder_(std::move(folder)) {}

  std::string read(const TensorProto& t, const Where& w) {
    auto [it, fresh] = files_.try_emplace(w.location);
    std::ifstream& in = it->second;
    const fs::path path = folder_ / w.location;
    if (fresh) in.open(path, std::ios::binary);
    if (!in) throw UserError(fmt::format("tensor '{}': cannot open its external data file {}", t.name(), path.string()));
    in.clear();
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uint64_t>(in.tellg());
    const uint64_t length = w.length.value_or(size >= w.offset ? size - w.offset : 0);
    if (w.offset > size || length > size - w.offset) {
      throw UserError(fmt::format("tensor '{}': external data bytes {}..{} lie past the end of {} ({} bytes)", t.name(),
                                  w.offset, w.offset + length, path.string(), size));
    }
    if (length > static_cast<uint64_t>(kMaxTensorBytes)) {
      throw UserError(fmt::format("tensor '{}': {} bytes of external data exceed the limit on one tensor", t.name(),
                                  length));
    }
    std::string bytes(length, '\0');
    in.seekg(static_cast<std::streamoff>(w.offset));
    in.read(bytes.data(), static_cast<std::streamsize>(length));
    if (!in) throw UserError(fmt::format("tensor '{}': reading its external data from {} failed", t.name(), path.string()));
    return bytes;
  }

 private:
  fs::path folder_;
  std::map<std::string, std::ifstream> files_;
};

void load_one(TensorProto& t, Files& files) {
  if (t.data_location() != TensorProto::EXTERNAL) return;
  std::string bytes = files.read(t, where_of(t));
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  t.set_raw_data(std::move(bytes));
}

}  // namespace

void load_external_data(::onnx::GraphProto& graph, const std::string& model_path) {
  Files files(fs::path(model_path).parent_path());
  for (TensorProto& t : *graph.mutable_initializer()) load_one(t, files);
  for (::onnx::NodeProto& n : *graph.mutable_node()) {
    if (n.op_type() != "Constant") continue;
    for (::onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_t()) load_one(*a.mutable_t(), files);
    }
  }
}

}  // namespace stitch::onnx_import

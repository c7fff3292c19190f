// What the ONNX importer tests share: a fixture that builds a ModelProto with
// the protobuf API, saves it to a per-test folder and imports it, plus the
// attribute setters, tensor helpers and checks every test file uses.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "onnx/importer.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"

namespace stitch::onnx_import::testing {

inline void int_attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void float_attr(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void ints_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

inline void string_attr(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

// An f32 tensor of `shape` holding `values` in row-major order.
inline Tensor tensor(std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t(DType::f32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.set_f64(static_cast<int64_t>(i), values[i]);
  return t;
}

// The arguments in the graph's parameter order: bound parameters from the
// import, every other parameter from `real` by name.
inline std::vector<Tensor> bind(const ImportedModel& m, const std::map<std::string, Tensor>& real) {
  std::vector<Tensor> args;
  for (ValueId p : m.graph.params()) {
    const std::string& name = m.graph.value_name(p);
    auto b = m.bound.find(name);
    args.push_back(b != m.bound.end() ? b->second : real.at(name));
  }
  return args;
}

inline void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.get_f64(static_cast<int64_t>(i)), want[i], tol) << i;
}

// Element by element within `tol`, shapes equal (infinities must match exactly).
inline void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (std::isinf(want.get_f64(i))) {
      EXPECT_EQ(got.get_f64(i), want.get_f64(i)) << i;
    } else {
      EXPECT_NEAR(got.get_f64(i), want.get_f64(i), tol) << i;
    }
  }
}

inline void expect_ints(const Tensor& t, const std::vector<int64_t>& want) {
  ASSERT_EQ(t.dtype(), DType::i64);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.get_i64(static_cast<int64_t>(i)), want[i]) << i;
}

inline void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << msg;
}

// A model at opset 17 with an empty graph, and a temporary folder for it (and
// the CPU kernel cache) removed after the test.
class OnnxModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("stitch_onnx_" + std::string(info->test_suite_name()) + "_" + info->name() +
                                        "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(17);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ::onnx::ModelProto& model() { return model_; }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  const std::filesystem::path& dir() const { return dir_; }

  // dims: a number is a dim_value, a name a dim_param, "" an unknown unnamed dim.
  void input(const std::string& name, const std::vector<std::string>& dims, int elem = ::onnx::TensorProto::FLOAT) {
    auto* v = graph().add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (const std::string& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
        dim->set_dim_value(std::stoll(d));
      } else if (!d.empty()) {
        dim->set_dim_param(d);
      }
    }
  }
  // An input of static extents.
  void dims_input(const std::string& name, const std::vector<int64_t>& shape, int elem = ::onnx::TensorProto::FLOAT) {
    std::vector<std::string> dims;
    for (int64_t d : shape) dims.push_back(std::to_string(d));
    input(name, dims, elem);
  }
  void output(const std::string& name) { graph().add_output()->set_name(name); }

  // A node with one output, named `name` or else after its output.
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins, const std::string& out,
                          const std::string& name = "") {
    return multi_output_node(op, ins, {out}, name);
  }
  // "" in `outs` is an output left out.
  ::onnx::NodeProto* multi_output_node(const std::string& op, const std::vector<std::string>& ins,
                                       const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outs.at(0) + "_node" : name);
    for (const std::string& i : ins) n->add_input(i);
    for (const std::string& o : outs) n->add_output(o);
    return n;
  }

  // raw: the values as raw_data rather than float_data.
  ::onnx::TensorProto* float_init(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& data, bool raw = false) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
    } else {
      for (float f : data) t->add_float_data(f);
    }
    return t;
  }
  // A vector of `values`, or with scalar a rank-0 tensor.
  ::onnx::TensorProto* int64_init(const std::string& name, const std::vector<int64_t>& values, bool scalar = false) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }

  // Writes the model to the test's folder; returns its path.
  std::string save() {
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream out(path, std::ios::binary);
    EXPECT_TRUE(model_.SerializeToOstream(&out));
    return path;
  }
  ImportedModel import(const ImportOptions& options = {}) { return import_onnx(save(), options); }
  // The import's UserError message; a test failure when there is none.
  std::string import_error(const ImportOptions& options = {}) {
    try {
      import(options);
    } catch (const UserError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a UserError";
    return "";
  }

  // Every output on the interpreter and on the CPU back end, the parameters bound as `bind` does.
  std::vector<std::vector<Tensor>> both(const ImportedModel& m, const std::map<std::string, Tensor>& real) {
    std::vector<Tensor> args = bind(m, real);
    return {interpret(m.graph, args), run_cpu(m, args)};
  }

  std::vector<Tensor> run_cpu(const ImportedModel& m, const std::vector<Tensor>& args) {
    runtime::cpu::KernelCache cache(dir_ / "cache");
    auto exe = pipeline::compile_cpu(canonicalize(m.graph), PlannerKind::Xla, cache);
    return exe.run(args);
  }

 private:
  std::filesystem::path dir_;
  ::onnx::ModelProto model_;
};

}  // namespace stitch::onnx_import::testing

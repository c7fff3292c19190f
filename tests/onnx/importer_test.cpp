// The ONNX importer on small models built here with the protobuf API, checked
// against values computed in the test through the interpreter (and once the CPU).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ir/canonicalize.h"
#include "onnx/importer.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"

namespace stitch::onnx_import {
namespace {

namespace fs = std::filesystem;

class OnnxImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stitch_onnx_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(17);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  // dims: a number is a dim_value, a name a dim_param.
  void input(const std::string& name, std::vector<std::string> dims, int elem = ::onnx::TensorProto::FLOAT) {
    value_info(graph().add_input(), name, dims, elem);
  }
  void output(const std::string& name) { graph().add_output()->set_name(name); }
  static void value_info(::onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::string>& dims,
                         int elem) {
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
  ::onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, const std::string& out,
                          const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? out + "_node" : name);
    for (const std::string& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  }
  ::onnx::TensorProto* float_init(const std::string& name, std::vector<int64_t> dims, std::vector<float> data,
                                  bool raw) {
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
  std::string save() {
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream out(path, std::ios::binary);
    EXPECT_TRUE(model_.SerializeToOstream(&out));
    return path;
  }
  static Tensor tensor(std::vector<int64_t> shape, std::vector<double> values) {
    Tensor t(DType::f32, shape);
    for (size_t i = 0; i < values.size(); ++i) t.set_f64(static_cast<int64_t>(i), values[i]);
    return t;
  }
  // Real inputs in order, bound parameters filled in from the import.
  static std::vector<Tensor> bind(const ImportedModel& m, std::map<std::string, Tensor> real) {
    std::vector<Tensor> args;
    for (ValueId p : m.graph.params()) {
      const std::string& name = m.graph.value_name(p);
      if (auto b = m.bound.find(name); b != m.bound.end()) {
        args.push_back(b->second);
      } else {
        args.push_back(real.at(name));
      }
    }
    return args;
  }

  fs::path dir_;
  ::onnx::ModelProto model_;
};

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.get_f64(static_cast<int64_t>(i)), want[i], tol) << i;
}

TEST_F(OnnxImportTest, CorruptFileIsAUserError) {
  input("x", {"2"});
  node("Relu", {"x"}, "y");
  output("y");
  std::string path = save();
  fs::resize_file(path, 7);
  std::ofstream(path, std::ios::binary | std::ios::app) << "\xff\xff\xff garbage";
  try {
    import_onnx(path);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid ONNX model"), std::string::npos) << e.what();
  }
}

TEST_F(OnnxImportTest, UnsupportedOpsAreListedTogether) {
  input("x", {"2", "3"});
  node("Conv", {"x"}, "a", "conv1");
  node("Relu", {"a"}, "b");
  node("LSTM", {"b"}, "c", "lstm7");
  output("c");
  try {
    import_onnx(save());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("op Conv (node conv1, opset 17)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("op LSTM (node lstm7, opset 17)"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
  }
}

TEST_F(OnnxImportTest, OpsetOutsideTheRangeIsAUserError) {
  model_.mutable_opset_import(0)->set_version(11);
  input("x", {"2"});
  node("Relu", {"x"}, "y");
  output("y");
  EXPECT_THROW(import_onnx(save()), UserError);
}

TEST_F(OnnxImportTest, DimParamBecomesASymbolicDim) {
  input("x", {"batch", "4"});
  node("Exp", {"x"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.graph.params().size(), 1u);
  const Shape& s = m.graph.type(m.graph.params()[0]).shape;
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].is_symbolic());
  EXPECT_EQ(s[0].name(), "batch");
  EXPECT_EQ(s[1], Dim(4));
  std::vector<Tensor> out = interpret(m.graph, {tensor({3, 4}, std::vector<double>(12, 1.0))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 4}));
  expect_near(out[0], std::vector<double>(12, std::exp(1.0)));
}

TEST_F(OnnxImportTest, UnnamedUnknownDimIsAUserError) {
  input("x", {"", "4"});
  node("Exp", {"x"}, "y");
  output("y");
  EXPECT_THROW(import_onnx(save()), UserError);
}

TEST_F(OnnxImportTest, InitializerBecomesABoundParameterAndSplatsAConstant) {
  input("x", {"3"});
  float_init("w", {3}, {1, 2, 3}, /*raw=*/true);
  float_init("half", {3}, {0.5, 0.5, 0.5}, /*raw=*/false);
  node("Mul", {"x", "w"}, "a");
  node("Add", {"a", "half"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.bound.size(), 1u);
  ASSERT_TRUE(m.bound.count("w"));
  EXPECT_EQ(m.graph.params().size(), 2u);  // x and w; half is a splat constant
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({3}, {10, 20, 30})}}));
  expect_near(out[0], {10.5, 40.5, 90.5});
}

// x[2,3] @ W[3,2] + b[2], then relu; W and b are initializers.
TEST_F(OnnxImportTest, MatMulAddReluOnInterpreterAndCpu) {
  input("x", {"N", "3"});
  float_init("W", {3, 2}, {1, -1, 2, 0, -3, 1}, /*raw=*/false);
  float_init("b", {2}, {0.5, -4}, /*raw=*/true);
  node("MatMul", {"x", "W"}, "xw");
  node("Add", {"xw", "b"}, "pre");
  node("Relu", {"pre"}, "out/relu:0");
  output("out/relu:0");
  ImportedModel m = import_onnx(save());
  ASSERT_EQ(m.graph.outputs().size(), 1u);
  EXPECT_EQ(m.graph.outputs()[0].name, "out_relu_0");
  std::vector<double> x = {1, 2, 3, -1, 0, 2};
  std::vector<double> want;
  double w[3][2] = {{1, -1}, {2, 0}, {-3, 1}};
  double bias[2] = {0.5, -4};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      double s = bias[j];
      for (int k = 0; k < 3; ++k) s += x[i * 3 + k] * w[k][j];
      want.push_back(std::max(s, 0.0));
    }
  }
  std::vector<Tensor> args = bind(m, {{"x", tensor({2, 3}, x)}});
  expect_near(interpret(m.graph, args)[0], want);

  Graph canonical = canonicalize(m.graph);
  runtime::cpu::KernelCache cache(dir_ / "cache");
  auto exe = runtime::cpu::CpuExecutable::compile(canonical, PlannerKind::Xla, cache);
  expect_near(exe.run(args)[0], want, 1e-4);
}

TEST_F(OnnxImportTest, SoftmaxOverTheLastAxis) {
  input("x", {"2", "3"});
  node("Softmax", {"x"}, "y");
  output("y");
  ImportedModel m = import_onnx(save());
  std::vector<double> x = {1, 2, 3, 0, 0, -1};
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(x[r * 3 + c]);
    for (int c = 0; c < 3; ++c) want.push_back(std::exp(x[r * 3 + c]) / sum);
  }
  expect_near(interpret(m.graph, {tensor({2, 3}, x)})[0], want);
}

TEST_F(OnnxImportTest, ReduceSumTakesAxesFromAConstantInput) {
  input("x", {"2", "3"});
  auto* axes = graph().add_initializer();
  axes->set_name("axes");
  axes->set_data_type(::onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(1);
  node("ReduceSum", {"x", "axes"}, "s");
  auto* mean = node("ReduceMean", {"x"}, "m");
  auto* a = mean->add_attribute();
  a->set_name("axes");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(0);
  auto* k = mean->add_attribute();
  k->set_name("keepdims");
  k->set_type(::onnx::AttributeProto::INT);
  k->set_i(0);
  output("s");
  output("m");
  ImportedModel m = import_onnx(save());
  std::vector<Tensor> out = interpret(m.graph, bind(m, {{"x", tensor({2, 3}, {1, 2, 3, 4, 5, 6})}}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  expect_near(out[0], {6, 15});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{3}));
  expect_near(out[1], {2.5, 3.5, 4.5});
}

TEST_F(OnnxImportTest, WhereCastAndComparisons) {
  input("x", {"4"});
  input("y", {"4"});
  node("Greater", {"x", "y"}, "gt");
  node("Where", {"gt", "x", "y"}, "mx");
  auto* cast = node("Cast", {"gt"}, "gtf");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::FLOAT);
  node("Sub", {"mx", "gtf"}, "r");
  output("r");
  ImportedModel m = import_onnx(save());
  std::vector<Tensor> out = interpret(m.graph, {tensor({4}, {1, 5, -2, 3}), tensor({4}, {2, 4, -3, 3})});
  expect_near(out[0], {2, 4, -3, 3});
}

}  // namespace
}  // namespace stitch::onnx_import

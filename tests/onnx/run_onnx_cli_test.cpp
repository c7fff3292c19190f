// `stitch run model.onnx`: the CLI binds the initializers itself, fills only
// the real inputs, takes inputs by ONNX name and names the output files after
// the ONNX outputs; plan, emit, check and bench accept .onnx too.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "stitch/npy.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class RunOnnxCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stitch_onnx_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // y[N,2] = x[N,3] @ W[3,2], W = [[1, 0], [0, 1], [1, 1]].
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    auto* in = g->add_input();
    in->set_name("x:0");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(3);
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(::onnx::TensorProto::FLOAT);
    w->add_dims(3);
    w->add_dims(2);
    for (float f : {1.f, 0.f, 0.f, 1.f, 1.f, 1.f}) w->add_float_data(f);
    auto* n = g->add_node();
    n->set_op_type("MatMul");
    n->add_input("x:0");
    n->add_input("W");
    n->add_output("y:0");
    g->add_output()->set_name("y:0");
    model_ = (dir_ / "model.onnx").string();
    std::ofstream out(model_, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  }
  void TearDown() override { fs::remove_all(dir_); }

  int run(const std::string& args) { return cli("run", args); }
  int cli(const std::string& command, const std::string& args) {
    std::string cmd = std::string(STITCH_CLI) + " " + command + " " + model_ + " " + args + " > " +
                      (dir_ / "log").string() + " 2>&1";
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string log() const {
    std::ifstream in(dir_ / "log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
  std::string model_;
};

TEST_F(RunOnnxCliTest, BindsInitializersAndWritesOutputsByOnnxName) {
  Tensor x(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) x.set_f64(i, i + 1);
  write_npy((dir_ / "x.npy").string(), x);
  ASSERT_EQ(run("--input x:0=" + (dir_ / "x.npy").string() + " --output-dir " + (dir_ / "out").string()), 0) << log();
  Tensor y = read_npy((dir_ / "out" / "y_0.npy").string());
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  // Rows [1 2 3] and [4 5 6] times W.
  EXPECT_EQ(y.get_f64(0), 4);
  EXPECT_EQ(y.get_f64(1), 5);
  EXPECT_EQ(y.get_f64(2), 10);
  EXPECT_EQ(y.get_f64(3), 11);
}

TEST_F(RunOnnxCliTest, InputsBindByParameterNameToo) {
  Tensor x(DType::f32, {1, 3});
  write_npy((dir_ / "x.npy").string(), x);
  EXPECT_EQ(run("--input x_0=" + (dir_ / "x.npy").string()), 0) << log();
}

TEST_F(RunOnnxCliTest, WrongInputShapeOrDtypeIsAUserError) {
  Tensor wide(DType::f32, {2, 4});
  write_npy((dir_ / "wide.npy").string(), wide);
  EXPECT_EQ(run("--input x:0=" + (dir_ / "wide.npy").string()), 2) << log();
  EXPECT_NE(log().find("x_0"), std::string::npos) << log();
  EXPECT_NE(log().find("4"), std::string::npos) << log();
  Tensor doubles(DType::f64, {2, 3});
  write_npy((dir_ / "doubles.npy").string(), doubles);
  EXPECT_EQ(run("--input x:0=" + (dir_ / "doubles.npy").string()), 2) << log();
  EXPECT_NE(log().find("f64"), std::string::npos) << log();
  Tensor flat(DType::f32, {6});
  write_npy((dir_ / "flat.npy").string(), flat);
  EXPECT_EQ(run("--input x:0=" + (dir_ / "flat.npy").string()), 2) << log();
}

TEST_F(RunOnnxCliTest, PlanEmitCheckAndBenchAcceptOnnx) {
  EXPECT_EQ(cli("plan", "--dim N=8"), 0) << log();
  EXPECT_NE(log().find("dot"), std::string::npos) << log();
  EXPECT_EQ(cli("emit", ""), 0) << log();
  EXPECT_NE(log().find("extern \"C\""), std::string::npos) << log();
  EXPECT_EQ(cli("check", ""), 0) << log();
  EXPECT_NE(log().find("y_0"), std::string::npos) << log();
  EXPECT_EQ(cli("bench", "--dim N=64 --repeat 1 --warmup 0"), 0) << log();
  EXPECT_NE(log().find("model"), std::string::npos) << log();
}

// A ReduceSum whose axes are a graph input: the model is specialised on the
// --input file's value; without one, the error names the input.
TEST_F(RunOnnxCliTest, ShapeDecidingInputIsSpecialisedOnItsFile) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto add_input = [&](const std::string& name, int elem, std::vector<int64_t> dims) {
    auto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_input("x", ::onnx::TensorProto::FLOAT, {2, 3});
  add_input("axes", ::onnx::TensorProto::INT64, {1});
  auto* n = g->add_node();
  n->set_op_type("ReduceSum");
  n->add_input("x");
  n->add_input("axes");
  n->add_output("y");
  g->add_output()->set_name("y");
  model_ = (dir_ / "reduce.onnx").string();
  {
    std::ofstream out(model_, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&out));
  }
  Tensor x(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) x.set_f64(i, i);
  write_npy((dir_ / "x.npy").string(), x);
  EXPECT_EQ(run("--input x=" + (dir_ / "x.npy").string()), 2) << log();
  EXPECT_NE(log().find("graph input 'axes'"), std::string::npos) << log();
  Tensor axes(DType::i64, {1});
  axes.set_i64(0, 1);
  write_npy((dir_ / "axes.npy").string(), axes);
  ASSERT_EQ(run("--input x=" + (dir_ / "x.npy").string() + " --input axes=" + (dir_ / "axes.npy").string() +
                " --output-dir " + (dir_ / "out").string()),
            0)
      << log();
  Tensor y = read_npy((dir_ / "out" / "y.npy").string());
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(y.get_f64(0), 0 + 1 + 2);
  EXPECT_EQ(y.get_f64(1), 3 + 4 + 5);
}

TEST_F(RunOnnxCliTest, RandomInputsFillOnlyRealInputs) {
  EXPECT_EQ(run("--random-inputs 1 --dim N=4 --backend cpu"), 0) << log();
  EXPECT_NE(log().find("y_0: f32[4, 2]"), std::string::npos) << log();
}

TEST_F(RunOnnxCliTest, BindingAnInitializerIsAUserError) {
  Tensor w(DType::f32, {3, 2});
  write_npy((dir_ / "w.npy").string(), w);
  EXPECT_EQ(run("--random-inputs 1 --dim N=2 --input W=" + (dir_ / "w.npy").string()), 2) << log();
  EXPECT_NE(log().find("initializer"), std::string::npos) << log();
}

TEST_F(RunOnnxCliTest, CorruptModelExitsWithTwo) {
  std::ofstream(model_, std::ios::binary | std::ios::trunc) << "\x08\x96\x01 not a model \xff\xff";
  EXPECT_EQ(run("--random-inputs 1"), 2) << log();
  EXPECT_NE(log().find("not a valid ONNX model"), std::string::npos) << log();
}

}  // namespace
}  // namespace stitch

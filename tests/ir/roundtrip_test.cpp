// parse -> print -> parse gives an equal graph, and print is a fixed point, for
// every graph of the parser corpus (tests/ir/corpus) and of the benchmark
// workloads (bench/workloads, globbed when the test runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/composites.h"
#include "stitch/text.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> stitch_files(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STITCH_SOURCE_DIR) / dir)) {
    if (e.path().extension() == ".stitch") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_round_trip(const fs::path& file) {
  SCOPED_TRACE(file.string());
  Module first;
  try {
    first = parse_file(file.string());
  } catch (const UserError& e) {
    FAIL() << e.formatted();
  }
  std::string printed = print_module(first);
  Module second;
  try {
    second = parse_module(printed, file.filename().string() + " (printed)");
  } catch (const UserError& e) {
    FAIL() << e.formatted() << "\nprinted text:\n" << printed;
  }
  ASSERT_EQ(first.graphs.size(), second.graphs.size());
  for (size_t i = 0; i < first.graphs.size(); ++i) {
    EXPECT_TRUE(first.graphs[i] == second.graphs[i])
        << "graph " << first.graphs[i].name() << " changed:\n" << print_graph(first.graphs[i]) << "---\n"
        << print_graph(second.graphs[i]);
  }
  EXPECT_EQ(print_module(second), printed);
}

TEST(RoundTrip, ParserCorpus) {
  std::vector<fs::path> files = stitch_files("tests/ir/corpus");
  EXPECT_GE(files.size(), 10u);
  for (const fs::path& f : files) expect_round_trip(f);
}

TEST(RoundTrip, BenchWorkloads) {
  std::vector<fs::path> files = stitch_files("bench/workloads");
  if (files.empty()) GTEST_SKIP() << "no workloads in bench/workloads";
  for (const fs::path& f : files) expect_round_trip(f);
}

// The corpus is only worth its name if it reaches every op, composite and dtype.
TEST(RoundTrip, CorpusCoversEveryOpCompositeAndDType) {
  std::set<OpKind> ops;
  std::set<DType> dtypes;
  std::string all_text;
  bool symbolic_param = false, symbolic_attr = false;
  for (const fs::path& f : stitch_files("tests/ir/corpus")) {
    all_text += read(f);
    for (const Graph& g : parse_file(f.string()).graphs) {
      for (ValueId p : g.params()) {
        dtypes.insert(g.type(p).dtype);
        symbolic_param |= !is_static(g.type(p).shape);
      }
      for (const Node& n : g.nodes()) {
        ops.insert(n.op);
        for (const auto& [key, value] : n.attrs.items()) symbolic_attr |= value.is_shape() && !is_static(value.as_shape());
      }
    }
  }
  for (int i = 0; i < op_kind_count(); ++i) {
    EXPECT_TRUE(ops.count(static_cast<OpKind>(i))) << "no corpus graph uses " << op_name(static_cast<OpKind>(i));
  }
  for (DType t : kAllDTypes) EXPECT_TRUE(dtypes.count(t)) << "no corpus parameter is " << dtype_name(t);
  for (std::string_view c : composite_op_names()) {
    EXPECT_NE(all_text.find(std::string(c) + "("), std::string::npos) << "no corpus graph calls " << c;
  }
  EXPECT_TRUE(symbolic_param);
  EXPECT_TRUE(symbolic_attr);
}

}  // namespace
}  // namespace stitch

// Malformed input: every case pins the exact "file:line:col: error: message".
#include <gtest/gtest.h>

#include <string>

#include "stitch/text.h"

namespace stitch {
namespace {

struct BadInput {
  const char* name;
  std::string source;
  std::string expected;  // UserError::formatted(), with the file "t.stitch"
};

// Wraps statements in a one-parameter graph; line 2 is the first statement.
std::string body(const std::string& stmts, const std::string& params = "x: f32[4]") {
  return "graph g(" + params + ") {\n" + stmts + "}\n";
}

const BadInput kCases[] = {
    // Syntax.
    {"missing_close_paren", body("  y = exp(x\n  return y\n"),
     "t.stitch:3:3: error: expected ',' or ')' in the arguments of 'exp', got 'return'"},
    {"open_call_before_return", body("  y = add(x,\n  return y\n"),
     "t.stitch:3:3: error: expected an argument, got 'return' (is a ')' missing?)"},
    {"missing_comma", body("  y = add(x x)\n  return y\n"),
     "t.stitch:2:13: error: expected ',' or ')' in the arguments of 'add', got 'x'"},
    {"missing_close_bracket", body("  y = reduce_sum(x, axes=[0)\n  return y\n"),
     "t.stitch:2:28: error: expected ',' or ']' in the list, got ')'"},
    {"missing_param_paren", "graph g(x: f32[4] {\n  return x\n}\n",
     "t.stitch:1:19: error: expected ',' or ')' in the parameter list, got '{'"},
    {"missing_graph_name", "graph (x: f32[4]) {\n  return x\n}\n",
     "t.stitch:1:7: error: expected a graph name after 'graph', got '('"},
    {"misspelt_graph_keyword", "grph g(x: f32[4]) {\n  return x\n}\n",
     "t.stitch:1:1: error: expected 'graph' or 'kernel', got 'grph'"},
    {"unterminated_string", body("  y = gelu(x, approximate=\"tanh)\n  return y\n"),
     "t.stitch:2:27: error: unterminated string"},
    {"bad_escape", body("  y = gelu(x, approximate=\"a\\qb\")\n  return y\n"),
     "t.stitch:2:29: error: unknown escape '\\q' in string (only \\\" and \\\\ are allowed)"},
    {"bad_char", body("  y = exp(x) $\n  return y\n"), "t.stitch:2:14: error: unexpected character '$'"},
    {"non_ascii_char", body("  y = exp(x)\xc3\xa9\n  return y\n"),
     "t.stitch:2:13: error: unexpected character '\\xc3'"},
    {"nul_byte", body("  y = exp(x)" + std::string(1, '\0') + "\n  return y\n"),
     "t.stitch:2:13: error: unexpected character '\\x00'"},
    {"statement_without_call", body("  y = x\n  return y\n"),
     "t.stitch:3:3: error: expected '(' after 'x' (a statement is name = op(...)), got 'return'"},
    {"positional_after_keyword", body("  y = reduce_sum(axes=[0], x)\n  return y\n"),
     "t.stitch:2:28: error: positional argument after keyword arguments in the call to 'reduce_sum'"},
    {"arrow_without_parens", "graph g(x: f32[4]) -> f32[4] {\n  return x\n}\n",
     "t.stitch:1:23: error: expected '(' after '->' (result types are written -> (f32[N], ...)), got 'f32'"},
    {"type_without_dims", "graph g(x: f32) {\n  return x\n}\n",
     "t.stitch:1:15: error: expected '[' after dtype 'f32' (a scalar is f32[]), got ')'"},
    {"trailing_garbage", body("  y = exp(x)\n  return y\n") + "trailing\n",
     "t.stitch:5:1: error: expected 'graph', 'kernel' or end of input after graph 'g', got 'trailing'"},
    {"extra_close_brace", body("  return x\n") + "}\n",
     "t.stitch:4:1: error: expected 'graph', 'kernel' or end of input after graph 'g', got '}'"},
    {"unclosed_body", "graph g(x: f32[4]) {\n  y = exp(x)\n  return y\n",
     "t.stitch:4:1: error: expected ',' or '}' after the returned values of graph 'g', got end of input"},
    {"empty_file", "", "t.stitch:1:1: error: no graph or kernel in the input (a file holds one or more 'graph' or 'kernel' definitions)"},
    {"comment_only_file", "# nothing here\n\n",
     "t.stitch:3:1: error: no graph or kernel in the input (a file holds one or more 'graph' or 'kernel' definitions)"},
    {"reserved_value_name", body("  inf = exp(x)\n  return inf\n"),
     "t.stitch:2:3: error: 'inf' is a reserved word and cannot name a value"},
    {"dangling_minus", body("  y = max(x, -)\n  return y\n"),
     "t.stitch:2:15: error: expected a number after '-', got ')'"},

    // Literals.
    {"int_overflow", body("  y = add(x, 9223372036854775808)\n  return y\n", "x: i64[4]"),
     "t.stitch:2:14: error: integer 9223372036854775808 does not fit in 64 bits"},
    {"float_overflow", body("  y = add(x, 1e999)\n  return y\n"),
     "t.stitch:2:14: error: number 1e999 is out of the range of a 64-bit float"},
    {"malformed_number", body("  y = add(x, 1.5.3)\n  return y\n"), "t.stitch:2:14: error: malformed number '1.5.3'"},
    {"number_glued_to_name", body("  y = add(x, 2x)\n  return y\n"), "t.stitch:2:14: error: malformed number '2x'"},
    {"literal_only_op", body("  y = add(1, 2)\n  return y\n"),
     "t.stitch:2:7: error: cannot tell the dtype of literal 1 in add: no operand is a value; "
     "write constant(value=..., dtype=...)"},
    {"literal_not_integer", body("  y = add(x, 1.5)\n  return y\n", "x: i32[4]"),
     "t.stitch:2:7: error: constant: value 1.5 is not an integer, as i32 needs"},
    {"literal_out_of_dtype_range", body("  y = add(x, 300)\n  return y\n", "x: i8[4]"),
     "t.stitch:2:7: error: constant: value 300 does not fit i8"},
    {"literal_to_composite", body("  y = layer_norm(x, 1.0)\n  return y\n"),
     "t.stitch:2:7: error: operand 1 of layer_norm must be a value, not a literal"},

    // Names.
    {"undefined_name", body("  y = exp(undefined_thing)\n  return y\n"),
     "t.stitch:2:11: error: undefined value 'undefined_thing'"},
    {"undefined_name_typo", body("  xc = exp(x)\n  y = exp(xd)\n  return y\n"),
     "t.stitch:3:11: error: undefined value 'xd'; did you mean 'xc'?"},
    {"used_before_definition", body("  y = exp(z)\n  z = exp(x)\n  return y\n"),
     "t.stitch:2:11: error: 'z' is used before its definition at line 3"},
    {"duplicate_name", body("  y = exp(x)\n  y = exp(y)\n  return y\n"),
     "t.stitch:3:3: error: 'y' is already defined at line 2"},
    {"statement_shadows_param", body("  x = exp(x)\n  return x\n"),
     "t.stitch:2:3: error: 'x' is already defined at line 1"},
    {"duplicate_param", "graph g(x: f32[4], x: f32[4]) {\n  return x\n}\n",
     "t.stitch:1:20: error: 'x' is already defined at line 1"},
    {"undefined_return", body("  y = exp(x)\n  return q\n"), "t.stitch:3:10: error: undefined value 'q'"},
    {"duplicate_graph", "graph g(x: f32[4]) {\n  return x\n}\ngraph g(x: f32[4]) {\n  return x\n}\n",
     "t.stitch:4:7: error: graph 'g' is already defined at line 1"},
    {"graph_called_as_op", "graph h(x: f32[4]) {\n  return x\n}\n" + body("  y = h(x)\n  return y\n"),
     "t.stitch:5:7: error: 'h' is a graph; calling a graph from a graph is not supported"},
    {"value_called_as_op", body("  y = x(1)\n  return y\n"), "t.stitch:2:7: error: 'x' is a value, not an op"},

    // Ops.
    {"unknown_op_suggestion", body("  y = reduce_summ(x)\n  return y\n"),
     "t.stitch:2:7: error: unknown op 'reduce_summ'; did you mean 'reduce_sum'?"},
    {"unknown_op_swapped_letters", body("  y = sfotmax(x)\n  return y\n"),
     "t.stitch:2:7: error: unknown op 'sfotmax'; did you mean 'softmax'?"},
    {"unknown_op", body("  y = frobnicate(x)\n  return y\n"), "t.stitch:2:7: error: unknown op 'frobnicate'"},
    {"wrong_arity", body("  y = add(x)\n  return y\n"), "t.stitch:2:7: error: add takes 2 operands, got 1"},
    {"wrong_arity_nested", body("  y = add(exp(log(sqrt(x, x))), 1)\n  return y\n"),
     "t.stitch:2:19: error: sqrt takes 1 operand, got 2"},
    {"dtype_mismatch", body("  y = add(x, n)\n  return y\n", "x: f32[4], n: i32[4]"),
     "t.stitch:2:7: error: add needs operands of one dtype, got f32, i32 (insert a cast)"},
    {"float_op_on_ints", body("  y = exp(n)\n  return y\n", "n: i32[4]"),
     "t.stitch:2:7: error: exp expects floating operands, got i32"},
    {"broadcast_shape_mismatch", body("  y = broadcast(x, shape=[2, 4])\n  return y\n", "x: f32[3]"),
     "t.stitch:2:7: error: broadcast: [3] cannot be broadcast to [2, 4]"},
    {"implicit_broadcast_mismatch", body("  y = add(x, z)\n  return y\n", "x: f32[4], z: f32[3]"),
     "t.stitch:2:7: error: shapes [4] and [3] do not broadcast"},
    {"reshape_count_mismatch", body("  y = reshape(x, shape=[4, 2])\n  return y\n", "x: f32[2, 3]"),
     "t.stitch:2:7: error: reshape: [2, 3] and [4, 2] have different element counts"},
    {"reshape_symbolic_mismatch", body("  y = reshape(x, shape=[2, 2])\n  return y\n", "x: f32[B]"),
     "t.stitch:2:7: error: reshape: [B] and [2, 2] have different element counts"},
    {"bad_perm", body("  y = transpose(x, perm=[0, 0])\n  return y\n", "x: f32[2, 3]"),
     "t.stitch:2:7: error: transpose: perm [0, 0] is not a permutation of 0..1"},
    {"bad_axis", body("  y = reduce_sum(x, axes=[3])\n  return y\n"),
     "t.stitch:2:7: error: reduce_sum: axis 3 is out of range for rank 1"},
    {"bad_axis_in_composite", body("  y = softmax(x, axis=1)\n  return y\n"),
     "t.stitch:2:7: error: reduce_max: axis 1 is out of range for rank 1"},
    {"bad_slice_step", body("  y = slice(x, start=[0], stop=[4], step=[0])\n  return y\n"),
     "t.stitch:2:7: error: slice: step 0 on axis 0 must be positive"},
    {"negative_extent", "graph g(x: f32[-4]) {\n  return x\n}\n", "t.stitch:1:16: error: negative extent -4 in a shape"},

    // Attributes.
    {"unknown_attribute", body("  y = reduce_sum(x, axis=0)\n  return y\n"),
     "t.stitch:2:7: error: unknown attribute 'axis' for reduce_sum (expected axes, keepdims)"},
    {"attribute_on_plain_op", body("  y = exp(x, axis=0)\n  return y\n"),
     "t.stitch:2:7: error: exp takes no attributes, got 'axis'"},
    {"unknown_composite_attribute", body("  y = softmax(x, axes=[0])\n  return y\n"),
     "t.stitch:2:7: error: unknown attribute 'axes' for softmax"},
    {"missing_attribute", body("  y = concat(x, x)\n  return y\n"),
     "t.stitch:2:7: error: concat requires attribute 'axis'"},
    {"bad_attribute_kind", body("  y = reduce_sum(x, keepdims=1)\n  return y\n"),
     "t.stitch:2:7: error: attribute 'keepdims' of reduce_sum must be true or false, got 1"},
    {"float_in_int_list", body("  y = reduce_sum(x, axes=[0, 1.5])\n  return y\n"),
     "t.stitch:2:7: error: attribute 'axes' of reduce_sum must be a list of integers, got [0.0, 1.5]"},
    {"float_in_dim_list", body("  y = broadcast(x, shape=[B, 1.5])\n  return y\n"),
     "t.stitch:2:30: error: a list of dims cannot hold a non-integer"},
    {"bare_identifier_value", body("  y = reduce_sum(x, axes=banana)\n  return y\n"),
     "t.stitch:2:26: error: 'banana' is not a valid value for attribute 'axes' "
     "(expected a number, true, false, a dtype, a string or a list)"},
    {"duplicate_attribute", body("  y = cast(x, to=f16, to=f32)\n  return y\n"),
     "t.stitch:2:23: error: attribute 'to' is given twice (first at line 2, column 15)"},
    {"unknown_dtype_attribute", body("  y = cast(x, to=float16)\n  return y\n"),
     "t.stitch:2:18: error: unknown dtype 'float16' (expected f16, bf16, f32, f64, i8, i32, i64 or bool)"},
    {"unknown_dtype_param", "graph g(x: float32[4]) {\n  return x\n}\n",
     "t.stitch:1:12: error: unknown dtype 'float32' (expected f16, bf16, f32, f64, i8, i32, i64 or bool)"},
    {"bad_string_attribute", body("  y = gelu(x, approximate=\"fast\")\n  return y\n"),
     "t.stitch:2:7: error: gelu: approximate must be \"none\" or \"tanh\", got \"fast\""},

    // Return and result types.
    {"missing_return", body("  y = exp(x)\n"), "t.stitch:3:1: error: graph 'g' has no 'return' statement"},
    {"empty_body", "graph g(x: f32[4]) {\n}\n", "t.stitch:2:1: error: graph 'g' has no 'return' statement"},
    {"return_nothing", body("  return\n"), "t.stitch:2:3: error: 'return' needs at least one value"},
    {"return_not_last", body("  y = exp(x)\n  return y\n  z = exp(y)\n"),
     "t.stitch:4:3: error: 'return' must be the last statement of graph 'g'"},
    {"result_count_mismatch", "graph g(x: f32[4]) -> (f32[4], f32[4]) {\n  y = exp(x)\n  return y\n}\n",
     "t.stitch:3:3: error: graph 'g' returns 1 value but its '->' clause declares 2"},
    {"result_shape_mismatch", "graph g(x: f32[4]) -> (f32[5]) {\n  y = exp(x)\n  return y\n}\n",
     "t.stitch:3:10: error: 'y' has type f32[4] but graph 'g' declares result 0 as f32[5]"},
    {"result_dtype_mismatch", "graph g(x: f32[B]) -> (f64[B]) {\n  y = exp(x)\n  return y\n}\n",
     "t.stitch:3:10: error: 'y' has type f32[B] but graph 'g' declares result 0 as f64[B]"},

    // Found by the fuzzer (docs/fuzzing.md): each was undefined behaviour before.
    {"pad_extent_overflow",
     body("  y = pad(x, low=[9223372036854775807], high=[5])\n  return y\n", "x: f32[4]"),
     "t.stitch:2:7: error: pad: axis 0 of the result would exceed 2^63 - 1 elements"},
    {"concat_extent_overflow",
     body("  y = concat(x, x, axis=0)\n  return y\n", "x: i8[281474976710656]"),
     "t.stitch:2:7: error: concat 'y': i8[562949953421312] has 562949953421312 elements of 1 byte "
     "(562949953421312 bytes); the limit is 281474976710656 bytes (2^48) per tensor"},
    {"param_over_tensor_limit", body("  return x\n", "x: f32[9223372036854775807]"),
     "t.stitch:1:9: error: parameter 'x': f32[9223372036854775807] has 9223372036854775807 elements of 4 bytes "
     "(36893488147419103228 bytes); the limit is 281474976710656 bytes (2^48) per tensor"},
    {"float_literal_beyond_i64", body("  y = add(x, 9.3e18)\n  return y\n", "x: i64[4]"),
     "t.stitch:2:7: error: constant: value 9.3e+18 does not fit i64"},

    // Errors in a later graph are reported there, not in the first.
    {"error_in_second_graph", "graph a(x: f32[4]) {\n  return x\n}\n\ngraph b(x: f32[4]) {\n  y = neg(q)\n  return y\n}\n",
     "t.stitch:6:11: error: undefined value 'q'"},
};

// Names the case in gtest's output instead of dumping its bytes.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class ParserErrors : public testing::TestWithParam<BadInput> {};

TEST_P(ParserErrors, ReportsExactLocationAndMessage) {
  const BadInput& c = GetParam();
  try {
    parse_module(c.source, "t.stitch");
    FAIL() << "parsed without error:\n" << c.source;
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), c.expected) << c.source;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ParserErrors, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

std::string nested_calls(int depth) {
  std::string opens, closes(depth, ')');
  for (int i = 0; i < depth; ++i) opens += "neg(";
  return "graph g(x: f32[4]) {\n  y = " + opens + "x" + closes + "\n  return y\n}\n";
}

TEST(ParserLimits, NestingUpToTheLimitParses) {
  Module m = parse_module(nested_calls(200), "t.stitch");
  EXPECT_EQ(m.graphs[0].nodes().size(), 200u);
}

TEST(ParserLimits, DeeperNestingIsAnErrorNotACrash) {
  try {
    parse_module(nested_calls(100000), "t.stitch");
    FAIL() << "parsed";
  } catch (const UserError& e) {
    // The 201st call: "  y = " then 200 times "neg(".
    EXPECT_EQ(e.formatted(), "t.stitch:2:807: error: calls are nested more than 200 deep");
  }
}

TEST(ParserLimits, NestedListsAreAnError) {
  std::string text = "graph g(x: f32[4]) {\n  y = reduce_sum(x, axes=" + std::string(100000, '[');
  try {
    parse_module(text, "t.stitch");
    FAIL() << "parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), "t.stitch:2:27: error: expected a number or a symbol in the list, got '['");
  }
}

TEST(ParserFiles, MissingFileNamesThePath) {
  try {
    parse_file("/nonexistent/dir/model.stitch");
    FAIL() << "opened";
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), "/nonexistent/dir/model.stitch: error: cannot open file");
  }
}

TEST(ParserFiles, DirectoryIsAnError) {
  try {
    parse_file(STITCH_SOURCE_DIR "/tests");
    FAIL() << "opened";
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), STITCH_SOURCE_DIR "/tests: error: is a directory, not a file");
  }
}

TEST(ParserFiles, ErrorsNameTheFile) {
  try {
    parse_module("graph g(x: f32[4]) {\n  return y\n}\n", "dir/model.stitch");
    FAIL() << "parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.formatted(), "dir/model.stitch:2:10: error: undefined value 'y'");
  }
}

}  // namespace
}  // namespace stitch

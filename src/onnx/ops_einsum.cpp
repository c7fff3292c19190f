// ONNX Einsum (docs/onnx.md, Ops) as the IR's transposes, sums and dots: the
// operands are contracted left to right, two at a time, each pair as one
// batched dot after moving the batch labels first and the summed labels
// between the free ones. A label repeated within one term (a diagonal) is
// refused; so is a merge of a symbolic dim with another dim of extent > 1.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnx/context.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;
using Labels = std::string;  // one char per axis; '0'.. '9' stand for the dims of "..."

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// One term with "..." replaced by the labels of its dims, aligned from the
// right as numpy broadcasts them ('0' is the outermost of the longest).
Labels expand_term(const std::string& term, int64_t rank, int64_t ellipsis_rank) {
  size_t dots = term.find("...");
  Labels out;
  for (size_t k = 0; k < term.size(); ++k) {
    if (k == dots) {
      // The output's "..." (rank < 0) stands for every ellipsis dim.
      const int64_t count = rank < 0 ? ellipsis_rank : rank - (static_cast<int64_t>(term.size()) - 3);
      if (count < 0) throw UserError(fmt::format("term '{}' has more labels than its operand's rank {}", term, rank));
      for (int64_t d = ellipsis_rank - count; d < ellipsis_rank; ++d) out.push_back(static_cast<char>('0' + d));
      k += 2;
      continue;
    }
    if (!is_label(term[k])) throw UserError(fmt::format("'{}' is not an Einsum label", term[k]));
    out.push_back(term[k]);
  }
  if (rank >= 0 && dots == std::string::npos && static_cast<int64_t>(out.size()) != rank) {
    throw UserError(fmt::format("term '{}' has {} labels for an operand of rank {}", term, out.size(), rank));
  }
  return out;
}

Equation parse(std::string text, const std::vector<int64_t>& ranks) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    throw UserError(fmt::format("equation '{}' has {} terms for {} inputs", text, terms.size(), ranks.size()));
  }
  int64_t ellipsis_rank = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].find("...") != std::string::npos) {
      ellipsis_rank = std::max(ellipsis_rank, ranks[t] - static_cast<int64_t>(terms[t].size()) + 3);
    }
  }
  if (ellipsis_rank > 10) throw UserError("an Einsum ellipsis of more than 10 dims");
  Equation eq;
  for (size_t t = 0; t < terms.size(); ++t) eq.inputs.push_back(expand_term(terms[t], ranks[t], ellipsis_rank));
  for (const Labels& in : eq.inputs) {
    for (char c : in) {
      if (std::count(in.begin(), in.end(), c) > 1) {
        throw UserError(fmt::format("label '{}' repeats within one term (a diagonal), which is not supported", c));
      }
    }
  }
  if (arrow != std::string::npos) {
    eq.output = expand_term(text.substr(arrow + 2), -1, ellipsis_rank);
    return eq;
  }
  // Implicit output: the ellipsis dims, then the labels used once, in order.
  std::map<char, int> uses;
  for (const Labels& in : eq.inputs) {
    for (char c : in) ++uses[c];
  }
  for (int64_t d = 0; d < ellipsis_rank; ++d) eq.output.push_back(static_cast<char>('0' + d));
  for (auto [c, count] : uses) {
    if (count == 1 && is_label(c)) eq.output.push_back(c);
  }
  return eq;
}

// The extent of several dims as one: a static product, or one symbol when the
// rest are 1.
Dim merged(const std::vector<Dim>& dims) {
  int64_t product = 1;
  const Dim* symbol = nullptr;
  for (const Dim& d : dims) {
    if (d.is_static()) {
      product *= d.extent();
    } else if (symbol) {
      throw UserError(fmt::format("Einsum would merge dims {} and {}, which the IR cannot express", symbol->name(),
                                  d.name()));
    } else {
      symbol = &d;
    }
  }
  if (!symbol) return Dim(product);
  if (product != 1) {
    throw UserError(fmt::format("Einsum would merge dim {} with extent {}, which the IR cannot express",
                                symbol->name(), product));
  }
  return *symbol;
}

struct Term {
  ValueId value;
  Labels labels;
};

class Contractor {
 public:
  explicit Contractor(ImportContext& ctx) : ctx_(ctx), b_(ctx.builder()) {}

  Dim dim(const Term& t, char c) const { return ctx_.type(t.value).shape[t.labels.find(c)]; }

  // Sums away the labels of t that `keep` lacks.
  Term sum_out(Term t, const Labels& keep) {
    std::vector<int64_t> axes;
    Labels rest;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      if (keep.find(t.labels[d]) == std::string::npos) {
        axes.push_back(static_cast<int64_t>(d));
      } else {
        rest.push_back(t.labels[d]);
      }
    }
    if (axes.empty()) return t;
    return {b_.reduce(OpKind::ReduceSum, t.value, axes, false), rest};
  }

  Term arrange(Term t, const Labels& order) {
    if (t.labels == order) return t;
    std::vector<int64_t> perm;
    for (char c : order) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
    return {b_.transpose(t.value, perm), order};
  }

  // The product of a and b keeping the labels in `keep`.
  Term contract(Term a, Term b, const Labels& keep) {
    a = sum_out(a, keep + b.labels);
    b = sum_out(b, keep + a.labels);
    Labels batch, summed, free_a, free_b;
    for (char c : a.labels) {
      bool in_b = b.labels.find(c) != std::string::npos;
      bool kept = keep.find(c) != std::string::npos;
      (in_b ? (kept ? batch : summed) : free_a).push_back(c);
    }
    for (char c : b.labels) {
      if (a.labels.find(c) == std::string::npos) free_b.push_back(c);
    }
    for (char c : batch + summed) {
      if (dim(a, c) != dim(b, c)) {
        throw UserError(fmt::format("label '{}' has extent {} in one operand and {} in the other", c, dim(a, c).str(),
                                    dim(b, c).str()));
      }
    }
    a = arrange(a, batch + free_a + summed);
    b = arrange(b, batch + summed + free_b);
    Shape batch_shape;
    for (char c : batch) batch_shape.push_back(dim(a, c));
    auto dims_of = [&](const Term& t, const Labels& ls) {
      std::vector<Dim> out;
      for (char c : ls) out.push_back(dim(t, c));
      return out;
    };
    Shape a3 = batch_shape, b3 = batch_shape;
    a3.push_back(merged(dims_of(a, free_a)));
    a3.push_back(merged(dims_of(a, summed)));
    b3.push_back(merged(dims_of(b, summed)));
    b3.push_back(merged(dims_of(b, free_b)));
    Shape result = batch_shape;
    for (Dim d : dims_of(a, free_a)) result.push_back(d);
    for (Dim d : dims_of(b, free_b)) result.push_back(d);
    ValueId av = ctx_.type(a.value).shape == a3 ? a.value : b_.reshape(a.value, a3);
    ValueId bv = ctx_.type(b.value).shape == b3 ? b.value : b_.reshape(b.value, b3);
    ValueId y = b_.op(OpKind::Dot, {av, bv});
    if (ctx_.type(y).shape != result) y = b_.reshape(y, result);
    return {y, batch + free_a + free_b};
  }

 private:
  ImportContext& ctx_;
  GraphBuilder& b_;
};

void add_einsum(ImportContext& ctx, const NodeProto& n) {
  ImportContext::require_inputs(n, 1, 1 << 10);
  std::vector<Term> terms;
  std::vector<int64_t> ranks;
  for (int i = 0; i < n.input_size(); ++i) {
    terms.push_back({ctx.input(n, i), ""});
    ranks.push_back(ctx.rank(terms.back().value));
  }
  const std::string text = ImportContext::string_attr(n, "equation", "");
  if (text.empty()) throw UserError("Einsum without an equation");
  Equation eq = parse(text, ranks);
  for (size_t t = 0; t < terms.size(); ++t) terms[t].labels = eq.inputs[t];
  for (char c : eq.output) {
    bool found = std::any_of(eq.inputs.begin(), eq.inputs.end(),
                             [c](const Labels& in) { return in.find(c) != std::string::npos; });
    if (!found || std::count(eq.output.begin(), eq.output.end(), c) > 1) {
      throw UserError(fmt::format("output label '{}' of '{}' is in no input or repeats", c, text));
    }
  }
  Contractor con(ctx);
  Term acc = terms[0];
  for (size_t t = 1; t < terms.size(); ++t) {
    Labels keep = eq.output;
    for (size_t later = t + 1; later < terms.size(); ++later) keep += terms[later].labels;
    acc = con.contract(acc, terms[t], keep);
  }
  acc = con.arrange(con.sum_out(acc, eq.output), eq.output);
  ctx.define(n, acc.value);
}

}  // namespace

void register_einsum_op(ConverterTable& table) { table["Einsum"] = add_einsum; }

}  // namespace stitch::onnx_import

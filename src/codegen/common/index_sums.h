// The canonical sums index simplification works on (index_simplify.h): an
// i64 index as a sum of coefficient times atom plus a constant, where an atom
// is a leaf expression or a digit (base / lo) % (hi / lo) of another sum, with
// value bounds and the rewrites between digits (division, remainder, merging
// adjacent digits). Private to src/codegen/common.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kir/kernel.h"

namespace stitch::codegen::common::index_sums {

using kir::Expr;

using Wide = __int128;
constexpr Wide kInf = Wide{1} << 100;

// A coefficient or literal that left i64: the expression is kept as written.
struct GiveUp {};

inline int64_t checked(Wide v) {
  if (v > INT64_MAX || v < INT64_MIN) throw GiveUp{};
  return static_cast<int64_t>(v);
}

// Inclusive bounds; kInf / -kInf when unknown in that direction.
struct Bounds {
  Wide lo = -kInf;
  Wide hi = kInf;
  bool nonneg() const { return lo >= 0; }
};

inline Wide clamp(Wide v) { return std::max(-kInf, std::min(kInf, v)); }

struct Sum;
using SumPtr = std::shared_ptr<const Sum>;

// A leaf (an expression the rewrite does not look into), or a digit of a sum:
// (base / lo) % (hi / lo), or base / lo when hi is 0. A digit's base is never
// negative and lo divides hi.
struct Atom {
  Expr leaf;
  Bounds leaf_bounds;
  SumPtr base;
  int64_t lo = 1;
  int64_t hi = 0;
  std::string key;  // equal keys: equal values
  bool digit() const { return base != nullptr; }
};

struct Term {
  int64_t coef = 0;
  Atom atom;
};

// sum of coef * atom, plus a constant.
struct Sum {
  std::map<std::string, Term> terms;
  int64_t constant = 0;

  std::string key() const {
    std::string k;
    for (const auto& [name, t] : terms) k += fmt::format("{}*{}+", t.coef, name);
    return k + std::to_string(constant);
  }
  const Atom* single_atom() const {
    if (terms.size() != 1 || constant != 0 || terms.begin()->second.coef != 1) return nullptr;
    return &terms.begin()->second.atom;
  }
};

// s = c * x + r with 0 <= r < c (factor_below).
struct Factored {
  int64_t c = 0;
  Sum x, r;
};

// Bounds an enclosing `if` proved, by atom key (the simplifier's push_facts):
// a piece version's guard on its block's columns; null: none.
extern thread_local const std::vector<std::map<std::string, Bounds>>* tl_facts;

// Building sums: a constant, one more term (a coefficient that leaves i64
// throws GiveUp), a sum times k, and a + b with adjacent digits merged.
Sum constant_sum(int64_t c);
void add_term(Sum& s, int64_t coef, const Atom& atom);
Sum scaled(const Sum& s, int64_t k);
Sum add(Sum a, const Sum& b);

// Value bounds: of a sum, of an atom (with the facts in tl_facts), and of an
// atom from its own extents alone.
Bounds sum_bounds(const Sum& s);
Bounds atom_bounds(const Atom& a);
Bounds atom_bounds_unproved(const Atom& a);

// Division and remainder of a non-negative sum by d > 0, as digits where the
// identities of index_simplify.h allow (comments on each in index_sums.cpp):
// the digit itself, s = d q + r (split, split_constant_low), whether 0 <= s < d,
// s = c x + r with 0 <= r < c (factor_below), s / d, s % d, a digit's place
// over another base, and one merge of two adjacent digits (true if one joined).
Sum make_digit(const Sum& base, int64_t lo, int64_t hi);
std::pair<Sum, Sum> split(const Sum& s, int64_t d);
std::pair<Sum, Sum> split_constant_low(const Sum& s, int64_t d);
bool below(const Sum& s, int64_t d);
std::optional<Factored> factor_below(const Sum& s, int64_t d);
Sum make_div(const Sum& s, int64_t d);
Sum make_rem(const Sum& s, int64_t d);
std::optional<std::pair<int64_t, int64_t>> place_over(const Atom& a, const Sum& base);
bool merge_one(Sum& s);

}  // namespace stitch::codegen::common::index_sums

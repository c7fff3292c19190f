#include "codegen/common/index_sums.h"

#include <numeric>

namespace stitch::codegen::common::index_sums {

Sum constant_sum(int64_t c) {
  Sum s;
  s.constant = c;
  return s;
}

void add_term(Sum& s, int64_t coef, const Atom& atom) {
  auto [it, fresh] = s.terms.try_emplace(atom.key, Term{0, atom});
  it->second.coef = checked(Wide{it->second.coef} + coef);
  if (it->second.coef == 0) s.terms.erase(it);
}

Sum scaled(const Sum& s, int64_t k) {
  Sum out;
  if (k == 0) return out;
  for (const auto& [key, t] : s.terms) add_term(out, checked(Wide{t.coef} * k), t.atom);
  out.constant = checked(Wide{s.constant} * k);
  return out;
}

Bounds sum_bounds(const Sum& s) {
  Bounds b{s.constant, s.constant};
  for (const auto& [key, t] : s.terms) {
    const Bounds ab = atom_bounds(t.atom);
    const Wide x = clamp(ab.lo * t.coef), y = clamp(ab.hi * t.coef);
    b.lo = clamp(b.lo + std::min(x, y));
    b.hi = clamp(b.hi + std::max(x, y));
  }
  return b;
}

thread_local const std::vector<std::map<std::string, Bounds>>* tl_facts = nullptr;

Bounds atom_bounds_unproved(const Atom& a) {
  if (!a.digit()) return a.leaf_bounds;
  const Bounds base = sum_bounds(*a.base);
  Bounds q{base.lo / a.lo, base.hi >= kInf ? kInf : base.hi / a.lo};
  if (a.hi == 0) return q;
  const Wide n = a.hi / a.lo;
  return q.hi < n ? q : Bounds{0, n - 1};
}

Bounds atom_bounds(const Atom& a) {
  Bounds b = atom_bounds_unproved(a);
  if (tl_facts) {
    for (const std::map<std::string, Bounds>& facts : *tl_facts) {
      if (auto it = facts.find(a.key); it != facts.end()) {
        b.lo = std::max(b.lo, it->second.lo);
        b.hi = std::min(b.hi, it->second.hi);
      }
    }
  }
  return b;
}

// The digit (base / lo) % (hi / lo), normalised: 0 below lo, no remainder
// where the base stays under hi, and the base itself for lo 1 without one.
Sum make_digit(const Sum& base, int64_t lo, int64_t hi) {
  const Bounds b = sum_bounds(base);
  if (b.hi < lo) return {};
  if (hi != 0 && b.hi < hi) hi = 0;
  if (lo == 1 && hi == 0) return base;
  Atom a;
  a.base = std::make_shared<const Sum>(base);
  a.lo = lo;
  a.hi = hi;
  a.key = fmt::format("D({};{};{})", base.key(), lo, hi);
  Sum s;
  add_term(s, 1, a);
  return s;
}

// s = d * q + r, where q takes the terms whose coefficients d divides and r
// the rest, with a constant in [0, d).
std::pair<Sum, Sum> split(const Sum& s, int64_t d) {
  Sum q, r;
  for (const auto& [key, t] : s.terms) {
    if (t.coef % d == 0) {
      add_term(q, t.coef / d, t.atom);
    } else {
      add_term(r, t.coef, t.atom);
    }
  }
  int64_t cq = s.constant / d, cr = s.constant % d;
  if (cr < 0) cr += d, cq -= 1;
  q.constant = cq;
  r.constant = cr;
  return {q, r};
}

// s = d * q + r as split makes it, but with all of s's constant in r: where
// r's terms are bounded below by a negative constant's offset (4 D - 12 for D
// proved at least 3), r may stay in [0, d) only with the constant.
std::pair<Sum, Sum> split_constant_low(const Sum& s, int64_t d) {
  auto [q, r] = split(s, d);
  r.constant = s.constant;
  q.constant = 0;
  return {q, r};
}

// 0 <= s < d.
bool below(const Sum& s, int64_t d) {
  const Bounds b = sum_bounds(s);
  return b.nonneg() && b.hi < d;
}

// s = c * x + r with 0 <= r < c for a c that divides d and is more than 1
// (the largest such c among the gcds of d and s's coefficients): then
// s / d = x / (d / c) and s % d = c * (x % (d / c)) + r, for non-negative x.
// A row of 128 in a [32, 128, 128] tensor: (128 row + col) / 16384 = row / 128.

std::optional<Factored> factor_below(const Sum& s, int64_t d) {
  std::vector<int64_t> candidates;
  for (const auto& [key, t] : s.terms) {
    const int64_t c = std::gcd(d, t.coef < 0 ? -t.coef : t.coef);
    if (c > 1 && c < d) candidates.push_back(c);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t c : candidates) {
    auto [x, r] = split(s, c);
    if (below(r, c) && sum_bounds(x).nonneg()) return Factored{c, x, r};
  }
  return std::nullopt;
}

// s / d for a non-negative s and d > 0.
Sum make_div(const Sum& s, int64_t d) {
  if (d == 1) return s;
  if (const Atom* a = s.single_atom(); a && a->digit()) {
    if (a->hi == 0) return make_digit(*a->base, checked(Wide{a->lo} * d), 0);
    const int64_t n = a->hi / a->lo;
    if (d >= n) return {};
    if (n % d == 0) return make_digit(*a->base, checked(Wide{a->lo} * d), a->hi);
  }
  // Only where the rest stays below d: a partial split would give digits of
  // different bases that no longer join.
  auto [q, r] = split(s, d);
  if (below(r, d) && sum_bounds(q).nonneg()) return q;
  if (auto [q2, r2] = split_constant_low(s, d); below(r2, d) && sum_bounds(q2).nonneg()) return q2;
  if (std::optional<Factored> f = factor_below(s, d)) return make_div(f->x, d / f->c);
  return make_digit(s, d, 0);
}

// s % d for a non-negative s and d > 0.
Sum make_rem(const Sum& s, int64_t d) {
  if (d == 1) return {};
  if (auto [q, r] = split(s, d); below(r, d) && sum_bounds(q).nonneg()) return r;
  if (auto [q, r] = split_constant_low(s, d); below(r, d) && sum_bounds(q).nonneg()) return r;
  if (const Atom* a = s.single_atom(); a && a->digit()) {
    const int64_t n = a->hi == 0 ? 0 : a->hi / a->lo;
    if (n != 0 && d % n == 0) return s;
    if (n == 0 || n % d == 0) return make_digit(*a->base, a->lo, checked(Wide{a->lo} * d));
  }
  if (std::optional<Factored> f = factor_below(s, d)) return add(scaled(make_rem(f->x, d / f->c), f->c), f->r);
  return make_digit(s, 1, d);
}

// A digit's place over `base` instead of its own base: where base = c * b + r
// with 0 <= r < c (b the digit's base; make_div and make_rem factor a base so),
// (b / lo) % (hi / lo) = (base / (c lo)) % (hi / lo).
std::optional<std::pair<int64_t, int64_t>> place_over(const Atom& a, const Sum& base) {
  if (a.base->key() == base.key()) return std::pair{a.lo, a.hi};
  if (a.base->terms.empty()) return std::nullopt;
  const auto& [key, t] = *a.base->terms.begin();
  auto it = base.terms.find(key);
  if (it == base.terms.end() || it->second.coef % t.coef != 0 || it->second.coef / t.coef <= 1) return std::nullopt;
  const int64_t c = it->second.coef / t.coef;
  auto [x, r] = split(base, c);
  if (x.key() != a.base->key() || !below(r, c)) return std::nullopt;
  return std::pair{checked(Wide{a.lo} * c), a.hi == 0 ? int64_t{0} : checked(Wide{a.hi} * c)};
}

// Joins c1 * (x / lo1) % (hi1 / lo1) and c2 * (x / hi1) % (hi2 / hi1) into
// c1 * (x / lo1) % (hi2 / lo1) where c2 * lo1 = c1 * hi1: adjacent digits of
// one mixed-radix number, the second possibly over a factor of x
// (place_over). Repeats until none join.
bool merge_one(Sum& s) {
  for (const auto& [k1, t1] : s.terms) {
    if (!t1.atom.digit() || t1.atom.hi == 0) continue;
    for (const auto& [k2, t2] : s.terms) {
      if (!t2.atom.digit() || k1 == k2) continue;
      const std::optional<std::pair<int64_t, int64_t>> place = place_over(t2.atom, *t1.atom.base);
      if (!place || place->first != t1.atom.hi) continue;
      if (Wide{t2.coef} * t1.atom.lo != Wide{t1.coef} * t1.atom.hi) continue;
      const Sum joined = scaled(make_digit(*t1.atom.base, t1.atom.lo, place->second), t1.coef);
      const std::string a = k1, b = k2;
      s.terms.erase(a);
      s.terms.erase(b);
      s = add(std::move(s), joined);
      return true;
    }
  }
  return false;
}

Sum add(Sum a, const Sum& b) {
  for (const auto& [key, t] : b.terms) add_term(a, t.coef, t.atom);
  a.constant = checked(Wide{a.constant} + b.constant);
  while (merge_one(a)) {
  }
  return a;
}

}  // namespace stitch::codegen::common::index_sums

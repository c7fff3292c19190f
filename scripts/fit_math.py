#!/usr/bin/env python3
"""Reproduces the coefficients of Stitch's own CPU math (docs/cpu-backend.md,
Vector math), printed with 22 significant digits:

    python3 scripts/fit_math.py tanh-poly     # P of stitch_tanh's |x| < 0.625 branch, float and double
    python3 scripts/fit_math.py erf-rational  # the earlier stitch_erf: P / Q evaluated in double
    python3 scripts/fit_math.py erf-split     # stitch_erf on float: S below 1, P / Q of erfc above
    python3 scripts/fit_math.py rational F NP NQ HI   # any x P(x^2) / Q(x^2) fit of F in {tanh, erf} on [0, HI]

Needs mpmath (Debian's python3-mpmath); a developer's tool, not part of the
build or the tests, which check the functions' accuracy themselves.
"""
import sys

from mpmath import cos, erf, erfc, lu_solve, matrix, mp, mpf, pi, sqrt, tanh

mp.dps = 40


def tanh_poly():
    """Chebyshev fits of (tanh(a) - a) / a^3 over a^2 in [0, 0.625^2]."""
    def g(z):
        if z == 0:
            return mpf(-1) / 3
        a = sqrt(z)
        return (tanh(a) - a) / a ** 3
    for label, n in (("float", 6), ("double", 13)):
        c, err = mp.chebyfit(g, [0, mpf("0.625") ** 2], n, error=True)
        print(f"{label}: degree {n - 1}, relative error of the fit {mp.nstr(err * mpf('0.625') ** 2 * 3, 3)}")
        print("  P (highest degree first):", ", ".join(mp.nstr(x, 22) for x in c))


def loeb_fit(ts, ys, np_, nq, iterations, relative, reweight):
    """y ~ P(t) / Q(t), Q(0) = 1, over the nodes ts: linearised weighted least squares
    of the relative (or absolute) error, iterated (Loeb's scheme), the weights updated
    by reweight(weights, errors, worst) toward the minimax fit. Returns (max error, P, Q),
    lowest degree first."""
    q_prev = [mpf(1)] * len(ts)
    weights = [mpf(1)] * len(ts)
    best = None
    n = np_ + 1 + nq
    for _ in range(iterations):
        a, b = matrix(n, n), matrix(n, 1)
        for t, y, qp, w in zip(ts, ys, q_prev, weights):
            row = [t ** i for i in range(np_ + 1)] + [-y * t ** j for j in range(1, nq + 1)]
            s = w / (qp * y) ** 2 if relative else w / qp ** 2
            for i in range(n):
                b[i] += s * row[i] * y
                for j in range(n):
                    a[i, j] += s * row[i] * row[j]
        c = lu_solve(a, b)
        p = [c[i] for i in range(np_ + 1)]
        q = [mpf(1)] + [c[np_ + 1 + j] for j in range(nq)]
        q_prev = [sum(q[j] * t ** j for j in range(nq + 1)) for t in ts]
        errors = [abs(sum(p[i] * t ** i for i in range(np_ + 1)) / qv - y) / (abs(y) if relative else 1)
                  for t, y, qv in zip(ts, ys, q_prev)]
        worst = max(errors)
        if best is None or worst < best[0]:
            best = (worst, p, q)
        weights = reweight(weights, errors, worst)
    return best


def chebyshev_nodes(lo, hi, nodes):
    return [(lo + hi) / 2 + (hi - lo) / 2 * cos(pi * (2 * k + 1) / (2 * nodes)) for k in range(nodes)]


def rational(f, np_, nq, hi, nodes=400, iterations=30):
    """f(x) ~ x P(z) / Q(z), z = x^2, Q(0) = 1, on [0, hi], by relative error, with
    Lawson-style reweighting. Returns (max relative error, P, Q)."""
    xs = chebyshev_nodes(mpf(0), hi, nodes)
    return loeb_fit([x * x for x in xs], [f(x) / x for x in xs], np_, nq, iterations, True,
                    lambda ws, es, worst: [w * (e / worst) ** mpf("0.3") + mpf("1e-30") for w, e in zip(ws, es)])


def print_rational(name, np_, nq, hi):
    worst, p, q = rational(tanh if name == "tanh" else erf, np_, nq, mpf(hi))
    print(f"{name}: x P(x^2) / Q(x^2) on [0, {hi}], P of degree {np_}, Q of degree {nq}: "
          f"relative error {mp.nstr(worst, 3)}")
    print("  P (lowest degree first):", ", ".join(mp.nstr(v, 22) for v in p))
    print("  Q (lowest degree first):", ", ".join(mp.nstr(v, 22) for v in q))


def absolute_rational(f, np_, nq, lo, hi, nodes=300, iterations=40):
    """f(w) ~ P(w) / Q(w), Q(0) = 1, on [lo, hi], by absolute error, each weight scaled
    by its error over the worst and the weights renormalised. Returns (max absolute
    error, P, Q), lowest degree first."""
    ws = chebyshev_nodes(lo, hi, nodes)

    def reweight(weights, errors, worst):
        scaled = [w * e / worst * nodes for w, e in zip(weights, errors)]
        total = sum(scaled)
        return [w / total * nodes for w in scaled]
    return loeb_fit(ws, [f(w) for w in ws], np_, nq, iterations, False, reweight)


def erf_split():
    """stitch_erf on float: |x| < 1, x (c0 + z S(z)) with z = x^2 and S a Chebyshev
    fit of (erf(x)/x - c0)/z over z in [0, 1]; 1 <= |x| <= 3.92, 1 - P(w)/Q(w) with
    w = |x| - 1 and P/Q an absolute-error fit of erfc(1 + w) over w in [0, 2.92]."""
    c0 = 2 / sqrt(pi)

    def s_of(z):
        return (erf(sqrt(z)) / sqrt(z) - c0) / z if z > 0 else -c0 / 3
    c, err = mp.chebyfit(s_of, [0, 1], 7, error=True)
    print(f"S: degree 6, absolute error of the fit {mp.nstr(err, 3)}")
    print("  S (highest degree first):", ", ".join(mp.nstr(v, 22) for v in c))
    worst, p, q = absolute_rational(lambda w: erfc(1 + w), 5, 6, mpf(0), mpf("2.92"))
    print(f"erfc(1 + w) ~ P(w) / Q(w), P of degree 5, Q of degree 6: absolute error {mp.nstr(worst, 3)}")
    print("  P (highest degree first):", ", ".join(mp.nstr(v, 22) for v in reversed(p)))
    print("  Q (highest degree first):", ", ".join(mp.nstr(v, 22) for v in reversed(q)))


def main(argv):
    if argv[:1] == ["tanh-poly"]:
        tanh_poly()
    elif argv[:1] == ["erf-rational"]:
        print_rational("erf", 6, 5, "4")
    elif argv[:1] == ["erf-split"]:
        erf_split()
    elif argv[:1] == ["rational"] and len(argv) == 5 and argv[1] in ("tanh", "erf"):
        print_rational(argv[1], int(argv[2]), int(argv[3]), argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Gaussian naive Bayes (fit, then predict) written against PyKokkos's API
(docs/pykokkos.md), as bench/pyfuser/subjects.stitch has it: the class means and
variances (MDRangePolicy over classes x features), then scikit-learn's joint
log-likelihood class by class as its NumPy computes it, each NumPy operation one
workunit writing a new temporary view, and the most likely class per sample.

`pk.parallel_reduce` returns its value, as PyKokkos's does: it runs only what that value
depends on (the variances), so the calls of every class and the prediction still fuse,
as in the C++ program (bench/pyfuser/pyfuser_bench.cpp), which passes the sum on as a
future.

    .venv/bin/python examples/pykokkos/gaussian_nb.py [samples] [features] [classes] [mode]
"""

import math
import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def class_mean(c: int, f: int, labels: pk.View1D[pk.int64], x: pk.View2D[pk.double], mean: pk.View2D[pk.double]):
    s = 0.0
    count = 0.0
    for i in range(x.extent(0)):
        if labels[i] == c:
            s += x[i][f]
            count += 1.0
    mean[c][f] = s / count


@pk.workunit
def class_variance(c: int, f: int, labels: pk.View1D[pk.int64], x: pk.View2D[pk.double],
                   mean: pk.View2D[pk.double], var: pk.View2D[pk.double]):
    s = 0.0
    count = 0.0
    for i in range(x.extent(0)):
        if labels[i] == c:
            dev = x[i][f] - mean[c][f]
            s += dev * dev
            count += 1.0
    var[c][f] = s / count + 1e-9


@pk.workunit
def log_normaliser(f: int, acc: pk.Acc[pk.double], c: int, var: pk.View2D[pk.double]):
    acc += math.log(2.0 * math.pi * var[c][f])


@pk.workunit
def center(i: int, f: int, c: int, x: pk.View2D[pk.double], mean: pk.View2D[pk.double], d: pk.View2D[pk.double]):
    d[i][f] = x[i][f] - mean[c][f]


@pk.workunit
def square(i: int, f: int, x: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][f] = x[i][f] * x[i][f]


@pk.workunit
def divide_by_variance(i: int, f: int, c: int, x: pk.View2D[pk.double], var: pk.View2D[pk.double],
                       z: pk.View2D[pk.double]):
    z[i][f] = x[i][f] / var[c][f]


@pk.workunit
def row_sum(i: int, x: pk.View2D[pk.double], z: pk.View1D[pk.double]):
    s = 0.0
    for f in range(x.extent(1)):
        s += x[i][f]
    z[i] = s


@pk.workunit
def joint_log_likelihood(i: int, c: int, lognorm: float, prior: pk.View1D[pk.double], s: pk.View1D[pk.double],
                         jll: pk.View2D[pk.double]):
    jll[i][c] = math.log(prior[c]) - 0.5 * lognorm - 0.5 * s[i]


@pk.workunit
def predict(i: int, jll: pk.View2D[pk.double], pred: pk.View1D[pk.int64]):
    best = 0
    for c in range(jll.extent(1)):
        if jll[i][c] > jll[i][best]:
            best = c
    pred[i] = best


def inputs(samples, features, classes):
    labels = np.arange(samples, dtype=np.int64) * 7 % classes
    x = np.random.default_rng(18).random((samples, features))
    return labels, x, np.full(classes, 1.0 / classes)


def setup(samples, features, classes):
    labels, x, prior = inputs(samples, features, classes)
    views = (pk.View([samples], pk.int64), pk.View([samples, features], pk.double), pk.View([classes], pk.double))
    for view, array in zip(views, (labels, x, prior)):
        view[:] = array
    return views


def program(labels, x, prior):
    samples, features = x.shape
    classes = prior.shape[0]
    mean, var = pk.View([classes, features], pk.double), pk.View([classes, features], pk.double)
    jll, pred = pk.View([samples, classes], pk.double), pk.View([samples], pk.int64)
    fit = pk.MDRangePolicy([0, 0], [classes, features])
    pk.parallel_for("mean", fit, class_mean, labels=labels, x=x, mean=mean)
    pk.parallel_for("variance", fit, class_variance, labels=labels, x=x, mean=mean, var=var)
    every = pk.MDRangePolicy([0, 0], [samples, features])
    for c in range(classes):
        lognorm = pk.parallel_reduce("log normaliser", features, log_normaliser, c=c, var=var)
        d = pk.View([samples, features], pk.double)
        pk.parallel_for("x - mean", every, center, c=c, x=x, mean=mean, d=d)
        sq = pk.View([samples, features], pk.double)
        pk.parallel_for("** 2", every, square, x=d, z=sq)
        q = pk.View([samples, features], pk.double)
        pk.parallel_for("/ var", every, divide_by_variance, c=c, x=sq, var=var, z=q)
        s = pk.View([samples], pk.double)
        pk.parallel_for("sum", samples, row_sum, x=q, z=s)
        pk.parallel_for("jll", samples, joint_log_likelihood, c=c, lognorm=lognorm, prior=prior, s=s, jll=jll)
    pk.parallel_for("predict", samples, predict, jll=jll, pred=pred)
    pk.fence()  # runs every pending call together; reading one view runs only what it depends on
    return np.asarray(pred), np.asarray(jll), np.asarray(mean), np.asarray(var)


def numpy_program(labels, x, prior):
    classes = prior.shape[0]
    mean = np.stack([x[labels == c].mean(axis=0) for c in range(classes)])
    var = np.stack([((x[labels == c] - mean[c]) ** 2).mean(axis=0) for c in range(classes)]) + 1e-9
    jll = np.empty((x.shape[0], classes))
    for c in range(classes):
        lognorm = np.sum(np.log(2.0 * np.pi * var[c]))
        jll[:, c] = np.log(prior[c]) - 0.5 * lognorm - 0.5 * np.sum((x - mean[c]) ** 2 / var[c], axis=1)
    return np.argmax(jll, axis=1), jll, mean, var


def run(samples, features, classes):
    return program(*setup(samples, features, classes))


def reference(samples, features, classes):
    return numpy_program(*inputs(samples, features, classes))


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    features = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    classes = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    pk.set_mode(sys.argv[4] if len(sys.argv) > 4 else "fused")
    timer = pk.Timer()
    got = run(samples, features, classes)
    seconds = timer.seconds()
    want = reference(samples, features, classes)
    np.testing.assert_array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=1e-10)
    print(f"gaussian_nb samples={samples} features={features} classes={classes}: {seconds * 1e3:.1f} ms "
          f"(compiles included), {pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()

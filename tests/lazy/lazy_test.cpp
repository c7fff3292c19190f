// Lazy arrays and fused user kernels (docs/lazy.md): every program runs three
// ways (fused, one kernel per call, and the reference interpreter call by
// call) and must give the same arrays; hazards are built on purpose.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "lazy/index_safety.h"
#include "stitch/lazy.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

constexpr const char* kKernels = R"(
kernel scale(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i]
}
kernel add(x: f32[n], y: f32[n], z: f32[n]) over i < n {
  z[i] = x[i] + y[i]
}
kernel shift_read(x: f32[n], y: f32[n]) over i < n - 1 {
  y[i] = x[i + 1]
}
kernel fill(x: f32[n], v: f32) over i < n {
  x[i] = v
}
kernel fill_next(x: f32[n], v: f32) over i < n - 1 {
  x[i + 1] = v
}
kernel jacobi(a: f32[n], b: f32[n]) over i < n - 2 {
  b[i + 1] = 0.25 * (a[i] + 2 * a[i + 1] + a[i + 2])
}
kernel dot(x: f32[n], y: f32[n]) -> sum f32 over i < n {
  yield x[i] * y[i]
}
kernel axpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] += a * x[i]
}
kernel rowscale(x: f32[n, m], s: f32[n]) over i < n, j < m {
  x[i, j] *= s[i]
}
kernel scale2(a: f32, x: f32[n, m], y: f32[n, m]) over i < n, j < m {
  y[i, j] = a * x[i, j]
}
kernel gather(idx: i64[n], x: f32[m], y: f32[n]) over i < n {
  y[i] = x[idx[i]]
}
kernel copy_head(x: f32[n], y: f32[n]) over i < n - 1 {
  y[i] = x[i]
}
kernel rowsum_into(t: f32[n, m], x: f32[n, m]) over i < n, j < m {
  x[i, j] = t[i, j] + x[i, j]
}
kernel colmax(x: f32[n, m]) -> max f32 over i < n, j < m {
  yield x[i, j]
}
kernel rowtotal(x: f32[n, m], s: f32[n]) over i < n {
  let t: f32 = 0
  for j < m {
    t += x[i, j]
  }
  s[i] = t
}
kernel set_first(x: f32[n, m], v: f32) over i < n {
  x[i, 0] = v
}
kernel rowtotal_shifted(x: f32[n, m], s: f32[n]) over i < n {
  let t: f32 = 0
  for j < m - 1 {
    t += x[i, j + 1]
  }
  s[i] = t
}
kernel shift_cols(x: f32[n, m], y: f32[n, m]) over i < n, j < m - 1 {
  y[i, j] = x[i, j + 1]
}
kernel colsum(x: f32[n, m], s: f32[m]) over j < m {
  let t: f32 = 0
  for i < n {
    t += x[i, j]
  }
  s[j] = t
}
kernel rowmax(x: f32[n, m]) -> max f32 over i < n, j < m {
  yield x[i, j] * 2.0
}
)";


struct Outcome {
  std::vector<Tensor> arrays;
  std::vector<double> scalars;
  LazyStats stats;
};

using Program = std::function<void(LazyRuntime&, std::vector<Array>&, std::vector<Scalar>&)>;

class Lazy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() / ("stitch-lazy-" + std::to_string(::getpid())));
    k_ = new std::map<std::string, KernelRef>(share_kernels(parse_module(kKernels, "lazy_test.stitch")));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete k_;
  }

  // The suite's options: one kernel cache for every runtime of the suite.
  static LazyOptions options(LazyOptions::Mode mode = LazyOptions::Mode::Fused) {
    LazyOptions o;
    o.mode = mode;
    o.cache_dir = (*dir_ / "cache").string();
    return o;
  }

  static Outcome run(LazyOptions::Mode mode, const std::vector<Tensor>& inputs, const Program& program) {
    LazyRuntime rt(options(mode));
    std::vector<Array> arrays;
    for (const Tensor& t : inputs) arrays.push_back(rt.array(t));
    std::vector<Scalar> scalars;
    program(rt, arrays, scalars);
    rt.flush();  // one partition for the whole program, before anything is read
    Outcome o;
    for (const Array& a : arrays) o.arrays.push_back(a.to_host());
    for (const Scalar& s : scalars) o.scalars.push_back(s.to_double());
    o.stats = rt.stats();
    return o;
  }

  // Runs `program` three ways, checks they agree, and returns the fused run's stats.
  static LazyStats check(const std::vector<Tensor>& inputs, const Program& program, double scalar_tolerance = 0,
                         ErrorAllowance allowance = {}) {
    Outcome reference = run(LazyOptions::Mode::Reference, inputs, program);
    Outcome unfused = run(LazyOptions::Mode::Unfused, inputs, program);
    Outcome fused = run(LazyOptions::Mode::Fused, inputs, program);
    Outcome interpreted = run(LazyOptions::Mode::FusedReference, inputs, program);
    EXPECT_EQ(interpreted.stats.kernels, fused.stats.kernels);
    for (size_t i = 0; i < reference.arrays.size(); ++i) {
      TensorComparison u = compare_with_interpreter(unfused.arrays[i], reference.arrays[i], allowance);
      EXPECT_TRUE(u.ok) << "unfused array " << i << ": " << u.describe();
      TensorComparison f = compare_with_interpreter(fused.arrays[i], reference.arrays[i], allowance);
      EXPECT_TRUE(f.ok) << "fused array " << i << ": " << f.describe();
      TensorComparison r = compare_with_interpreter(interpreted.arrays[i], reference.arrays[i], allowance);
      EXPECT_TRUE(r.ok) << "fused (interpreted) array " << i << ": " << r.describe();
    }
    for (size_t i = 0; i < reference.scalars.size(); ++i) {
      EXPECT_NEAR(unfused.scalars[i], reference.scalars[i], scalar_tolerance) << "scalar " << i;
      EXPECT_NEAR(fused.scalars[i], reference.scalars[i], scalar_tolerance) << "scalar " << i;
    }
    EXPECT_EQ(unfused.stats.kernels, unfused.stats.calls);
    return fused.stats;
  }

  static Tensor random(std::vector<int64_t> shape, uint64_t seed) {
    Tensor t(DType::f32, std::move(shape));
    fill_random(t, seed);
    return t;
  }

  static const KernelRef& k(const std::string& name) { return k_->at(name); }

  static std::filesystem::path* dir_;
  static std::map<std::string, KernelRef>* k_;
};

std::filesystem::path* Lazy::dir_ = nullptr;
std::map<std::string, KernelRef>* Lazy::k_ = nullptr;

TEST_F(Lazy, AChainOfElementwiseCallsIsOneKernel) {
  LazyStats s = check({random({1000}, 1), random({1000}, 2), random({1000}, 3)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale"), {2.0, a[0], a[1]});     // y = 2x
    rt.call(k("add"), {a[0], a[1], a[2]});      // z = x + y (reads what scale wrote)
    rt.call(k("axpy"), {0.5, a[2], a[0]});      // x += z/2 (writes what both read)
  });
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, AReadOfANeighboursElementBeforeItIsWrittenIsNotFused) {
  // Write after read across indices: index i reads x[i + 1], which index i + 1 of fill writes.
  LazyStats s = check({random({777}, 4), random({777}, 5)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("shift_read"), {a[0], a[1]});
    rt.call(k("fill"), {a[0], 7.0});
  });
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, WritesOfOneArrayByDifferentIndexFunctionsAreNotFused) {
  // Write after write: fill writes x[i], fill_next x[i + 1].
  LazyStats s = check({random({500}, 6)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("fill"), {a[0], 1.0});
    rt.call(k("fill_next"), {a[0], 2.0});
  });
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, AnArrayPassedTwiceIsOneParameter) {
  LazyStats s = check({random({300}, 7), random({300}, 8)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("add"), {a[0], a[0], a[1]});  // y = x + x
    rt.call(k("add"), {a[1], a[1], a[1]});  // y = y + y, in place
    rt.call(k("scale"), {3.0, a[0], a[0]}); // x = 3x, in place
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, DifferingRangesShareALoopUnderGuards) {
  LazyStats s = check({random({1025}, 9), random({1025}, 10), random({1025}, 11)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale"), {1.5, a[0], a[2]});  // over n
    rt.call(k("jacobi"), {a[2], a[1]});      // over n - 2, reads c[i .. i + 2]: reads written by other indices
  });
  EXPECT_EQ(s.kernels, 2);  // jacobi reads neighbours of what scale writes: unsafe
  LazyStats t = check({random({1025}, 9), random({1025}, 10)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("jacobi"), {a[0], a[1]});      // over n - 2
    rt.call(k("scale"), {1.5, a[0], a[0]});  // over n: writes a, which jacobi read at i .. i + 2
  });
  EXPECT_EQ(t.kernels, 2);
  LazyStats u = check({random({1025}, 9), random({1025}, 10), random({1025}, 12)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("jacobi"), {a[0], a[1]});      // over n - 2
    rt.call(k("scale"), {1.5, a[0], a[2]});  // over n: only reads a
  });
  EXPECT_EQ(u.kernels, 1);
}

TEST_F(Lazy, AReductionFusesWithTheLoopsBeforeItNotWithThoseReadingItsValue) {
  LazyStats s = check(
      {random({4096}, 13), random({4096}, 14)},
      [](LazyRuntime& rt, auto& a, auto& scalars) {
        rt.call(k("scale"), {0.5, a[0], a[1]});
        Scalar d = rt.reduce(k("dot"), {a[1], a[1]});
        rt.call(k("scale"), {d, a[0], a[0]});   // reads the reduction's value: runs after it
        rt.call(k("fill"), {a[1], 1.0});        // independent of the value: joins the scale before it
        scalars.push_back(d);
      },
      1e-2, ErrorAllowance{false, 4096});  // x is scaled by the sum, itself summed in another order
  EXPECT_EQ(s.calls, 4);
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, ReadingOneArrayRunsOnlyWhatItDependsOn) {
  LazyRuntime rt(options());
  Array x = rt.array(random({64}, 15));
  Array y = rt.zeros(DType::f32, {64});
  Array z = rt.zeros(DType::f32, {64});
  rt.call(k("scale"), {2.0, x, y});
  rt.call(k("fill"), {z, 3.0});
  Tensor host_y = y.to_host();
  EXPECT_EQ(rt.stats().partitions, 1);
  EXPECT_EQ(rt.stats().kernels, 1);  // z's fill is still pending
  Tensor host_x = x.to_host();       // nothing pending writes x
  EXPECT_EQ(rt.stats().partitions, 1);
  EXPECT_EQ(z.to_host().get_f64(5), 3.0);
  EXPECT_EQ(rt.stats().kernels, 2);
  EXPECT_EQ(host_y.get_f64(3), 2.0 * host_x.get_f64(3));
}

TEST_F(Lazy, AWriteAfterAPendingReadRunsTheReadFirst) {
  LazyRuntime rt(options());
  Array x = rt.array(random({64}, 16));
  Array y = rt.zeros(DType::f32, {64});
  Tensor x0 = x.to_host();
  rt.call(k("scale"), {2.0, x, y});  // reads x
  rt.call(k("fill"), {x, 9.0});      // then overwrites it
  EXPECT_EQ(x.to_host().get_f64(0), 9.0);
  EXPECT_EQ(y.to_host().get_f64(0), 2.0 * x0.get_f64(0));
}

TEST_F(Lazy, TwoDimensionalRangesAndAMaxReduction) {
  LazyStats s = check({random({37, 129}, 17), random({37}, 18)}, [](LazyRuntime& rt, auto& a, auto& scalars) {
    rt.call(k("rowscale"), {a[0], a[1]});
    scalars.push_back(rt.reduce(k("colmax"), {a[0]}));
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, ALoopOfTheSameCallsHitsThePlanCache) {
  LazyStats s = check({random({2048}, 19), random({2048}, 20), random({2048}, 21)}, [](LazyRuntime& rt, auto& a, auto&) {
    for (int it = 0; it < 10; ++it) {
      rt.call(k("scale"), {0.5, a[0], a[1]});
      rt.call(k("add"), {a[1], a[2], a[2]});
      rt.call(k("axpy"), {0.25, a[2], a[0]});
      (void)a[0].to_host();
    }
  });
  EXPECT_EQ(s.partitions, 10);
  EXPECT_EQ(s.kernels, 10);
  EXPECT_EQ(s.plan_cache_hits, 9);
}

TEST_F(Lazy, AReductionOfAnotherRuntimeRunsThereFirst) {
  LazyRuntime first(options());
  LazyRuntime second(options());
  Array x = first.array(random({16}, 40));
  Scalar d = first.reduce(k("dot"), {x, x});
  Array y = second.zeros(DType::f32, {16});
  second.call(k("fill"), {y, d});
  EXPECT_NEAR(y.to_host().get_f64(3), d.to_double(), 0);
}

TEST_F(Lazy, AHostWriteComesAfterThePendingCallsThatTouchTheArray) {
  LazyRuntime rt(options());
  Array x = rt.array(random({32}, 41));
  Array y = rt.zeros(DType::f32, {32});
  Array z = rt.zeros(DType::f32, {32});
  const Tensor x0 = x.to_host();
  rt.call(k("scale"), {2.0, x, y});     // reads the old x
  rt.call(k("fill"), {z, 5.0});         // touches nothing of x: stays pending
  Tensor ones(DType::f32, {32});
  for (int64_t i = 0; i < 32; ++i) ones.set_f64(i, 1.0);
  x.slice(0, 16).reshape({16}).assign(Tensor(DType::f32, {16}));  // half of x zeroed, after scale read it
  EXPECT_EQ(rt.stats().kernels, 1);
  rt.call(k("scale"), {3.0, x, z});     // reads the new x
  EXPECT_EQ(y.to_host().get_f64(3), 2.0 * x0.get_f64(3));
  EXPECT_EQ(z.to_host().get_f64(3), 0.0);
  EXPECT_EQ(z.to_host().get_f64(20), static_cast<double>(3.0f * static_cast<float>(x0.get_f64(20))));
  x.assign(ones);
  EXPECT_EQ(x.to_host().get_f64(0), 1.0);
  EXPECT_THROW(x.assign(Tensor(DType::f32, {31})), UserError);
}

TEST_F(Lazy, BadCallsAreRefusedWhenRecorded) {
  LazyRuntime rt(options());
  Array x = rt.array(random({8}, 22));
  Array y = rt.zeros(DType::f32, {9});
  EXPECT_THROW(rt.call(k("add"), {x, y, y}), UserError);
  EXPECT_THROW(rt.call(k("dot"), {x, x}), UserError);  // a reduction through call()
  EXPECT_THROW(rt.reduce(k("fill"), {x, 1.0}), UserError);
  EXPECT_EQ(rt.stats().calls, 0);  // zeros() records its fill only before a call that may see it
}

TEST_F(Lazy, DisjointViewsOfOneStorageFuse) {
  LazyStats s = check({random({100}, 23), random({50}, 24)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array lo = a[0].slice(0, 50);
    Array hi = a[0].slice(50, 100);
    rt.call(k("scale"), {2.0, lo, a[1]});  // reads the low half
    rt.call(k("add"), {a[1], a[1], hi});    // writes the high half: a different region
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, OverlappingViewsWithAWriteDoNotFuse) {
  LazyStats s = check({random({100}, 25), random({60}, 26)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array first = a[0].slice(0, 60);
    Array last = a[0].slice(40, 100);       // rows 40..59 are in both
    rt.call(k("scale"), {2.0, first, a[1]});
    rt.call(k("fill"), {last, 3.0});        // index i writes x[40 + i], which index 40 + i of scale read
  });
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, TheSameViewTakenTwiceIsOneArray) {
  LazyStats s = check({random({100}, 27)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("fill"), {a[0].slice(10, 20), 1.0});
    rt.call(k("axpy"), {2.0, a[0].slice(10, 20), a[0].slice(10, 20)});  // in place, index by index
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, AReshapeSeesTheWritesOfTheOriginal) {
  LazyStats s = check({random({4, 25}, 28), random({4}, 29), random({100}, 30)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("rowscale"), {a[0], a[1]});               // over 4 x 25
    rt.call(k("scale"), {0.5, a[0].reshape({100}), a[2]});  // over 100: another rank, another kernel
  });
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, ReadingAViewRunsTheWritesOfOverlappingViews) {
  LazyRuntime rt(options());
  Array x = rt.zeros(DType::f32, {10});
  rt.call(k("fill"), {x, 4.0});
  EXPECT_EQ(x.slice(2, 3).to_host().get_f64(0), 4.0);
  EXPECT_THROW(x.slice(3, 11), UserError);
  EXPECT_THROW(x.reshape({3, 3}), UserError);
}

TEST_F(Lazy, ElementwiseGraphOpsBecomeKernelsThatFuse) {
  LazyStats s = check({random({1000}, 31), random({1000}, 32), random({1000}, 33)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array sum = rt.op("add", {a[0], a[1]});
    Array prod = rt.op("mul", {sum, 0.5});           // a number takes the array's dtype
    rt.call(k("axpy"), {2.0, prod, a[2]});           // a user kernel reading it
    a.push_back(rt.op("exp", {a[2]}));
    a.push_back(rt.op("cast", {a[2]}, {{"to", DType::f64}}));
  }, 0, ErrorAllowance{true, 0});  // exp is vector math in compiled code
  EXPECT_EQ(s.kernels, 1);  // add, mul, axpy, exp and cast in one loop
}

TEST_F(Lazy, OtherGraphOpsRunAsGraphsInOrder) {
  LazyStats s = check({random({6, 8}, 34), random({8}, 35), random({6}, 36)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array shifted = rt.op("add", {a[0], a[1]});                                          // broadcasts: a graph
    Array rows = rt.op("reduce_sum", {shifted}, {{"axes", std::vector<int64_t>{1}}});    // a graph
    rt.call(k("axpy"), {1.0, rows, a[2]});                                               // reads the graph's output
    rt.call(k("fill"), {a[1], 0.0});   // writes what the first graph read: runs after it
    a.push_back(rows);
  }, 0, ErrorAllowance{false, 8});
  EXPECT_EQ(s.calls, 4);
}

TEST_F(Lazy, AGraphAppliedToLazyArrays) {
  Graph softmax = parse_module(R"(
graph softmax_rows(x: f32[N, 33]) {
  y = softmax(x, axis=-1)
  return y
}
)", "g.stitch").graphs[0];
  LazyStats s = check({random({17, 33}, 37)}, [&](LazyRuntime& rt, auto& a, auto&) {
    std::vector<Array> out = rt.apply(softmax, {a[0]});
    rt.call(k("rowscale"), {a[0], rt.zeros(DType::f32, {17})});  // zeroes x after the graph read it
    a.push_back(out[0]);
  }, 0, ErrorAllowance{true, 33});
  EXPECT_EQ(s.calls, 3);  // the graph, zeros' fill, rowscale
  LazyRuntime rt(options());
  Array x = rt.array(random({3, 4}, 38));
  EXPECT_THROW(rt.apply(softmax, {x}), UserError);  // 4 is not 33
  EXPECT_THROW(rt.op("no_such_op", {x}), UserError);
}

// Temporaries (docs/lazy.md, Temporaries in registers): an array no handle,
// view or pending call can read after a fused kernel lives in registers there.
TEST_F(Lazy, ATemporaryDroppedBeforeTheReadLivesInRegisters) {
  LazyStats s = check({random({1000}, 40), random({1000}, 41)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {1000});
    Array u = rt.zeros(DType::f32, {1000});
    rt.call(k("scale"), {2.0, a[0], t});   // t = 2x
    rt.call(k("add"), {t, a[0], u});       // u = t + x
    rt.call(k("scale"), {0.5, u, a[1]});   // y = u / 2; t and u die with the program's scope
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 2);
  EXPECT_EQ(s.checked_kernels, 0);  // every index proven in range
}

TEST_F(Lazy, ATemporaryStillHeldIsStored) {
  LazyStats s = check({random({1000}, 42), random({1000}, 43)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {1000});
    rt.call(k("scale"), {2.0, a[0], t});
    rt.call(k("add"), {t, a[0], a[1]});
    a.push_back(t);  // read at the end (and compared with the reference)
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 0);
}

TEST_F(Lazy, ATemporaryWhoseViewIsHeldIsStored) {
  LazyStats s = check({random({1000}, 44), random({1000}, 45)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {1000});
    a.push_back(t.slice(100, 200));  // only a view survives
    rt.call(k("scale"), {2.0, a[0], t});
    rt.call(k("add"), {t, a[0], a[1]});
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 0);
}

TEST_F(Lazy, ATemporaryALaterPendingCallReadsIsStored) {
  LazyStats s = check({random({1000}, 46), random({1000}, 47), random({1000}, 48)}, [](LazyRuntime& rt, auto& a, auto&) {
    {
      Array t = rt.zeros(DType::f32, {1000});
      rt.call(k("scale"), {2.0, a[0], t});
      rt.call(k("add"), {t, a[0], a[1]});
      rt.call(k("scale"), {3.0, t, a[2]});  // not needed to read a[1]: stays pending
    }
    (void)a[1].to_host();  // runs scale and add only; t's handle is gone, but the pending call reads t
  });
  EXPECT_EQ(s.arrays_in_registers, 0);
}

TEST_F(Lazy, ATemporaryReadBeforeItIsWrittenIsStored) {
  LazyStats s = check({random({1000}, 49), random({1000}, 50)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.array(random({1000}, 57));
    rt.call(k("axpy"), {2.0, a[0], t});  // t += 2x: reads what t held
    rt.call(k("add"), {t, a[0], a[1]});
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 0);
}

TEST_F(Lazy, ZerosIsAFillThatFusesAwayForATemporary) {
  LazyStats s = check({random({1000}, 58), random({1000}, 59)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {1000});
    rt.call(k("axpy"), {2.0, a[0], t});  // t += 2x: reads the zeros
    rt.call(k("add"), {t, a[0], a[1]});
  });
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 1);
}

// zeros() in a trace (docs/lazy.md, Semantics): the fill is recorded before
// the first call touching the storage unless that call overwrites all of it
// before reading; the reference runs every fill, so each case is checked.
TEST_F(Lazy, ZerosOverwrittenWholeByTheFirstCallNeedNoFill) {
  LazyStats s = check({random({300}, 90), random({300}, 91)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {300});
    rt.call(k("scale"), {2.0, a[0], t});  // writes every t[i] first
    rt.call(k("add"), {t, a[0], a[1]});
    a.push_back(t);
  });
  EXPECT_EQ(s.calls, 2);
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, ZerosReadOrWrittenInPartGetTheirFill) {
  LazyStats s = check({random({300}, 92)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {300});
    rt.call(k("copy_head"), {a[0], t});       // over n - 1: t[n - 1] stays 0
    Array u = rt.zeros(DType::f32, {300});
    rt.call(k("scale"), {2.0, a[0].slice(0, 100), u.slice(100, 200)});  // a view: the rest stays 0
    Array v = rt.zeros(DType::f32, {300});
    rt.call(k("add"), {v, a[0], v});          // v read and written by one call
    Array w = rt.zeros(DType::f32, {300});
    rt.call(k("axpy"), {1.0, a[0], w});       // w[i] += ...: reads before writing
    for (const Array& z : {t, u, v, w}) a.push_back(z);
  });
  EXPECT_EQ(s.calls, 8);  // each with its fill
}

TEST_F(Lazy, ZerosReadByTheHostAGraphOrWrittenByTheHostAreZeros) {
  Graph twice = parse_module(R"(
graph twice(x: f32[N]) {
  y = add(x, x)
  return y
}
)", "g.stitch").graphs[0];
  LazyStats s = check({random({64}, 93)}, [&](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {64});
    Array g = rt.apply(twice, {t})[0];        // a graph reads the zeros
    rt.call(k("scale"), {3.0, a[0], t});      // then a call overwrites them
    Array h = rt.zeros(DType::f32, {64});
    h.slice(10, 20).assign(Tensor(DType::f32, {10}));  // the host writes part of them
    Array z = rt.zeros(DType::f32, {64});
    EXPECT_EQ(z.to_host().get_f64(63), 0.0);  // the host reads them
    for (const Array& x : {t, g, h, z}) a.push_back(x);
  });
  EXPECT_EQ(s.calls, 2);  // the graph and scale: no fill recorded
}

TEST_F(Lazy, ATemporaryWrittenInPartAfterItsFillLivesInRegisters) {
  // t's last element keeps its zero from the fill, and the later call over the
  // whole range reads it: the write over n - 1 is not the first store.
  LazyStats s = check({random({999}, 60), random({999}, 61)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {999});
    rt.call(k("copy_head"), {a[0], t});   // t[i] = x[i] over n - 1
    rt.call(k("add"), {t, a[0], a[1]});   // over n
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 1);  // the fill over n is the first store
}

TEST_F(Lazy, ATemporaryFirstStoredOverPartOfTheRangeIsStored) {
  LazyStats s = check({random({999}, 62), random({999}, 63)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.array(random({999}, 64));
    rt.call(k("copy_head"), {a[0], t});   // over n - 1: the first store
    rt.call(k("add"), {t, a[0], a[1]});   // over n: reads t[n - 1], which the store did not write
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 0);
}

TEST_F(Lazy, ATwoDimensionalTemporaryLivesInRegisters) {
  LazyStats s = check({random({6, 7}, 51), random({6}, 52), random({40}, 53), random({40}, 54)},
                      [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {6, 7});
    rt.call(k("scale2"), {2.0, a[0], t});
    rt.call(k("rowscale"), {t, a[1]});       // t[i, j] *= s[i]: read and written at the same index
    rt.call(k("rowsum_into"), {t, a[0]});    // x[i, j] = t[i, j] + x[i, j]
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 1);
}

TEST_F(Lazy, ATemporaryReadUnderAGuardLivesInRegisters) {
  LazyStats s = check({random({999}, 55), random({999}, 56)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {999});
    rt.call(k("scale"), {2.0, a[0], t});     // over n: the fused range
    rt.call(k("copy_head"), {t, a[1]});      // over n - 1: under a guard
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 1);
}

// Ranges of different rank (docs/lazy.md): the fused loop runs over the
// smallest rank's dimensions, and a larger range's trailing ones are serial
// loops within each index.
TEST_F(Lazy, RangesOfDifferentRankFuseWhenEachIndexKeepsToItsRow) {
  LazyStats s = check({random({37, 29}, 60), random({37, 29}, 61), random({37}, 62)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale2"), {2.0, a[0], a[1]});  // y[i, j] = 2 x[i, j]   over i, j
    rt.call(k("rowtotal"), {a[1], a[2]});     // s[i] = sum_j y[i, j]  over i
    rt.call(k("rowscale"), {a[0], a[2]});     // x[i, j] *= s[i]       over i, j
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, TwoDimensionalCallsSafeOnlyRowByRowTakeSeparateLoops) {
  // shift_cols reads y[i, j + 1], which another index (i, j + 1) of scale2
  // writes: over (i, j) they may not fuse, over i alone they may, each with
  // its own loop over j. The one-dimensional rowtotal makes the fused range i.
  LazyStats two = check({random({23, 41}, 63), random({23, 41}, 64), random({23, 41}, 65)},
                        [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale2"), {3.0, a[0], a[1]});
    rt.call(k("shift_cols"), {a[1], a[2]});
  });
  EXPECT_EQ(two.kernels, 2);
  LazyStats one = check({random({23, 41}, 63), random({23, 41}, 64), random({23, 41}, 65), random({23}, 66)},
                        [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale2"), {3.0, a[0], a[1]});
    rt.call(k("shift_cols"), {a[1], a[2]});
    rt.call(k("rowtotal"), {a[2], a[3]});
  });
  EXPECT_EQ(one.kernels, 1);
}

TEST_F(Lazy, AColumnReadAfterARowWriteIsNotFused) {
  LazyStats s = check({random({31, 17}, 67), random({31, 17}, 68), random({17}, 69)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale2"), {2.0, a[0], a[1]});  // y[i, j] over i, j
    rt.call(k("colsum"), {a[1], a[2]});       // s[j] = sum_i y[i, j] over j: index j reads what indices (*, j) wrote
  });
  EXPECT_EQ(s.kernels, 2);
}

TEST_F(Lazy, ARowSumJoinsTheRowLoopAndItsInputLivesInRegisters) {
  LazyStats s = check({random({19, 33}, 70), random({19}, 71)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {19, 33});
    Array u = rt.zeros(DType::f32, {19, 33});
    rt.call(k("scale2"), {2.0, a[0], t});  // in the loop over j: t lives in registers
    rt.call(k("scale2"), {0.5, t, u});
    rt.call(k("rowtotal"), {u, a[1]});     // its loop over j joins the one above: u too
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 2);
}

TEST_F(Lazy, ARowLoopAfterACallWritingItsInputKeepsItsOwnLoop) {
  LazyStats s = check({random({17, 29}, 74), random({17, 29}, 75), random({17}, 76)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("scale2"), {2.0, a[0], a[1]});   // y[i, j]: over i, j
    rt.call(k("set_first"), {a[1], 5.0});      // y[i, 0] = 5: over i, between the two
    rt.call(k("rowtotal"), {a[1], a[2]});      // must see y[i, 0] = 5
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, ARowLoopReadingAnotherElementKeepsItsOwnLoop) {
  LazyStats s = check({random({19, 33}, 72), random({19}, 73)}, [](LazyRuntime& rt, auto& a, auto&) {
    Array t = rt.zeros(DType::f32, {19, 33});
    Array u = rt.zeros(DType::f32, {19, 33});
    rt.call(k("scale2"), {2.0, a[0], t});
    rt.call(k("scale2"), {0.5, t, u});
    rt.call(k("rowtotal_shifted"), {u, a[1]});  // reads u[i, j + 1]: written in a later iteration
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.arrays_in_registers, 1);  // t; u is stored for the second loop
}

TEST_F(Lazy, AReductionOverALargerRangeFusesWithARowLoop) {
  std::vector<Scalar> got;
  LazyStats s = check({random({21, 13}, 72), random({21, 13}, 73), random({21}, 74)},
                      [](LazyRuntime& rt, auto& a, auto& scalars) {
    rt.call(k("rowtotal"), {a[0], a[2]});                // over i
    scalars.push_back(rt.reduce(k("rowmax"), {a[0]}));   // over i, j: its loop over j inside each i
    rt.call(k("scale2"), {2.0, a[0], a[1]});             // over i, j
  });
  EXPECT_EQ(s.kernels, 1);
}

TEST_F(Lazy, RepeatedPartitionsWithTemporariesReuseTheirKernelsAndStayExact) {
  // One runtime runs the same statements on arrays of 1000, 1000 again (the
  // cached kernels and storage maps), then 1001 and 999 (the same structure,
  // other extents: prepared again), and 1000 with a temporary kept alive (the
  // same extents, another lifetime). Each program is checked against the
  // reference interpreter.
  LazyRuntime rt(options());
  LazyRuntime ref(options(LazyOptions::Mode::Reference));
  int64_t hits = 0;
  for (int64_t n : {1000, 1000, 1001, 999, 1000}) {
    const bool keep = hits == 4;
    std::vector<Tensor> got;
    for (LazyRuntime* r : {&rt, &ref}) {
      Array x = r->array(random({n}, 70));
      Array y = r->zeros(DType::f32, {n});
      Array kept;
      {
        Array t = r->zeros(DType::f32, {n});
        r->call(k("shift_read"), {x, t});      // t[i] = x[i + 1] over n - 1: t[n - 1] keeps its zero
        Array u = r->zeros(DType::f32, {n});
        r->call(k("scale"), {3.0, t, u});
        r->call(k("add"), {u, t, y});
        if (keep) kept = t;
      }
      got.push_back(y.to_host());
      if (keep) got.push_back(kept.to_host());
    }
    TensorComparison c = compare_with_interpreter(got[0], got[keep ? 2 : 1], {});
    EXPECT_TRUE(c.ok) << "n = " << n << ": " << c.describe();
    if (keep) {
      TensorComparison t = compare_with_interpreter(got[1], got[3], {});
      EXPECT_TRUE(t.ok) << "the kept temporary: " << t.describe();
    }
    ++hits;
  }
  EXPECT_GE(rt.stats().plan_cache_hits, 3);
  EXPECT_EQ(rt.stats().arrays_in_registers, 4 * 2 + 1);  // t and u, but only u when t is kept
}

TEST_F(Lazy, IndicesThatCannotBeProvenAreCheckedAndAnOutOfRangeOneFailsTheRead) {
  Tensor idx(DType::i64, {100});
  for (int64_t i = 0; i < 100; ++i) idx.set_i64(i, (i * 13) % 50);
  // In range: fused with the call after it, and equal to the reference.
  LazyStats s = check({idx, random({50}, 80), random({100}, 81), random({100}, 82)}, [](LazyRuntime& rt, auto& a, auto&) {
    rt.call(k("gather"), {a[0], a[1], a[2]});   // y[i] = x[idx[i]]: checked at run time
    rt.call(k("scale"), {2.0, a[2], a[3]});
  });
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.checked_kernels, 1);
  // Out of range, alone and fused: the read that runs it fails, naming the access.
  for (bool fused : {false, true}) {
    LazyRuntime rt(options());
    Tensor bad = idx;
    bad.set_i64(77, 50);
    Array i = rt.array(bad);
    Array x = rt.array(random({50}, 83));
    Array y = rt.zeros(DType::f32, {100});
    Array z = rt.zeros(DType::f32, {100});
    rt.call(k("gather"), {i, x, y});
    if (fused) rt.call(k("scale"), {2.0, y, z});
    try {
      (void)(fused ? z : y).to_host();
      ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
      EXPECT_NE(e.formatted().find("kernel '"), std::string::npos) << e.formatted();
      EXPECT_NE(e.formatted().find("outside axis 0 of extent 50"), std::string::npos) << e.formatted();
    }
  }
}

TEST_F(Lazy, SwitchingModesRunsWhatIsPendingFirst) {
  LazyRuntime rt(options());
  LazyRuntime ref(options(LazyOptions::Mode::Reference));
  std::vector<Tensor> got;
  for (LazyRuntime* r : {&rt, &ref}) {
    Array x = r->array(random({500}, 90));
    Array y = r->zeros(DType::f32, {500});
    r->call(k("scale"), {2.0, x, y});
    if (r == &rt) {
      r->set_mode(LazyOptions::Mode::Eager);
      EXPECT_EQ(r->stats().kernels, 1);  // the fill and scale ran, fused, before the switch
    }
    r->call(k("axpy"), {0.5, y, x});     // eager: runs now
    if (r == &rt) {
      EXPECT_EQ(r->stats().kernels, 2);
      r->set_mode(LazyOptions::Mode::Fused);
    }
    r->call(k("add"), {x, y, y});
    r->call(k("scale"), {3.0, y, x});
    got.push_back(x.to_host());
  }
  EXPECT_EQ(rt.stats().kernels, 3);
  TensorComparison c = compare_with_interpreter(got[0], got[1], {});
  EXPECT_TRUE(c.ok) << c.describe();
}

TEST(IndexSafety, VerdictsNameTheArrayAndTheAccesses) {
  Module m = parse_module(kKernels, "k.stitch");
  const UserKernel& shift = *m.find_kernel("shift_read");
  const UserKernel& fill = *m.find_kernel("fill");
  std::vector<lazy::ArrayAccessSite> a = lazy::collect_accesses(shift);
  std::vector<lazy::ArrayAccessSite> b = lazy::collect_accesses(fill);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].text, "x[i + 1]");
  EXPECT_EQ(a[1].text, "y[i]");
  lazy::SafetyVerdict v = lazy::fusion_safety({&shift, &a, {0, 1}}, {&fill, &b, {0, -1}});
  EXPECT_FALSE(v.safe);
  EXPECT_EQ(v.reason,
            "array 'x': x[i + 1] in shift_read and x[i] in fill may touch one element from different indices (range "
            "index i is not fixed by an axis both use alike)");
  EXPECT_TRUE(lazy::fusion_safety({&shift, &a, {0, 1}}, {&fill, &b, {2, -1}}).safe);  // fill writes another array
}

TEST(IndexSafety, AParameterIsOverwrittenBeforeReadingOnlyByAFirstStoreAtTheRangeIndex) {
  Module m = parse_module(R"(
kernel scale(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i]
}
kernel axpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] += a * x[i]
}
kernel late(x: f32[n], y: f32[n]) over i < n {
  let t: f32 = x[i] * 2
  y[i] = t
  x[i] = y[i] + 1
}
kernel cond(x: f32[n], y: f32[n]) over i < n {
  if x[i] > 0 {
    y[i] = 1
  }
  y[i] = 2
}
kernel flip(x: f32[n, m], y: f32[m, n]) over i < n, j < m {
  y[j, i] = x[i, j]
}
kernel self(y: f32[n]) over i < n {
  y[i] = y[i] * 2
}
)", "k.stitch");
  auto overwrites = [&m](const char* kernel, size_t param) { return lazy::overwrites_before_reading(*m.find_kernel(kernel), param); };
  EXPECT_TRUE(overwrites("scale", 2));
  EXPECT_FALSE(overwrites("scale", 1));   // only read
  EXPECT_FALSE(overwrites("scale", 0));   // a scalar
  EXPECT_FALSE(overwrites("axpy", 2));    // y[i] += reads y[i]
  EXPECT_TRUE(overwrites("late", 1));     // the first statement touching y stores y[i]
  EXPECT_FALSE(overwrites("late", 0));    // x is read first
  EXPECT_FALSE(overwrites("cond", 1));    // the first touch is under a branch
  EXPECT_FALSE(overwrites("flip", 1));    // y[j, i]: not the range index in order
  EXPECT_FALSE(overwrites("self", 0));    // the value reads y
}

}  // namespace
}  // namespace stitch

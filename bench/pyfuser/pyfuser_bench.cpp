// stitch_bench_pyfuser: the PyFuser paper's subjects (bench/pyfuser/subjects.stitch)
// written with the public C++ API (stitch/lazy.h), each run unfused (eager: each
// call its own kernel, run when it is made, as the program is written) and fused,
// side by side in one process (docs/lazy.md; results under bench/results/pyfuser-*).
//
//   stitch_bench_pyfuser [--repeat N] [--rounds R] [--subjects a,b,...] [--json FILE]
//                        [--scale S] [--cache-dir DIR] [--backend cpu|cuda]
//
// Per subject: R rounds, each with a fresh runtime and arrays that both modes
// use (LazyRuntime::set_mode): one warm-up program per mode (compiles), then
// N timed programs per mode, alternating modes; the median of each. Reported: the median over rounds of each mode's
// time and of the speedup (and each round's speedup), calls and kernels per
// program, tracing + analysis time as a share of the fused program's wall time
// and recording cost per call (medians over the fused programs of every round;
// the JSON has the mean share too), and the largest difference of any array
// between the fused program on the back end and the eager one on the CPU
// (0 on the CPU; on CUDA, sums in another order differ in the last bits).
// --backend cuda runs both modes on the GPU (lazy arrays on Backend::Cuda:
// each flush waits for the device, and the arrays stay on it between programs).
// PYFUSER_STATS=1 also prints the fused mode's recording and analysis time per
// program and the runtime's kernel, register and checked-kernel counts (stderr).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stitch/lazy.h"
#include "stitch/text.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using stitch::Array;
using stitch::DType;
using stitch::KernelRef;
using stitch::LazyRuntime;
using stitch::Tensor;

std::map<std::string, KernelRef> g_kernels;

const KernelRef& k(const std::string& name) { return g_kernels.at(name); }

Tensor filled(DType dtype, std::vector<int64_t> shape, const std::function<double(int64_t)>& value) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::i64) {
      t.set_i64(i, static_cast<int64_t>(value(i)));
    } else {
      t.set_f64(i, value(i));
    }
  }
  return t;
}

Tensor random_f64(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(DType::f64, std::move(shape));
  stitch::fill_random(t, seed);
  return t;
}

// A subject: its arrays (made in a runtime), and a program over them.
struct Subject {
  std::string name;
  std::string size;  // for the report
  std::function<std::vector<Array>(LazyRuntime&, int64_t scale)> setup;
  std::function<void(LazyRuntime&, std::vector<Array>&, int64_t scale)> program;
};

std::vector<Subject> subjects() {
  std::vector<Subject> s;
  s.push_back({"babelstream", "3 x 2^22 f64, 10 iterations",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = (int64_t{1} << 22) / sc;
                 return std::vector<Array>{rt.array(filled(DType::f64, {n}, [](int64_t) { return 0.1; })),
                                           rt.array(filled(DType::f64, {n}, [](int64_t) { return 0.2; })),
                                           rt.zeros(DType::f64, {n})};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 for (int it = 0; it < 10; ++it) {
                   rt.call(k("stream_copy"), {a[0], a[2]});
                   rt.call(k("stream_mul"), {0.4, a[1], a[2]});
                   rt.call(k("stream_add"), {a[0], a[1], a[2]});
                   rt.call(k("stream_triad"), {0.4, a[0], a[1], a[2]});
                   (void)rt.reduce(k("stream_dot"), {a[0], a[1]}).to_double();
                 }
               }});
  s.push_back({"nstream", "3 x 2^22 f64, 50 iterations",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = (int64_t{1} << 22) / sc;
                 return std::vector<Array>{rt.zeros(DType::f64, {n}),
                                           rt.array(filled(DType::f64, {n}, [](int64_t) { return 2.0; })),
                                           rt.array(filled(DType::f64, {n}, [](int64_t) { return 2.0; }))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 for (int it = 0; it < 50; ++it) rt.call(k("nstream"), {3.0, a[0], a[1], a[2]});
                 (void)a[0].to_host();
               }});
  s.push_back({"transpose", "2 x 1024^2 f64, 50 iterations",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = 1024 / sc;
                 return std::vector<Array>{rt.array(filled(DType::f64, {n, n}, [](int64_t i) { return static_cast<double>(i); })),
                                           rt.zeros(DType::f64, {n, n})};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 for (int it = 0; it < 50; ++it) rt.call(k("transpose"), {a[0], a[1]});
                 (void)a[1].to_host();
               }});
  s.push_back({"gups", "table 2^22 i64, stream 2^20, 8 iterations",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = (int64_t{1} << 22) / sc;
                 return std::vector<Array>{rt.array(filled(DType::i64, {n / 4}, [](int64_t i) { return static_cast<double>(i); })),
                                           rt.array(filled(DType::i64, {n}, [](int64_t i) { return static_cast<double>(i); }))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 for (int it = 0; it < 8; ++it) {
                   rt.call(k("gups_stream"), {a[0]});
                   rt.call(k("gups_update"), {int64_t{it}, a[0], a[1]});
                 }
                 (void)a[1].to_host();
               }});
  // B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:]), then the same from B to A:
  // four NumPy operations per statement, three of them writing temporaries
  // (each allocated, zeros(), by the operation making it, as NumPy does).
  s.push_back({"jacobi_1d", "2 x 2^20 f64, 20 steps",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = (int64_t{1} << 20) / sc;
                 return std::vector<Array>{rt.array(random_f64({n}, 1)), rt.array(random_f64({n}, 2))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 const int64_t n = a[0].shape()[0];
                 auto statement = [&rt, n](const Array& from, const Array& to) {
                   Array t1 = rt.zeros(DType::f64, {n - 2});
                   rt.call(k("np_add"), {from.slice(0, n - 2), from.slice(1, n - 1), t1});
                   Array t2 = rt.zeros(DType::f64, {n - 2});
                   rt.call(k("np_add"), {t1, from.slice(2, n), t2});
                   Array t3 = rt.zeros(DType::f64, {n - 2});
                   rt.call(k("np_scale"), {0.33333, t2, t3});
                   rt.call(k("np_copy"), {t3, to.slice(1, n - 1)});
                 };
                 for (int t = 0; t < 20; ++t) {
                   statement(a[0], a[1]);
                   statement(a[1], a[0]);
                 }
                 (void)a[0].to_host();
               }});
  // NPBench's four statements per step as NumPy operations (12 calls per step,
  // and a fill per temporary), each result allocated by the operation making it.
  s.push_back({"fdtd_2d", "3 x 1000 x 1200 f64, 10 steps",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t nx = 1000 / sc;
                 int64_t ny = 1200 / sc;
                 return std::vector<Array>{rt.array(random_f64({nx, ny}, 3)), rt.array(random_f64({nx, ny}, 4)),
                                           rt.array(random_f64({nx, ny}, 5)), rt.array(random_f64({10}, 6))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 const Array& ex = a[0];
                 const Array& ey = a[1];
                 const Array& hz = a[2];
                 const int64_t nx = ex.shape()[0];
                 const int64_t ny = ex.shape()[1];
                 auto temp = [&rt](int64_t r, int64_t c) { return rt.zeros(DType::f64, {r, c}); };
                 for (int t = 0; t < 10; ++t) {
                   rt.call(k("fdtd_ey0"), {int64_t{t}, a[3], ey});  // ey[0, :] = _fict_[t]
                   {  // ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
                     Array t1 = temp(nx - 1, ny);
                     rt.call(k("np2_sub"), {hz.slice(1, nx), hz.slice(0, nx - 1), t1});
                     Array t2 = temp(nx - 1, ny);
                     rt.call(k("np2_scale"), {0.5, t1, t2});
                     rt.call(k("np2_isub"), {ey.slice(1, nx), t2});
                   }
                   {  // ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
                     Array t1 = temp(nx, ny - 1);
                     rt.call(k("np2_diff_cols"), {hz, t1});
                     Array t2 = temp(nx, ny - 1);
                     rt.call(k("np2_scale"), {0.5, t1, t2});
                     rt.call(k("np2_isub_cols_from1"), {ex, t2});
                   }
                   {  // hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
                     Array t1 = temp(nx - 1, ny - 1);
                     rt.call(k("np2_diff_cols"), {ex.slice(0, nx - 1), t1});
                     Array t2 = temp(nx - 1, ny - 1);
                     rt.call(k("np2_add_lead"), {t1, ey.slice(1, nx), t2});
                     Array t3 = temp(nx - 1, ny - 1);
                     rt.call(k("np2_sub_lead"), {t2, ey.slice(0, nx - 1), t3});
                     Array t4 = temp(nx - 1, ny - 1);
                     rt.call(k("np2_scale"), {0.7, t3, t4});
                     rt.call(k("np2_isub_lead"), {hz.slice(0, nx - 1), t4});
                   }
                 }
                 (void)hz.to_host();
               }});
  // x1 += A @ y_1; x2 += y_2 @ A: a product into a temporary, then the update.
  s.push_back({"mvt", "2000 x 2000 f64",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = 2000 / sc;
                 return std::vector<Array>{rt.array(random_f64({n}, 7)), rt.array(random_f64({n}, 8)),
                                           rt.array(random_f64({n}, 9)), rt.array(random_f64({n}, 10)),
                                           rt.array(random_f64({n, n}, 11))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 const int64_t n = a[0].shape()[0];
                 {
                   Array t = rt.zeros(DType::f64, {n});
                   rt.call(k("np_matvec"), {a[4], a[2], t});
                   rt.call(k("np_iadd"), {a[0], t});
                 }
                 {
                   Array t = rt.zeros(DType::f64, {n});
                   rt.call(k("np_vecmat"), {a[3], a[4], t});
                   rt.call(k("np_iadd"), {a[1], t});
                 }
                 rt.flush();
               }});
  s.push_back({"syrk", "C 600 x 600, A 600 x 500 f64",
               [](LazyRuntime& rt, int64_t sc) {
                 return std::vector<Array>{rt.array(random_f64({600 / sc, 600 / sc}, 12)), rt.array(random_f64({600 / sc, 500 / sc}, 13))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 rt.call(k("syrk_scale"), {1.2, a[0]});
                 rt.call(k("syrk_update"), {1.5, a[0], a[1]});
                 (void)a[0].to_host();
               }});
  s.push_back({"syr2k", "C 500 x 500, A, B 500 x 400 f64",
               [](LazyRuntime& rt, int64_t sc) {
                 return std::vector<Array>{rt.array(random_f64({500 / sc, 500 / sc}, 14)), rt.array(random_f64({500 / sc, 400 / sc}, 15)),
                                           rt.array(random_f64({500 / sc, 400 / sc}, 16))};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 rt.call(k("syrk_scale"), {1.2, a[0]});
                 rt.call(k("syr2k_update"), {1.5, a[0], a[1], a[2]});
                 (void)a[0].to_host();
               }});
  s.push_back({"covariance", "data 600 x 500 f64",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = 600 / sc;
                 int64_t m = 500 / sc;
                 return std::vector<Array>{rt.array(random_f64({n, m}, 17)), rt.zeros(DType::f64, {m}), rt.zeros(DType::f64, {m, m})};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 double n = static_cast<double>(a[0].shape()[0]);
                 rt.call(k("cov_mean"), {n, a[0], a[1]});
                 rt.call(k("cov_center"), {a[0], a[1]});
                 rt.call(k("cov_cov"), {n, a[0], a[2]});
                 (void)a[2].to_host();
               }});
  s.push_back({"adi", "4 x 500 x 500 f64, 5 steps",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t n = 500 / sc;
                 return std::vector<Array>{rt.array(filled(DType::f64, {n, n}, [n](int64_t i) {
                                             return static_cast<double>((i / n) + n - (i % n)) / static_cast<double>(n);
                                           })),
                                           rt.zeros(DType::f64, {n, n}), rt.zeros(DType::f64, {n, n}), rt.zeros(DType::f64, {n, n})};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 const double n = static_cast<double>(a[0].shape()[0]);
                 const int steps = 5;
                 // NPBench's coefficients.
                 const double dx = 1.0 / n, dy = 1.0 / n, dt = 1.0 / steps;
                 const double mul1 = 2.0 * dt / (dx * dx), mul2 = 1.0 * dt / (dy * dy);
                 const double ca = -mul1 / 2.0, cb = 1.0 + mul1, cc = ca, cd = -mul2 / 2.0, ce = 1.0 + mul2, cf = cd;
                 for (int t = 0; t < steps; ++t) {
                   rt.call(k("adi_col"), {ca, cb, cc, cd, cf, a[0], a[1], a[2], a[3]});
                   rt.call(k("adi_row"), {ca, cc, cd, ce, cf, a[0], a[1], a[2], a[3]});
                 }
                 (void)a[0].to_host();
               }});
  s.push_back({"gaussian_nb", "X 200000 x 16 f64, 4 classes",
               [](LazyRuntime& rt, int64_t sc) {
                 int64_t samples = 200000 / sc;
                 return std::vector<Array>{rt.array(filled(DType::i64, {samples}, [](int64_t i) { return static_cast<double>((i * 7) % 4); })),
                                           rt.array(random_f64({samples, 16}, 18)), rt.zeros(DType::f64, {4, 16}),
                                           rt.zeros(DType::f64, {4, 16}),
                                           rt.array(filled(DType::f64, {4}, [](int64_t) { return 0.25; })),
                                           rt.zeros(DType::f64, {samples, 4}), rt.zeros(DType::i64, {samples})};
               },
               [](LazyRuntime& rt, std::vector<Array>& a, int64_t) {
                 rt.call(k("gnb_mean"), {a[0], a[1], a[2]});
                 rt.call(k("gnb_var"), {a[0], a[1], a[2], a[3]});
                 const int64_t samples = a[1].shape()[0];
                 const int64_t features = a[1].shape()[1];
                 // As NumPy runs it: each result is allocated by the operation making it.
                 for (int64_t c = 0; c < 4; ++c) {
                   stitch::Scalar lognorm = rt.reduce(k("gnb_lognorm"), {c, a[3]});
                   Array d = rt.zeros(DType::f64, {samples, features});
                   rt.call(k("gnb_center"), {c, a[1], a[2], d});
                   Array sq = rt.zeros(DType::f64, {samples, features});
                   rt.call(k("np2_square"), {d, sq});
                   Array q = rt.zeros(DType::f64, {samples, features});
                   rt.call(k("gnb_divvar"), {c, sq, a[3], q});
                   Array sum = rt.zeros(DType::f64, {samples});
                   rt.call(k("np_rowsum"), {q, sum});
                   rt.call(k("gnb_jll_col"), {c, lognorm, a[4], sum, a[5]});
                 }
                 rt.call(k("gnb_predict"), {a[5], a[6]});
                 (void)a[6].to_host();
               }});
  return s;
}

double max_difference(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get_f64(i);
    double y = b.get_f64(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    worst = std::max(worst, std::fabs(x - y) / (1.0 + std::fabs(y)));
  }
  return worst;
}

std::string g_cache_dir;
stitch::Backend g_backend = stitch::Backend::Cpu;

stitch::LazyOptions options(stitch::LazyOptions::Mode mode, stitch::Backend backend = g_backend) {
  stitch::LazyOptions o;
  o.mode = mode;
  o.cache_dir = g_cache_dir;
  o.backend = backend;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Steady-state allocation, as in a long-running program: glibc serves every
  // block below 256 MiB from its heap and never returns the heap's top to the
  // kernel, so a temporary freed by one statement is reused by the next
  // without page faults in either mode (storage of 4 MiB or more has its own
  // kept mappings, stitch/tensor.h). Without this, eager programs at the
  // small sizes faulted in fresh pages for their temporaries in some rounds
  // and not in others (jacobi_1d: 3.9x or 16x).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  int repeat = 5;
  int rounds = 3;
  int64_t scale = 1;
  std::string only;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stitch_bench_pyfuser: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--repeat") {
      repeat = std::stoi(value());
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::stoi(value()));
    } else if (arg == "--subjects") {
      only = "," + value() + ",";
    } else if (arg == "--json") {
      json_path = value();
    } else if (arg == "--scale") {
      scale = std::stoll(value());
    } else if (arg == "--cache-dir") {
      g_cache_dir = value();
    } else if (arg == "--backend") {
      const std::string b = value();
      if (b != "cpu" && b != "cuda") {
        std::fprintf(stderr, "stitch_bench_pyfuser: --backend takes cpu or cuda, not %s\n", b.c_str());
        return 2;
      }
      g_backend = b == "cuda" ? stitch::Backend::Cuda : stitch::Backend::Cpu;
    } else {
      std::fprintf(stderr, "stitch_bench_pyfuser: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  try {
    g_kernels = stitch::share_kernels(stitch::parse_file(STITCH_SOURCE_DIR "/bench/pyfuser/subjects.stitch"));
    std::ostringstream json;
    json << "{\n  \"backend\": \"" << (g_backend == stitch::Backend::Cuda ? "cuda" : "cpu") << "\",\n  \"repeat\": " << repeat << ",\n  \"rounds\": " << rounds << ",\n  \"scale\": " << scale << ",\n  \"subjects\": [\n";
    std::printf("| subject | size | calls | kernels unfused | kernels fused | unfused ms | fused ms | speedup | "
                "per round | record us/call | tracing+analysis | max diff |\n"
                "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
    bool first = true;
    std::vector<double> speedups;
    for (const Subject& s : subjects()) {
      if (!only.empty() && only.find("," + s.name + ",") == std::string::npos) continue;
      // Correctness first: one program from the same inputs in each mode.
      LazyRuntime check_unfused(options(stitch::LazyOptions::Mode::Eager, stitch::Backend::Cpu));
      LazyRuntime check_fused(options(stitch::LazyOptions::Mode::Fused));
      std::vector<Array> au = s.setup(check_unfused, scale);
      std::vector<Array> af = s.setup(check_fused, scale);
      s.program(check_unfused, au, scale);
      s.program(check_fused, af, scale);
      double diff = 0;
      for (size_t i = 0; i < au.size(); ++i) diff = std::max(diff, max_difference(af[i].to_host(), au[i].to_host()));
      // Timed, in rounds: each round makes a runtime and the subject's arrays
      // afresh, warms both modes up with one program each, then alternates
      // the modes, one program each; the round's time per mode is the median.
      // Reported: the median over rounds of each mode's time and of the speedup.
      std::vector<double> round_unfused, round_fused, round_speedup;
      double calls = 0, kernels_unfused = 0, kernels_fused = 0;
      // Per fused program of every round: recording per call, and tracing +
      // analysis as a share of its wall time; reported as medians, like the times.
      std::vector<double> program_record, program_share;
      std::vector<double> program_record_ms, program_analysis_ms;
      for (int round = 0; round < rounds; ++round) {
        // One runtime and one set of arrays for both modes, switched between
        // programs (LazyRuntime::set_mode): where the arrays lie in memory
        // moved a strided kernel (syr2k) by 1.6x, so each mode gets the same.
        LazyRuntime rt(options(stitch::LazyOptions::Mode::Fused));
        std::vector<Array> arrays = s.setup(rt, scale);
        rt.flush();  // the setup's fills (zeros) run now, not in the first program
        const stitch::LazyOptions::Mode modes[2] = {stitch::LazyOptions::Mode::Eager, stitch::LazyOptions::Mode::Fused};
        for (stitch::LazyOptions::Mode mode : modes) {  // warm-up: compiles
          rt.set_mode(mode);
          s.program(rt, arrays, scale);
          rt.flush();
        }
        std::map<int, std::vector<double>> times;
        int64_t kernels[2] = {0, 0}, calls_f = 0;
        for (int r = 0; r < repeat; ++r) {
          for (int m = 0; m < 2; ++m) {
            rt.set_mode(modes[m]);
            const stitch::LazyStats before = rt.stats();
            auto start = std::chrono::steady_clock::now();
            s.program(rt, arrays, scale);
            rt.flush();  // whatever the program's reads left pending runs inside the timed program
            double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const stitch::LazyStats& after = rt.stats();
            times[m].push_back(t);
            kernels[m] += after.kernels - before.kernels;
            if (m == 1) {
              const double record_s = after.record_seconds - before.record_seconds;
              const double analysis_s = after.analysis_seconds - before.analysis_seconds;
              const int64_t program_calls = after.calls - before.calls;
              calls_f += program_calls;
              program_record.push_back(record_s / static_cast<double>(std::max<int64_t>(program_calls, 1)));
              program_share.push_back((record_s + analysis_s) / t);
              program_record_ms.push_back(record_s * 1e3);
              program_analysis_ms.push_back(analysis_s * 1e3);
            }
          }
        }
        for (auto& [m, v] : times) std::sort(v.begin(), v.end());
        round_unfused.push_back(times[0][times[0].size() / 2]);
        round_fused.push_back(times[1][times[1].size() / 2]);
        round_speedup.push_back(round_unfused.back() / round_fused.back());
        // Counts: of the first round (they do not depend on layout).
        if (round > 0) continue;
        calls = static_cast<double>(calls_f) / repeat;
        kernels_unfused = static_cast<double>(kernels[0]) / repeat;
        kernels_fused = static_cast<double>(kernels[1]) / repeat;
        if (std::getenv("PYFUSER_STATS")) {
          const stitch::LazyStats& st = rt.stats();
          std::fprintf(stderr, "fused, per timed program (median): record %.3f analysis %.3f ms; runtime totals: kernels %lld, in registers %lld, checked %lld\n",
                       median(program_record_ms), median(program_analysis_ms), static_cast<long long>(st.kernels),
                       static_cast<long long>(st.arrays_in_registers), static_cast<long long>(st.checked_kernels));
        }
      }
      const double record = median(program_record);
      const double overhead = median(program_share);
      double overhead_mean = 0;
      for (double x : program_share) overhead_mean += x / static_cast<double>(program_share.size());
      const double tu_med = median(round_unfused);
      const double tf_med = median(round_fused);
      const double speedup = median(round_speedup);
      std::string spread;
      std::string spread_json;
      for (double x : round_speedup) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", x);
        spread += (spread.empty() ? "" : " ") + std::string(buf);
        spread_json += (spread_json.empty() ? "" : ", ") + std::string(buf);
      }
      speedups.push_back(speedup);
      const std::string size = scale == 1 ? s.size : s.size + " (extents / " + std::to_string(scale) + ")";
      std::printf("| %s | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %.2f | %s | %.3f | %.3f%% | %.1e |\n", s.name.c_str(),
                  size.c_str(), calls, kernels_unfused, kernels_fused, tu_med * 1e3, tf_med * 1e3, speedup, spread.c_str(),
                  record * 1e6, overhead * 100, diff);
      std::fflush(stdout);
      json << (first ? "" : ",\n") << "    {\"name\": \"" << s.name << "\", \"size\": \"" << size << "\", \"calls\": " << calls
           << ", \"kernels_unfused\": " << kernels_unfused << ", \"kernels_fused\": " << kernels_fused
           << ", \"unfused_seconds\": " << tu_med << ", \"fused_seconds\": " << tf_med << ", \"speedup\": " << speedup
           << ", \"speedup_per_round\": [" << spread_json << "]"
           << ", \"record_seconds_per_call\": " << record << ", \"tracing_analysis_share\": " << overhead
           << ", \"tracing_analysis_share_mean\": " << overhead_mean
           << ", \"max_difference\": " << diff << "}";
      first = false;
    }
    double log_sum = 0;
    for (double x : speedups) log_sum += std::log(x);
    double geomean = speedups.empty() ? 0 : std::exp(log_sum / static_cast<double>(speedups.size()));
    std::printf("\ngeometric-mean speedup: %.2f over %zu subjects\n", geomean, speedups.size());
    // Recording alone: batches of 1,000 nstream calls (four arguments) on
    // small arrays, each batch then run unfused, which is not timed here.
    double record_per_call = 0;
    {
      LazyRuntime rt(options(stitch::LazyOptions::Mode::Unfused));
      std::vector<Array> a = {rt.zeros(DType::f64, {64}), rt.zeros(DType::f64, {64}), rt.zeros(DType::f64, {64})};
      std::vector<double> per_batch;
      for (int batch = 0; batch < 21; ++batch) {
        const double before = rt.stats().record_seconds;
        auto start = std::chrono::steady_clock::now();
        for (int c = 0; c < 1000; ++c) rt.call(k("nstream"), {3.0, a[0], a[1], a[2]});
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        (void)before;
        per_batch.push_back(wall / 1000);
        rt.flush();
      }
      std::sort(per_batch.begin(), per_batch.end());
      record_per_call = per_batch[per_batch.size() / 2];
    }
    std::printf("recording: %.3f us per call (median of 21 batches of 1,000 calls, wall time of the call() loop)\n",
                record_per_call * 1e6);
    json << "\n  ],\n  \"geomean_speedup\": " << geomean << ",\n  \"record_seconds_per_call\": " << record_per_call
         << "\n}\n";
    if (!json_path.empty()) std::ofstream(json_path) << json.str();
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "stitch_bench_pyfuser: %s\n", e.formatted().c_str());
    return 2;
  }
  return 0;
}

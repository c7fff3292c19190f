// Progress on long work (docs/cli.md, Progress): `stitch check` and `stitch
// bench` over many files, `--tune`'s measurements and the soak show one status
// line on stderr -- "stitch check: 12/40 · 3.1/s · 9 s left · softmax xla" --
// redrawn as the work goes on and erased before any other output and at the
// end. When stderr is not a terminal (a pipe, a file, CI) nothing is written.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace stitch::cli {

// The status line for `done` of `total` units after `elapsed_s` seconds, the
// unit now under way named `item`, cut to `width` columns. The rate and the
// time left appear once a unit has finished.
std::string progress_text(std::string_view what, size_t done, size_t total, double elapsed_s, std::string_view item,
                          size_t width = 100);

class Progress {
 public:
  // `enabled` false: draws nothing (the default asks whether stderr is a terminal).
  Progress(std::string what, size_t total, bool enabled = stderr_is_terminal());
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The next unit starts: counts the one before as done and draws the line.
  void step(std::string_view item);
  // `done` units are done and `item` is under way: draws the line.
  void update(size_t done, std::string_view item);
  // Erases the line; later steps draw it again.
  void finish();
  size_t done() const { return done_; }

  // Erases the line of the progress being drawn, if any, so that a result
  // printed now starts on a clean line (the next step redraws it).
  static void clear_for_output();
  static bool stderr_is_terminal();

 private:
  void draw();
  void erase();

  std::string what_;
  size_t total_, done_ = 0;
  bool enabled_, started_ = false, drawn_ = false;
  std::string item_;
  std::chrono::steady_clock::time_point start_;
  static Progress* active_;
};

// A progress callback for the tuners' measurements (tune::MeasureOptions):
// each phase ("checking", "timing") gets its own line, "<what> <phase>".
std::function<void(std::string_view phase, size_t done, size_t total)> progress_callback(std::string what);

}  // namespace stitch::cli

#include "progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

namespace stitch::cli {

namespace {

std::string seconds_text(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
}

size_t terminal_width() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col - 1;
  return 99;
}

// Cut to `width` columns, counting UTF-8 code points (the separators are "·").
std::string cut(const std::string& s, size_t width) {
  size_t columns = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (++columns > width) return s.substr(0, i);
  }
  return s;
}

}  // namespace

Progress* Progress::active_ = nullptr;

std::string progress_text(std::string_view what, size_t done, size_t total, double elapsed_s, std::string_view item,
                          size_t width) {
  std::string out = fmt::format("{}: {}/{}", what, done, total);
  if (done > 0 && elapsed_s > 0) {
    const double rate = static_cast<double>(done) / elapsed_s;
    out += rate >= 1 ? fmt::format(" · {:.1f}/s", rate) : fmt::format(" · {:.1f} s each", 1 / rate);
    out += fmt::format(" · {} left", seconds_text(static_cast<double>(total - std::min(done, total)) / rate));
  }
  if (!item.empty()) out += fmt::format(" · {}", item);
  return cut(out, width);
}

Progress::Progress(std::string what, size_t total, bool enabled)
    : what_(std::move(what)), total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void Progress::step(std::string_view item) { update(started_ ? done_ + 1 : 0, item); }

void Progress::update(size_t done, std::string_view item) {
  started_ = true;
  done_ = done;
  item_ = item;
  draw();
}

void Progress::finish() {
  erase();
  if (active_ == this) active_ = nullptr;
}

void Progress::clear_for_output() {
  if (active_ != nullptr) active_->erase();
}

void Progress::draw() {
  if (!enabled_) return;
  if (active_ != nullptr && active_ != this) active_->erase();
  active_ = this;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line = progress_text(what_, done_, total_, elapsed, item_, terminal_width());
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::erase() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

std::function<void(std::string_view, size_t, size_t)> progress_callback(std::string what) {
  auto current = std::make_shared<std::unique_ptr<Progress>>();
  auto phase_of = std::make_shared<std::string>();
  return [what = std::move(what), current, phase_of](std::string_view phase, size_t done, size_t total) {
    if (!*current || *phase_of != phase) {
      *phase_of = phase;
      *current = std::make_unique<Progress>(fmt::format("{} {}", what, phase), total);
    }
    if (done >= total) {
      current->reset();
      return;
    }
    (*current)->step("");
  };
}

}  // namespace stitch::cli

#include "sim/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace trainsim::sim {

ProgressBar::ProgressBar(std::string label, uint64_t total)
    : ProgressBar(std::move(label), total, Options()) {}

ProgressBar::ProgressBar(std::string label, uint64_t total, Options options)
    : label_(std::move(label)), total_(total), options_(options), start_(Clock::now()) {}

ProgressBar::~ProgressBar() { Finish(); }

bool ProgressBar::ShouldShowOnStderr() {
  const char* ci = std::getenv("CI");
  if (ci != nullptr) return false;
  return ::isatty(STDERR_FILENO) == 1;
}

std::string ProgressBar::Render(const std::string& label, uint64_t done, uint64_t total, int width,
                                double elapsed_s) {
  std::string s = label;
  char buf[96];
  if (total == 0) {
    std::snprintf(buf, sizeof(buf), " %llu done", static_cast<unsigned long long>(done));
    return s + buf;
  }
  const uint64_t shown = std::min(done, total);
  const double frac = static_cast<double>(shown) / static_cast<double>(total);
  const int filled = static_cast<int>(frac * width);
  s += " [";
  s.append(static_cast<size_t>(filled), '#');
  s.append(static_cast<size_t>(width - filled), '.');
  s += ']';
  std::snprintf(buf, sizeof(buf), " %3d%% %llu/%llu", static_cast<int>(frac * 100.0),
                static_cast<unsigned long long>(shown), static_cast<unsigned long long>(total));
  s += buf;
  if (shown > 0 && shown < total && elapsed_s > 0) {
    const double left_s = elapsed_s * static_cast<double>(total - shown) / shown;
    if (left_s >= 3600) {
      std::snprintf(buf, sizeof(buf), "  ~%.1f h left", left_s / 3600);
    } else if (left_s >= 60) {
      std::snprintf(buf, sizeof(buf), "  ~%.0f min left", left_s / 60);
    } else {
      std::snprintf(buf, sizeof(buf), "  ~%.0f s left", left_s);
    }
    s += buf;
  }
  return s;
}

void ProgressBar::Add(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (!options_.enabled) return;
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  int64_t next = next_draw_ns_.load(std::memory_order_relaxed);
  if (now_ns < next) return;
  // One thread wins the right to draw this frame; the others carry on without waiting.
  const int64_t following =
      now_ns +
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.min_redraw_interval).count();
  if (!next_draw_ns_.compare_exchange_strong(next, following, std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  Draw(/*final_frame=*/false);
}

void ProgressBar::Finish() {
  std::lock_guard<std::mutex> lock(draw_mutex_);
  if (finished_) return;
  finished_ = true;
  if (options_.enabled) Draw(/*final_frame=*/true);
}

void ProgressBar::Draw(bool final_frame) {
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::string frame = Render(label_, done(), total_, options_.width, elapsed_s);
  // "\r" returns to the line start; "\033[K" clears what a longer previous frame left behind.
  std::fprintf(options_.out, "\r%s\033[K%s", frame.c_str(), final_frame ? "\n" : "");
  std::fflush(options_.out);
  redraws_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace trainsim::sim

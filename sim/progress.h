// sim::ProgressBar — a progress bar on stderr for long runs (sweeps, Monte Carlo trials).
//
// Shown only when stderr is a terminal and the CI environment variable is unset, so logs,
// pipes and CI output stay clean; otherwise every call is a cheap no-op. Redraws are throttled
// (at most one per 100 ms by default) and drawn in place with '\r'; Finish() draws the final
// state and a newline. Add() is thread-safe and lock-free on the fast path: workers on many
// threads may report progress at once; at most one of them redraws at a time.
//
// The bar reads the wall clock, but only to throttle and estimate time left on the terminal —
// never in results, so it cannot make output non-deterministic.
#ifndef TRAINSIM_SIM_PROGRESS_H_
#define TRAINSIM_SIM_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace trainsim::sim {

class ProgressBar {
 public:
  struct Options {
    // Whether to draw at all; by default ShouldShowOnStderr().
    bool enabled = ShouldShowOnStderr();
    // Where to draw (tests use a temporary file).
    std::FILE* out = stderr;
    // Minimum time between redraws.
    std::chrono::milliseconds min_redraw_interval{100};
    // Width of the bar itself in characters.
    int width = 30;
  };

  // `label` is printed before the bar ("sweep"); `total` is the number of units of work
  // (0 means unknown: the bar shows a count only).
  ProgressBar(std::string label, uint64_t total);
  ProgressBar(std::string label, uint64_t total, Options options);
  ~ProgressBar();  // calls Finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Records `n` more units done. Thread-safe.
  void Add(uint64_t n = 1);
  // Draws the final state followed by a newline (once; later calls do nothing). Thread-safe.
  void Finish();

  uint64_t done() const { return done_.load(std::memory_order_relaxed); }
  uint64_t total() const { return total_; }
  bool enabled() const { return options_.enabled; }
  // Number of times the bar was drawn (for tests).
  uint64_t redraws() const { return redraws_.load(std::memory_order_relaxed); }

  // True when stderr is a terminal and CI is not set in the environment.
  static bool ShouldShowOnStderr();
  // The text of one frame, without '\r' (exposed for tests): "label [####......]  40% 4/10".
  static std::string Render(const std::string& label, uint64_t done, uint64_t total, int width,
                            double elapsed_s);

 private:
  using Clock = std::chrono::steady_clock;
  void Draw(bool final_frame);  // REQUIRES: draw_mutex_ held

  const std::string label_;
  const uint64_t total_;
  const Options options_;
  const Clock::time_point start_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> next_draw_ns_{0};  // steady-clock ns since start_ of the next redraw
  std::atomic<uint64_t> redraws_{0};
  std::mutex draw_mutex_;
  bool finished_ = false;  // guarded by draw_mutex_
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_PROGRESS_H_

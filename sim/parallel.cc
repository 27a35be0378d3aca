#include "sim/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::sim {

Result<int> ResolveThreads(int requested, const char* option) {
  if (requested < 0 || requested > kMaxThreads) {
    return Status::InvalidArgument(std::string(option) + " must be 0 (all cores) or 1.." +
                                   std::to_string(kMaxThreads) + "; got " +
                                   std::to_string(requested));
  }
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

Status ParallelFor(int64_t n, int threads, const std::function<Status(int64_t)>& body) {
  if (n <= 0) return Status::Ok();
  const int workers = static_cast<int>(std::clamp<int64_t>(threads, 1, n));
  if (workers == 1) {
    for (int64_t i = 0; i < n; ++i) {
      Status s = body(i);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  std::atomic<int64_t> next{0};
  // The lowest failed index so far: no index above it needs to run.
  std::atomic<int64_t> stop_at{std::numeric_limits<int64_t>::max()};
  std::mutex mu;
  int64_t failed_index = std::numeric_limits<int64_t>::max();
  Status failed;
  std::exception_ptr thrown;
  auto work = [&] {
    for (int64_t i = next.fetch_add(1); i < n && i < stop_at.load(); i = next.fetch_add(1)) {
      Status s;
      std::exception_ptr e;
      try {
        s = body(i);
      } catch (...) {
        e = std::current_exception();
        s = Status::Internal("exception");  // placeholder; `thrown` carries it
      }
      if (s.ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (i < failed_index) {
        failed_index = i;
        failed = e ? Status::Ok() : s;
        thrown = e;
        int64_t cur = stop_at.load();
        while (i < cur && !stop_at.compare_exchange_weak(cur, i)) {
        }
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (thrown) std::rethrow_exception(thrown);
  return failed;
}

}  // namespace trainsim::sim

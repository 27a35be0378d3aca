// emulate/worker.cc — `trainsim worker`: one rank of the emulated job. A single-threaded Asio
// io_context runs the coordinator link (hello, assignments, heartbeats) and the training loop
// (scaled compute, a ring all-reduce over TCP with a deadline, checkpoints written on a thread).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <thread>

#include "emulate/checkpoint_store.h"
#include "emulate/emulate.h"
#include "emulate/net.h"

namespace trainsim::emulate {
namespace {

using namespace net;  // NOLINT: the Asio aliases of emulate/net.h
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// 30 s: far above process start + rendezvous on any machine this runs on, far below the
// emulation's --timeout default (300 s).
constexpr double kRingSetupS = 30;

struct Assignment {
  int64_t gen = 0;
  int rank = 0, world = 1;
  int64_t elements = 0, start_step = 0, steps = 0, checkpoint_every = 0, kill_write_step = 0;
  double compute_s = 0, collective_timeout_s = 0;
  bool async = false;
  std::string dir, next_host;
  int next_port = 0;
  uint64_t seed = 1;
  std::vector<uint64_t> restore_checksums;
};

class Worker {
 public:
  Worker(asio::io_context& io, uint64_t hash) : io_(io), hash_(hash), control_(io), ring_acc_(io) {}

  int exit_code = 1;

  awaitable<void> Main(std::string host, int port, double connect_timeout_s) {
    // Connect, retrying until the deadline (the coordinator may still be starting).
    const auto deadline = Clock::now() + Seconds(connect_timeout_s);
    std::string last_error;
    for (;;) {
      boost::system::error_code ec;
      tcp::resolver resolver(io_);
      auto eps = co_await resolver.async_resolve(host, std::to_string(port),
                                                 asio::redirect_error(use_awaitable, ec));
      if (!ec) co_await asio::async_connect(control_, eps, asio::redirect_error(use_awaitable, ec));
      if (!ec) break;
      last_error = ec.message();
      if (Clock::now() >= deadline) {
        std::cerr << "trainsim: error: cannot reach the coordinator at " << host << ":" << port
                  << " (" << last_error << ") within " << connect_timeout_s << " s\n";
        exit_code = 2;
        co_return;
      }
      // Retry every 50 ms: a coordinator starting a moment later is found without busy-waiting.
      asio::steady_timer t(io_, std::chrono::milliseconds(50));
      co_await t.async_wait(use_awaitable);
    }
    control_.set_option(tcp::no_delay(true));
    // The ring listener, on the address the coordinator sees us at.
    const auto local = control_.local_endpoint().address();
    ring_acc_.open(local.is_v4() ? tcp::v4() : tcp::v6());
    ring_acc_.bind(tcp::endpoint(local, 0));
    ring_acc_.listen();
    Message hello{"HELLO", {}};
    hello.Set("version", kProtocolVersion)
        .Set("scenario", Hex64(hash_))
        .Set("pid", static_cast<int64_t>(::getpid()))
        .Set("ring_host", local.to_string())
        .Set("ring_port", static_cast<int64_t>(ring_acc_.local_endpoint().port()));
    co_await Send(control_, hello);
    asio::co_spawn(io_, AcceptRing(), asio::detached);
    try {
      for (;;) {
        Message m = co_await Receive(control_);
        if (m.type == "REFUSE") {
          std::cerr << "trainsim: error: the coordinator refused this worker: " << m.Get("why")
                    << "\n";
          exit_code = 2;
          break;
        }
        if (m.type == "WELCOME") {
          heartbeat_s_ = m.Real("heartbeat_s");
          asio::co_spawn(io_, Heartbeats(), asio::detached);
        } else if (m.type == "ASSIGN") {
          Abort();
          asio::co_spawn(io_, Train(ParseAssign(m)), asio::detached);
        } else if (m.type == "ABORT") {
          Abort();
        } else if (m.type == "SLOW") {
          compute_factor_ = m.Real("compute_factor");
          link_factor_ = m.Real("link_factor");
        } else if (m.type == "CRASH") {
          std::cerr << "trainsim worker: injected software fault: exiting with an error\n";
          std::fflush(nullptr);
          ::_exit(1);
        } else if (m.type == "DONE") {
          exit_code = 0;
          break;
        }
      }
    } catch (const std::exception& e) {
      std::cerr << "trainsim worker: lost the coordinator (" << e.what() << "); exiting\n";
      exit_code = 1;
    }
    Abort();
    if (writer_.joinable()) writer_.join();
    io_.stop();
  }

 private:
  static Assignment ParseAssign(const Message& m) {
    Assignment a;
    a.gen = m.Int("gen");
    a.rank = static_cast<int>(m.Int("rank"));
    a.world = static_cast<int>(m.Int("world"));
    a.elements = m.Int("elements");
    a.start_step = m.Int("start_step");
    a.steps = m.Int("steps");
    a.checkpoint_every = m.Int("checkpoint_every");
    a.kill_write_step = m.Int("kill_write_step");
    a.compute_s = m.Real("compute_s");
    a.collective_timeout_s = m.Real("collective_timeout_s");
    a.async = m.Get("policy") == "ASYNC";
    a.dir = m.Get("dir");
    a.next_host = m.Get("next_host");
    a.next_port = static_cast<int>(m.Int("next_port"));
    a.seed = static_cast<uint64_t>(m.Int("seed"));
    for (int r = 0; r < a.world && a.start_step > 0; ++r) {
      a.restore_checksums.push_back(std::stoull(m.Get("c" + std::to_string(r)), nullptr, 16));
    }
    return a;
  }

  void Abort() {
    ++epoch_;
    boost::system::error_code ec;
    if (next_) next_->close(ec);
    if (prev_) prev_->close(ec);
    next_.reset();
    prev_.reset();
    if (sleep_) sleep_->cancel();
  }

  awaitable<void> Heartbeats() {
    asio::steady_timer t(io_);
    for (;;) {
      t.expires_after(Seconds(heartbeat_s_));
      co_await t.async_wait(use_awaitable);
      Message hb{"HEARTBEAT", {}};
      hb.Set("step", step_);
      Post(hb);
    }
  }

  // Queues a message to the coordinator; one writer drains the queue in order (two writes in
  // flight on one socket could interleave their bytes).
  void Post(const Message& m) {
    const std::string payload = Encode(m);
    outbox_.push_back(LengthPrefix(static_cast<uint32_t>(payload.size())) + payload);
    if (sending_) return;
    sending_ = true;
    asio::co_spawn(
        io_,
        [this]() -> awaitable<void> {
          while (!outbox_.empty()) {
            std::string frame = std::move(outbox_.front());
            outbox_.pop_front();
            boost::system::error_code ec;
            co_await asio::async_write(control_, asio::buffer(frame),
                                       asio::redirect_error(use_awaitable, ec));
            if (ec) break;
          }
          sending_ = false;
        },
        asio::detached);
  }

  // Accepts the previous rank's ring connections for the life of the process, keyed by the
  // generation they announce (a stale generation's connection is kept but never used).
  awaitable<void> AcceptRing() {
    for (;;) {
      auto s = std::make_shared<tcp::socket>(io_);
      co_await ring_acc_.async_accept(*s, use_awaitable);
      s->set_option(tcp::no_delay(true));
      try {
        Message who = co_await Receive(*s);
        incoming_[who.Int("gen")] = s;
      } catch (const std::exception&) {
        // Not a ring peer (a port scanner, a peer that died mid-hello): drop it.
      }
    }
  }

  awaitable<void> Train(Assignment a);
  awaitable<double> AllReduce(const Assignment& a, std::vector<double>* buf, double* bytes);
  awaitable<void> Checkpoint(const Assignment& a, int64_t step, uint64_t epoch);

  asio::io_context& io_;
  uint64_t hash_;
  tcp::socket control_;
  tcp::acceptor ring_acc_;
  std::shared_ptr<tcp::socket> next_, prev_;
  std::shared_ptr<asio::steady_timer> sleep_;
  uint64_t epoch_ = 0;
  int64_t step_ = 0;
  double heartbeat_s_ = 1;
  double compute_factor_ = 1, link_factor_ = 1;
  std::vector<double> state_;
  std::thread writer_;
  std::deque<std::string> outbox_;
  bool sending_ = false;
  std::map<int64_t, std::shared_ptr<tcp::socket>> incoming_;
  std::atomic<bool> writing_{false};
};

awaitable<void> Worker::Train(Assignment a) {
  const uint64_t epoch = epoch_;
  try {
    // Restore: every rank reads every shard (each holds the full replicated state) and checks it.
    const auto t0 = Clock::now();
    if (a.start_step > 0) {
      std::vector<double> full;
      for (int r = 0; r < a.world; ++r) {
        Status s = ReadShard(a.dir, a.start_step, r, a.world, a.restore_checksums[r], &full);
        if (!s.ok())
          throw std::runtime_error("restore of step " + std::to_string(a.start_step) + ": " +
                                   s.message());
      }
      state_ = std::move(full);
    } else {
      state_ = InitialState(a.seed, a.elements);
    }
    const double load_s = Since(t0);
    // The ring: connect to the next rank while the previous one connects to us.
    auto next = std::make_shared<tcp::socket>(io_);
    next_ = next;
    tcp::resolver resolver(io_);
    // Ring setup is a rendezvous, not a collective: it gets its own generous deadline (a loaded
    // machine may take seconds to schedule a freshly started spare).
    const auto deadline = Clock::now() + Seconds(std::max(a.collective_timeout_s, kRingSetupS));
    for (;;) {
      boost::system::error_code ec;
      auto eps =
          co_await resolver.async_resolve(a.next_host, std::to_string(a.next_port), use_awaitable);
      co_await asio::async_connect(*next, eps, asio::redirect_error(use_awaitable, ec));
      if (!ec) break;
      if (epoch != epoch_ || Clock::now() > deadline) throw std::runtime_error("ring connect");
      // 5 ms between ring connection attempts: well under a step, no busy-wait.
      asio::steady_timer t(io_, std::chrono::milliseconds(5));
      co_await t.async_wait(use_awaitable);
    }
    next->set_option(tcp::no_delay(true));
    Message ring;  // built outside the co_await: GCC 12 cannot copy a literal into the frame
    ring.type = "RING";
    ring.Set("gen", a.gen);
    co_await Send(*next, ring);
    while (!incoming_.count(a.gen)) {
      if (epoch != epoch_) co_return;
      if (Clock::now() > deadline) throw std::runtime_error("ring accept");
      asio::steady_timer t(io_, std::chrono::milliseconds(1));
      co_await t.async_wait(use_awaitable);
    }
    prev_ = incoming_[a.gen];
    for (auto it = incoming_.begin(); it != incoming_.end();) {  // older generations' are dead
      it = it->first <= a.gen ? incoming_.erase(it) : std::next(it);
    }
    if (epoch != epoch_) co_return;
    Post(Message{"READY", {}}.Set("gen", a.gen).SetReal("load_s", load_s));

    std::vector<double> grad(state_.size());
    for (int64_t step = a.start_step + 1; step <= a.steps; ++step) {
      const auto ts = Clock::now();
      sleep_ = std::make_shared<asio::steady_timer>(io_, Seconds(a.compute_s * compute_factor_));
      co_await sleep_->async_wait(use_awaitable);
      Gradient(a.seed, a.rank, step, &grad);
      const double compute = Since(ts);
      double bytes = 0;
      const double comm = co_await AllReduce(a, &grad, &bytes);
      if (epoch != epoch_) co_return;
      ApplyUpdate(grad, a.world, &state_);
      step_ = step;
      Post(Message{"STEP", {}}
               .Set("gen", a.gen)
               .Set("step", step)
               .SetReal("compute_s", compute)
               .SetReal("comm_s", comm)
               .SetReal("bytes", bytes));
      if (a.checkpoint_every > 0 && step % a.checkpoint_every == 0 && step < a.steps) {
        co_await Checkpoint(a, step, epoch);
      }
    }
    if (writer_.joinable()) {
      while (writing_) {
        asio::steady_timer t(io_, std::chrono::milliseconds(1));
        co_await t.async_wait(use_awaitable);
      }
      writer_.join();
    }
    if (a.rank == 0) {
      const std::string path = a.dir + "/final-state.bin";
      if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(state_.data(), sizeof(double), state_.size(), f);
        std::fclose(f);
      }
    }
    Post(Message{"FINAL", {}}
             .Set("gen", a.gen)
             .Set("hash", Hex64(Fnv1a64(state_.data(), state_.size() * sizeof(double)))));
  } catch (const std::exception& e) {
    if (epoch != epoch_) co_return;  // aborted by the coordinator: not an error
    const std::string what = e.what();
    Post(Message{std::string(what == "collective timeout" ? "TIMEOUT" : "PEER_LOST"), {}}
             .Set("gen", a.gen)
             .Set("step", step_)
             .Set("why", what));
  }
}

// Ring all-reduce (reduce-scatter then all-gather) of `buf` in world chunks, under the
// collective deadline. Returns the seconds it took.
awaitable<double> Worker::AllReduce(const Assignment& a, std::vector<double>* buf, double* bytes) {
  const auto t0 = Clock::now();
  const int n = a.world;
  if (n == 1) co_return 0.0;
  auto next = next_;
  auto prev = prev_;
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer watchdog(io_, Seconds(a.collective_timeout_s));
  watchdog.async_wait([next, prev, timed_out](boost::system::error_code ec) {
    if (ec) return;  // cancelled: the collective finished
    *timed_out = true;
    boost::system::error_code ignored;
    next->close(ignored);
    prev->close(ignored);
  });
  std::vector<double> recv(static_cast<size_t>(a.elements / n + 1));
  try {
    for (int k = 0; k < 2 * (n - 1); ++k) {
      const bool scatter = k < n - 1;
      const int kk = scatter ? k : k - (n - 1);
      // Reduce-scatter: send chunk (r-k), receive chunk (r-k-1) and add. All-gather: send chunk
      // (r+1-k), receive chunk (r-k) and copy.
      const int send_c = ((a.rank - kk + (scatter ? 0 : 1)) % n + n) % n;
      const int recv_c = ((a.rank - kk - (scatter ? 1 : 0)) % n + n) % n;
      auto [slo, shi] = ChunkRange(a.elements, n, send_c);
      auto [rlo, rhi] = ChunkRange(a.elements, n, recv_c);
      auto sent = std::make_shared<Event>(io_.get_executor());
      auto send_ec = std::make_shared<boost::system::error_code>();
      const auto tsend = Clock::now();
      asio::async_write(*next, asio::buffer(buf->data() + slo, (shi - slo) * sizeof(double)),
                        [sent, send_ec](boost::system::error_code ec, size_t) {
                          *send_ec = ec;
                          sent->Set();
                        });
      co_await asio::async_read(*prev, asio::buffer(recv.data(), (rhi - rlo) * sizeof(double)),
                                use_awaitable);
      co_await sent->Wait();
      if (*send_ec) throw boost::system::system_error(*send_ec);
      *bytes += static_cast<double>(shi - slo) * sizeof(double);
      if (link_factor_ < 1) {  // a degraded link: the send takes 1/f as long
        asio::steady_timer t(io_, Seconds(Since(tsend) * (1 / link_factor_ - 1)));
        co_await t.async_wait(use_awaitable);
      }
      if (scatter) {
        for (int64_t i = rlo; i < rhi; ++i) (*buf)[i] = recv[i - rlo] + (*buf)[i];
      } else {
        std::copy(recv.begin(), recv.begin() + (rhi - rlo), buf->begin() + rlo);
      }
    }
  } catch (const std::exception&) {
    if (*timed_out) throw std::runtime_error("collective timeout");
    throw;
  }
  watchdog.cancel();
  co_return Since(t0);
}

awaitable<void> Worker::Checkpoint(const Assignment& a, int64_t step, uint64_t epoch) {
  // One background write at a time: a checkpoint due while the last is still writing waits.
  while (writing_) {
    asio::steady_timer t(io_, std::chrono::milliseconds(1));
    co_await t.async_wait(use_awaitable);
  }
  if (writer_.joinable()) writer_.join();
  const auto t0 = Clock::now();
  auto [lo, hi] = ChunkRange(a.elements, a.world, a.rank);
  auto snapshot = std::make_shared<std::vector<double>>(state_.begin() + lo, state_.begin() + hi);
  const bool die = a.kill_write_step == step;
  auto done = std::make_shared<Event>(io_.get_executor());
  writing_ = true;
  writer_ = std::thread([this, a, step, snapshot, die, done, epoch, t0] {
    const auto tw = Clock::now();
    Result<uint64_t> sum = WriteShard(a.dir, step, a.rank, a.world, snapshot->data(),
                                      static_cast<int64_t>(snapshot->size()), die);
    const double write_s = Since(tw);
    asio::post(io_, [this, a, step, sum, write_s, done, epoch] {
      writing_ = false;
      done->Set();
      if (epoch != epoch_ || !sum.ok()) return;
      Post(Message{"SHARD", {}}
               .Set("gen", a.gen)
               .Set("step", step)
               .Set("checksum", Hex64(*sum))
               .SetReal("write_s", write_s));
    });
    (void)t0;
  });
  if (!a.async) co_await done->Wait();  // SYNC: training stops for the write
  Post(Message{"STALL", {}}.Set("gen", a.gen).SetReal("stall_s", Since(t0)));
}

}  // namespace

int RunWorker(const std::string& coordinator, uint64_t scenario_hash, double connect_timeout_s) {
  std::string host;
  int port = 0;
  Status s = net::SplitHostPort(coordinator, "--coordinator", &host, &port);
  if (!s.ok()) {
    std::cerr << "trainsim: error: " << s.message() << "\n";
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a dead peer is an error code, not a signal
  net::asio::io_context io;
  Worker w(io, scenario_hash);
  net::asio::co_spawn(io, w.Main(host, port, connect_timeout_s), net::asio::detached);
  io.run();
  return w.exit_code;
}

}  // namespace trainsim::emulate

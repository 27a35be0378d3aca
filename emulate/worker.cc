// emulate/worker.cc — `trainsim worker`: one rank of the emulated job. A single-threaded Asio
// io_context runs the coordinator link (hello, assignments, heartbeats) and the training loop
// (scaled compute, a ring all-reduce over TCP with a deadline, checkpoints written on a thread).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

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

// 64 KiB pieces: the tree all-reduce's pipelining granularity (a chunk moves one level up while
// the next is read from the children), well under a loopback socket's buffer.
constexpr int64_t kTreeChunkDoubles = 8192;
// In-memory checkpoint steps a worker keeps (its own shard and its peer's): the newest complete
// set plus one being written, and one more for a rollback that lands between them.
constexpr size_t kMemorySteps = 3;

struct Assignment {
  int64_t gen = 0;
  int rank = 0, world = 1;
  int64_t elements = 0, start_step = 0, steps = 0, checkpoint_every = 0, kill_write_step = 0;
  int64_t check_every = 0;  // steps between state hashes for the cross-replica check
  double compute_s = 0, collective_timeout_s = 0;
  bool async = false, in_memory = false;
  int persistent_every = 1;
  Algorithm algorithm = Algorithm::kRing;
  std::string dir;
  std::vector<std::pair<std::string, int>> addrs;  // every rank's listener
  uint64_t seed = 1;
  std::string restore;  // "", "storage" or "memory"
  int restore_world = 0;
  std::vector<uint64_t> restore_checksums;
  std::vector<std::string> holders;  // restore == "memory": slice s's holder, HOST:PORT
};

std::pair<std::string, int> HostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return {text, 0};
  return {text.substr(0, colon), std::atoi(text.c_str() + colon + 1)};
}

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
        } else if (m.type == "CORRUPT") {
          Corrupt();
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
    a.check_every = m.Int("check_every");
    a.compute_s = m.Real("compute_s");
    a.collective_timeout_s = m.Real("collective_timeout_s");
    a.async = m.Get("policy") == "ASYNC";
    a.in_memory = m.Get("policy") == "IN_MEMORY";
    a.persistent_every = std::max<int>(1, static_cast<int>(m.Int("persistent_every")));
    a.algorithm = m.Get("algorithm") == "tree" ? Algorithm::kTree : Algorithm::kRing;
    a.dir = m.Get("dir");
    for (int r = 0; r < a.world; ++r) a.addrs.push_back(HostPort(m.Get("a" + std::to_string(r))));
    a.seed = static_cast<uint64_t>(m.Int("seed"));
    a.restore = m.Get("restore");
    a.restore_world = static_cast<int>(m.Int("restore_world"));
    for (int r = 0; r < a.restore_world && !a.restore.empty(); ++r) {
      a.restore_checksums.push_back(std::stoull(m.Get("c" + std::to_string(r)), nullptr, 16));
      a.holders.push_back(m.Get("m" + std::to_string(r)));
    }
    return a;
  }

  void Abort() {
    ++epoch_;
    boost::system::error_code ec;
    for (auto& l : {next_, prev_, up_, kids_[0], kids_[1]}) {
      if (l) l->close(ec);
    }
    next_.reset();
    prev_.reset();
    up_.reset();
    kids_[0].reset();
    kids_[1].reset();
    if (sleep_) sleep_->cancel();
  }

  // SDC: one bit of this replica's own shard flips (a mantissa bit of its first element), so
  // its state, and any checkpoint it writes from now on, silently differ from the others'.
  void Corrupt() {
    if (state_.empty() || cur_world_ < 1) return;
    const int64_t i = ChunkRange(static_cast<int64_t>(state_.size()), cur_world_, cur_rank_).first;
    uint64_t bits = 0;
    std::memcpy(&bits, &state_[i], sizeof bits);
    bits ^= uint64_t{1} << 40;
    std::memcpy(&state_[i], &bits, sizeof bits);
    // The last step whose checkpoint is surely clean: the flip may land before the snapshot of
    // step_'s checkpoint is taken (while an earlier background write is awaited).
    Post(Message{"SDC", {}}.Set("gen", cur_gen_).Set("step", std::max<int64_t>(0, step_ - 1)));
  }

  // Keeps the in-memory copies of the newest kMemorySteps checkpoint steps.
  void PruneMemory() {
    std::set<int64_t> steps;
    for (const auto& [key, v] : mem_) steps.insert(std::get<0>(key));
    while (steps.size() > kMemorySteps) {
      const int64_t oldest = *steps.begin();
      steps.erase(steps.begin());
      for (auto it = mem_.begin(); it != mem_.end();) {
        it = std::get<0>(it->first) == oldest ? mem_.erase(it) : std::next(it);
      }
    }
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

  // Accepts connections for the life of the process: ring/tree links of a generation (kept by
  // (generation, sender rank); a stale generation's is never used), peer copies to keep in
  // memory, and fetches of those copies by a restoring rank.
  awaitable<void> AcceptRing() {
    for (;;) {
      auto s = std::make_shared<tcp::socket>(io_);
      co_await ring_acc_.async_accept(*s, use_awaitable);
      s->set_option(tcp::no_delay(true));
      asio::co_spawn(io_, Serve(s), asio::detached);
    }
  }

  awaitable<void> Serve(std::shared_ptr<tcp::socket> s) {
    try {
      Message who = co_await Receive(*s);
      if (who.type == "RING") {
        incoming_[{who.Int("gen"), static_cast<int>(who.Int("from"))}] = s;
      } else if (who.type == "PEERCOPY") {
        // Each co_await's result goes to a named local first: GCC 12 miscompiles temporaries
        // (a Message literal, a returned vector) inside a co_await's enclosing expression.
        std::vector<double> got = co_await ReceiveDoubles(*s);
        auto v = std::make_shared<std::vector<double>>(std::move(got));
        const bool ok =
            Hex64(Fnv1a64(v->data(), v->size() * sizeof(double))) == who.Get("checksum");
        if (ok) {
          mem_[{who.Int("step"), static_cast<int>(who.Int("world")),
                static_cast<int>(who.Int("slice"))}] = v;
          PruneMemory();
        }
        Message reply;
        reply.type = ok ? "ACK" : "BAD";
        co_await Send(*s, reply);
      } else if (who.type == "FETCH") {
        auto it = mem_.find({who.Int("step"), static_cast<int>(who.Int("world")),
                             static_cast<int>(who.Int("slice"))});
        Message reply;
        reply.type = it == mem_.end() ? "MISSING" : "DATA";
        // The copy stays alive across the send even if pruned meanwhile.
        auto keep = it == mem_.end() ? nullptr : it->second;
        co_await Send(*s, reply);
        if (keep) co_await SendDoubles(*s, *keep);
      }
    } catch (const std::exception&) {
      // Not a peer (a port scanner, a peer that died mid-message): drop it.
    }
  }

  awaitable<std::shared_ptr<tcp::socket>> Connect(const Assignment& a, int to, uint64_t epoch,
                                                  Clock::time_point deadline);
  awaitable<std::shared_ptr<tcp::socket>> Incoming(const Assignment& a, int from, uint64_t epoch,
                                                   Clock::time_point deadline);
  awaitable<void> Restore(const Assignment& a);
  awaitable<void> PeerCopy(Assignment a, int64_t step, std::shared_ptr<std::vector<double>> data,
                           uint64_t sum, uint64_t epoch);
  awaitable<double> TreeAllReduce(const Assignment& a, std::vector<double>* buf, double* bytes);
  awaitable<void> Train(Assignment a);
  awaitable<double> AllReduce(const Assignment& a, std::vector<double>* buf, double* bytes);
  awaitable<void> Checkpoint(const Assignment& a, int64_t step, uint64_t epoch);

  asio::io_context& io_;
  uint64_t hash_;
  tcp::socket control_;
  tcp::acceptor ring_acc_;
  std::shared_ptr<tcp::socket> next_, prev_, up_, kids_[2];
  int64_t cur_gen_ = 0;
  int cur_rank_ = 0, cur_world_ = 0;
  // In-memory checkpoint copies: (step, world, slice) -> the slice (its own and its peer's).
  std::map<std::tuple<int64_t, int, int>, std::shared_ptr<std::vector<double>>> mem_;
  std::shared_ptr<asio::steady_timer> sleep_;
  uint64_t epoch_ = 0;
  int64_t step_ = 0;
  double heartbeat_s_ = 1;
  double compute_factor_ = 1, link_factor_ = 1;
  std::vector<double> state_;
  std::thread writer_;
  std::deque<std::string> outbox_;
  bool sending_ = false;
  std::map<std::pair<int64_t, int>, std::shared_ptr<tcp::socket>> incoming_;
  std::atomic<bool> writing_{false};
};

awaitable<std::shared_ptr<tcp::socket>> Worker::Connect(const Assignment& a, int to, uint64_t epoch,
                                                        Clock::time_point deadline) {
  auto sock = std::make_shared<tcp::socket>(io_);
  tcp::resolver resolver(io_);
  for (;;) {
    boost::system::error_code ec;
    auto eps = co_await resolver.async_resolve(a.addrs[to].first,
                                               std::to_string(a.addrs[to].second), use_awaitable);
    co_await asio::async_connect(*sock, eps, asio::redirect_error(use_awaitable, ec));
    if (!ec) break;
    if (epoch != epoch_ || Clock::now() > deadline) throw std::runtime_error("link connect");
    // 5 ms between connection attempts: well under a step, no busy-wait.
    asio::steady_timer t(io_, std::chrono::milliseconds(5));
    co_await t.async_wait(use_awaitable);
  }
  sock->set_option(tcp::no_delay(true));
  Message link;  // built outside the co_await: GCC 12 cannot copy a literal into the frame
  link.type = "RING";
  link.Set("gen", a.gen).Set("from", a.rank);
  co_await Send(*sock, link);
  co_return sock;
}

awaitable<std::shared_ptr<tcp::socket>> Worker::Incoming(const Assignment& a, int from,
                                                         uint64_t epoch,
                                                         Clock::time_point deadline) {
  const std::pair<int64_t, int> key{a.gen, from};
  while (!incoming_.count(key)) {
    if (epoch != epoch_) co_return nullptr;
    if (Clock::now() > deadline) throw std::runtime_error("link accept");
    asio::steady_timer t(io_, std::chrono::milliseconds(1));
    co_await t.async_wait(use_awaitable);
  }
  auto s = incoming_[key];
  incoming_.erase(key);
  co_return s;
}

// The state of the checkpoint the coordinator chose: from DIR's shards (every rank reads every
// shard: each holds the full replicated state) or from the in-memory copies (its own, else
// fetched over TCP from the holder the coordinator named), every slice checked against its
// checksum.
awaitable<void> Worker::Restore(const Assignment& a) {
  if (a.restore.empty()) {
    state_ = InitialState(a.seed, a.elements);
    co_return;
  }
  std::vector<double> full;
  for (int r = 0; r < a.restore_world; ++r) {
    if (a.restore == "storage") {
      Status s = ReadShard(a.dir, a.start_step, r, a.restore_world, a.restore_checksums[r], &full);
      if (!s.ok()) {
        throw std::runtime_error("restore of step " + std::to_string(a.start_step) + ": " +
                                 s.message());
      }
      continue;
    }
    std::shared_ptr<std::vector<double>> slice;
    auto it = mem_.find({a.start_step, a.restore_world, r});
    if (it != mem_.end()) {
      slice = it->second;
    } else {
      auto [host, port] = HostPort(a.holders[r]);
      tcp::socket sock(io_);
      tcp::resolver resolver(io_);
      auto eps = co_await resolver.async_resolve(host, std::to_string(port), use_awaitable);
      co_await asio::async_connect(sock, eps, use_awaitable);
      Message fetch;
      fetch.type = "FETCH";
      fetch.Set("step", a.start_step).Set("world", a.restore_world).Set("slice", r);
      co_await Send(sock, fetch);
      Message reply = co_await Receive(sock);
      if (reply.type != "DATA")
        throw std::runtime_error("peer copy " + std::to_string(r) + " gone");
      std::vector<double> got = co_await ReceiveDoubles(sock);
      slice = std::make_shared<std::vector<double>>(std::move(got));
    }
    if (Fnv1a64(slice->data(), slice->size() * sizeof(double)) != a.restore_checksums[r]) {
      throw std::runtime_error("peer copy " + std::to_string(r) + " checksum mismatch");
    }
    full.insert(full.end(), slice->begin(), slice->end());
  }
  if (static_cast<int64_t>(full.size()) != a.elements) throw std::runtime_error("restore size");
  state_ = std::move(full);
}

awaitable<void> Worker::Train(Assignment a) {
  const uint64_t epoch = epoch_;
  cur_gen_ = a.gen;
  cur_rank_ = a.rank;
  cur_world_ = a.world;
  try {
    const auto t0 = Clock::now();
    co_await Restore(a);
    if (epoch != epoch_) co_return;
    const double load_s = Since(t0);
    // The links: a ring connects to the next rank and accepts the previous one; a tree connects
    // to its parent and accepts its children. Setup is a rendezvous, not a collective: it gets
    // its own generous deadline (a loaded machine may take seconds to schedule a fresh spare).
    const auto deadline = Clock::now() + Seconds(std::max(a.collective_timeout_s, kRingSetupS));
    if (a.algorithm == Algorithm::kRing) {
      next_ = co_await Connect(a, (a.rank + 1) % a.world, epoch, deadline);
      auto prev = co_await Incoming(a, (a.rank + a.world - 1) % a.world, epoch, deadline);
      if (epoch != epoch_) co_return;
      prev_ = prev;
    } else {
      if (a.rank > 0) up_ = co_await Connect(a, (a.rank - 1) / 2, epoch, deadline);
      for (int k = 0; k < 2; ++k) {
        const int child = 2 * a.rank + 1 + k;
        if (child >= a.world) continue;
        auto s = co_await Incoming(a, child, epoch, deadline);
        if (epoch != epoch_) co_return;
        kids_[k] = s;
      }
    }
    for (auto it = incoming_.begin(); it != incoming_.end();) {  // older generations' are dead
      it = it->first.first <= a.gen ? incoming_.erase(it) : std::next(it);
    }
    if (epoch != epoch_) co_return;
    Post(Message{"READY", {}}.Set("gen", a.gen).SetReal("load_s", load_s));

    std::vector<double> grad(state_.size());
    for (int64_t step = a.start_step + 1; step <= a.steps; ++step) {
      const auto ts = Clock::now();
      sleep_ = std::make_shared<asio::steady_timer>(io_, Seconds(a.compute_s * compute_factor_));
      co_await sleep_->async_wait(use_awaitable);
      // An ABORT that came after the timer had already fired does not cancel the wait.
      if (epoch != epoch_) co_return;
      Gradient(a.seed, a.rank, step, &grad);
      const double compute = Since(ts);
      double bytes = 0;
      double comm = 0;
      if (a.algorithm == Algorithm::kTree) {
        comm = co_await TreeAllReduce(a, &grad, &bytes);
      } else {
        comm = co_await AllReduce(a, &grad, &bytes);
      }
      if (epoch != epoch_) co_return;
      ApplyUpdate(grad, a.world, &state_);
      step_ = step;
      Message done{"STEP", {}};
      done.Set("gen", a.gen)
          .Set("step", step)
          .SetReal("compute_s", compute)
          .SetReal("comm_s", comm)
          .SetReal("bytes", bytes);
      if (a.check_every > 0 && step % a.check_every == 0) {
        // The cross-replica check: every replica's state hash, compared by the coordinator.
        done.Set("state_hash", Hex64(Fnv1a64(state_.data(), state_.size() * sizeof(double))));
      }
      Post(done);
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
  if (!next || !prev) throw std::runtime_error("aborted");  // the generation's links are gone
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
  std::shared_ptr<Event> in_flight;  // the send not yet completed, if any
  std::exception_ptr failed;
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
      // The handler keeps the socket alive until the write's last piece completes.
      asio::async_write(*next, asio::buffer(buf->data() + slo, (shi - slo) * sizeof(double)),
                        [sent, send_ec, next](boost::system::error_code ec, size_t) {
                          *send_ec = ec;
                          sent->Set();
                        });
      in_flight = sent;
      co_await asio::async_read(*prev, asio::buffer(recv.data(), (rhi - rlo) * sizeof(double)),
                                use_awaitable);
      co_await sent->Wait();
      in_flight.reset();
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
    failed = std::current_exception();
  }
  if (failed) {
    // The generation is over (a peer died, the watchdog fired, or ABORT): close the links so a
    // send still in flight ends now, and wait for it — it reads `buf`, which the caller frees.
    boost::system::error_code ignored;
    next->close(ignored);
    prev->close(ignored);
    if (in_flight) co_await in_flight->Wait();
    if (*timed_out) throw std::runtime_error("collective timeout");
    std::rethrow_exception(failed);
  }
  watchdog.cancel();
  co_return Since(t0);
}

awaitable<void> Worker::Checkpoint(const Assignment& a, int64_t step, uint64_t epoch) {
  // IN_MEMORY persists every persistent_every-th checkpoint (counted from the first, at
  // checkpoint_every), like the run simulation; SYNC and ASYNC persist every one.
  const bool persist = !a.in_memory || (step / a.checkpoint_every) % a.persistent_every == 0;
  // One background write at a time: a checkpoint due while the last is still writing waits.
  while (persist && writing_) {
    asio::steady_timer t(io_, std::chrono::milliseconds(1));
    co_await t.async_wait(use_awaitable);
  }
  if (persist && writer_.joinable()) writer_.join();
  const auto t0 = Clock::now();
  auto [lo, hi] = ChunkRange(a.elements, a.world, a.rank);
  auto snapshot = std::make_shared<std::vector<double>>(state_.begin() + lo, state_.begin() + hi);
  if (a.in_memory) {
    // The snapshot stays in this process's memory and is copied to the peer (rank + 1, the run
    // simulation's rule: node n's copy lives on node n + 1) in the background.
    const uint64_t sum = Fnv1a64(snapshot->data(), snapshot->size() * sizeof(double));
    mem_[{step, a.world, a.rank}] = snapshot;
    PruneMemory();
    asio::co_spawn(io_, PeerCopy(a, step, snapshot, sum, epoch), asio::detached);
  }
  if (persist) {
    const bool die = a.kill_write_step == step;
    auto done = std::make_shared<Event>(io_.get_executor());
    writing_ = true;
    writer_ = std::thread([this, a, step, snapshot, die, done, epoch] {
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
    });
    if (!a.async && !a.in_memory) co_await done->Wait();  // SYNC: training stops for the write
  }
  Post(Message{"STALL", {}}.Set("gen", a.gen).SetReal("stall_s", Since(t0)));
}

awaitable<void> Worker::PeerCopy(Assignment a, int64_t step,
                                 std::shared_ptr<std::vector<double>> data, uint64_t sum,
                                 uint64_t epoch) {
  const auto t0 = Clock::now();
  auto sock = std::make_shared<tcp::socket>(io_);
  // The copy gets the collective's deadline: a stopped peer must not hold the socket forever.
  auto watchdog = std::make_shared<asio::steady_timer>(io_, Seconds(a.collective_timeout_s));
  watchdog->async_wait([sock](boost::system::error_code ec) {
    if (!ec) sock->close(ec);
  });
  try {
    const auto& [host, port] = a.addrs[(a.rank + 1) % a.world];
    tcp::resolver resolver(io_);
    auto eps = co_await resolver.async_resolve(host, std::to_string(port), use_awaitable);
    co_await asio::async_connect(*sock, eps, use_awaitable);
    Message copy;
    copy.type = "PEERCOPY";
    copy.Set("step", step).Set("world", a.world).Set("slice", a.rank).Set("checksum", Hex64(sum));
    co_await Send(*sock, copy);
    co_await SendDoubles(*sock, *data);
    Message ack = co_await Receive(*sock);
    watchdog->cancel();
    if (ack.type != "ACK" || epoch != epoch_) co_return;
    Post(Message{"MEMCOPY", {}}
             .Set("gen", a.gen)
             .Set("step", step)
             .Set("checksum", Hex64(sum))
             .SetReal("copy_s", Since(t0)));
  } catch (const std::exception&) {
    // The peer died or the generation ended: this copy never completes its set.
  }
}

// Binary-tree all-reduce in heap order (ReduceInOrder's kTree): each rank adds its children's
// partials to its own, chunk by chunk, and sends the chunk up while the next one is read (one
// send in flight per link); the root's sum comes back down the same way.
awaitable<double> Worker::TreeAllReduce(const Assignment& a, std::vector<double>* buf,
                                        double* bytes) {
  const auto t0 = Clock::now();
  if (a.world == 1) co_return 0.0;
  if ((a.rank > 0 && !up_) || (2 * a.rank + 1 < a.world && !kids_[0]) ||
      (2 * a.rank + 2 < a.world && !kids_[1])) {
    throw std::runtime_error("aborted");  // the generation's links are gone
  }
  std::vector<std::shared_ptr<tcp::socket>> links = {up_, kids_[0], kids_[1]};
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer watchdog(io_, Seconds(a.collective_timeout_s));
  watchdog.async_wait([links, timed_out](boost::system::error_code ec) {
    if (ec) return;
    *timed_out = true;
    for (const auto& l : links) {
      if (l) l->close(ec);
    }
  });
  struct Sender {
    std::shared_ptr<tcp::socket> sock;
    std::shared_ptr<Event> done;
    std::shared_ptr<boost::system::error_code> ec;
  };
  auto drain = [](Sender& s) -> awaitable<void> {
    if (!s.done) co_return;
    co_await s.done->Wait();
    s.done.reset();
    if (*s.ec) throw boost::system::system_error(*s.ec);
  };
  auto send = [&](Sender& s, int64_t lo, int64_t hi) -> awaitable<void> {
    co_await drain(s);
    s.done = std::make_shared<Event>(io_.get_executor());
    s.ec = std::make_shared<boost::system::error_code>();
    asio::async_write(
        *s.sock, asio::buffer(buf->data() + lo, (hi - lo) * sizeof(double)),
        [done = s.done, ec = s.ec, sock = s.sock](boost::system::error_code e, size_t) {
          *ec = e;
          done->Set();
        });
    *bytes += static_cast<double>(hi - lo) * sizeof(double);
  };
  Sender up{up_, nullptr, nullptr};
  Sender down[2] = {{kids_[0], nullptr, nullptr}, {kids_[1], nullptr, nullptr}};
  std::vector<double> recv(static_cast<size_t>(kTreeChunkDoubles));
  const int64_t n = a.elements;
  std::exception_ptr failed;
  try {
    for (int64_t lo = 0; lo < n; lo += kTreeChunkDoubles) {  // reduce, up the tree
      const int64_t hi = std::min(n, lo + kTreeChunkDoubles);
      for (int k = 0; k < 2; ++k) {
        if (!kids_[k]) continue;
        co_await asio::async_read(*kids_[k], asio::buffer(recv.data(), (hi - lo) * sizeof(double)),
                                  use_awaitable);
        for (int64_t i = lo; i < hi; ++i) (*buf)[i] = (*buf)[i] + recv[i - lo];
      }
      if (up_) co_await send(up, lo, hi);
    }
    if (up_) co_await drain(up);
    for (int64_t lo = 0; lo < n; lo += kTreeChunkDoubles) {  // broadcast, down the tree
      const int64_t hi = std::min(n, lo + kTreeChunkDoubles);
      if (up_) {
        co_await asio::async_read(*up_, asio::buffer(buf->data() + lo, (hi - lo) * sizeof(double)),
                                  use_awaitable);
      }
      for (Sender& d : down) {
        if (d.sock) co_await send(d, lo, hi);
      }
    }
    for (Sender& d : down) co_await drain(d);
  } catch (const std::exception&) {
    failed = std::current_exception();
  }
  if (failed) {
    // As the ring: close the links, let every send in flight end before `buf` can go.
    for (const auto& l : links) {
      boost::system::error_code ignored;
      if (l) l->close(ignored);
    }
    for (Sender* s : {&up, &down[0], &down[1]}) {
      if (s->done) co_await s->done->Wait();
    }
    if (*timed_out) throw std::runtime_error("collective timeout");
    std::rethrow_exception(failed);
  }
  watchdog.cancel();
  if (link_factor_ < 1) {  // a degraded link: the exchange takes 1/f as long
    asio::steady_timer t(io_, Seconds(Since(t0) * (1 / link_factor_ - 1)));
    co_await t.async_wait(use_awaitable);
  }
  co_return Since(t0);
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

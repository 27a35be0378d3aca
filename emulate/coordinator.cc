// emulate/coordinator.cc — the coordinator of `trainsim emulate`: an Asio io_context on one
// thread that accepts workers, spawns and reaps processes, runs the detection monitors and
// finishes the run (generations, faults and recovery: coordinator_recovery.cc).
#include "emulate/coordinator.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace trainsim::emulate {
namespace internal {

void Coordinator::Post(const std::shared_ptr<Conn>& c, const Message& m) {
  if (!c || c->closed) return;
  const std::string payload = Encode(m);
  c->outbox.push_back(LengthPrefix(static_cast<uint32_t>(payload.size())) + payload);
  if (c->sending) return;
  c->sending = true;
  asio::co_spawn(
      io_,
      [c]() -> awaitable<void> {
        while (!c->outbox.empty()) {
          std::string frame = std::move(c->outbox.front());
          c->outbox.pop_front();
          boost::system::error_code ec;
          co_await asio::async_write(*c->sock, asio::buffer(frame),
                                     asio::redirect_error(use_awaitable, ec));
          if (ec) break;
        }
        c->sending = false;
      },
      asio::detached);
}

Status Coordinator::Spawn() {
  // argv[0] "trainsim": what `ps` shows, so that an operator finds the workers by name (the
  // binary itself is o_.self_exe, e.g. /proc/self/exe).
  std::vector<std::string> args = {"trainsim", "worker", "--coordinator", endpoint_};
  args.insert(args.end(), o_.worker_args.begin(), o_.worker_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, pgid_);                 // every worker in one group: killpg ends them all
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed coordinator takes its workers with it
    if (::getppid() != parent) ::_exit(1);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    ::execv(o_.self_exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pgid_);  // also here: whichever of parent and child runs first
  if (pgid_ == 0) pgid_ = pid;
  children_.push_back(pid);
  ++r_.processes_started;
  return Status::Ok();
}

void Coordinator::PollChildren() {
  for (pid_t& pid : children_) {
    if (pid <= 0) continue;
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      for (auto& c : conns_) {
        if (c->pid == pid && c->local) c->exited = true;
      }
      pid = -pid;  // reaped
    }
  }
}

void Coordinator::ReapAll() {
  if (pgid_ > 0) ::killpg(pgid_, SIGKILL);
  for (pid_t pid : children_) {
    if (pid <= 0) continue;
    ::kill(pid, SIGKILL);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  children_.clear();
}

awaitable<void> Coordinator::Accept() {
  for (;;) {
    auto c = std::make_shared<Conn>();
    c->sock = std::make_shared<tcp::socket>(io_);
    co_await acceptor_.async_accept(*c->sock, use_awaitable);
    c->sock->set_option(tcp::no_delay(true));
    c->id = next_id_++;
    c->last_heard = Clock::now();
    conns_.push_back(c);
    asio::co_spawn(io_, Session(c), asio::detached);
  }
}

awaitable<void> Coordinator::Session(std::shared_ptr<Conn> c) {
  try {
    Message hello = co_await Receive(*c->sock);
    std::string why;
    if (hello.type != "HELLO") {
      why = "the first message was " + hello.type + ", not HELLO";
    } else if (hello.Int("version") != kProtocolVersion) {
      why = "protocol version " + hello.Get("version") + ", the coordinator speaks " +
            std::to_string(kProtocolVersion) + " (use the same trainsim build)";
    } else if (hello.Get("scenario") != Hex64(plan_.scenario_hash)) {
      why = "scenario hash " + hello.Get("scenario") + " differs from the coordinator's " +
            Hex64(plan_.scenario_hash) + " (pass the same SCENARIO and --set options)";
    }
    if (!why.empty()) {
      Post(c, Message{"REFUSE", {{"why", why}}});
      std::cerr << "trainsim emulate: refused a worker: " << why << "\n";
      co_return;
    }
    c->pid = static_cast<pid_t>(hello.Int("pid"));
    c->local = std::find(children_.begin(), children_.end(), c->pid) != children_.end();
    c->ring_host = hello.Get("ring_host");
    c->ring_port = static_cast<int>(hello.Int("ring_port"));
    c->hello = true;
    // Keep-alives at a fifth of the detection delay: torchelastic's c10d rendezvous declares a
    // node dead after 3 missed at 5 s; 5 per delay leaves one more for a loaded machine.
    Post(c, Message{"WELCOME", {}}.SetReal("heartbeat_s", plan_.heartbeat_s / 5));
    TryStart();
    for (;;) {
      Message m = co_await Receive(*c->sock);
      c->last_heard = Clock::now();
      Handle(c, m);
    }
  } catch (const std::exception&) {
    c->closed = true;  // noticed by the mechanisms, not here (docs/emulate.md)
  }
}

awaitable<void> Coordinator::ExitMonitor() {
  // The agent's monitor interval: a crashed process is seen at the next poll.
  asio::steady_timer t(io_);
  for (;;) {
    t.expires_after(Seconds(plan_.process_exit_s));
    co_await t.async_wait(use_awaitable);
    PollChildren();
    if (phase_ == Phase::kWaiting) {
      // A worker that dies while the job re-forms (a spare that crashed on start) would leave
      // the rendezvous one short forever: it is replaced.
      for (auto& c : conns_) {
        if (!c->hello || c->failed || !(c->exited || (!c->local && c->closed))) continue;
        c->failed = true;
        r_.plan.notes.push_back("a worker exited while the job re-formed; replaced");
        // A fault injected on it that the recovery in progress did not see (its exit was not
        // yet reaped when the other was detected) is found here, by the same monitor.
        for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
          if (ranks_[r] == c) AttributeUndetected(r, DetectionMechanism::kProcessExit, Now());
        }
        if (o_.spawn) {
          Status st = Spawn();
          if (!st.ok()) Fail(st.message());
        }
      }
    }
    if (phase_ != Phase::kRunning) continue;
    for (int r = 0; r < world_; ++r) {
      const auto& c = ranks_[r];
      if (!c->node_dead && (c->exited || (!c->local && c->closed))) {
        Detect(r, DetectionMechanism::kProcessExit);
        break;
      }
    }
  }
}

awaitable<void> Coordinator::HeartbeatMonitor() {
  asio::steady_timer t(io_);
  for (;;) {
    // Checked ten times per delay: a miss is seen within 10% of the bound.
    t.expires_after(Seconds(plan_.heartbeat_s / 10));
    co_await t.async_wait(use_awaitable);
    if (phase_ != Phase::kRunning) continue;
    for (int r = 0; r < world_; ++r) {
      if (Clock::now() - ranks_[r]->last_heard > Seconds(plan_.heartbeat_s)) {
        Detect(r, DetectionMechanism::kHeartbeat);
        break;
      }
    }
  }
}

void Coordinator::Finish() {
  phase_ = Phase::kDone;
  r_.wall_s = Now();
  Record(run::RunEventKind::kEnd, "done", plan_.steps);
  EnterPhase(run::RunPhaseKind::kTraining);
  r_.measured_timeline.wall_time = sim::Time::FromSeconds(r_.wall_s);
  r_.steps = plan_.steps;
  for (auto& c : conns_) Post(c, Message{"DONE", {}});
  // The final state, bit for bit against the fault-free reference computed here.
  const std::vector<double> ref =
      ReferenceState(plan_.seed, plan_.elements, schedule_, plan_.steps, plan_.algorithm);
  r_.schedule = FormatSchedule(schedule_);
  r_.reference_hash = Hex64(Fnv1a64(ref.data(), ref.size() * sizeof(double)));
  std::ifstream in(dir_ + "/final-state.bin", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  r_.state_hash = Hex64(Fnv1a64(bytes.data(), bytes.size()));
  r_.state_identical = final_hashes_.size() == 1 && bytes.size() == ref.size() * sizeof(double) &&
                       std::memcmp(bytes.data(), ref.data(), bytes.size()) == 0;
  // 50 ms for the DONE messages to reach the workers before the sockets close with io_.
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(50));
  t->async_wait([this, t](boost::system::error_code) { io_.stop(); });
}

Result<EmulationResult> Coordinator::Run() {
  r_.plan = plan_;
  world_ = plan_.workers;
  std::error_code fec;
  std::filesystem::create_directories(o_.dir, fec);
  dir_ = std::filesystem::absolute(o_.dir, fec).string();
  if (fec || !std::filesystem::is_directory(dir_)) {
    return Status::InvalidArgument("--dir " + o_.dir + ": cannot create the directory");
  }
  std::string host;
  int port = 0;
  TRAINSIM_RETURN_IF_ERROR(SplitHostPort(o_.listen, "--listen", &host, &port));
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (ec)
    return Status::InvalidArgument("--listen " + o_.listen + ": " + host + " is not an IP address");
  acceptor_.open(addr.is_v4() ? tcp::v4() : tcp::v6(), ec);
  if (!ec) acceptor_.bind(tcp::endpoint(addr, static_cast<uint16_t>(port)), ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::InvalidArgument("--listen " + o_.listen + ": " + ec.message());
  endpoint_ = host + ":" + std::to_string(acceptor_.local_endpoint().port());
  std::cerr << "trainsim emulate: coordinator listening on " << endpoint_ << "\n";
  ::signal(SIGPIPE, SIG_IGN);
  t0_ = Clock::now();
  if (o_.spawn) {
    for (int i = 0; i < plan_.workers; ++i) TRAINSIM_RETURN_IF_ERROR(Spawn());
  }
  signals_.async_wait([this](boost::system::error_code e, int sig) {
    if (!e) {
      interrupted_by_ = sig;
      Fail("interrupted by signal " + std::to_string(sig));
    }
  });
  deadline_.expires_after(Seconds(o_.timeout_s));
  deadline_.async_wait([this](boost::system::error_code e) {
    if (!e) Fail("the emulation did not finish within " + std::to_string(o_.timeout_s) + " s");
  });
  asio::co_spawn(io_, Accept(), asio::detached);
  asio::co_spawn(io_, ExitMonitor(), asio::detached);
  asio::co_spawn(io_, HeartbeatMonitor(), asio::detached);
  io_.run();
  JoinCommitters();
  ReapAll();
  if (!error_.empty()) return Status::FailedPrecondition(error_);
  r_.compute_s = healthy_steps_ ? sum_compute_ / healthy_steps_ : 0;
  r_.comm_s = healthy_steps_ ? sum_comm_ / healthy_steps_ : 0;
  r_.step_s = r_.compute_s + r_.comm_s;
  r_.checkpoint_write_s = writes_ ? sum_write_ / writes_ : 0;
  r_.checkpoint_stall_s = stalls_ ? sum_stall_ / stalls_ : 0;
  r_.restore_s = loads_ ? sum_load_ / loads_ : 0;
  r_.restart_s = restarts_ ? sum_restart_ / restarts_ : 0;
  r_.peer_copy_s = copies_ ? sum_copy_ / copies_ : 0;
  // The loss check runs every check_every steps, planned from the scaled compute; a real step
  // also all-reduces, so its real interval (and the detection bound) is check_every measured
  // steps when that is longer than the scaled loss_check delay.
  for (MeasuredFault& f : r_.faults) {
    if (f.planned.mechanism == DetectionMechanism::kLossCheck) {
      f.planned.bound_s =
          std::max(f.planned.bound_s, static_cast<double>(plan_.check_every) * r_.step_s);
    }
  }
  return r_;
}

}  // namespace internal

Result<EmulationResult> RunEmulation(const EmulationPlan& plan, const EmulateOptions& options,
                                     int* interrupted_by) {
  internal::Coordinator c(plan, options);
  Result<EmulationResult> r = c.Run();
  if (interrupted_by != nullptr) *interrupted_by = c.interrupted_by();
  return r;
}

}  // namespace trainsim::emulate

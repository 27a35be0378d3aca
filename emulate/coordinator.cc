// emulate/coordinator.cc — the coordinator of `trainsim emulate`: an Asio io_context on one
// thread that accepts workers, runs rendezvous per generation, injects faults with real
// signals, detects failures by the scenario's mechanisms, recovers from the newest complete
// manifest and reaps every process it started.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "emulate/checkpoint_store.h"
#include "emulate/emulate.h"
#include "emulate/net.h"

namespace trainsim::emulate {
namespace {

using namespace net;  // NOLINT: the Asio aliases of emulate/net.h
using Clock = std::chrono::steady_clock;
using checkpoint::DetectionMechanism;

struct Conn {
  int id = 0;
  std::shared_ptr<tcp::socket> sock;
  pid_t pid = 0;
  bool local = false;  // started by us: waitpid and signals apply
  std::string ring_host;
  int ring_port = 0;
  bool hello = false, closed = false, exited = false, failed = false;
  bool node_dead = false;  // NODE fault: its agent is gone, so no exit is reported
  Clock::time_point last_heard;
  std::deque<std::string> outbox;
  bool sending = false;
};

class Coordinator {
 public:
  Coordinator(const EmulationPlan& plan, const EmulateOptions& o)
      : plan_(plan), o_(o), acceptor_(io_), signals_(io_, SIGINT, SIGTERM), deadline_(io_) {}
  ~Coordinator() {
    JoinCommitters();
    ReapAll();
  }

  Result<EmulationResult> Run();

 private:
  double Now() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  void Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    io_.stop();
  }
  void Post(const std::shared_ptr<Conn>& c, const Message& m);
  Status Spawn();
  void ReapAll();
  void JoinCommitters() {
    for (std::thread& t : committers_) t.join();
    committers_.clear();
  }
  void PollChildren();
  awaitable<void> Accept();
  awaitable<void> Session(std::shared_ptr<Conn> c);
  void Handle(const std::shared_ptr<Conn>& c, const Message& m);
  void TryStart();
  void Detect(int rank, DetectionMechanism how);
  void Inject(size_t fault_index);
  awaitable<void> ExitMonitor();
  awaitable<void> HeartbeatMonitor();
  void Finish();
  // The measured timeline (EmulationResult::measured_timeline).
  void EnterPhase(run::RunPhaseKind kind) {
    const sim::Time now = sim::Time::FromSeconds(Now());
    if (now > phase_from_) {
      r_.measured_timeline.phases.push_back({open_kind_, phase_from_, now});
    }
    open_kind_ = kind;
    phase_from_ = now;
  }
  void Record(run::RunEventKind kind, std::string what, int64_t step = 0, double dur = 0) {
    run::RunEvent e;
    e.at = sim::Time::FromSeconds(Now());
    e.kind = kind;
    e.what = std::move(what);
    e.step = step;
    e.duration = sim::Time::FromSeconds(dur);
    r_.measured_timeline.events.push_back(std::move(e));
  }
  std::shared_ptr<Conn> AtRank(int r) const {
    return r >= 0 && r < static_cast<int>(ranks_.size()) ? ranks_[r] : nullptr;
  }

  const EmulationPlan& plan_;
  const EmulateOptions& o_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer deadline_;
  std::string endpoint_, dir_, error_;
  Clock::time_point t0_;
  bool started_ = false;
  std::vector<std::shared_ptr<Conn>> conns_;
  std::vector<pid_t> children_;
  std::vector<std::thread> committers_;
  pid_t pgid_ = 0;
  int next_id_ = 0;
  EmulationResult r_;

  enum class Phase { kWaiting, kRunning, kRecovering, kDone } phase_ = Phase::kWaiting;
  int64_t gen_ = 0;
  std::vector<std::shared_ptr<Conn>> ranks_;
  std::vector<int64_t> progress_;
  std::vector<double> last_step_at_;
  run::RunPhaseKind open_kind_ = run::RunPhaseKind::kTraining;
  sim::Time phase_from_;
  double last_stall_s_ = 0;
  int64_t gen_start_step_ = 0;
  bool first_step_seen_ = false;
  std::map<int64_t, std::vector<std::string>> shards_;
  int finals_ = 0;
  std::set<std::string> final_hashes_;
  int open_fault_ = -1;  // index into r_.faults of the fault being detected/recovered
  double detected_at_ = 0;
  bool kill_write_done_ = false;
  int64_t kill_write_step_ = 0;
  // Healthy-step sums (no slowdown active).
  double sum_compute_ = 0, sum_comm_ = 0;
  int64_t healthy_steps_ = 0;
  int slowdowns_active_ = 0;
  double sum_write_ = 0, sum_stall_ = 0, sum_load_ = 0, sum_restart_ = 0;
  int64_t writes_ = 0, stalls_ = 0, loads_ = 0, restarts_ = 0;
};

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
  std::vector<std::string> args = {o_.self_exe, "worker", "--coordinator", endpoint_};
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
    ::execv(argv[0], argv.data());
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

void Coordinator::TryStart() {
  if (phase_ != Phase::kWaiting) return;
  std::vector<std::shared_ptr<Conn>> idle;
  for (auto& c : conns_) {
    if (c->hello && !c->closed && !c->failed && !c->exited) idle.push_back(c);
  }
  if (static_cast<int>(idle.size()) < plan_.workers) return;
  idle.resize(plan_.workers);
  Result<Restorable> rest = FindRestorable(dir_, plan_.workers, plan_.elements, nullptr);
  if (!rest.ok()) return Fail(rest.status().message());
  for (const std::string& s : rest->skipped) {
    if (std::find(r_.skipped_manifests.begin(), r_.skipped_manifests.end(), s) ==
        r_.skipped_manifests.end()) {
      r_.skipped_manifests.push_back(s);
    }
  }
  ++gen_;
  ++r_.generations;
  ranks_ = idle;
  gen_start_step_ = rest->found ? rest->manifest.step : 0;
  if (!started_) {
    started_ = true;
    t0_ = Clock::now();
    r_.start_step = gen_start_step_;
    for (size_t i = 0; i < plan_.faults.size(); ++i) {
      auto t = std::make_shared<asio::steady_timer>(io_, Seconds(plan_.faults[i].at_s));
      t->async_wait([this, t, i](boost::system::error_code ec) {
        if (!ec) Inject(i);
      });
    }
  }
  if (open_fault_ >= 0) {
    MeasuredFault& f = r_.faults[open_fault_];
    int64_t reached = 0;
    for (int64_t p : progress_) reached = std::max(reached, p);
    f.lost_steps = std::max<int64_t>(0, reached - gen_start_step_);
  }
  progress_.assign(plan_.workers, gen_start_step_);
  last_step_at_.resize(plan_.workers, 0.0);
  first_step_seen_ = false;
  finals_ = 0;
  final_hashes_.clear();
  if (o_.kill_during_checkpoint > 0 && !kill_write_done_) {
    kill_write_step_ = plan_.checkpoint_every * o_.kill_during_checkpoint;
  }
  for (int r = 0; r < plan_.workers; ++r) {
    const auto& next = ranks_[(r + 1) % plan_.workers];
    Message a{"ASSIGN", {}};
    a.Set("gen", gen_).Set("rank", r).Set("world", plan_.workers).Set("elements", plan_.elements);
    a.Set("start_step", gen_start_step_).Set("steps", plan_.steps);
    a.Set("checkpoint_every", plan_.checkpoint_every);
    a.Set("kill_write_step",
          r == o_.kill_during_checkpoint_rank && !kill_write_done_ ? kill_write_step_ : 0);
    a.SetReal("compute_s", plan_.compute_s)
        .SetReal("collective_timeout_s", plan_.collective_timeout_s);
    a.Set("policy", plan_.policy == checkpoint::CheckpointPolicy::kAsync ? "ASYNC" : "SYNC");
    a.Set("dir", dir_).Set("next_host", next->ring_host).Set("next_port", next->ring_port);
    a.Set("seed", static_cast<int64_t>(plan_.seed));
    for (int k = 0; rest->found && k < plan_.workers; ++k) {
      a.Set("c" + std::to_string(k), Hex64(rest->manifest.checksums[k]));
    }
    Post(ranks_[r], a);
    ranks_[r]->last_heard = Clock::now();
  }
  phase_ = Phase::kRunning;
}

void Coordinator::Handle(const std::shared_ptr<Conn>& c, const Message& m) {
  const int rank = static_cast<int>(std::find(ranks_.begin(), ranks_.end(), c) - ranks_.begin());
  if (m.type == "HEARTBEAT" || m.Int("gen") != gen_ || rank >= plan_.workers) return;
  if (m.type == "STEP") {
    const int64_t step = m.Int("step");
    progress_[rank] = std::max(progress_[rank], step);
    last_step_at_[rank] = Now();
    if (rank == 0) {
      ++r_.steps_executed;
      if (slowdowns_active_ == 0) {
        sum_compute_ += m.Real("compute_s");
        sum_comm_ += m.Real("comm_s");
        ++healthy_steps_;
      }
    }
    r_.bytes_moved += m.Real("bytes");
    if (!first_step_seen_ && rank == 0) {
      first_step_seen_ = true;
      if (open_fault_ >= 0) {
        Record(run::RunEventKind::kResumed, "resumed", step);
        EnterPhase(run::RunPhaseKind::kTraining);
        r_.faults[open_fault_].restart_s = Now() - detected_at_;
        sum_restart_ += Now() - detected_at_;
        ++restarts_;
        open_fault_ = -1;
      }
    }
    if (kill_write_step_ > 0 && step == kill_write_step_ &&
        rank == o_.kill_during_checkpoint_rank && !kill_write_done_) {
      // The rank dies in its shard write right after this step: the injection the test asked for.
      kill_write_done_ = true;
      MeasuredFault f;
      f.planned.fault.kind = run::ScheduledFault::Kind::kGpu;
      f.planned.rank = rank;
      f.planned.at_s = Now();
      f.planned.mechanism = DetectionMechanism::kProcessExit;
      f.planned.bound_s = plan_.process_exit_s;
      f.injected_at_s = Now();
      r_.faults.push_back(f);
      if (open_fault_ < 0) {
        open_fault_ = static_cast<int>(r_.faults.size()) - 1;
        Record(run::RunEventKind::kFailure,
               "GPU on rank " + std::to_string(rank) + " (killed in its checkpoint write)");
        EnterPhase(run::RunPhaseKind::kDetection);
      }
    }
  } else if (m.type == "SHARD") {
    auto& v = shards_[m.Int("step")];
    v.resize(plan_.workers);
    v[rank] = m.Get("checksum");
    sum_write_ += m.Real("write_s");
    ++writes_;
    if (std::all_of(v.begin(), v.end(), [](const std::string& s) { return !s.empty(); })) {
      Manifest man;
      man.step = m.Int("step");
      man.world = plan_.workers;
      man.elements = plan_.elements;
      for (const std::string& s : v) man.checksums.push_back(std::stoull(s, nullptr, 16));
      // The fsyncs run on a thread: a slow disk must not stall heartbeats and detection.
      shards_.erase(m.Int("step"));
      committers_.emplace_back([this, man] {
        Status st = CommitManifest(dir_, man);
        asio::post(io_, [this, st, man] {
          if (!st.ok()) return Fail(st.message());
          ++r_.checkpoints;
          Record(run::RunEventKind::kCheckpointWritten,
                 "checkpoint of step " + std::to_string(man.step) + " committed", man.step,
                 last_stall_s_);
        });
      });
    }
  } else if (m.type == "STALL") {
    sum_stall_ += m.Real("stall_s");
    if (rank == 0) last_stall_s_ = m.Real("stall_s");
    ++stalls_;
  } else if (m.type == "READY") {
    sum_load_ += m.Real("load_s");
    ++loads_;
  } else if (m.type == "PEER_LOST" && open_fault_ < 0) {
    // A ring connection broke with nothing injected. If a process died, the exit poll or the
    // heartbeats find it within heartbeat_s; if nothing has by then, recover as NCCL would
    // report it, replacing the rank heard from least recently.
    auto t = std::make_shared<asio::steady_timer>(io_, Seconds(plan_.heartbeat_s));
    t->async_wait([this, t, gen = gen_](boost::system::error_code ec) {
      if (ec || gen != gen_ || phase_ != Phase::kRunning) return;
      int culprit = 0;
      for (int r = 1; r < plan_.workers; ++r) {
        if (ranks_[r]->last_heard < ranks_[culprit]->last_heard) culprit = r;
      }
      Detect(culprit, DetectionMechanism::kNcclError);
    });
  } else if (m.type == "TIMEOUT") {
    // The watchdog fired on a rank: the culprit is the rank heard from least recently.
    int culprit = 0;
    for (int r = 1; r < plan_.workers; ++r) {
      if (ranks_[r]->last_heard < ranks_[culprit]->last_heard) culprit = r;
    }
    Detect(culprit, DetectionMechanism::kCollectiveTimeout);
  } else if (m.type == "FINAL") {
    final_hashes_.insert(m.Get("hash"));
    if (++finals_ == plan_.workers) Finish();
  }
}

void Coordinator::Detect(int rank, DetectionMechanism how) {
  if (phase_ != Phase::kRunning) return;
  phase_ = Phase::kRecovering;
  detected_at_ = Now();
  if (open_fault_ < 0 && kill_write_step_ > 0 && !kill_write_done_ &&
      rank == o_.kill_during_checkpoint_rank) {
    // The rank died in its shard write before its last STEP message left: the test hook's kill.
    kill_write_done_ = true;
    MeasuredFault f;
    f.planned.fault.kind = run::ScheduledFault::Kind::kGpu;
    f.planned.rank = rank;
    f.planned.mechanism = DetectionMechanism::kProcessExit;
    f.planned.bound_s = plan_.process_exit_s;
    f.planned.at_s = f.injected_at_s = last_step_at_[rank];
    r_.faults.push_back(f);
    open_fault_ = static_cast<int>(r_.faults.size()) - 1;
  }
  if (open_fault_ < 0) {  // a failure nobody injected (an overloaded machine): recorded as such
    MeasuredFault f;
    f.unplanned = true;
    f.planned.fault.kind = run::ScheduledFault::Kind::kSoftwareHang;
    f.planned.rank = rank;
    f.planned.at_s = f.injected_at_s = Now();
    r_.faults.push_back(f);
    open_fault_ = static_cast<int>(r_.faults.size()) - 1;
  }
  MeasuredFault& f = r_.faults[open_fault_];
  if (open_kind_ == run::RunPhaseKind::kTraining) {  // not seen injected: it fails now
    Record(run::RunEventKind::kFailure, "rank " + std::to_string(rank) + " failed");
  }
  Record(run::RunEventKind::kDetected,
         std::string("detected by ") + checkpoint::DetectionMechanismName(how));
  EnterPhase(run::RunPhaseKind::kRestart);
  f.detected_by = checkpoint::DetectionMechanismName(how);
  f.detected_after_s = detected_at_ - f.injected_at_s;
  for (auto& c : ranks_) Post(c, Message{"ABORT", {{"gen", std::to_string(gen_)}}});
  auto bad = ranks_[rank];
  bad->failed = true;
  if (bad->local) ::kill(bad->pid, SIGKILL);  // a hung process is killed for its restart
  bad->sock->close();
  // The scheduler's requeue (scaled), then a new process on a spare.
  auto t = std::make_shared<asio::steady_timer>(io_, Seconds(plan_.requeue_s));
  t->async_wait([this, t](boost::system::error_code ec) {
    if (ec) return;
    phase_ = Phase::kWaiting;
    if (o_.spawn) {
      Status s = Spawn();
      if (!s.ok()) return Fail(s.message());
    }
    TryStart();
  });
}

void Coordinator::Inject(size_t i) {
  const PlannedFault& p = plan_.faults[i];
  auto c = AtRank(p.rank);
  using K = run::ScheduledFault::Kind;
  const bool failure = p.fault.kind != K::kStraggler && p.fault.kind != K::kLinkDegraded;
  if (!c || phase_ == Phase::kDone || (failure && phase_ != Phase::kRunning)) {
    r_.plan.notes.push_back(std::string(p.fault.KindName()) + " at " + std::to_string(p.at_s) +
                            " s not injected: the job was recovering");
    return;
  }
  MeasuredFault f;
  f.planned = p;
  f.injected_at_s = Now();
  r_.faults.push_back(f);
  if (failure && open_fault_ < 0) {
    open_fault_ = static_cast<int>(r_.faults.size()) - 1;
    Record(run::RunEventKind::kFailure,
           std::string(p.fault.KindName()) + " on rank " + std::to_string(p.rank) + " (injected)");
    EnterPhase(run::RunPhaseKind::kDetection);
  }
  switch (p.fault.kind) {
    case K::kGpu:
      if (c->local) ::kill(c->pid, SIGKILL);
      break;
    case K::kNode:
      c->node_dead = true;
      if (c->local) ::kill(c->pid, SIGKILL);
      break;
    case K::kHang:
      if (c->local) ::kill(c->pid, SIGSTOP);
      break;
    case K::kSoftwareHang:
      Post(c, Message{"CRASH", {}});
      break;
    case K::kStraggler:
    case K::kLinkDegraded: {
      const bool straggler = p.fault.kind == K::kStraggler;
      Message slow{"SLOW", {}};
      slow.SetReal("compute_factor", straggler ? p.fault.factor : 1.0)
          .SetReal("link_factor", straggler ? 1.0 : p.fault.factor);
      Post(c, slow);
      ++slowdowns_active_;
      if (p.duration_s > 0) {
        auto t = std::make_shared<asio::steady_timer>(io_, Seconds(p.duration_s));
        t->async_wait([this, t, c](boost::system::error_code) {
          Post(c, Message{"SLOW", {}}.SetReal("compute_factor", 1).SetReal("link_factor", 1));
          --slowdowns_active_;
        });
      }
      break;
    }
    default:
      break;
  }
}

awaitable<void> Coordinator::ExitMonitor() {
  // The agent's monitor interval: a crashed process is seen at the next poll.
  asio::steady_timer t(io_);
  for (;;) {
    t.expires_after(Seconds(plan_.process_exit_s));
    co_await t.async_wait(use_awaitable);
    PollChildren();
    if (phase_ != Phase::kRunning) continue;
    for (int r = 0; r < plan_.workers; ++r) {
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
    for (int r = 0; r < plan_.workers; ++r) {
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
      ReferenceState(plan_.seed, plan_.elements, plan_.workers, plan_.steps);
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
    if (!e) Fail("interrupted by signal " + std::to_string(sig));
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
  return r_;
}

}  // namespace

Result<EmulationResult> RunEmulation(const EmulationPlan& plan, const EmulateOptions& options) {
  Coordinator c(plan, options);
  return c.Run();
}

}  // namespace trainsim::emulate

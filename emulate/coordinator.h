// emulate/coordinator.h — internal to emulate/: the coordinator class of `trainsim emulate`
// (coordinator.cc: processes, connections, monitors; coordinator_recovery.cc: generations,
// messages, faults and recovery). Includes Asio: nothing outside emulate/*.cc includes it.
#ifndef TRAINSIM_EMULATE_COORDINATOR_H_
#define TRAINSIM_EMULATE_COORDINATOR_H_

#include <sys/types.h>

#include <csignal>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emulate/checkpoint_store.h"
#include "emulate/emulate.h"
#include "emulate/net.h"

namespace trainsim::emulate::internal {

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
      : plan_(plan), o_(o), acceptor_(io_), signals_(io_), deadline_(io_) {
    // SIGINT and SIGTERM stop the emulation, unless the process was started with them ignored
    // (a shell's background job ignores SIGINT): then they stay ignored, as for any program.
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
        signals_.add(sig);
      }
    }
  }
  ~Coordinator() {
    JoinCommitters();
    ReapAll();
  }

  Result<EmulationResult> Run();
  int interrupted_by() const { return interrupted_by_; }  // the signal that stopped Run, or 0

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
  // Failures whose time came while the job was recovering: injected when training resumes.
  void InjectDeferred();
  // Marks every failure injected on `rank` by `at` and not yet detected as found by `how` at
  // `at`: a second fault the same recovery finds, or an exit noticed while the job re-forms.
  void AttributeUndetected(int rank, DetectionMechanism how, double at);
  // The rank heard from least recently: the culprit when a link breaks or a watchdog fires.
  int LeastRecentlyHeard() const;
  void Detect(int rank, DetectionMechanism how);
  void Inject(size_t fault_index);
  void OnStep(int rank, const Message& m);
  void OnShard(int rank, const Message& m);
  void OnMemCopy(int rank, const Message& m);
  void RecordKillInWrite(int rank, double at);
  // The recovery the scenario's policy asks for after `dead` ranks are gone: the delay before
  // the next generation, the workers to start, and the next world size.
  void Recover(int dead, bool needs_repair);
  // Loss check found corruption: every checkpoint after the corruption is set aside.
  void SetAsideCorrupted();
  bool Alive(const std::shared_ptr<Conn>& c) const {
    return c && c->hello && !c->closed && !c->failed && !c->exited && !c->node_dead;
  }
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
  int interrupted_by_ = 0;
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
  std::vector<size_t> deferred_faults_;  // plan_.faults indices (InjectDeferred)
  std::vector<std::shared_ptr<Conn>> ranks_;
  int world_ = 0;                       // the current generation's ranks (ELASTIC shrinks it)
  std::vector<WorldSegment> schedule_;  // the world sizes the current state went through
  // IN_MEMORY: per checkpoint step, the checksums of its slices and who holds each in memory.
  struct MemSet {
    int64_t gen = 0;
    int world = 0;
    std::vector<std::string> checksums;
    std::vector<std::vector<std::shared_ptr<Conn>>> holders;
    int reported = 0;
    std::string schedule;
  };
  std::map<int64_t, MemSet> mem_;
  std::map<int64_t, std::vector<std::string>> checks_;  // loss check: step -> state hashes
  int64_t corrupt_after_ = -1;  // SDC: the last clean step (-1: none pending)
  double sum_copy_ = 0;
  int64_t copies_ = 0;
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

}  // namespace trainsim::emulate::internal

#endif  // TRAINSIM_EMULATE_COORDINATOR_H_

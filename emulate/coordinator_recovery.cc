// emulate/coordinator_recovery.cc — the coordinator's generations (rendezvous and the choice of
// the checkpoint to restore: the peers' in-memory copies, else DIR's newest complete manifest),
// its handling of worker messages (steps, shards, peer copies, the loss check), fault injection
// and recovery by the scenario's policy (RESTART_ON_SPARE, WAIT_FOR_REPAIR, ELASTIC).
#include <signal.h>

#include <algorithm>

#include "emulate/coordinator.h"

namespace trainsim::emulate::internal {
namespace {

using K = run::ScheduledFault::Kind;

// In-memory checkpoint sets the coordinator remembers: the workers keep kMemorySteps (3) steps
// of copies (emulate/worker.cc), so an older set could not be restored anyway.
constexpr size_t kMemorySets = 3;

// A fault that stops its process (not a slowdown: a straggler or a degraded link).
bool IsFailure(K kind) { return kind != K::kStraggler && kind != K::kLinkDegraded; }

// Faults after which the node is gone until repaired (the run simulation's rule: GPU, NODE and
// SDC take their node out; a hang or a software crash restarts in place).
bool NeedsRepair(const MeasuredFault& f) {
  if (f.unplanned) return false;
  const K k = f.planned.fault.kind;
  return k == K::kGpu || k == K::kNode || k == K::kSdc;
}

}  // namespace

void Coordinator::TryStart() {
  if (phase_ != Phase::kWaiting) return;
  std::vector<std::shared_ptr<Conn>> idle;
  for (auto& c : conns_) {
    if (Alive(c)) idle.push_back(c);
  }
  if (static_cast<int>(idle.size()) < world_) return;
  idle.resize(world_);
  JoinCommitters();  // no manifest is committed or pruned while the restore point is chosen
  Result<Restorable> rest = FindRestorable(dir_, 0, plan_.elements, nullptr);
  if (!rest.ok()) return Fail(rest.status().message());
  for (const std::string& s : rest->skipped) {
    if (std::find(r_.skipped_manifests.begin(), r_.skipped_manifests.end(), s) ==
        r_.skipped_manifests.end()) {
      r_.skipped_manifests.push_back(s);
    }
  }
  // IN_MEMORY: the newest complete set of peer copies at least as new as the newest manifest,
  // each slice held by a live process; a slice whose holders both died rules the set out.
  const MemSet* mem = nullptr;
  int64_t mem_step = 0;
  std::vector<std::shared_ptr<Conn>> holder;
  for (auto it = mem_.rbegin(); it != mem_.rend() && mem == nullptr; ++it) {
    if (it->second.reported < it->second.world) continue;
    if (rest->found && it->first < rest->manifest.step) break;
    holder.assign(it->second.world, nullptr);
    bool all = true;
    for (int s = 0; s < it->second.world && all; ++s) {
      for (const auto& h : it->second.holders[s]) {
        if (Alive(h)) holder[s] = h;
      }
      all = holder[s] != nullptr;
    }
    if (all) {
      mem = &it->second;
      mem_step = it->first;
    }
  }
  ++gen_;
  ++r_.generations;
  ranks_ = idle;
  std::string restore, base;
  int restore_world = 0;
  std::vector<std::string> checksums;
  if (mem != nullptr) {
    restore = "memory";
    gen_start_step_ = mem_step;
    restore_world = mem->world;
    checksums = mem->checksums;
    base = mem->schedule;
  } else if (rest->found) {
    restore = "storage";
    gen_start_step_ = rest->manifest.step;
    restore_world = rest->manifest.world;
    for (uint64_t c : rest->manifest.checksums) checksums.push_back(Hex64(c));
    base = rest->manifest.schedule.empty() ? "0:" + std::to_string(restore_world)
                                           : rest->manifest.schedule;
  } else {
    gen_start_step_ = 0;
  }
  schedule_ = ParseSchedule(base);
  if (schedule_.empty()) {
    schedule_ = {{0, world_}};
  } else if (schedule_.back().world != world_) {
    schedule_.push_back({gen_start_step_, world_});
  }
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
    f.restored_from = restore.empty() ? "start" : restore;
    f.world_after = world_;
  }
  if (mem != nullptr) ++r_.memory_restores;
  progress_.assign(world_, gen_start_step_);
  last_step_at_.assign(world_, 0.0);
  checks_.clear();
  first_step_seen_ = false;
  finals_ = 0;
  final_hashes_.clear();
  if (o_.kill_during_checkpoint > 0 && !kill_write_done_) {
    kill_write_step_ = plan_.checkpoint_every * o_.kill_during_checkpoint;
  }
  for (int r = 0; r < world_; ++r) {
    Message a{"ASSIGN", {}};
    a.Set("gen", gen_).Set("rank", r).Set("world", world_).Set("elements", plan_.elements);
    a.Set("start_step", gen_start_step_).Set("steps", plan_.steps);
    a.Set("checkpoint_every", plan_.checkpoint_every);
    a.Set("kill_write_step",
          r == o_.kill_during_checkpoint_rank && !kill_write_done_ ? kill_write_step_ : 0);
    a.SetReal("compute_s", plan_.compute_s)
        .SetReal("collective_timeout_s", plan_.collective_timeout_s);
    a.Set("policy", checkpoint::CheckpointPolicyName(plan_.policy))
        .Set("persistent_every", plan_.persistent_every);
    a.Set("check_every", plan_.check_every).Set("algorithm", AlgorithmName(plan_.algorithm));
    a.Set("dir", dir_).Set("seed", static_cast<int64_t>(plan_.seed));
    for (int k = 0; k < world_; ++k) {
      a.Set("a" + std::to_string(k), idle[k]->ring_host + ":" + std::to_string(idle[k]->ring_port));
    }
    if (!restore.empty()) {
      a.Set("restore", restore).Set("restore_world", restore_world);
      for (int k = 0; k < restore_world; ++k) {
        a.Set("c" + std::to_string(k), checksums[k]);
        if (mem != nullptr) {
          a.Set("m" + std::to_string(k),
                holder[k]->ring_host + ":" + std::to_string(holder[k]->ring_port));
        }
      }
    }
    Post(ranks_[r], a);
    ranks_[r]->last_heard = Clock::now();
  }
  phase_ = Phase::kRunning;
}

void Coordinator::RecordKillInWrite(int rank, double at) {
  kill_write_done_ = true;
  MeasuredFault f;
  f.planned.fault.kind = K::kGpu;
  f.planned.rank = rank;
  f.planned.mechanism = DetectionMechanism::kProcessExit;
  f.planned.bound_s = plan_.process_exit_s;
  f.planned.at_s = f.injected_at_s = at;
  r_.faults.push_back(f);
  if (open_fault_ < 0) {
    open_fault_ = static_cast<int>(r_.faults.size()) - 1;
    Record(run::RunEventKind::kFailure,
           "GPU on rank " + std::to_string(rank) + " (killed in its checkpoint write)");
    EnterPhase(run::RunPhaseKind::kDetection);
  }
}

void Coordinator::OnStep(int rank, const Message& m) {
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
    if (open_fault_ >= 0 && phase_ == Phase::kRunning && gen_ > 1 &&
        !r_.faults[open_fault_].detected_by.empty()) {
      Record(run::RunEventKind::kResumed, "resumed", step);
      EnterPhase(run::RunPhaseKind::kTraining);
      r_.faults[open_fault_].restart_s = Now() - detected_at_;
      sum_restart_ += Now() - detected_at_;
      ++restarts_;
      open_fault_ = -1;
    }
    if (phase_ == Phase::kRunning && !deferred_faults_.empty()) InjectDeferred();
  }
  if (kill_write_step_ > 0 && step == kill_write_step_ && rank == o_.kill_during_checkpoint_rank &&
      !kill_write_done_) {
    // The rank dies in its shard write right after this step: the injection the test asked for.
    RecordKillInWrite(rank, Now());
  }
  const std::string hash = m.Get("state_hash");
  if (hash.empty() || phase_ != Phase::kRunning) return;
  // The loss check: every replica's state hash of this step; a replica that differs from the
  // majority holds corrupted state.
  auto& v = checks_[step];
  v.resize(world_);
  v[rank] = hash;
  if (std::any_of(v.begin(), v.end(), [](const std::string& h) { return h.empty(); })) return;
  // Out of the map before the entry is erased: `v` refers into it.
  const std::vector<std::string> hashes = std::move(v);
  checks_.erase(step);
  std::map<std::string, int> votes;
  for (const std::string& h : hashes) ++votes[h];
  if (votes.size() == 1) return;
  std::string majority;
  int most = 0;
  for (const auto& [h, n] : votes) {
    if (n > most) majority = h, most = n;
  }
  for (int r = 0; r < world_; ++r) {
    if (hashes[r] != majority) return Detect(r, DetectionMechanism::kLossCheck);
  }
}

void Coordinator::OnShard(int rank, const Message& m) {
  auto& v = shards_[m.Int("step")];
  v.resize(world_);
  v[rank] = m.Get("checksum");
  sum_write_ += m.Real("write_s");
  ++writes_;
  if (!std::all_of(v.begin(), v.end(), [](const std::string& s) { return !s.empty(); })) return;
  Manifest man;
  man.step = m.Int("step");
  man.world = world_;
  man.elements = plan_.elements;
  man.schedule = FormatSchedule(schedule_);
  for (const std::string& s : v) man.checksums.push_back(std::stoull(s, nullptr, 16));
  // The fsyncs run on a thread: a slow disk must not stall heartbeats and detection.
  shards_.erase(m.Int("step"));
  committers_.emplace_back([this, man] {
    Status st = CommitManifest(dir_, man);
    if (st.ok()) st = PruneManifests(dir_, plan_.keep_last);
    asio::post(io_, [this, st, man] {
      if (!st.ok()) return Fail(st.message());
      ++r_.checkpoints;
      Record(run::RunEventKind::kCheckpointWritten,
             "checkpoint of step " + std::to_string(man.step) + " committed", man.step,
             last_stall_s_);
    });
  });
}

void Coordinator::OnMemCopy(int rank, const Message& m) {
  const int64_t step = m.Int("step");
  MemSet& set = mem_[step];
  if (set.gen != gen_ || set.world != world_) {  // a redone step replaces an older set
    set = MemSet{};
    set.gen = gen_;
    set.world = world_;
    set.checksums.assign(world_, "");
    set.holders.assign(world_, {});
    set.schedule = FormatSchedule(schedule_);
  }
  if (!set.checksums[rank].empty()) return;
  set.checksums[rank] = m.Get("checksum");
  // Rank r keeps its own slice and its peer r + 1 holds the copy (the run simulation's rule).
  set.holders[rank] = {ranks_[rank], ranks_[(rank + 1) % world_]};
  sum_copy_ += m.Real("copy_s");
  ++copies_;
  if (++set.reported == set.world) {
    ++r_.memory_checkpoints;
    Record(run::RunEventKind::kPeerCopyCompleted,
           "in-memory checkpoint of step " + std::to_string(step) + " complete", step);
  }
  while (mem_.size() > kMemorySets) mem_.erase(mem_.begin());
}

void Coordinator::Handle(const std::shared_ptr<Conn>& c, const Message& m) {
  const int rank = static_cast<int>(std::find(ranks_.begin(), ranks_.end(), c) - ranks_.begin());
  if (m.type == "HEARTBEAT" || m.Int("gen") != gen_ || rank >= world_) return;
  if (m.type == "STEP") {
    OnStep(rank, m);
  } else if (m.type == "SHARD") {
    if (phase_ == Phase::kRunning) OnShard(rank, m);  // none is committed during a recovery
  } else if (m.type == "MEMCOPY") {
    if (phase_ == Phase::kRunning) OnMemCopy(rank, m);
  } else if (m.type == "SDC") {
    // The corrupted replica says after which step its state went bad (the injection's record;
    // detection is the loss check's alone).
    const int64_t clean = m.Int("step");
    corrupt_after_ = corrupt_after_ < 0 ? clean : std::min(corrupt_after_, clean);
  } else if (m.type == "STALL") {
    sum_stall_ += m.Real("stall_s");
    if (rank == 0) last_stall_s_ = m.Real("stall_s");
    ++stalls_;
  } else if (m.type == "READY") {
    sum_load_ += m.Real("load_s");
    ++loads_;
    if (open_fault_ >= 0) {
      double& restore = r_.faults[open_fault_].restore_s;
      restore = std::max(restore, m.Real("load_s"));
    }
  } else if (m.type == "PEER_LOST" && open_fault_ < 0) {
    // A link broke with nothing injected. If a process died, the exit poll or the heartbeats
    // find it within heartbeat_s; if nothing has by then, recover as NCCL would report it,
    // replacing the rank heard from least recently.
    auto t = std::make_shared<asio::steady_timer>(io_, Seconds(plan_.heartbeat_s));
    t->async_wait([this, t, gen = gen_](boost::system::error_code ec) {
      if (ec || gen != gen_ || phase_ != Phase::kRunning) return;
      Detect(LeastRecentlyHeard(), DetectionMechanism::kNcclError);
    });
  } else if (m.type == "TIMEOUT") {
    // The watchdog fired on a rank: the culprit is the rank heard from least recently.
    Detect(LeastRecentlyHeard(), DetectionMechanism::kCollectiveTimeout);
  } else if (m.type == "FINAL") {
    final_hashes_.insert(m.Get("hash"));
    if (++finals_ == world_) Finish();
  }
}

int Coordinator::LeastRecentlyHeard() const {
  int culprit = 0;
  for (int r = 1; r < world_; ++r) {
    if (ranks_[r]->last_heard < ranks_[culprit]->last_heard) culprit = r;
  }
  return culprit;
}

void Coordinator::SetAsideCorrupted() {
  // Corruption after step `clean` (0 when the loss check fired with nothing injected: nothing
  // is known to be clean but the start).
  const int64_t clean = std::max<int64_t>(0, corrupt_after_);
  corrupt_after_ = -1;
  JoinCommitters();  // a manifest being committed now must be set aside too
  for (int64_t step : SetAsideManifestsAfter(dir_, clean)) {
    r_.skipped_manifests.push_back("manifest-" + std::to_string(step) +
                                   ": set aside (written after the corruption at step " +
                                   std::to_string(clean) + ")");
  }
  for (auto it = mem_.begin(); it != mem_.end();) {
    it = it->first > clean ? mem_.erase(it) : std::next(it);
  }
}

void Coordinator::Detect(int rank, DetectionMechanism how) {
  if (phase_ != Phase::kRunning) return;
  phase_ = Phase::kRecovering;
  detected_at_ = Now();
  if (open_fault_ < 0 && kill_write_step_ > 0 && !kill_write_done_ &&
      rank == o_.kill_during_checkpoint_rank) {
    // The rank died in its shard write before its last STEP message left: the test hook's kill.
    RecordKillInWrite(rank, last_step_at_[rank]);
  }
  if (open_fault_ < 0) {  // a failure nobody injected (an overloaded machine): recorded as such
    MeasuredFault f;
    f.unplanned = true;
    f.planned.fault.kind = K::kSoftwareHang;
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
  if (how == DetectionMechanism::kLossCheck) SetAsideCorrupted();
  for (auto& c : ranks_) Post(c, Message{"ABORT", {{"gen", std::to_string(gen_)}}});
  // The detected rank and every other rank whose process is gone leave the job.
  PollChildren();
  int dead = 0;
  for (int r = 0; r < world_; ++r) {
    auto& c = ranks_[r];
    if (r != rank && Alive(c)) continue;
    ++dead;
    c->failed = true;
    if (c->local) ::kill(c->pid, SIGKILL);  // a hung process is killed for its restart
    boost::system::error_code ignored;
    c->sock->close(ignored);
    AttributeUndetected(r, how, detected_at_);  // a second fault found by the same recovery
  }
  Recover(dead, NeedsRepair(f));
}

void Coordinator::InjectDeferred() {
  std::vector<size_t> due;
  due.swap(deferred_faults_);
  for (size_t i : due) Inject(i);
}

void Coordinator::AttributeUndetected(int rank, DetectionMechanism how, double at) {
  for (MeasuredFault& f : r_.faults) {
    if (f.detected_after_s < 0 && f.planned.rank == rank && !f.unplanned &&
        IsFailure(f.planned.fault.kind) && f.injected_at_s <= at) {
      f.detected_by = checkpoint::DetectionMechanismName(how);
      f.detected_after_s = at - f.injected_at_s;
    }
  }
}

void Coordinator::Recover(int dead, bool needs_repair) {
  using P = checkpoint::RecoveryPolicy;
  // RESTART_ON_SPARE: the scheduler's requeue, then new processes (the spares). WAIT_FOR_REPAIR:
  // a node that needs repair is waited for (the scaled repair time) before the requeue.
  // ELASTIC: the job re-forms without the lost nodes after the requeue, while at least
  // min_dp workers remain; below that it waits for repair like WAIT_FOR_REPAIR.
  double delay = plan_.requeue_s;
  int spawn = dead;
  if (plan_.recovery == P::kElastic && needs_repair && world_ - dead >= plan_.min_dp) {
    world_ -= dead;
    spawn = 0;
    Record(run::RunEventKind::kElasticShrink,
           "elastic: continuing with " + std::to_string(world_) + " workers");
  } else if (plan_.recovery != P::kRestartOnSpare && needs_repair) {
    delay += plan_.repair_s;
    if (open_fault_ >= 0) r_.faults[open_fault_].waited_s = plan_.repair_s;
    Record(run::RunEventKind::kWaiting,
           "waiting for the repair of " + std::to_string(dead) + " node(s)");
    EnterPhase(run::RunPhaseKind::kWaiting);
    auto t = std::make_shared<asio::steady_timer>(io_, Seconds(plan_.repair_s));
    t->async_wait([this, t](boost::system::error_code ec) {
      if (!ec && phase_ == Phase::kRecovering) EnterPhase(run::RunPhaseKind::kRestart);
    });
  }
  auto t = std::make_shared<asio::steady_timer>(io_, Seconds(delay));
  t->async_wait([this, t, spawn](boost::system::error_code ec) {
    if (ec) return;
    phase_ = Phase::kWaiting;
    for (int i = 0; o_.spawn && i < spawn; ++i) {
      Status s = Spawn();
      if (!s.ok()) return Fail(s.message());
    }
    TryStart();
  });
}

void Coordinator::Inject(size_t i) {
  const PlannedFault& p = plan_.faults[i];
  auto c = AtRank(p.rank);
  const bool failure = IsFailure(p.fault.kind);
  if (failure && phase_ != Phase::kRunning && phase_ != Phase::kDone && p.rank < world_) {
    // The hardware fails whether or not the job is up; the emulation injects it as soon as
    // training runs again, so a slow recovery (a loaded machine) cannot swallow a fault.
    deferred_faults_.push_back(i);
    r_.plan.notes.push_back(std::string(p.fault.KindName()) + " at " + std::to_string(p.at_s) +
                            " s deferred to when training resumed: the job was recovering");
    return;
  }
  if (!c || phase_ == Phase::kDone || (failure && phase_ != Phase::kRunning) || p.rank >= world_) {
    r_.plan.notes.push_back(std::string(p.fault.KindName()) + " at " + std::to_string(p.at_s) +
                            " s not injected: the job was recovering or had shrunk");
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
    case K::kSdc:
      Post(c, Message{"CORRUPT", {}});
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

}  // namespace trainsim::emulate::internal

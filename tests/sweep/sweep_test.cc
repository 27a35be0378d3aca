// sweep/sweep.h: the layout space, ranking and Pareto front, the goodput model, errors, and the
// distribution over ranks (an in-process group of threads standing in for MPI ranks).
#include "sweep/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "checkpoint/checkpoint_model.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

// A 7.5B-class GPT (Narayanan et al. Table 1: 36 layers, hidden 4096, 32 heads) on DGX A100
// nodes, with the default (Llama 3) failure model and 1 trillion tokens to train.
SweepProblem Problem(std::vector<int> gpus) {
  SweepProblem p;
  p.base.model.num_layers = 36;
  p.base.model.hidden = 4096;
  p.base.model.heads = 32;
  p.base.model.seq_len = 2048;
  p.base.model.vocab = 51200;
  p.base.topology.gpus_per_node = 8;
  p.base.topology.nvlink_GBps = 300;
  p.base.topology.nic_Gbps = 200;
  p.base.parallel.global_batch = 512;
  p.parameters = par::ParameterCount(p.base.model);
  p.token_budget = 1e12;
  p.gpu_counts = std::move(gpus);
  p.micro_batches = {1, 2, 4};
  return p;
}

TEST(SweepTest, EnumeratesEveryDegreeSplitOnce) {
  SweepProblem p = Problem({32, 64});
  p.cp_degrees = {1};  // the TP × PP × DP splits alone; CP has its own test below
  const std::vector<Candidate> all = EnumerateLayouts(p);
  std::set<std::string> seen;
  std::set<std::tuple<int, int, int>> degrees[2];
  for (const Candidate& c : all) {
    const par::ParallelConfig& q = c.parallel;
    EXPECT_EQ(q.tp * q.cp * q.pp * q.dp, c.gpus);
    EXPECT_LE(q.tp, 8);
    EXPECT_EQ(q.tp & (q.tp - 1), 0) << "TP is a power of two";
    if (q.first_stage_layers < 0 && q.last_stage_layers < 0) {
      EXPECT_EQ(36 % (q.pp * q.virtual_stages), 0) << "even stages divide the layers";
    }
    EXPECT_FALSE(q.sequence_parallel && q.tp == 1);
    EXPECT_TRUE(q.zero_stage <= 2 || q.pp == 1) << "FSDP only without PP";
    EXPECT_TRUE(seen.insert(DescribeLayout(c)).second) << "duplicate " << DescribeLayout(c);
    degrees[c.gpus == 64].insert({q.tp, q.pp, q.dp});
  }
  // PP: divisors of GPUs / TP up to 8. 36 layers split evenly on 1, 2 and 4 stages, and on 8
  // as 3 + 6·5 + 3; on 16 or 32 stages the middle ones would hold 2 or 1 layers and leave the
  // ends 8 or 6, more than a middle stage, which StageSplits does not try. 32 GPUs: TP 1, 2, 4
  // take PP {1, 2, 4, 8}, TP 8 (4 GPUs left) {1, 2, 4}: 15 splits; 64 GPUs: 4 × 4 = 16.
  EXPECT_EQ(degrees[0].size(), 15u);
  EXPECT_EQ(degrees[1].size(), 16u);
}

TEST(SweepTest, StageSplitsMakeTheMiddleStagesEvenAsMegatronsFirstLastStageLayers) {
  using Split = std::pair<int, int>;
  // Layers that divide pp · v: the even split only.
  EXPECT_EQ(StageSplits(96, 8, 1, true), (std::vector<Split>{{-1, -1}}));
  // Llama 3 405B (Dubey et al. 2024 §3.3.2): 126 layers on 16 stages, one layer fewer on the
  // first and last: 7 + 14·8 + 7; the next middle share is 9, leaving 0 + 14·9 + 0.
  EXPECT_EQ(StageSplits(126, 16, 1, true), (std::vector<Split>{{7, 7}, {0, 0}}));
  // Two chunks per rank: the middle 14 stages take 8 (two chunks of 4), the ends share 14 as
  // multiples of 2: 6 and 8, either way round; then middle 9 is no multiple of 2, so 10: none
  // (14·10 > 126).
  EXPECT_EQ(StageSplits(126, 16, 2, true), (std::vector<Split>{{6, 8}, {8, 6}}));
  // pp 2: the two stages hold everything.
  EXPECT_EQ(StageSplits(35, 2, 1, true), (std::vector<Split>{{17, 18}, {18, 17}}));
  // Without uneven pipelines, nothing when the layers do not divide.
  EXPECT_TRUE(StageSplits(126, 16, 1, false).empty());
}

// A small Mixtral-style MoE (8 experts, top 2; Jiang et al. 2024 shapes scaled down to 8 layers)
// on 4 DGX H100 nodes, sequence 4096, 14 layers: CP, EP/ETP, uneven and ZeRO-2 with PP all occur.
SweepProblem MoeProblem() {
  SweepProblem p = Problem({32});
  par::ModelSpec& m = p.base.model;
  m.num_layers = 14;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.swiglu = true;
  m.flash_attention = true;
  m.seq_len = 4096;
  m.vocab = 32000;
  m.tied_embeddings = false;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  p.base.gpu.peak_flops = 989e12;  // H100 SXM dense BF16
  p.base.gpu.hbm_bytes_per_s = 3.35e12;
  p.base.topology.nvlink_GBps = 450;
  p.base.topology.nic_Gbps = 400;
  p.base.parallel.global_batch = 256;
  p.parameters = par::ParameterCount(m);
  p.micro_batches = {1};
  p.recompute_modes = {par::Recompute::kSelective};
  return p;
}

TEST(SweepTest, EnumerationHoldsCpEpUnevenAndZero2WithPpAndNothingValidateLayoutRejects) {
  SweepProblem p = MoeProblem();
  p.zero2_with_pp = true;  // opt-in (as --zero does)
  bool cp = false, ep = false, etp = false, uneven = false, zero2_pp = false, fsdp_hybrid = false;
  for (const Candidate& c : EnumerateLayouts(p)) {
    const par::ParallelConfig& q = c.parallel;
    EXPECT_TRUE(par::ValidateLayout(p.base.model, q, c.gpus, 8).ok())
        << DescribeLayout(c) << ": " << par::ValidateLayout(p.base.model, q, c.gpus, 8).message();
    EXPECT_TRUE(q.etp == 1 || q.etp == q.tp) << "ETP is 1 or the dense TP";
    EXPECT_EQ(8 % q.ep, 0) << "EP divides the experts";
    EXPECT_EQ(p.base.model.seq_len % (2 * q.cp), 0) << "2·cp chunks of the sequence";
    // Today's overlaps, where the recipes turn them on.
    EXPECT_EQ(q.tp_comm_overlap, q.sequence_parallel);
    EXPECT_EQ(q.overlap_param_gather, q.zero_stage >= 1);
    EXPECT_EQ(q.overlap_p2p, q.schedule == par::PipelineSchedule::kInterleaved1F1B);
    cp |= q.cp > 1;
    ep |= q.ep > 1;
    etp |= q.etp > 1;
    uneven |= q.first_stage_layers >= 0;
    zero2_pp |= q.zero_stage == 2 && q.pp > 1;
    fsdp_hybrid |= q.zero_stage == 3 && q.shard_group > 0;
  }
  EXPECT_TRUE(cp);
  EXPECT_TRUE(ep);
  EXPECT_TRUE(etp);
  EXPECT_TRUE(uneven) << "14 layers on 4 stages need first/last stage layers";
  EXPECT_TRUE(zero2_pp);
  EXPECT_TRUE(fsdp_hybrid);
}

TEST(SweepTest, OverlapsOffLeaveTheBaseFlags) {
  SweepProblem p = MoeProblem();
  p.modern_overlaps = false;
  for (const Candidate& c : EnumerateLayouts(p)) {
    EXPECT_FALSE(c.parallel.tp_comm_overlap || c.parallel.overlap_param_gather ||
                 c.parallel.overlap_p2p)
        << DescribeLayout(c);
  }
}

// The MoE sweep ranks expert-parallel layouts, and the ones it confirms run in the step
// simulation: restricted to EP 8 (one expert per GPU of a node), every ranked row has it.
TEST(SweepTest, MoeSweepRanksAnExpertParallelLayout) {
  SweepProblem p = MoeProblem();
  p.zero_stages = {1};
  p.cp_degrees = {1};
  p.sequence_parallel = {true};
  p.confirm_pareto = false;
  LocalCommunicator comm;
  Result<SweepResult> all = RunSweep(p, {Objective::kTime, 1, false}, &comm);
  ASSERT_TRUE(all.ok()) << all.status().message();
  bool ranked_ep = false;
  for (size_t i : Rank(all->evaluations, Objective::kTime)) {
    ranked_ep |= all->evaluations[i].layout.parallel.ep > 1;
  }
  EXPECT_TRUE(ranked_ep);
  p.ep_degrees = {8};
  Result<SweepResult> ep8 = RunSweep(p, {Objective::kTime, 2, false}, &comm);
  ASSERT_TRUE(ep8.ok()) << ep8.status().message();
  ASSERT_FALSE(ep8->top.empty());
  for (size_t i : ep8->top) {
    const Evaluation& e = ep8->evaluations[i];
    EXPECT_EQ(e.layout.parallel.ep, 8);
    EXPECT_TRUE(e.confirmed);
    EXPECT_GT(e.mfu, 0);
    EXPECT_LT(e.mfu, 1);
  }
}

TEST(SweepTest, EveryLayoutIsEvaluatedOrRejectedWithAReason) {
  SweepProblem p = Problem({32});
  p.confirm_pareto = false;  // the step simulations are the slow part; three are enough here
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(p, {Objective::kTime, 3, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->evaluated + r->rejected, int64_t(r->evaluations.size()));
  for (const Evaluation& e : r->evaluations) {
    if (e.rejected) {
      EXPECT_FALSE(e.reason.empty()) << DescribeLayout(e.layout);
    } else {
      EXPECT_GT(e.step_time_s, 0);
      EXPECT_GT(e.mfu, 0);
      EXPECT_LT(e.mfu, 1);
      EXPECT_LE(e.memory_bytes_per_gpu, p.base.gpu.memory_bytes);
      EXPECT_GT(e.expected_ettr, 0);
      EXPECT_LE(e.expected_ettr, 1);
      // time to train = ceil(tokens / tokens per step) × step / goodput.
      const double steps = std::ceil(1e12 / (512.0 * 2048));
      EXPECT_NEAR(e.time_to_train_s, steps * e.step_time_s / e.expected_ettr,
                  1e-9 * e.time_to_train_s);
      EXPECT_NEAR(e.cost_usd, e.time_to_train_s / 3600 * 32 * p.run.usd_per_gpu_hour,
                  1e-9 * e.cost_usd);
    }
  }
  ASSERT_EQ(r->top.size(), 3u);
  for (size_t i : r->top) EXPECT_TRUE(r->evaluations[i].confirmed);
  for (size_t k = 1; k < r->top.size(); ++k) {
    EXPECT_TRUE(
        BetterThan(r->evaluations[r->top[k - 1]], r->evaluations[r->top[k]], Objective::kTime));
  }
}

// The top K are confirmed, and no layout left at its estimate ranks above the last of them: an
// estimate that would is confirmed too (before, a confirmed #3 could sit below an unconfirmed
// estimate, as on the demo's 175B sweep by cost).
TEST(SweepTest, NoEstimateRanksAboveTheConfirmedTopK) {
  LocalCommunicator comm;
  SweepProblem p = Problem({32, 64});
  p.micro_batches = {1, 2};
  for (Objective o : {Objective::kTime, Objective::kCost}) {
    Result<SweepResult> r = RunSweep(p, {o, 3, false}, &comm);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->top.size(), 3u);
    const Evaluation& last = r->evaluations[r->top.back()];
    for (const Evaluation& e : r->evaluations) {
      if (e.rejected || e.confirmed) continue;
      EXPECT_FALSE(BetterThan(e, last, o))
          << DescribeLayout(e.layout) << " (estimate) above " << DescribeLayout(last.layout);
    }
  }
}

// The front is drawn from simulated step times, and no layout — confirmed or only estimated —
// dominates a row of it: an estimate that would undercut a confirmed row gets confirmed itself.
TEST(SweepTest, ParetoFrontIsConfirmedAndNotDominated) {
  LocalCommunicator comm;
  SweepProblem p = Problem({32, 64});
  p.micro_batches = {1, 2};
  Result<SweepResult> r = RunSweep(p, {Objective::kCost, 1, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->pareto.empty());
  for (size_t i : r->pareto) {
    const Evaluation& a = r->evaluations[i];
    EXPECT_TRUE(a.confirmed) << DescribeLayout(a.layout);
    for (const Evaluation& b : r->evaluations) {
      if (b.rejected) continue;
      const bool dominates = b.time_to_train_s <= a.time_to_train_s && b.cost_usd <= a.cost_usd &&
                             (b.time_to_train_s < a.time_to_train_s || b.cost_usd < a.cost_usd);
      EXPECT_FALSE(dominates) << DescribeLayout(b.layout) << " dominates "
                              << DescribeLayout(a.layout);
    }
  }
  // The front runs from fastest to cheapest.
  for (size_t k = 1; k < r->pareto.size(); ++k) {
    EXPECT_LT(r->evaluations[r->pareto[k - 1]].time_to_train_s,
              r->evaluations[r->pareto[k]].time_to_train_s + 1e-12);
    EXPECT_GT(r->evaluations[r->pareto[k - 1]].cost_usd, r->evaluations[r->pareto[k]].cost_usd);
  }
}

TEST(SweepTest, GoodputIsDalysUsefulFractionAtDalysInterval) {
  run::RunConfig run;
  run.checkpoint.policy = checkpoint::CheckpointPolicy::kSync;
  Result<GoodputEstimate> g = ExpectedGoodput(run, 175'000'000'000, 1024, 8);
  ASSERT_TRUE(g.ok());
  // M = 1 / (128 nodes × 419 / (54 × 2048) per node-day).
  const double mtbf = 86400.0 / (128 * 419.0 / (54 * 2048));
  EXPECT_NEAR(g->mtbf_s, mtbf, 1e-6 * mtbf);
  // δ: 175e9 × 14 bytes written by 128 nodes at min(8 × 25 GB/s PCIe, 50 GB/s NIC) each,
  // capped by 2000 GB/s of storage: 2.45 TB / 2000 GB/s = 1.225 s... the 128 nodes give 6.4 TB/s,
  // so storage is the limit.
  EXPECT_NEAR(g->checkpoint_cost_s, 175e9 * 14 / 2000e9, 1e-3);
  const double tau = std::sqrt(2 * g->checkpoint_cost_s * mtbf) *
                         (1 + std::sqrt(g->checkpoint_cost_s / (2 * mtbf)) / 3 +
                          g->checkpoint_cost_s / (2 * mtbf) / 9) -
                     g->checkpoint_cost_s;
  EXPECT_NEAR(g->interval_s, tau, 1e-6 * tau);
  const double useful = std::exp(-g->restart_s / mtbf) * (tau / mtbf) /
                        (std::exp((tau + g->checkpoint_cost_s) / mtbf) - 1);
  EXPECT_NEAR(g->expected_ettr, useful, 1e-9);
  // Restart: 5 s detection (PROCESS_EXIT, the mechanism of most Llama 3 interruptions) + 2 min
  // requeue + 3 min start + 10 s + 2 ms × 1024 init + load.
  EXPECT_NEAR(g->restart_s, 5 + 120 + 180 + 10 + 2.048 + 175e9 * 14 / 2000e9, 1e-3);

  // Twice the GPUs: twice the failure rate, lower goodput.
  Result<GoodputEstimate> g2 = ExpectedGoodput(run, 175'000'000'000, 2048, 8);
  ASSERT_TRUE(g2.ok());
  EXPECT_LT(g2->expected_ettr, g->expected_ettr);
  // No failures: nothing lost, no checkpoints needed.
  run.failures.enabled = false;
  Result<GoodputEstimate> none = ExpectedGoodput(run, 175'000'000'000, 1024, 8);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->expected_ettr, 1.0);
}

TEST(SweepTest, RejectsGpuCountsTheClusterCannotHold) {
  LocalCommunicator comm;
  for (int n : {0, -8, 12}) {
    Result<SweepResult> r = RunSweep(Problem({n}), {}, &comm);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("multiple of 8"), std::string::npos)
        << r.status().message();
  }
}

TEST(SweepTest, AModelNoLayoutFitsNamesTheSmallestShortfallAndAFix) {
  SweepProblem p = Problem({8});
  // GPT-3 175B on one node: 175e9 × 16 B / 8 GPUs = 350 GB of model states per GPU at best.
  p.base.model.num_layers = 96;
  p.base.model.hidden = 12288;
  p.base.model.heads = 96;
  p.parameters = par::ParameterCount(p.base.model);
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(p, {}, &comm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kFailedPrecondition);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("smallest shortfall"), std::string::npos) << msg;
  EXPECT_NE(msg.find("would fit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GPUs (e.g."), std::string::npos) << msg;
}

// A layout over the usable memory (GPU less headroom) but under the GPU's is short by what
// exceeds the usable part: the smallest shortfall names it and the headroom as what binds (it
// was measured against the whole GPU, so such layouts had no shortfall and were never named).
TEST(SweepTest, TheShortfallIsOverTheUsableMemoryAndNamesTheHeadroomWhenThatBinds) {
  SweepProblem p = Problem({8});
  p.base.memory.headroom_bytes = p.base.gpu.memory_bytes;  // nothing may be used
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(p, {}, &comm);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("smallest shortfall"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--memory-headroom 0 would fit it"), std::string::npos) << msg;
}

// Long context: CP 4 and 8 layouts are timed like CP 2 (each was rejected, the CP ring's
// exchange timed as one send/recv over the whole CP group, defined only for two GPUs).
TEST(SweepTest, ContextParallelDegreesAboveTwoAreEvaluatedNotRejected) {
  SweepProblem p = Problem({64});
  p.base.model.seq_len = 32768;
  p.base.model.flash_attention = true;
  p.base.parallel.global_batch = 64;
  p.micro_batches = {1};
  p.cp_degrees = {4, 8};
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(p, {}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int timed[9] = {};
  for (const Evaluation& e : r->evaluations) {
    EXPECT_EQ(e.reason.find("send_recv"), std::string::npos) << e.reason;
    if (!e.rejected) ++timed[e.layout.parallel.cp];
  }
  EXPECT_GT(timed[4], 0);
  EXPECT_GT(timed[8], 0);
}

TEST(SweepTest, UnknownObjectiveIsRejected) {
  EXPECT_FALSE(ParseObjective("fastest").ok());
  EXPECT_EQ(*ParseObjective("cost"), Objective::kCost);
}

// N threads standing in for N ranks: AllGather meets at a barrier.
class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), parts_(size_t(n)), barrier_(n) {}
  class Rank : public Communicator {
   public:
    Rank(ThreadGroup* g, int r) : g_(g), r_(r) {}
    int rank() const override { return r_; }
    int size() const override { return g_->n_; }
    Result<std::vector<std::string>> AllGather(const std::string& mine) override {
      g_->parts_[size_t(r_)] = mine;
      g_->barrier_.arrive_and_wait();
      std::vector<std::string> out = g_->parts_;
      g_->barrier_.arrive_and_wait();
      return out;
    }

   private:
    ThreadGroup* g_;
    int r_;
  };
  int n_;
  std::vector<std::string> parts_;
  std::barrier<> barrier_;
};

TEST(SweepTest, ThreeRanksGiveTheSameResultAsOne) {
  SweepProblem p = Problem({32, 64});
  p.micro_batches = {1, 2};
  p.confirm_pareto = false;
  const SweepOptions opts{Objective::kTime, 3, false};
  LocalCommunicator one;
  Result<SweepResult> single = RunSweep(p, opts, &one);
  ASSERT_TRUE(single.ok()) << single.status().message();

  ThreadGroup group(3);
  std::vector<std::optional<Result<SweepResult>>> results(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      ThreadGroup::Rank comm(&group, r);
      results[size_t(r)] = RunSweep(p, opts, &comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[size_t(r)]->ok());
    const SweepResult& multi = **results[size_t(r)];
    EXPECT_EQ(multi.top, single->top);
    EXPECT_EQ(multi.pareto, single->pareto);
    ASSERT_EQ(multi.evaluations.size(), single->evaluations.size());
    for (size_t i = 0; i < multi.evaluations.size(); ++i) {
      const Evaluation& a = multi.evaluations[i];
      const Evaluation& b = single->evaluations[i];
      ASSERT_EQ(a.reason, b.reason) << i;
      ASSERT_EQ(a.step_time_s, b.step_time_s) << i;  // bit-identical, not merely close
      ASSERT_EQ(a.cost_usd, b.cost_usd) << i;
      ASSERT_EQ(a.confirmed, b.confirmed) << i;
      ASSERT_TRUE(!LayoutLess(a.layout, b.layout) && !LayoutLess(b.layout, a.layout)) << i;
    }
  }
}

TEST(SweepTest, MonteCarloTrialsSplitOverRanksGiveTheSameMeans) {
  SweepProblem p = Problem({32});
  p.micro_batches = {2};
  p.confirm_pareto = false;
  p.token_budget = 20e9;
  // The healthy step's time for every cluster state (failures here only interrupt the run).
  p.step_time_fn = [](const step::StepConfig& c) -> run::StepTimeFn {
    return [c](const run::RunState&) -> Result<run::StepTiming> {
      Result<step::StepResult> r = step::SimulateStep(c);
      if (!r.ok()) return r.status();
      run::StepTiming t;
      t.useful = sim::Time::FromSeconds(r->time_s);
      return t;
    };
  };
  const SweepOptions opts{Objective::kTime, 1, false, 6};
  LocalCommunicator one;
  Result<SweepResult> single = RunSweep(p, opts, &one);
  ASSERT_TRUE(single.ok()) << single.status().message();
  const Evaluation& e = single->evaluations[single->top[0]];
  EXPECT_EQ(e.trials, 6);
  EXPECT_GT(e.mc_ettr, 0.5);
  EXPECT_LE(e.mc_ettr, 1.0);
  // The run takes at least the failure-free time: steps × step time.
  EXPECT_GE(e.mc_time_to_train_s, std::ceil(20e9 / (512.0 * 2048)) * e.step_time_s * 0.999);

  ThreadGroup group(2);
  std::vector<std::optional<Result<SweepResult>>> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ThreadGroup::Rank comm(&group, r);
      results[size_t(r)] = RunSweep(p, opts, &comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[size_t(r)]->ok());
    const Evaluation& m = (**results[size_t(r)]).evaluations[single->top[0]];
    EXPECT_EQ(m.mc_ettr, e.mc_ettr);
    EXPECT_EQ(m.mc_time_to_train_s, e.mc_time_to_train_s);
    EXPECT_EQ(m.mc_cost_usd, e.mc_cost_usd);
  }
}

TEST(SweepTest, ZeroTwoWithPipelinesIsTriedOnlyWhenAskedFor) {
  // Megatron's distributed optimizer keeps whole gradients under pipelining; per-micro-batch
  // reduce-scatters (ZeRO-2 with PP) are opt-in.
  SweepProblem p = MoeProblem();
  for (const Candidate& c : EnumerateLayouts(p)) {
    EXPECT_FALSE(c.parallel.zero_stage == 2 && c.parallel.pp > 1) << DescribeLayout(c);
  }
  p.zero2_with_pp = true;
  bool found = false;
  for (const Candidate& c : EnumerateLayouts(p)) {
    found |= c.parallel.zero_stage == 2 && c.parallel.pp > 1;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace trainsim::sweep

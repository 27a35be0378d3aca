// sweep/sweep.h, issue 16: rows from one kind of number, same-in-effect layouts folded into one,
// the memory headroom, the energy model and its objective, several GPU types in one ranking,
// threads, and the Monte Carlo spread.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "parallelism/model.h"
#include "scenarios/step_config.h"
#include "sim/parallel.h"
#include "sweep/sweep.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

// A 1.3B-class GPT (24 layers, hidden 2048, 16 heads) with flash attention on DGX nodes of
// 8 GPUs, one trillion tokens; failures off so the numbers are closed forms of the step time.
SweepProblem Problem() {
  SweepProblem p;
  p.base.model.num_layers = 24;
  p.base.model.hidden = 2048;
  p.base.model.heads = 16;
  p.base.model.seq_len = 2048;
  p.base.model.vocab = 51200;
  p.base.model.flash_attention = true;
  // Selective recomputation of the norms only: a dense layer's norms are fused into the linears
  // (Megatron-Core leaves them alone), so "selective" re-runs and frees nothing here, and each
  // such layout is "none" in effect.
  p.base.parallel.recompute_modules = par::kRecomputeLayernorm;
  p.base.topology.gpus_per_node = 8;
  p.base.topology.nvlink_GBps = 450;
  p.base.topology.nic_Gbps = 400;
  p.base.parallel.global_batch = 256;
  p.parameters = par::ParameterCount(p.base.model);
  p.token_budget = 1e12;
  p.gpu_counts = {16};
  p.micro_batches = {1, 2};
  p.zero_stages = {0, 1};
  p.energy = {700, 0.3, 1.1, 0.08};  // H100 SXM board power; the scenario defaults
  p.hardware_name = "H100";
  return p;
}

bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(SweepRankTest, NoTwoPrintedRowsAreTheSameLayoutInEffectAndEachNamesItsEquivalents) {
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(Problem(), {Objective::kTime, 5, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->top.size(), 5u);
  int64_t folded = 0;
  for (size_t a = 0; a < r->top.size(); ++a) {
    const Evaluation& rep = r->evaluations[r->top[a]];
    EXPECT_TRUE(rep.confirmed);
    for (size_t b = a + 1; b < r->top.size(); ++b) {
      EXPECT_FALSE(SameInEffect(rep, r->evaluations[r->top[b]]))
          << DescribeLayout(rep.layout) << " twice";
    }
    // Recompute none and selective (norms only) time the same: each printed row names the
    // other, and the tie rule kept the one with less memory.
    for (int64_t j : rep.equivalents) {
      const Evaluation& o = r->evaluations[size_t(j)];
      EXPECT_TRUE(Same(o.step_time_s, rep.step_time_s));
      EXPECT_LE(rep.memory_bytes_per_gpu, o.memory_bytes_per_gpu);
      EXPECT_FALSE(DescribeDifference(rep.layout, o.layout).empty());
      ++folded;
    }
  }
  EXPECT_GT(folded, 0) << "selective of the norms alone makes none and selective the same layout";
}

TEST(SweepRankTest, ParetoRowsAreConfirmedAndNoneIsCheaperThanTopByCostFirst) {
  LocalCommunicator comm;
  SweepProblem p = Problem();
  p.gpu_counts = {8, 16};
  Result<SweepResult> r = RunSweep(p, {Objective::kCost, 3, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double cheapest = r->evaluations[r->top[0]].cost_usd;
  for (size_t i : r->pareto) {
    EXPECT_TRUE(r->evaluations[i].confirmed);
    EXPECT_GE(r->evaluations[i].cost_usd, cheapest);
  }
  EXPECT_GE(r->confirm_rounds, 1);
}

TEST(SweepRankTest, EveryEvaluatedLayoutFitsWithinTheHeadroomAndRejectionsSayHeadroom) {
  LocalCommunicator comm;
  SweepProblem p = Problem();
  p.base.gpu.memory_bytes = 24e9;  // small enough that the headroom binds
  p.base.memory.headroom_bytes = 4e9;
  Result<SweepResult> r = RunSweep(p, {Objective::kTime, 1, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool headroom_reason = false;
  for (const Evaluation& e : r->evaluations) {
    if (!e.rejected) {
      EXPECT_LE(e.memory_bytes_per_gpu, 20e9) << DescribeLayout(e.layout);
    }
    if (e.rejected && e.memory_bytes_per_gpu > 20e9 && e.memory_bytes_per_gpu <= 24e9) {
      headroom_reason = true;
      EXPECT_NE(e.reason.find("memory headroom of 4.0 GB"), std::string::npos) << e.reason;
    }
  }
  EXPECT_TRUE(headroom_reason) << "some layout fits the HBM but not the headroom";
}

TEST(SweepRankTest, EnergyIsBoardPowerTimesDrawTimesPueOverTheTimeToTrain) {
  LocalCommunicator comm;
  Result<SweepResult> r = RunSweep(Problem(), {Objective::kEnergy, 3, false}, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (size_t k = 0; k < r->top.size(); ++k) {
    const Evaluation& e = r->evaluations[r->top[k]];
    ASSERT_GT(e.busy_fraction, 0);
    ASSERT_LE(e.busy_fraction, 1);
    const double watts = 700 * (0.3 + 0.7 * e.busy_fraction);
    EXPECT_NEAR(e.gpu_watts, watts, 1e-9);
    // J = s × GPUs × W × PUE; 3.6e6 J per kWh.
    EXPECT_NEAR(e.energy_kwh, e.time_to_train_s * e.layout.gpus * watts * 1.1 / 3.6e6,
                1e-9 * e.energy_kwh);
    EXPECT_NEAR(e.energy_cost_usd, e.energy_kwh * 0.08, 1e-9 * e.energy_cost_usd);
    if (k > 0) {
      EXPECT_LE(r->evaluations[r->top[k - 1]].energy_kwh, e.energy_kwh);
    }
  }
}

// Two GPU types ranked together: the same layouts on a board that draws twice the power cost
// twice the energy at the same speed, so by energy the low-power type ranks first.
TEST(SweepRankTest, TwoGpuTypesRankTogetherEachWithItsOwnBoardPower) {
  LocalCommunicator comm;
  SweepProblem a = Problem(), b = Problem();
  b.energy.tdp_watts = 1400;
  b.hardware_name = "double-power";
  b.hardware = 1;
  SweepOptions o{Objective::kEnergy, 4, false};
  Result<SweepResult> r = RunSweeps({a, b}, o, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->evaluations[r->top[0]].layout.hardware, 0);
  bool both = false;
  for (size_t i = 0; i < r->evaluations.size(); ++i) {
    const Evaluation& e = r->evaluations[i];
    if (e.rejected || !e.confirmed || e.layout.hardware != 1) continue;
    both = true;
    EXPECT_NEAR(e.gpu_watts, 1400 * (0.3 + 0.7 * e.busy_fraction), 1e-9);
  }
  EXPECT_TRUE(both) << "the second type's layouts are confirmed too (its top K)";
  o.objective = Objective::kTime;
  o.pareto = {Objective::kTime, Objective::kEnergy};
  r = RunSweeps({a, b}, o, &comm);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (size_t i : r->pareto) EXPECT_EQ(r->evaluations[i].layout.hardware, 0);
}

// Every number the ranking and the confirmations produce, compared bit for bit.
void ExpectSameEvaluation(const Evaluation& a, const Evaluation& b) {
  const std::string at = DescribeLayout(a.layout);
  EXPECT_EQ(at, DescribeLayout(b.layout));
  EXPECT_EQ(a.rejected, b.rejected) << at;
  EXPECT_EQ(a.reason, b.reason) << at;
  EXPECT_EQ(a.fits, b.fits) << at;
  EXPECT_EQ(a.confirmed, b.confirmed) << at;
  for (auto field : {&Evaluation::memory_bytes_per_gpu, &Evaluation::memory_shortfall_bytes,
                     &Evaluation::step_time_s, &Evaluation::estimated_step_time_s, &Evaluation::mfu,
                     &Evaluation::expected_ettr, &Evaluation::checkpoint_interval_s,
                     &Evaluation::time_to_train_s, &Evaluation::gpu_hours, &Evaluation::cost_usd,
                     &Evaluation::busy_fraction, &Evaluation::gpu_watts, &Evaluation::energy_kwh,
                     &Evaluation::energy_cost_usd}) {
    EXPECT_TRUE(Same(a.*field, b.*field)) << at;
  }
  for (auto field : {&step::StepBreakdown::compute_s, &step::StepBreakdown::exposed_dp_comm_s,
                     &step::StepBreakdown::pp_wait_s, &step::StepBreakdown::bubble_s}) {
    EXPECT_TRUE(Same(a.breakdown.*field, b.breakdown.*field)) << at;
  }
  EXPECT_EQ(a.equivalents, b.equivalents) << at;
}

TEST(SweepRankTest, ThreadsGiveTheSameResultBitForBit) {
  LocalCommunicator comm;
  SweepOptions one{Objective::kTime, 4, false}, three = one;
  three.threads = 3;
  // Two GPU counts: the ranking's estimates on three threads use several estimator caches,
  // each building its own topologies (and the memory model its per-thread caches).
  SweepProblem problem = Problem();
  problem.gpu_counts = {16, 32};
  Result<SweepResult> a = RunSweep(problem, one, &comm);
  Result<SweepResult> b = RunSweep(problem, three, &comm);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->evaluations.size(), b->evaluations.size());
  EXPECT_EQ(a->top, b->top);
  EXPECT_EQ(a->pareto, b->pareto);
  EXPECT_EQ(a->evaluated, b->evaluated);
  EXPECT_EQ(a->confirmed, b->confirmed);
  for (size_t i = 0; i < a->evaluations.size(); ++i) {
    ExpectSameEvaluation(a->evaluations[i], b->evaluations[i]);
  }
}

TEST(SweepRankTest, EstimatorCacheGivesEveryThreadTheValueOneThreadComputes) {
  // Four threads ask for the same and for different collectives, each key several times; every
  // answer equals a fresh single-threaded cache's, bit for bit.
  SweepProblem problem = Problem();
  comm::TopologySpec spec = problem.base.topology;
  spec.nodes = 4;
  EstimatorCache shared, fresh;
  Result<const comm::Topology*> topo = shared.TopologyFor(spec);
  Result<const comm::Topology*> topo_fresh = fresh.TopologyFor(spec);
  ASSERT_TRUE(topo.ok() && topo_fresh.ok());
  auto group = [](int k) {  // 2, 4, 8, 16 GPUs, stride 1 or 2
    std::vector<int> g;
    for (int i = 0; i < (2 << (k % 4)); ++i) g.push_back(i * (1 + k / 4 % 2));
    return g;
  };
  constexpr int kKeys = 16, kCalls = 64;
  std::vector<double> got(kCalls, -1);
  ASSERT_TRUE(sim::ParallelFor(kCalls, 4, [&](int64_t i) {
                Result<double> s = shared.CollectiveSeconds(**topo, comm::Op::kAllReduce,
                                                            group(int(i % kKeys)), 64e6);
                if (!s.ok()) return s.status();
                got[size_t(i)] = *s;
                return Status::Ok();
              }).ok());
  for (int i = 0; i < kCalls; ++i) {
    Result<double> want =
        fresh.CollectiveSeconds(**topo_fresh, comm::Op::kAllReduce, group(i % kKeys), 64e6);
    ASSERT_TRUE(want.ok());
    EXPECT_GT(*want, 0);
    EXPECT_TRUE(Same(got[size_t(i)], *want)) << i;
  }
}

// Under flash attention selective recomputation has no kernel to recompute, so the step
// simulation of recompute selective is that of recompute none (the sweep simulates one and
// confirms both with it): the same step bit for bit, whichever the sweep simulated.
TEST(SweepRankTest, SelectiveRecomputeThatRerunsNothingSimulatesAsNone) {
  // Problem()'s selective list is the norms only, fused into the linears of a dense model.
  SweepProblem problem = Problem();
  step::StepConfig none = problem.base, selective = problem.base;
  for (step::StepConfig* c : {&none, &selective}) {
    c->topology.nodes = 2;
    c->parallel.tp = 2;
    c->parallel.pp = 2;
    c->parallel.dp = 4;
    c->parallel.micro_batch = 2;
  }
  none.parallel.recompute = par::Recompute::kNone;
  selective.parallel.recompute = par::Recompute::kSelective;
  Result<step::StepResult> a = step::SimulateStep(none), b = step::SimulateStep(selective);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
  EXPECT_TRUE(Same(a->time_s, b->time_s));
  EXPECT_TRUE(Same(a->mfu, b->mfu));
  EXPECT_TRUE(Same(a->breakdown.compute_s, b->breakdown.compute_s));
  EXPECT_EQ(a->flows, b->flows);
  // The attention core, by contrast, re-runs the flash kernel's forward: not the same step.
  step::StepConfig core = selective;
  core.parallel.recompute_modules = par::kRecomputeCoreAttn;
  Result<step::StepResult> c = step::SimulateStep(core);
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->time_s, a->time_s);
  // And the sweep: the selective layouts it confirms by sharing their twin's simulation equal
  // those of a sweep that tries selective only (each simulated itself).
  LocalCommunicator comm;
  SweepOptions o{Objective::kTime, 3, false};
  Result<SweepResult> both = RunSweep(problem, o, &comm);
  problem.recompute_modes = {par::Recompute::kSelective};
  Result<SweepResult> alone = RunSweep(problem, o, &comm);
  ASSERT_TRUE(both.ok() && alone.ok());
  int compared = 0;
  for (const Evaluation& s : alone->evaluations) {
    if (!s.confirmed) continue;
    for (const Evaluation& t : both->evaluations) {
      if (t.confirmed && !LayoutLess(s.layout, t.layout) && !LayoutLess(t.layout, s.layout)) {
        EXPECT_TRUE(Same(s.step_time_s, t.step_time_s)) << DescribeLayout(s.layout);
        EXPECT_TRUE(Same(s.mfu, t.mfu)) << DescribeLayout(s.layout);
        EXPECT_TRUE(Same(s.busy_fraction, t.busy_fraction)) << DescribeLayout(s.layout);
        EXPECT_TRUE(Same(s.breakdown.pp_wait_s, t.breakdown.pp_wait_s));
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 3);
}

TEST(SweepRankTest, ParetoAxesAreTwoDifferentObjectives) {
  EXPECT_TRUE(ParseParetoAxes("time,energy").ok());
  EXPECT_FALSE(ParseParetoAxes("time,time").ok());
  EXPECT_FALSE(ParseParetoAxes("time").ok());
  EXPECT_TRUE(ParseObjective("energy").ok());
}

TEST(SweepRankTest, HeadroomIsAFractionAPercentageOrASize) {
  const double hbm = 80e9;
  EXPECT_DOUBLE_EQ(*scenarios::MemoryHeadroomBytes("0.05", hbm), 4e9);
  EXPECT_DOUBLE_EQ(*scenarios::MemoryHeadroomBytes("5%", hbm), 4e9);
  EXPECT_DOUBLE_EQ(*scenarios::MemoryHeadroomBytes("4GB", hbm), 4e9);
  EXPECT_DOUBLE_EQ(*scenarios::MemoryHeadroomBytes("1GiB", hbm), 1073741824.0);
  EXPECT_DOUBLE_EQ(*scenarios::MemoryHeadroomBytes("", hbm, 0.05), 4e9);
  for (const char* bad : {"1.5", "-1%", "100%", "90GB", "4 GB", "lots"}) {
    Result<double> r = scenarios::MemoryHeadroomBytes(bad, hbm);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("cluster.memory_headroom"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::sweep

// For the Megatron-LM rows of docs/evidence/megatron2021_weak_scaling.csv (scenarios/validation/
// megatron2021_*.textproto, the same files `trainsim validate` reads), a sweep over the same GPU
// count and global batch finds a layout at least as fast as the published one, and the published
// layout is within 10% of the best found.
//
// The sweep is restricted to what those runs had (Narayanan et al., SC'21): full activation
// recomputation, no sequence parallelism (2022), no ZeRO, 1F1B or interleaved 1F1B; the
// micro-batch size is not published, so the published layout gets the fastest of 1, 2, 4, 8, 16
// (the sweep's default candidates), and so does the sweep. Table 1 gives TP, PP and DP but not the
// virtual-stage count; Narayanan §5.1 ran the Table 1 models with the interleaved schedule and
// the scatter/gather optimisation, so the published (TP, PP, DP) gets the fastest of 1F1B and
// interleaved 1F1B with every v > 1 dividing the layers per stage — the same schedule space the
// sweep searches. Both are timed by the step simulation
// (the sweep's best is confirmed by it). The table printed is the one in bench/README.md.
//
// What is asserted: the sweep's best is at least as fast as the published layout, and the
// published layout is within 10% of it. The sweep and the published layout both search
// micro-batches 1, 2, 4, 8 and 16 (the sweep's default). bench/README.md and docs/sweep.md hold
// the table and how the model got there (blocking pipeline sends and the fp16 optimizer step's
// memory and time, both from Megatron-LM's code).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/run_config.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"
#include "step/step_simulation.h"
#include "sweep/sweep.h"

namespace trainsim::sweep {
namespace {

namespace fs = std::filesystem;
namespace par = trainsim::parallelism;

struct Row {
  std::string name;
  int gpus = 0;
  double published_s = 0;  // the published layout, best micro-batch and v, step simulation
  int published_mb = 0;
  int published_v = 1;
  Evaluation best;
};

Result<Row> SweepRow(const std::string& file) {
  Result<pb::Scenario> s = scenarios::LoadScenario(file);
  if (!s.ok()) return s.status();
  Result<scenarios::ResolvedScenario> r = scenarios::Resolve(*s);
  if (!r.ok()) return r.status();
  Result<step::StepConfig> step = scenarios::MakeStepConfig(*r);
  if (!step.ok()) return step.status();
  Result<run::RunConfig> run = scenarios::MakeRunConfig(*r);
  if (!run.ok()) return run.status();
  Row row;
  row.name = r->scenario.name();
  row.gpus = r->num_gpus;
  // v = 1 is plain 1F1B; v > 1 interleaves v chunks of layers / (pp·v) layers per rank.
  std::vector<int> vs = {1};
  const int per_stage = step->model.num_layers / std::max(step->parallel.pp, 1);
  for (int v = 2; step->parallel.pp > 1 && v <= per_stage; ++v) {
    if (per_stage % v == 0) vs.push_back(v);
  }
  for (int mb : {1, 2, 4, 8, 16}) {
    for (int v : vs) {
      step::StepConfig c = *step;
      c.parallel.micro_batch = mb;
      c.parallel.schedule =
          v > 1 ? par::PipelineSchedule::kInterleaved1F1B : par::PipelineSchedule::k1F1B;
      c.parallel.virtual_stages = v;
      Result<step::StepResult> sim = step::SimulateStep(c);
      if (!sim.ok()) continue;  // does not divide the batch, needs m % pp == 0, or does not fit
      if (row.published_mb == 0 || sim->time_s < row.published_s) {
        row.published_s = sim->time_s;
        row.published_mb = mb;
        row.published_v = v;
      }
    }
  }
  if (row.published_mb == 0) return Status::Internal(file + ": the published layout does not run");
  SweepProblem p;
  p.base = *step;
  p.run = *run;
  p.parameters = r->params;
  p.token_budget = double(r->tokens_per_step) * 10;
  p.gpu_counts = {r->num_gpus};
  p.recompute_modes = {par::Recompute::kFull};
  p.sequence_parallel = {false};
  p.max_zero_stage = 0;
  p.gpipe = false;
  // Nor did they have context parallelism, uneven stages or today's overlaps.
  p.cp_degrees = {1};
  p.uneven_pipelines = false;
  p.modern_overlaps = false;
  p.confirm_pareto = false;
  LocalCommunicator comm;
  // The five best by the estimator are confirmed; the fastest confirmed one is the answer.
  Result<SweepResult> res = RunSweep(p, {Objective::kTime, 5, false}, &comm);
  if (!res.ok()) return res.status();
  if (res->top.empty()) return Status::Internal(file + ": no layout found");
  row.best = res->evaluations[res->top[0]];
  return row;
}

TEST(PublishedLayoutsTest, SweepFindsALayoutAtLeastAsFastAsThePublishedOne) {
  const fs::path dir = fs::path(TRAINSIM_SOURCE_DIR) / "scenarios/validation";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("megatron2021_", 0) == 0 && e.path().extension() == ".textproto") {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  std::printf(
      "| row | GPUs | published layout (best mb, v) | step s | best found | step s | "
      "published / best |\n|---|---|---|---|---|---|---|\n");
  for (const std::string& f : files) {
    Result<Row> row = SweepRow(f);
    ASSERT_TRUE(row.ok()) << row.status().message();
    const Evaluation& b = row->best;
    const double ratio = row->published_s / b.step_time_s;
    std::printf("| %s | %d | mb %d v %d | %.2f | %s | %.2f | %.3f |\n", row->name.c_str(),
                b.layout.gpus, row->published_mb, row->published_v, row->published_s,
                DescribeLayout(b.layout).c_str(), b.step_time_s, ratio);
    EXPECT_TRUE(b.confirmed);
    // At least as fast (the published layout is in the space; a hair of slack for the estimator
    // ranking a layout first whose simulated time lands a fraction of a percent behind).
    EXPECT_LE(b.step_time_s, row->published_s * 1.005) << row->name;
    // The published layout within 10% of the best found.
    EXPECT_LE(ratio, 1.10) << row->name << ": the published layout is " << 100 * (ratio - 1)
                           << "% slower than " << DescribeLayout(b.layout);
  }
}

}  // namespace
}  // namespace trainsim::sweep

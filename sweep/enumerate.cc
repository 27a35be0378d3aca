// The layout space of a sweep (sweep/sweep.h: EnumerateLayouts, StageSplits). The degrees and
// their constraints follow Megatron-Core's (megatron/core/parallel_state.py and
// megatron/training/arguments.py): TP × CP × PP × DP = GPUs; CP splits the sequence into 2·cp
// chunks; EP divides the experts and EP × ETP divides TP × CP × DP; uneven first/last stages as
// --decoder-first/last-pipeline-num-layers; ZeRO-3 (FSDP) only without PP. Everything
// ValidateLayout would reject is dropped here, so the sweep spends its time on runnable layouts.
#include <algorithm>
#include <utility>
#include <vector>

#include "sweep/sweep.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

void SortUnique(std::vector<int>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// CP degrees for `n_over_tp` GPUs per TP group.
std::vector<int> CpDegrees(const SweepProblem& problem, int n_over_tp) {
  const int seq = problem.base.model.seq_len;
  std::vector<int> out;
  if (!problem.cp_degrees.empty()) {
    for (int cp : problem.cp_degrees) {
      if (cp >= 1 && n_over_tp % cp == 0 && (cp == 1 || seq % (2 * cp) == 0)) out.push_back(cp);
    }
  } else {
    for (int cp = 1; cp <= problem.max_cp && cp <= n_over_tp; cp *= 2) {
      if (n_over_tp % cp == 0 && (cp == 1 || seq % (2 * cp) == 0)) out.push_back(cp);
    }
  }
  SortUnique(&out);
  return out;
}

// (ep, etp) pairs for a TP degree and a tp·cp·dp block; {(1, 1)} for a dense model.
std::vector<std::pair<int, int>> ExpertDegrees(const SweepProblem& problem, int tp, int block) {
  const par::ModelSpec& m = problem.base.model;
  if (!m.moe.enabled()) return {{1, 1}};
  std::vector<int> eps = problem.ep_degrees.empty() ? Divisors(m.moe.experts) : problem.ep_degrees;
  std::vector<int> etps =
      problem.etp_degrees.empty() ? std::vector<int>{1, tp} : problem.etp_degrees;
  SortUnique(&eps);
  SortUnique(&etps);
  const int expert_ffn = m.moe.expert_ffn(m.ffn());
  std::vector<std::pair<int, int>> out;
  for (int ep : eps) {
    if (ep < 1 || m.moe.experts % ep != 0) continue;
    for (int etp : etps) {
      if (etp < 1 || expert_ffn % etp != 0 || block % (ep * etp) != 0) continue;
      out.push_back({ep, etp});
    }
  }
  return out;
}

struct Sched {
  par::PipelineSchedule s;
  int v;
  int first, last;
};

// Schedules with their stage splits for pp stages.
std::vector<Sched> Schedules(const SweepProblem& problem, int pp) {
  const int layers = problem.base.model.num_layers;
  std::vector<Sched> out;
  for (const auto& [f, l] : StageSplits(layers, pp, 1, problem.uneven_pipelines)) {
    out.push_back({par::PipelineSchedule::k1F1B, 1, f, l});
    if (pp > 1 && problem.gpipe) out.push_back({par::PipelineSchedule::kGpipe, 1, f, l});
  }
  if (pp > 1 && problem.interleaving) {
    // v divides the layers per stage (even split) or the middle stages' share (uneven).
    const int lo = layers / pp, hi = (layers + pp - 1) / pp;
    std::vector<int> vs;
    for (int v = 2; v <= hi; ++v) {
      if (lo % v == 0 || hi % v == 0) vs.push_back(v);
    }
    for (int v : vs) {
      for (const auto& [f, l] : StageSplits(layers, pp, v, problem.uneven_pipelines)) {
        out.push_back({par::PipelineSchedule::kInterleaved1F1B, v, f, l});
      }
    }
  }
  return out;
}

// Shard groups for ZeRO stage z: 0 (all of DP), and for ZeRO-3 one node's DP ranks.
std::vector<int> ShardGroups(const SweepProblem& problem, int z, int tp, int cp, int dp) {
  std::vector<int> out = {0};
  if (z != 3 || !problem.hybrid_sharding) return out;
  const int per_node = problem.base.topology.gpus_per_node / std::max(1, tp * cp);
  if (per_node >= 2 && per_node < dp && dp % per_node == 0) out.push_back(per_node);
  return out;
}

// Selective recomputation of the attention core alone (Megatron-Core's default module) over a
// fused flash kernel: it re-runs the kernel's forward to save its fp32 log-sum-exp, 4 bytes per
// query and head, well under 1% of a layer's activations; Megatron-Core warns that it is not
// needed (TransformerConfig: "For fused attention, you have no need to set 'core_attn'"). Such
// a layout is its "none" twin, slower: not worth a row when "none" is tried too.
bool SelectiveIsOnlyTheFusedCore(const SweepProblem& problem) {
  const auto& modes = problem.recompute_modes;
  return problem.base.model.flash_attention &&
         problem.base.parallel.recompute_modules == par::kRecomputeCoreAttn &&
         std::find(modes.begin(), modes.end(), par::Recompute::kNone) != modes.end();
}

// The techniques (micro-batch, schedule, recompute, SP, ZeRO, shard group) of one degree split.
void AddTechniques(const SweepProblem& problem, int n, int tp, int cp, int pp, int dp, int ep,
                   int etp, std::vector<Candidate>* out) {
  const int gpn = problem.base.topology.gpus_per_node;
  const std::vector<Sched> scheds = Schedules(problem, pp);
  for (int mb : problem.micro_batches) {
    for (const Sched& sc : scheds) {
      for (par::Recompute rc : problem.recompute_modes) {
        if (rc == par::Recompute::kSelective && SelectiveIsOnlyTheFusedCore(problem)) continue;
        for (bool sp : problem.sequence_parallel) {
          if (sp && tp == 1) continue;  // nothing to split
          for (int z : problem.zero_stages) {
            if (z < 0 || z > problem.max_zero_stage) continue;
            if (z > 0 && dp * cp == 1) continue;  // nothing to shard over
            if (z == 3 && pp > 1) continue;       // ValidateLayout: FSDP without PP
            if (z == 2 && pp > 1 && !problem.zero2_with_pp) continue;
            for (int shard : ShardGroups(problem, z, tp, cp, dp)) {
              Candidate c;
              c.gpus = n;
              par::ParallelConfig& q = c.parallel;
              q = problem.base.parallel;
              q.tp = tp;
              q.tp_across_nodes = problem.tp_across_nodes;
              q.cp = cp;
              q.ep = ep;
              q.etp = etp;
              q.pp = pp;
              q.dp = dp;
              q.first_stage_layers = sc.first;
              q.last_stage_layers = sc.last;
              q.micro_batch = mb;
              q.schedule = sc.s;
              q.virtual_stages = sc.v;
              q.recompute = rc;
              // Activation offloading is not a sweep dimension (it needs pp 1 and no
              // recomputation): layouts are ranked without it.
              q.cpu_offload_layers = 0;
              q.sequence_parallel = sp;
              q.zero_stage = z;
              q.shard_group = shard;
              if (problem.modern_overlaps) {
                q.tp_comm_overlap = sp;
                q.overlap_param_gather = z >= 1;
                q.overlap_p2p = sc.s == par::PipelineSchedule::kInterleaved1F1B;
              } else if (!sp) {
                q.tp_comm_overlap = false;  // userbuffers need sequence parallelism
              }
              if (!par::ValidateLayout(problem.base.model, q, n, gpn).ok()) continue;
              out->push_back(c);
            }
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<std::pair<int, int>> StageSplits(int layers, int pp, int v, bool uneven) {
  if (pp >= 1 && v >= 1 && layers % (pp * v) == 0) return {{-1, -1}};
  if (!uneven || pp < 2 || v < 1) return {};
  std::vector<std::pair<int, int>> out;
  auto add = [&](int rest, int cap) {
    // The first and last share `rest` as evenly as multiples of v allow, each at most `cap`.
    const int f = rest / 2 / v * v, l = rest - f;
    if (l % v != 0 || l > cap || f < 0) return;
    out.push_back({f, l});
    if (f != l) out.push_back({l, f});
  };
  if (pp == 2) {
    add(layers, layers);
  } else {
    int found = 0;
    for (int L = v; L * (pp - 2) <= layers && found < 2; L += v) {
      const int rest = layers - L * (pp - 2);
      if (rest > 2 * L) continue;
      const size_t before = out.size();
      add(rest, L);
      found += out.size() > before;
    }
  }
  return out;
}

std::vector<Candidate> EnumerateLayouts(const SweepProblem& problem) {
  std::vector<Candidate> out;
  const int gpn = problem.base.topology.gpus_per_node;
  const int layers = problem.base.model.num_layers;
  std::vector<int> counts = problem.gpu_counts;
  SortUnique(&counts);
  for (int n : counts) {
    std::vector<int> tps;
    const int tp_max = problem.tp_across_nodes ? n : std::min(n, gpn);
    for (int tp = 1; tp <= tp_max; tp *= 2) {
      if (n % tp == 0) tps.push_back(tp);
    }
    for (int tp : tps) {
      for (int cp : CpDegrees(problem, n / tp)) {
        for (int pp : Divisors(n / tp / cp)) {
          if (pp > std::max(layers, 1)) break;
          const int dp = n / tp / cp / pp;
          for (const auto& [ep, etp] : ExpertDegrees(problem, tp, tp * cp * dp)) {
            AddTechniques(problem, n, tp, cp, pp, dp, ep, etp, &out);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace trainsim::sweep

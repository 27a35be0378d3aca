// sweep/ranking.cc — objectives, the total orders the sweep ranks by, the same-in-effect
// collapse and the Pareto front over two objectives (sweep/sweep.h).
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "sweep/sweep.h"

namespace trainsim::sweep {
namespace {

namespace par = trainsim::parallelism;

// What SameInEffect compares: the hardware, GPU count, degrees, stage split, micro-batch and
// schedule, and the step time's bits.
auto EffectKey(const Evaluation& e) {
  const par::ParallelConfig& p = e.layout.parallel;
  uint64_t bits = 0;
  std::memcpy(&bits, &e.step_time_s, sizeof bits);
  return std::make_tuple(e.layout.hardware, e.layout.gpus, p.tp, p.cp, p.ep, p.etp, p.pp, p.dp,
                         p.first_stage_layers, p.last_stage_layers, p.micro_batch, int(p.schedule),
                         p.virtual_stages, bits);
}

// The objective a tie on `o` falls back on: the other of time and cost; time for energy.
Objective Secondary(Objective o) {
  return o == Objective::kTime ? Objective::kCost : Objective::kTime;
}

}  // namespace

Result<Objective> ParseObjective(const std::string& name) {
  if (name == "time") return Objective::kTime;
  if (name == "cost") return Objective::kCost;
  if (name == "energy") return Objective::kEnergy;
  return Status::InvalidArgument("unknown objective '" + name + "' (valid: time, cost, energy)");
}

const char* ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kTime:
      return "time";
    case Objective::kCost:
      return "cost";
    case Objective::kEnergy:
      return "energy";
  }
  return "time";
}

Result<std::pair<Objective, Objective>> ParseParetoAxes(const std::string& text) {
  const size_t comma = text.find(',');
  const std::string valid = " (valid: two of time, cost, energy, e.g. time,cost)";
  if (comma == std::string::npos) {
    return Status::InvalidArgument("'" + text + "' names one objective" + valid);
  }
  Result<Objective> a = ParseObjective(text.substr(0, comma));
  Result<Objective> b = ParseObjective(text.substr(comma + 1));
  if (!a.ok() || !b.ok() || *a == *b) {
    return Status::InvalidArgument("'" + text + "' is not two different objectives" + valid);
  }
  return std::pair{*a, *b};
}

double ObjectiveValue(const Evaluation& e, Objective o) {
  switch (o) {
    case Objective::kTime:
      return e.time_to_train_s;
    case Objective::kCost:
      return e.cost_usd;
    case Objective::kEnergy:
      return e.energy_kwh;
  }
  return e.time_to_train_s;
}

bool BetterThan(const Evaluation& a, const Evaluation& b, Objective o) {
  const double va = ObjectiveValue(a, o), vb = ObjectiveValue(b, o);
  if (va != vb) return va < vb;
  const double wa = ObjectiveValue(a, Secondary(o)), wb = ObjectiveValue(b, Secondary(o));
  if (wa != wb) return wa < wb;
  // The tie rule: less memory per GPU, then fewer GPUs, then the layout tuple.
  if (a.memory_bytes_per_gpu != b.memory_bytes_per_gpu) {
    return a.memory_bytes_per_gpu < b.memory_bytes_per_gpu;
  }
  if (a.layout.gpus != b.layout.gpus) return a.layout.gpus < b.layout.gpus;
  return LayoutLess(a.layout, b.layout);
}

std::vector<size_t> Rank(const std::vector<Evaluation>& evals, Objective o) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < evals.size(); ++i) {
    if (!evals[i].rejected) idx.push_back(i);
  }
  std::sort(idx.begin(), idx.end(),
            [&](size_t a, size_t b) { return BetterThan(evals[a], evals[b], o); });
  return idx;
}

bool SameInEffect(const Evaluation& a, const Evaluation& b) {
  return !a.rejected && !b.rejected && EffectKey(a) == EffectKey(b);
}

std::vector<size_t> RankDistinct(const std::vector<Evaluation>& evals, Objective o,
                                 bool confirmed_only) {
  std::vector<size_t> out;
  std::map<decltype(EffectKey(evals.front())), size_t> seen;
  for (size_t i : Rank(evals, o)) {
    if (confirmed_only && !evals[i].confirmed) continue;
    if (seen.emplace(EffectKey(evals[i]), i).second) out.push_back(i);
  }
  return out;
}

std::string DescribeDifference(const Candidate& rep, const Candidate& other) {
  const par::ParallelConfig &a = rep.parallel, &b = other.parallel;
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (a.recompute != b.recompute) add("recompute " + par::RecomputeName(b.recompute));
  if (a.sequence_parallel != b.sequence_parallel) add(b.sequence_parallel ? "sp" : "no sp");
  if (a.zero_stage != b.zero_stage) add("zero " + std::to_string(b.zero_stage));
  if (a.shard_group != b.shard_group) add("shard " + std::to_string(b.shard_group));
  if (a.tp_comm_overlap != b.tp_comm_overlap) add("tp_comm_overlap");
  if (a.overlap_param_gather != b.overlap_param_gather) add("overlap_param_gather");
  if (a.overlap_p2p != b.overlap_p2p) add("overlap_p2p");
  return s.empty() ? DescribeLayout(other) : s;
}

// Sorted by (a, then BetterThan), a layout is on the front when it is strictly better on b than
// every layout before it.
std::vector<size_t> ParetoFront(const std::vector<Evaluation>& evals, bool confirmed_only,
                                Objective a, Objective b) {
  std::vector<size_t> front;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i : Rank(evals, a)) {
    if (confirmed_only && !evals[i].confirmed) continue;
    const double v = ObjectiveValue(evals[i], b);
    if (v < best) {
      front.push_back(i);
      best = v;
    }
  }
  return front;
}

}  // namespace trainsim::sweep

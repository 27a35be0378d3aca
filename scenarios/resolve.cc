// Resolve: a validated scenario joined with the catalogue, plus derived values; the parameter
// count; command-line fault specs.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "scenarios/internal.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

namespace trainsim::scenarios {

int64_t ParameterCount(const pb::Model& m) {
  // One count for the whole program: the one the memory and FLOP models use.
  parallelism::ModelSpec spec = MakeModelSpec(m);
  spec.heads = std::max(1, spec.heads);  // validation reports heads <= 0; count as if 1
  return parallelism::ParameterCount(spec);
}

std::string FormatCount(double count) {
  static const struct {
    double scale;
    const char* suffix;
  } kUnits[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  char buf[64];
  for (const auto& u : kUnits) {
    if (std::fabs(count) >= u.scale) {
      std::snprintf(buf, sizeof buf, "%.1f %s", count / u.scale, u.suffix);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.0f", count);
  return buf;
}

Result<pb::Fault> ParseFaultSpec(std::string_view spec) {
  return ParseFaultSpec(spec,
                        "expected KIND:ID@TIME[+DURATION], e.g. gpu:37@16h, node:3@2d, "
                        "link:5x0.5@2h+30m (degrade), gpu:5x1.3@1h+4h (straggler), software@3h");
}

Result<pb::Fault> ParseFaultSpec(std::string_view spec, const std::string& expected) {
  const std::string text(spec);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("fault \"" + text + "\": " + why + "; " + expected);
  };
  size_t at_pos = text.find('@');
  if (at_pos == std::string::npos) return bad("no '@TIME'");
  std::string head = text.substr(0, at_pos);
  std::string tail = text.substr(at_pos + 1);
  std::string kind_text = head, id_text;
  size_t colon = head.find(':');
  if (colon != std::string::npos) {
    kind_text = head.substr(0, colon);
    id_text = head.substr(colon + 1);
  }
  for (char& c : kind_text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  pb::Fault::Kind kind;
  if (!pb::Fault::Kind_Parse(kind_text, &kind) || kind == pb::Fault::KIND_UNSPECIFIED) {
    return bad("unknown kind \"" + kind_text +
               "\" (valid: gpu, node, nic, link, straggler, hang, software, sdc)");
  }
  pb::Fault fault;
  std::string factor_text;
  size_t x = id_text.find('x');
  if (x != std::string::npos) {
    factor_text = id_text.substr(x + 1);
    id_text = id_text.substr(0, x);
  }
  if (kind == pb::Fault::SOFTWARE) {
    if (!id_text.empty()) return bad("a software fault has no id");
  } else {
    char* end = nullptr;
    errno = 0;
    long long id = id_text.empty() ? -1 : std::strtoll(id_text.c_str(), &end, 10);
    if (id_text.empty() || errno != 0 || end != id_text.c_str() + id_text.size() || id < 0 ||
        id > 2147483647LL) {
      return bad("\"" + id_text + "\" is not an id (a whole number >= 0)");
    }
    fault.set_id(static_cast<int32_t>(id));
  }
  if (!factor_text.empty()) {
    char* end = nullptr;
    double factor = std::strtod(factor_text.c_str(), &end);
    if (end != factor_text.c_str() + factor_text.size() || !std::isfinite(factor)) {
      return bad("\"" + factor_text + "\" is not a number");
    }
    if (kind == pb::Fault::GPU || kind == pb::Fault::STRAGGLER) {
      kind = pb::Fault::STRAGGLER;
      fault.set_slowdown(factor);
    } else if (kind == pb::Fault::LINK) {
      fault.set_degrade(factor);
    } else {
      return bad("'x' factors apply to gpu/straggler (slowdown) and link (degrade) only");
    }
  }
  fault.set_kind(kind);
  size_t plus = tail.find('+');
  std::string at = tail.substr(0, plus);
  if (plus != std::string::npos) {
    if (plus + 1 == tail.size()) return bad("nothing after '+': give a duration, e.g. +4h");
    fault.set_duration(tail.substr(plus + 1));
  }
  auto t = sim::ParseDuration(at);
  if (!t.ok()) return bad(t.status().message());
  fault.set_at(at);
  if (!fault.duration().empty()) {
    auto d = sim::ParseDuration(fault.duration());
    if (!d.ok()) return bad(d.status().message());
  }
  if (kind == pb::Fault::STRAGGLER && !fault.has_slowdown()) fault.set_slowdown(2.0);
  if (kind == pb::Fault::LINK && !fault.has_degrade()) fault.set_degrade(1.0);
  return fault;
}

Status ValidateFault(const pb::Fault& fault, const ResolvedScenario& r, const std::string& where) {
  // No end-of-training check: an added fault after the end has no effect (whatif says so).
  if (auto e = detail::CheckFault(fault, r.nodes, r.gpus_per_node, r.nics_per_node, std::nullopt)) {
    return Status::InvalidArgument(where + ": " + e->first + ": " + e->second);
  }
  return Status::Ok();
}

Result<ResolvedScenario> Resolve(const pb::Scenario& input) {
  ResolvedScenario r;
  r.scenario = input;
  pb::Scenario& s = r.scenario;
  TRAINSIM_RETURN_IF_ERROR(FillDefaults(&s));
  TRAINSIM_RETURN_IF_ERROR(ValidateScenario(s));
  r.gpu = *FindGpu(s.cluster().gpu());
  r.nic = *FindNic(s.cluster().nic());
  r.node = *FindNode(s.cluster().node_type());
  r.nodes = s.cluster().nodes();
  r.gpus_per_node = s.cluster().gpus_per_node();
  r.num_gpus = r.nodes * r.gpus_per_node;
  r.spare_nodes = s.cluster().spare_nodes();
  r.nics_per_node = s.cluster().nics_per_node();
  r.topology_levels = s.cluster().topology().levels();
  r.tp = s.parallelism().tp();
  r.cp = s.parallelism().cp();
  r.pp = s.parallelism().pp();
  r.dp = s.parallelism().dp();
  r.virtual_stages = s.parallelism().virtual_stages();
  r.peak_tflops = PeakTflops(r.gpu, s.model().precision());

  r.params = ParameterCount(s.model());
  r.active_params = parallelism::ActiveParameterCount(MakeModelSpec(s.model()));
  r.tokens_per_step = static_cast<int64_t>(s.parallelism().global_batch()) * s.model().seq_len();
  r.micro_batches_per_step =
      s.parallelism().global_batch() / (static_cast<int64_t>(s.parallelism().micro_batch()) * r.dp);
  switch (s.training().goal_case()) {
    case pb::Training::kTokens:
      r.total_steps = (s.training().tokens() + r.tokens_per_step - 1) / r.tokens_per_step;
      r.total_tokens = *r.total_steps * r.tokens_per_step;
      break;
    case pb::Training::kSteps:
      r.total_steps = s.training().steps();
      if (*r.total_steps <= INT64_MAX / r.tokens_per_step) {
        r.total_tokens = *r.total_steps * r.tokens_per_step;
      }
      break;
    case pb::Training::kDuration:
      r.training_duration = *sim::ParseDuration(s.training().duration());
      break;
    case pb::Training::GOAL_NOT_SET:
      break;
  }
  r.checkpoint_interval = *checkpoint::ParseCheckpointInterval(s.checkpoint().interval());
  r.checkpoint_bytes = static_cast<double>(r.params) * s.checkpoint().bytes_per_param();

  const pb::Recovery& rc = s.recovery();
  // The legacy uniform detection delay (0 when unset: per-mechanism delays apply).
  r.detection_delay =
      rc.detection_delay().empty() ? sim::Time() : *sim::ParseDuration(rc.detection_delay());
  r.requeue = *sim::ParseDuration(rc.requeue());
  r.process_start = *sim::ParseDuration(rc.process_start());
  r.repair_time = *sim::ParseDuration(rc.repair_time());
  sim::Time base = *sim::ParseDuration(rc.comm_init_base());
  sim::Time per_1k = *sim::ParseDuration(rc.comm_init_per_1k_gpus());
  auto scaled = sim::Time::FromSecondsChecked(per_1k.seconds() * r.num_gpus / 1000.0);
  auto total = scaled ? sim::Time::CheckedAdd(base, *scaled) : std::nullopt;
  if (!total) {
    return Status::OutOfRange("recovery.comm_init_per_1k_gpus: communicator init time for " +
                              std::to_string(r.num_gpus) + " GPUs overflows");
  }
  r.comm_init = *total;

  for (const pb::Fault& f : s.faults()) {
    ResolvedFault rf;
    rf.fault = f;
    rf.at = *sim::ParseDuration(f.at());
    if (!f.duration().empty()) rf.duration = *sim::ParseDuration(f.duration());
    r.faults.push_back(std::move(rf));
  }
  std::stable_sort(r.faults.begin(), r.faults.end(),
                   [](const ResolvedFault& a, const ResolvedFault& b) {
                     return std::make_tuple(a.at, static_cast<int>(a.fault.kind()), a.fault.id()) <
                            std::make_tuple(b.at, static_cast<int>(b.fault.kind()), b.fault.id());
                   });
  return r;
}

}  // namespace trainsim::scenarios

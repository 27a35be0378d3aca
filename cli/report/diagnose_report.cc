#include "cli/report/diagnose_report.h"

#include <sstream>

#include "cli/report/format.h"

namespace trainsim::cli::report {
namespace {

double Ratio(double measured, double predicted) {
  return predicted > 0 ? measured / predicted : 0.0;
}

nlohmann::json ProfileJson(const Diagnosis& d) {
  const profile::Profile& p = *d.profile;
  nlohmann::json j;
  j["path"] = p.path;
  j["device"] = p.gpu ? "gpu" : "cpu";
  nlohmann::json steps = nlohmann::json::array();
  for (const profile::ProfileStep& s : p.steps) {
    nlohmann::json g;
    for (int k = 0; k < profile::kNumGroups; ++k) {
      g[profile::GroupName(profile::KernelGroup(k))] = s.group_us[k] * 1e-6;
    }
    g["idle"] = s.idle_us() * 1e-6;
    steps.push_back({{"step", s.number},
                     {"duration_s", s.duration_us * 1e-6},
                     {"events", s.events},
                     {"busy_s", s.busy_us * 1e-6},
                     {"groups_s", g}});
  }
  j["steps"] = steps;
  j["mean_step_s"] = p.mean_step_us() * 1e-6;
  j["idle_share"] = p.idle_share();
  nlohmann::json groups;
  for (const GroupComparison& g : d.groups) {
    groups[g.name] = {{"measured_s", g.measured_s},
                      {"predicted_s", g.predicted_s},
                      {"ratio", Ratio(g.measured_s, g.predicted_s)}};
  }
  j["groups"] = groups;
  j["findings"] = d.findings;
  return j;
}

}  // namespace

double Diagnosis::unexplained_share() const {
  if (!measured_step_s || *measured_step_s <= 0) return 0;
  return 1 - step_time_s / *measured_step_s;
}

nlohmann::json DiagnosisJson(const Diagnosis& d) {
  nlohmann::json j;
  j["scenario"] = d.scenario;
  j["step_time_s"] = d.step_time_s;
  j["mfu"] = d.mfu;
  if (!d.fidelity.empty()) j["fidelity"] = d.fidelity;
  nlohmann::json causes = nlohmann::json::array();
  for (const DiagnoseCause& c : d.causes) {
    causes.push_back(
        {{"name", c.name}, {"share_of_step", c.share_of_step}, {"evidence", c.evidence}});
  }
  j["causes"] = causes;
  nlohmann::json proposals = nlohmann::json::array();
  for (const DiagnoseProposal& p : d.proposals) {
    proposals.push_back({{"change", p.change},
                         {"sets", p.sets},
                         {"predicted_step_s", p.predicted_step_s},
                         {"predicted_mfu", p.predicted_mfu}});
  }
  j["proposals"] = proposals;
  j["notes"] = d.notes;
  if (d.measured_step_s) {
    j["measured"] = {{"step_time_s", *d.measured_step_s},
                     {"mfu", d.measured_mfu.value_or(d.mfu * d.step_time_s / *d.measured_step_s)},
                     {"unexplained_share", d.unexplained_share()}};
  }
  if (d.profile) j["profile"] = ProfileJson(d);
  return j;
}

std::string FormatDiagnosis(const Diagnosis& d) {
  std::ostringstream out;
  out << "trainsim diagnose: " << d.scenario << "\n";
  out << Line("step", Seconds(d.step_time_s));
  out << Line("MFU", Fmt("%.1f%%", 100 * d.mfu));
  if (!d.fidelity.empty()) out << Line("fidelity", d.fidelity);
  if (d.measured_step_s) {
    out << Line("measured step", Seconds(*d.measured_step_s));
    const double u = d.unexplained_share();
    out << Line(
        "unexplained",
        u >= 0 ? Fmt("%.1f%%", 100 * u) + " of the measured step: the model does not account for it"
               : "none: the measured step is " +
                     Fmt("%.1f%%", 100 * (1 - *d.measured_step_s / d.step_time_s)) +
                     " shorter than the model's");
  }
  out << "\ncauses, in the order to check them (share of the step)\n";
  for (size_t i = 0; i < d.causes.size(); ++i) {
    const DiagnoseCause& c = d.causes[i];
    out << "  " << Pad(std::to_string(i + 1) + ". " + c.name, 30)
        << Fmt("%5.1f%%", 100 * c.share_of_step) << "  " << c.evidence << "\n";
  }
  if (!d.proposals.empty()) {
    out << "\nproposals, re-simulated (step, MFU)\n";
    for (const DiagnoseProposal& p : d.proposals) {
      out << "  " << Pad(p.change, 58) << AlignRight(Seconds(p.predicted_step_s), 10)
          << Fmt("  %5.1f%%", 100 * p.predicted_mfu) << "\n";
      std::string sets;
      for (const std::string& s : p.sets) sets += " --set " + s;
      out << "      " << sets.substr(1) << "\n";
    }
  }
  for (const std::string& n : d.notes) out << Line("note", n);
  if (d.profile) {
    const profile::Profile& p = *d.profile;
    out << "\nprofile " << p.path << " (" << (p.gpu ? "GPU kernels" : "CPU operators") << ", "
        << p.steps.size() << " steps, mean " << Seconds(p.mean_step_us() * 1e-6) << ")\n";
    out << "  " << Pad("group", 12) << AlignRight("measured", 12) << AlignRight("model", 12)
        << AlignRight("ratio", 8) << "\n";
    for (const GroupComparison& g : d.groups) {
      out << "  " << Pad(g.name, 12) << AlignRight(Seconds(g.measured_s), 12)
          << AlignRight(Seconds(g.predicted_s), 12)
          << AlignRight(g.predicted_s > 0 ? Fmt("%.2fx", Ratio(g.measured_s, g.predicted_s)) : "-",
                        8)
          << "\n";
    }
    for (const std::string& f : d.findings) out << Line("finding", f);
  }
  return out.str();
}

std::string FormatOpsTable(const std::string& title,
                           const std::vector<parallelism::OpRoofline>& rows) {
  std::ostringstream out;
  out << "\n" << title << "\n";
  out << "  " << Pad("op", 22) << Pad("pass", 5) << AlignRight("GFLOP", 10) << AlignRight("MB", 10)
      << AlignRight("FLOP/B", 9) << AlignRight("ridge", 7) << "  " << Pad("bound", 8)
      << AlignRight("time", 11) << AlignRight("of bound", 9) << "\n";
  for (const parallelism::OpRoofline& r : rows) {
    out << "  " << Pad(r.name, 22) << Pad(r.forward ? "fwd" : "bwd", 5)
        << AlignRight(Fmt("%.3f", r.flops / 1e9), 10) << AlignRight(Fmt("%.2f", r.bytes / 1e6), 10)
        << AlignRight(Fmt("%.1f", r.intensity), 9) << AlignRight(Fmt("%.0f", r.ridge), 7) << "  "
        << Pad(r.compute_bound ? "compute" : "memory", 8) << AlignRight(Seconds(r.time_s), 11)
        << AlignRight(Fmt("%.0f%%", 100 * r.achieved_fraction), 9) << "\n";
  }
  return out.str();
}

nlohmann::json OpsJson(const std::vector<parallelism::OpRoofline>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const parallelism::OpRoofline& r : rows) {
    a.push_back({{"op", r.name},
                 {"pass", r.forward ? "forward" : "backward"},
                 {"flops", r.flops},
                 {"bytes", r.bytes},
                 {"arithmetic_intensity", r.intensity},
                 {"ridge_point", r.ridge},
                 {"bound", r.compute_bound ? "compute" : "memory"},
                 {"time_s", r.time_s},
                 {"bound_time_s", r.bound_s},
                 {"achieved_fraction", r.achieved_fraction}});
  }
  return a;
}

}  // namespace trainsim::cli::report

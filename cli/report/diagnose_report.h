// cli/report/diagnose_report.h — `trainsim diagnose`'s report (why a job reaches the MFU it
// does: causes in the order an expert checks them, re-simulated proposals, the unexplained
// share of a measured step, a measured profile against the model) and `trainsim run --ops`'s
// roofline table.
//
// JSON keys (docs/diagnose.md): scenario, step_time_s, mfu, causes[] {name, share_of_step,
// evidence}, proposals[] {change, sets, predicted_step_s, predicted_mfu}, and with a measured
// figure measured {step_time_s, mfu, unexplained_share}; with --profile, profile {path, device,
// steps[], mean_step_s, groups{gemm,attention,nccl,other,idle}{measured_s, predicted_s,
// ratio}, idle_share, findings[]}.
//
// Promises: deterministic; causes keep the order they were checked in; shares are fractions
// of the simulated step.
#ifndef TRAINSIM_CLI_REPORT_DIAGNOSE_REPORT_H_
#define TRAINSIM_CLI_REPORT_DIAGNOSE_REPORT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "parallelism/roofline.h"
#include "profile/kineto_profile.h"

namespace trainsim::cli::report {

struct DiagnoseCause {
  std::string name;
  double share_of_step = 0;
  std::string evidence;
};

struct DiagnoseProposal {
  std::string change;             // what to change, in words
  std::vector<std::string> sets;  // the --set overrides that make it
  double predicted_step_s = 0;
  double predicted_mfu = 0;
};

// One kernel group of a measured profile against the model (seconds per step).
struct GroupComparison {
  std::string name;  // gemm, attention, nccl, other, idle
  double measured_s = 0;
  double predicted_s = 0;
};

struct Diagnosis {
  std::string scenario;
  double step_time_s = 0;
  double mfu = 0;
  std::string fidelity;                     // the validation's warning for this model, or ""
  std::vector<DiagnoseCause> causes;        // in the order checked
  std::vector<DiagnoseProposal> proposals;  // the last: all of them together (when > 1)
  std::vector<std::string> notes;           // proposals that could not be simulated, and why
  std::optional<double> measured_step_s;    // given, or from a measured MFU
  std::optional<double> measured_mfu;
  std::optional<profile::Profile> profile;
  std::vector<GroupComparison> groups;
  std::vector<std::string> findings;
  // The share of a measured step the model does not explain: 1 − predicted / measured.
  double unexplained_share() const;
};

std::string FormatDiagnosis(const Diagnosis& d);
nlohmann::json DiagnosisJson(const Diagnosis& d);

// `run --ops`: one row per op and direction of one transformer layer (`title` names it).
std::string FormatOpsTable(const std::string& title,
                           const std::vector<parallelism::OpRoofline>& rows);
nlohmann::json OpsJson(const std::vector<parallelism::OpRoofline>& rows);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_DIAGNOSE_REPORT_H_

// cli/report/step_report.h — `trainsim run`'s step report: the human text (throughput, MFU,
// memory per GPU, where one GPU's step goes) and the JSON document {scenario, layout, step,
// [step_with_faults], [fidelity]}.
//
// Promises: the breakdown rows add up to the step time; `faulted` (the step with the
// scenario's stragglers and link faults active) is shown beside the healthy one when present.
#ifndef TRAINSIM_CLI_REPORT_STEP_REPORT_H_
#define TRAINSIM_CLI_REPORT_STEP_REPORT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "scenarios/scenario.h"
#include "step/step_simulation.h"

namespace trainsim::cli::report {

std::string FormatStepReport(const scenarios::ResolvedScenario& resolved,
                             const step::StepConfig& config, const step::StepResult& result,
                             const std::optional<step::StepResult>& faulted);
// The validation's warning for a model of the kind whose every published run trainsim predicts
// on the same side (fine-grained MoE: too fast), or "" (docs/validation.md). `run` and
// `diagnose` print it as a `fidelity` line, `sweep` with its context, `run --html` as a note.
std::string FidelityNote(const parallelism::ModelSpec& model);
nlohmann::json StepJsonDocument(const scenarios::ResolvedScenario& resolved,
                                const step::StepConfig& config, const step::StepResult& result,
                                const std::optional<step::StepResult>& faulted);

}  // namespace trainsim::cli::report

#endif  // TRAINSIM_CLI_REPORT_STEP_REPORT_H_

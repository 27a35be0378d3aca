#include "cli/report/step_report.h"

#include <sstream>
#include <string>

#include "cli/report/format.h"
#include "parallelism/layout.h"

namespace trainsim::cli::report {
namespace {

namespace par = trainsim::parallelism;
namespace pb = trainsim::pb;

nlohmann::json MemoryJson(const par::MemoryReport& m) {
  nlohmann::json j;
  const par::MemoryBreakdown& w = m.per_stage[size_t(m.peak_stage)];
  j["peak_bytes_per_gpu"] = m.peak_bytes;
  j["capacity_bytes"] = m.capacity_bytes;
  j["headroom_bytes"] = m.headroom_bytes;
  j["fits"] = m.fits;
  j["peak_stage"] = m.peak_stage;
  j["by_category_bytes"] = {{"weights", w.weights},
                            {"gradients", w.gradients},
                            {"optimizer", w.optimizer},
                            {"activations", w.activations},
                            {"optimizer_step_grads", w.step_grads},
                            {"fsdp_gathered", w.gathered},
                            {"overhead", w.overhead}};
  if (w.host_activations > 0) j["host_offloaded_activation_bytes"] = w.host_activations;
  if (!m.fits) {
    j["reason"] = m.reason;
    j["would_fit"] = m.suggestions;
  }
  return j;
}

nlohmann::json BreakdownJson(const step::StepBreakdown& b) {
  return {{"compute", b.compute_s},
          {"exposed_tp_comm", b.exposed_tp_comm_s},
          {"exposed_cp_comm", b.exposed_cp_comm_s},
          {"exposed_ep_comm", b.exposed_ep_comm_s},
          {"exposed_dp_comm", b.exposed_dp_comm_s},
          {"pp_wait", b.pp_wait_s},
          {"bubble", b.bubble_s},
          {"optimizer", b.optimizer_s},
          {"other", b.other_s},
          {"input_stall", b.input_stall_s},
          {"host_overhead", b.host_overhead_s},
          {"compute_slowed_by_comm", b.compute_slowed_s},
          {"offload_wait", b.offload_wait_s}};
}

nlohmann::json StepJson(const step::StepResult& r) {
  nlohmann::json j;
  j["time_s"] = r.time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["memory"] = MemoryJson(r.memory);
  j["breakdown_gpu"] = r.report_gpu;
  j["breakdown_gpu_place"] = r.report_gpu_place;
  j["breakdown_s"] = BreakdownJson(r.breakdown);
  nlohmann::json stages = nlohmann::json::array();
  for (const step::StepBreakdown& b : r.stage_breakdown) stages.push_back(BreakdownJson(b));
  j["stage_breakdown_s"] = stages;
  j["simulation"] = {{"note", r.simulation_note},
                     {"simulated_replicas", r.simulated_replicas},
                     {"events", r.events},
                     {"flows", r.flows}};
  if (r.calibration.used) {
    const step::CalibrationUse& u = r.calibration;
    j["calibration"] = {{"file", u.file},
                        {"gpu", u.gpu},
                        {"sample", u.sample},
                        {"gemm_shapes", u.gemm_shapes},
                        {"gemm_shapes_calibrated", u.gemm_shapes_calibrated},
                        {"collectives_calibrated", u.collectives_calibrated},
                        {"collectives_modelled", u.collectives_modelled}};
  }
  return j;
}

// "calibrated" and "modelled" lines: what of the step came from the calibration file.
std::string CalibrationLines(const step::CalibrationUse& u) {
  if (!u.used) return "";
  std::string cal = "GEMM efficiency for " + std::to_string(u.gemm_shapes_calibrated) + "/" +
                    std::to_string(u.gemm_shapes) + " matrix-product shapes";
  for (const std::string& c : u.collectives_calibrated) cal.append(", TP ").append(c);
  cal.append(" (").append(u.file).append(u.sample ? ", SAMPLE: not measured)" : ")");
  std::string model = "DP/PP/ZeRO flows on the network";
  for (const std::string& c : u.collectives_modelled) model.append(", TP ").append(c);
  if (u.gemm_shapes_calibrated < u.gemm_shapes) {
    model.append(", ")
        .append(std::to_string(u.gemm_shapes - u.gemm_shapes_calibrated))
        .append(" GEMM shapes");
  }
  model.append(", attention and memory-bound kernels, optimizer");
  return Line("calibrated", cal) + Line("modelled", model);
}

std::string LayoutText(const step::StepConfig& c) {
  const par::ParallelConfig& p = c.parallel;
  std::string s = "TP " + std::to_string(p.tp) +
                  (p.cp > 1 ? " x CP " + std::to_string(p.cp) : std::string()) + " x PP " +
                  std::to_string(p.pp) + " x DP " + std::to_string(p.dp) + " = " +
                  std::to_string(p.num_gpus()) + " GPUs";
  if (p.ep > 1 || p.etp > 1) {
    s += ", EP " + std::to_string(p.ep) + " x ETP " + std::to_string(p.etp);
  }
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) s += ", uneven stages";
  s += ", " + par::ScheduleName(p.schedule);
  if (p.virtual_stages > 1) s += " (" + std::to_string(p.virtual_stages) + " chunks)";
  s += ", micro-batch " + std::to_string(p.micro_batch) + " x " +
       std::to_string(p.num_micro_batches()) + " per pipeline, global batch " +
       std::to_string(p.global_batch);
  s += ", recompute " + par::RecomputeName(p.recompute);
  if (p.recompute == par::Recompute::kSelective) {
    s += " (" + par::RecomputeModuleNames(p.recompute_modules) + ")";
  } else if (p.recompute == par::Recompute::kFull &&
             (p.recompute_block || p.recompute_num_layers > 1)) {
    s += std::string(p.recompute_block ? " (block, " : " (uniform, ") +
         std::to_string(p.recompute_num_layers) + " layers)";
  }
  if (p.cpu_offload_layers > 0) {
    s += ", " + std::to_string(p.cpu_offload_layers) + " layers' activations offloaded";
  }
  if (p.sequence_parallel) s += ", SP";
  if (p.zero_stage > 0) s += ", ZeRO-" + std::to_string(p.zero_stage);
  if (c.model.flash_attention) {
    switch (c.compute.attention_backend) {
      case par::AttentionBackend::kTransformerEngine:
        s += ", flash attention";
        break;
      case par::AttentionBackend::kFlashAttention:
        s += ", flash attention (flash-attn)";
        break;
      case par::AttentionBackend::kSdpa:
        s += ", flash attention (PyTorch SDPA: FA2)";
        break;
    }
  }
  if (c.model.eager_kernels) {
    s += c.model.eager_norm || !c.model.rmsnorm ? ", eager PyTorch kernels"
                                                : ", eager PyTorch kernels (fused RMSNorm)";
  }
  return s;
}

}  // namespace

// What validation says of this kind of model where every comparison leans one way, or "": each
// published run of a fine-grained MoE model (64 experts or more: Qwen3, GPT-OSS, Nemotron 3
// Nano, on H100 and Blackwell) took longer than trainsim predicts (docs/validation.md); an
// eight-expert Mixtral does not.
std::string FidelityNote(const parallelism::ModelSpec& m) {
  const int experts = m.moe.experts;
  if (experts < 64) return "";
  return "fine-grained MoE (" + std::to_string(experts) +
         " experts): every published run of such a model in trainsim's validation took longer "
         "than predicted; read its step times as optimistic (docs/validation.md)";
}

std::string FormatStepReport(const scenarios::ResolvedScenario& resolved,
                             const step::StepConfig& config, const step::StepResult& r,
                             const std::optional<step::StepResult>& faulted) {
  std::ostringstream out;
  const pb::Scenario& s = resolved.scenario;
  out << "trainsim run: " << Printable(s.name());
  if (!s.description().empty()) out << " - " << Printable(s.description());
  out << "\n";
  out << Line("model", Printable(s.model().name()) + " (" +
                           scenarios::FormatCount(double(resolved.params)) + " parameters)");
  out << Line("cluster", std::to_string(resolved.nodes) + " x " + resolved.node.name() + " (" +
                             std::to_string(resolved.num_gpus) + " x " + resolved.gpu.name() + ")");
  out << Line("layout", LayoutText(config));
  out << Line("simulated", r.simulation_note);
  if (const std::string note = FidelityNote(config.model); !note.empty())
    out << Line("fidelity", note);
  out << CalibrationLines(r.calibration);
  out << "\nstep\n";
  out << Line("time", Seconds(r.time_s));
  out << Line("tokens/s", Fmt("%.0f", r.tokens_per_s));
  out << Line("TFLOP/s per GPU",
              Fmt("%.1f", r.tflops_per_gpu) + " (hardware FLOPs, incl. recompute)");
  out << Line("MFU",
              Fmt("%.1f%%", 100 * r.mfu) + Fmt(" of %.0f TFLOP/s", config.gpu.peak_flops / 1e12));
  out << Line("HFU", Fmt("%.1f%%", 100 * r.hfu));

  const par::MemoryReport& m = r.memory;
  const par::MemoryBreakdown& w = m.per_stage[size_t(m.peak_stage)];
  out << "\nmemory per GPU (peak: pipeline stage " << m.peak_stage << ")\n";
  out << Line("weights", Gb(w.weights));
  out << Line("gradients", Gb(w.gradients));
  out << Line("optimizer", Gb(w.optimizer));
  out << Line("activations", Gb(w.activations) + (w.host_activations > 0
                                                      ? " on the GPU; " + Gb(w.host_activations) +
                                                            " offloaded to host memory"
                                                      : ""));
  if (w.gathered > 0) out << Line("FSDP gathered units", Gb(w.gathered));
  if (w.step_grads > 0) {
    out << Line("fp32 grad copies", Gb(w.step_grads) +
                                        " at the optimizer step, after activations are freed" +
                                        (w.step_grads > w.activations ? " (the peak)" : ""));
  }
  out << Line("framework", Gb(w.overhead));
  out << Line("total", Gb(m.peak_bytes) + " of " + Gb(m.capacity_bytes) + " = " +
                           Gibibytes(m.capacity_bytes) +
                           (m.headroom_bytes > 0 ? ", less " + Gb(m.headroom_bytes) + " of headroom"
                                                 : std::string()) +
                           (m.fits ? " (fits)" : " (DOES NOT FIT)"));
  if (!m.fits) {
    out << Line("why", m.reason);
    for (const std::string& fix : m.suggestions) out << Line("would fit", fix);
  }

  const step::StepBreakdown& b = r.breakdown;
  out << "\nwhere " << r.report_gpu_place << " spends the step\n";
  // In the unit of the step, so that a step under a millisecond does not print "0.000 s" rows.
  const double unit = r.time_s >= 1 ? 1 : r.time_s >= 1e-3 ? 1e-3 : 1e-6;
  const char* format = unit == 1 ? "%10.3f s" : unit == 1e-3 ? "%9.3f ms" : "%9.3f us";
  auto row = [&](const char* label, double v) {
    out << ShareRow(label, Fmt(format, v / unit), v, r.time_s, "  %5.1f%%");
  };
  row("compute", b.compute_s);
  if (b.compute_slowed_s > 0) row("comm-slowed compute", b.compute_slowed_s);
  row("exposed TP comm", b.exposed_tp_comm_s);
  if (b.exposed_cp_comm_s > 0) row("exposed CP comm", b.exposed_cp_comm_s);
  if (b.exposed_ep_comm_s > 0) row("exposed EP comm", b.exposed_ep_comm_s);
  row("exposed DP comm", b.exposed_dp_comm_s);
  row("pipeline wait", b.pp_wait_s);
  row("pipeline bubble", b.bubble_s);
  row("optimizer", b.optimizer_s);
  row("other", b.other_s);
  if (b.input_stall_s > 0) row("input stall", b.input_stall_s);
  if (b.host_overhead_s > 0) row("host overhead", b.host_overhead_s);
  if (b.offload_wait_s > 0) row("offload wait", b.offload_wait_s);
  row("total", b.total_s());

  if (faulted) {
    out << "\nwith the scenario's stragglers and link faults active\n";
    out << Line("time", Seconds(faulted->time_s) +
                            Fmt(" (%+.1f%%)", 100 * (faulted->time_s / r.time_s - 1)));
    out << Line("simulated", faulted->simulation_note);
    const step::StepBreakdown& fb = faulted->breakdown;
    out << Line("GPU " + std::to_string(faulted->report_gpu),
                "compute " + Seconds(fb.compute_s) + ", exposed DP comm " +
                    Seconds(fb.exposed_dp_comm_s) + ", bubble " + Seconds(fb.bubble_s) +
                    ", pipeline wait " + Seconds(fb.pp_wait_s));
  }
  return out.str();
}

nlohmann::json StepJsonDocument(const scenarios::ResolvedScenario& resolved,
                                const step::StepConfig& config, const step::StepResult& r,
                                const std::optional<step::StepResult>& faulted) {
  nlohmann::json j;
  j["scenario"] = resolved.scenario.name();
  j["layout"] = LayoutText(config);
  j["step"] = StepJson(r);
  if (faulted) j["step_with_faults"] = StepJson(*faulted);
  if (const std::string note = FidelityNote(config.model); !note.empty()) j["fidelity"] = note;
  return j;
}

}  // namespace trainsim::cli::report

#include "cli/report/check_report.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/report/format.h"
#include "parallelism/memory.h"
#include "scenarios/presets.h"
#include "scenarios/step_config.h"
#include "sim/time.h"

namespace trainsim::cli::report {

namespace {

namespace pb = trainsim::pb;
using scenarios::ResolvedScenario;

// 174615822336 -> "174,615,822,336".
std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string Bytes(double bytes) {
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000 && u < 5) {
    bytes /= 1000;
    ++u;
  }
  return Fmt("%.2f ", bytes) + kUnits[u];
}

std::string GiB(uint64_t bytes) { return Fmt("%.1f GiB", static_cast<double>(bytes) / (1 << 30)); }

// check's labels are shorter than the run report's: an 18-column label.
std::string CheckLine(const std::string& label, const std::string& value) {
  return Line(label, value, 18);
}

std::string OnOff(bool b) { return b ? "on" : "off"; }

// "1 node", "16 nodes"; `plural` for irregular nouns.
std::string Count(int64_t n, const std::string& noun, const std::string& plural = "") {
  return Thousands(n) + " " + (n == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

// Derived numbers shared by the table and the JSON.
struct Derived {
  double nodes_billed = 0;
  double usd_per_hour = 0;
  double failures_per_day = 0;  // expected, training nodes, stochastic model
  double mtbf_h = 0;            // 1 / (rate x nodes), hours; 0 when disabled
};

Derived Derive(const ResolvedScenario& r) {
  const pb::Scenario& s = r.scenario;
  Derived d;
  d.nodes_billed = r.nodes + (s.cost().bill_spares() ? r.spare_nodes : 0);
  d.usd_per_hour = d.nodes_billed * r.gpus_per_node * s.cost().usd_per_gpu_hour();
  if (s.failures().enabled() && s.failures().node_day_rate() > 0) {
    d.failures_per_day = s.failures().node_day_rate() * r.nodes;
    d.mtbf_h = 24.0 / d.failures_per_day;
  }
  return d;
}

// The active count as DeepSeek-V3 and GPT-OSS publish it: the input embedding (a lookup, V·h)
// left out.
int64_t ActiveWithoutInputEmbedding(const ResolvedScenario& r) {
  return r.active_params - int64_t(r.scenario.model().vocab()) * r.scenario.model().hidden();
}

// "TP 8 x CP 2 x PP 16 x DP 64 = 16384 GPUs, EP 8 x ETP 1, 8 layers per stage" (CP and EP
// only when used; uneven first/last stages named).
std::string LayoutText(const ResolvedScenario& r) {
  const pb::Parallelism& p = r.scenario.parallelism();
  const pb::Model& m = r.scenario.model();
  std::string out = "TP " + std::to_string(r.tp) +
                    (p.cp() > 1 ? " x CP " + std::to_string(p.cp()) : std::string()) + " x PP " +
                    std::to_string(r.pp) + " x DP " + std::to_string(r.dp) + " = " +
                    std::to_string(r.num_gpus) + " GPUs, ";
  if (m.has_moe()) {
    out += "EP " + std::to_string(p.ep()) + " x ETP " + std::to_string(p.etp()) + ", ";
  }
  const bool first = p.has_first_stage_layers(), last = p.has_last_stage_layers();
  const int other_stages = r.pp - (first ? 1 : 0) - (last ? 1 : 0);
  const int other_layers =
      m.layers() - (first ? p.first_stage_layers() : 0) - (last ? p.last_stage_layers() : 0);
  const int per_chunk = other_stages > 0 ? other_layers / (other_stages * r.virtual_stages) : 0;
  if (first) out += "first stage " + Count(p.first_stage_layers(), "layer") + ", ";
  if (last) out += "last stage " + Count(p.last_stage_layers(), "layer") + ", ";
  if (other_stages <= 0) return out.substr(0, out.size() - 2);
  return out + Count(per_chunk, "layer") + " per " +
         (r.virtual_stages > 1
              ? "model chunk (" + std::to_string(r.virtual_stages) + " chunks per pipeline rank)"
              : std::string(first || last ? "other stage" : "stage"));
}

std::string IntervalText(const ResolvedScenario& r) {
  switch (r.checkpoint_interval.kind) {
    case checkpoint::CheckpointInterval::Kind::kAuto:
      return "auto (Young/Daly optimum for this cluster's failure rate)";
    case checkpoint::CheckpointInterval::Kind::kSteps:
      return "every " + Thousands(r.checkpoint_interval.steps) + " steps";
    case checkpoint::CheckpointInterval::Kind::kTrainingTime:
      return "every " + sim::FormatDuration(r.checkpoint_interval.every);
    case checkpoint::CheckpointInterval::Kind::kNever:
      return "never";
  }
  return "";
}

std::string FaultText(const scenarios::ResolvedFault& f) {
  const pb::Fault& p = f.fault;
  std::string out = pb::Fault::Kind_Name(p.kind());
  if (p.has_id()) out.append(" ").append(std::to_string(p.id()));
  out.append(" at ").append(sim::FormatDuration(f.at));
  if (p.kind() == pb::Fault::STRAGGLER) out += Fmt(", %.3g x slower", p.slowdown());
  if (p.kind() == pb::Fault::LINK) out += Fmt(", %.0f%% of bandwidth lost", 100 * p.degrade());
  if (f.duration) out.append(" for ").append(sim::FormatDuration(*f.duration));
  return out;
}

// The memory model's estimate of the scenario's layout with the headroom
// (cluster.memory_headroom, --memory-headroom); none for a layout it does not estimate.
struct LayoutMemory {
  parallelism::MemoryReport report;
  double headroom_bytes = 0;
};
std::optional<LayoutMemory> EstimateLayoutMemory(const scenarios::ResolvedScenario& r) {
  Result<step::StepConfig> cfg = scenarios::MakeStepConfig(r);
  if (!cfg.ok() ||
      !parallelism::ValidateLayout(cfg->model, cfg->parallel, r.num_gpus, r.gpus_per_node).ok()) {
    return std::nullopt;
  }
  return LayoutMemory{parallelism::EstimateMemory(cfg->model, cfg->parallel, cfg->gpu.memory_bytes,
                                                  r.gpus_per_node, cfg->memory),
                      cfg->memory.headroom_bytes};
}

// The verdict `run` applies: it rejects a layout over the headroom unless --allow-oom.
std::string MemoryLines(const std::optional<LayoutMemory>& mem) {
  if (!mem) return "";
  const parallelism::MemoryReport& m = mem->report;
  return "Memory\n" +
         CheckLine("Peak", Fmt("%.1f GB per GPU", m.peak_bytes / 1e9) + " (pipeline stage " +
                               std::to_string(m.peak_stage) + ") of " +
                               Fmt("%.1f GB", m.capacity_bytes / 1e9) + ", headroom " +
                               Fmt("%.1f GB", mem->headroom_bytes / 1e9) + ": " +
                               (m.fits ? "fits" : "does not fit (" + m.reason + ")"));
}

// Energy at full load: board power x GPUs x PUE (the sweep scales the draw by utilisation).
std::string EnergyLine(const scenarios::ResolvedScenario& r) {
  const pb::Scenario& s = r.scenario;
  std::string out;
  const double kw = r.gpu.tdp_watts() * r.num_gpus * s.cost().pue() / 1e3;
  out += CheckLine("Energy",
                   Fmt("%.0f W", r.gpu.tdp_watts()) + " board power x " + Thousands(r.num_gpus) +
                       " GPUs x PUE " + Fmt("%.2f", s.cost().pue()) + " = " + Fmt("%.1f kW", kw) +
                       " at full load, " + Fmt("$%.2f", kw * s.cost().usd_per_kwh()) +
                       " per hour at " + Fmt("$%.3f", s.cost().usd_per_kwh()) + " per kWh");
  return out;
}

}  // namespace

namespace {

// A hybrid model's layer mix and a sliding window, when the model has them.
std::string ArchitectureLines(const pb::Model& m) {
  std::string lines;
  if (!m.hybrid_pattern().empty()) {
    // Megatron's letters: M Mamba-2, * attention, - MLP, E MoE (one per layer).
    int mamba = 0, attention = 0, mlp = 0, moe = 0;
    for (char ch : m.hybrid_pattern()) {
      mamba += ch == 'M';
      attention += ch == '*';
      mlp += ch == '-';
      moe += ch == 'E';
    }
    lines += CheckLine("Hybrid layers", std::to_string(mamba) + " Mamba-2, " +
                                            std::to_string(attention) + " attention, " +
                                            std::to_string(mlp) + " MLP, " + std::to_string(moe) +
                                            " MoE (" + m.hybrid_pattern() + ")");
  }
  if (m.sliding_window() > 0) {
    lines += CheckLine(
        "Attention", "sliding window of " + std::to_string(m.sliding_window()) + " tokens" +
                         (m.sliding_window_full_every() > 0
                              ? "; one layer in " + std::to_string(m.sliding_window_full_every()) +
                                    " keeps full attention"
                              : std::string(" on every layer")));
  }
  return lines;
}

// The recompute mode with what it re-runs: the selective modules, or full's method.
std::string RecomputeText(const pb::Parallelism& p) {
  std::string recompute = pb::Parallelism::Recompute_Name(p.recompute());
  if (p.recompute() == pb::Parallelism::SELECTIVE) {
    std::string modules;
    for (const std::string& name : p.recompute_modules())
      modules += (modules.empty() ? "" : ", ") + name;
    recompute += " (" + (modules.empty() ? std::string("core_attn, the default") : modules) + ")";
  } else if (p.recompute() == pb::Parallelism::FULL) {
    const int n = p.has_recompute_num_layers() ? p.recompute_num_layers() : 1;
    recompute += p.recompute_method() == pb::Parallelism::BLOCK
                     ? " (block: the first " + std::to_string(n) + " layers of each chunk)"
                     : " (uniform: groups of " + std::to_string(n) + " layers)";
  }
  return recompute;
}

// "Scenario NAME: valid" and the description. A file whose layout `run` refuses for memory is
// valid as a file, not as a run (CheckFit).
std::string Headline(const pb::Scenario& s, bool fits) {
  std::string out =
      "Scenario " + (s.name().empty() ? std::string("(unnamed)") : Printable(s.name())) +
      (fits ? ": valid\n" : ": valid file, but its layout does not fit in GPU memory\n");
  if (!s.description().empty()) out += "  " + Printable(s.description()) + "\n";
  return out;
}

}  // namespace

std::string FormatCheckReport(const ResolvedScenario& r, bool resolved_dump) {
  const pb::Scenario& s = r.scenario;
  const pb::Model& m = s.model();
  const pb::Parallelism& p = s.parallelism();
  const pb::Cluster& c = s.cluster();
  Derived d = Derive(r);
  const std::optional<LayoutMemory> memory = EstimateLayoutMemory(r);
  std::string out = Headline(s, !memory || memory->report.fits);

  out += "Cluster\n";
  out +=
      CheckLine("GPUs", std::to_string(r.num_gpus) + " x " + r.gpu.name() + " (" +
                            Count(r.nodes, "node") + " x " + std::to_string(r.gpus_per_node) +
                            ", " + r.node.name() + (r.node.nvswitch() ? ", NVSwitch" : "") + ")" +
                            (r.spare_nodes > 0 ? " + " + Count(r.spare_nodes, "spare node") : ""));
  out += CheckLine("GPU", Fmt("%.1f", r.peak_tflops) + " TFLOP/s dense " +
                              pb::Precision_Name(m.precision()) + ", " + GiB(r.gpu.hbm_bytes()) +
                              " HBM at " + Fmt("%.0f", r.gpu.hbm_gbyte_per_s()) + " GB/s, NVLink " +
                              Fmt("%.0f", r.gpu.nvlink_gbyte_per_s()) + " GB/s per direction");
  out += CheckLine("Network",
                   std::to_string(r.nics_per_node) + " x " + r.nic.name() + " per node (" +
                       Fmt("%.0f", r.nic.gbit_per_s()) + " Gb/s each), " +
                       std::to_string(r.topology_levels) + "-level fat tree" +
                       (c.topology().rail_optimized() ? ", rail-optimised" : "") +
                       ", oversubscription " + Fmt("%g", c.topology().oversubscription()) + ":1");
  out +=
      CheckLine("Storage", "read " + Fmt("%.1f", c.storage().read_gbyte_per_s()) + " GB/s, write " +
                               Fmt("%.1f", c.storage().write_gbyte_per_s()) + " GB/s");
  if (!c.calibration().empty()) out += CheckLine("Calibration", c.calibration());

  out += "Model\n";
  out += CheckLine(
      "Shape",
      (m.name().empty() ? std::string() : Printable(m.name()) + ": ") + std::to_string(m.layers()) +
          " layers, hidden " + std::to_string(m.hidden()) + ", " + std::to_string(m.heads()) +
          " heads" +
          (m.kv_heads() != m.heads() ? " (" + std::to_string(m.kv_heads()) + " KV groups)" : "") +
          ", ffn " + std::to_string(m.ffn_hidden()) + (m.swiglu() ? " SwiGLU" : " GELU") +
          ", seq " + std::to_string(m.seq_len()) + ", vocab " + std::to_string(m.vocab()));
  out += ArchitectureLines(m);
  out += CheckLine("Parameters", scenarios::FormatCount(static_cast<double>(r.params)) + " (" +
                                     Thousands(r.params) + ")");
  if (m.has_moe()) {
    out += CheckLine(
        "Active params",
        scenarios::FormatCount(static_cast<double>(r.active_params)) + " (" +
            Thousands(r.active_params) + ") per token: " + std::to_string(m.moe().top_k()) +
            " of " + std::to_string(m.moe().experts()) + " routed experts; " +
            scenarios::FormatCount(static_cast<double>(ActiveWithoutInputEmbedding(r))) +
            " without the input embedding");
  }
  if (!m.preset().empty()) out += CheckLine("Preset", m.preset() + " (trainsim check --presets)");

  out += "Parallelism\n";
  out += CheckLine("Layout", LayoutText(r));
  out += CheckLine("Batch", "global " + Thousands(p.global_batch()) + " sequences = " +
                                Thousands(r.tokens_per_step) + " tokens per step, micro-batch " +
                                std::to_string(p.micro_batch()) + ", " +
                                Count(r.micro_batches_per_step, "micro-batch", "micro-batches") +
                                " per pipeline per step");
  std::string schedule =
      p.schedule() == pb::Parallelism::GPIPE ? "GPipe"
      : r.virtual_stages > 1
          ? "interleaved 1F1B (" + std::to_string(r.virtual_stages) + " chunks per rank)"
          : "1F1B";
  const std::string recompute = RecomputeText(p);
  out += CheckLine("Schedule", schedule + ", recompute " + recompute + ", sequence parallel " +
                                   OnOff(p.sequence_parallel()) + ", ZeRO-" +
                                   std::to_string(p.zero_stage()));

  out += "Training\n";
  if (r.total_steps) {
    out += CheckLine("Steps", Thousands(*r.total_steps));
    if (r.total_tokens) {
      out += CheckLine("Tokens", scenarios::FormatCount(static_cast<double>(*r.total_tokens)) +
                                     " (" + Thousands(*r.total_tokens) + ")");
    }
  } else if (r.training_duration) {
    out += CheckLine("Duration", sim::FormatDuration(*r.training_duration) +
                                     " of wall clock (steps follow from the simulated step time)");
  }

  const pb::Checkpoint& ck = s.checkpoint();
  out += "Checkpoints\n";
  if (!ck.enabled()) {
    out += CheckLine("Policy", "off");
  } else {
    out += CheckLine("Policy",
                     pb::Checkpoint::Policy_Name(ck.policy()) + ", " + IntervalText(r) +
                         (ck.policy() == pb::Checkpoint::IN_MEMORY
                              ? ", persisted every " + std::to_string(ck.persistent_every()) + "th"
                              : ""));
    out += CheckLine("Size", Bytes(r.checkpoint_bytes) + " (" + Fmt("%g", ck.bytes_per_param()) +
                                 " bytes per parameter)");
  }

  const pb::Recovery& rc = s.recovery();
  out += "Recovery\n";
  out += CheckLine("Policy", pb::Recovery::Policy_Name(rc.policy()));
  out += CheckLine("Detection",
                   rc.detection_delay().empty()
                       ? std::string("per fault kind: process exit, NCCL error, heartbeat, "
                                     "collective timeout or loss check (docs/faults.md)")
                       : pb::Recovery::Detection_Name(rc.detection()) + " after " +
                             sim::FormatDuration(r.detection_delay) + " for every fault");
  out += CheckLine("Restart", "requeue " + sim::FormatDuration(r.requeue) + " + process start " +
                                  sim::FormatDuration(r.process_start) + " + communicator init " +
                                  sim::FormatDuration(r.comm_init) + " + checkpoint load");
  out += CheckLine("Repair", sim::FormatDuration(r.repair_time));

  const pb::Failures& f = s.failures();
  out += "Failures\n";
  if (!f.enabled()) {
    out += CheckLine("Stochastic", "off");
  } else {
    out += CheckLine(
        "Stochastic",
        Fmt("%.5g", f.node_day_rate()) + " per node-day, " +
            pb::Failures::Distribution_Name(f.distribution()) +
            (f.distribution() == pb::Failures::WEIBULL ? Fmt(" (shape %g)", f.weibull_shape())
                                                       : "") +
            ": " + Fmt("%.3g", d.failures_per_day) + " expected per day on " +
            Count(r.nodes, "node") + ", MTBF " + Duration(d.mtbf_h * 3600.0));
    for (const pb::FailureCause& cause : f.causes()) {
      std::string kind = pb::Fault::Kind_Name(cause.kind());
      kind.resize(std::max<size_t>(kind.size(), 9), ' ');
      out += CheckLine(
          "", Fmt("%5.1f%%  ", 100 * cause.fraction()) + kind + " " + Printable(cause.name()));
    }
  }
  out += CheckLine("Scheduled", r.faults.empty() ? "none" : std::to_string(r.faults.size()));
  for (const auto& fault : r.faults) out += CheckLine("", FaultText(fault));

  out += MemoryLines(memory);
  out += "Cost\n";
  out += CheckLine("Price", Fmt("$%.2f", s.cost().usd_per_gpu_hour()) + " per GPU-hour x " +
                                Thousands(static_cast<int64_t>(d.nodes_billed) * r.gpus_per_node) +
                                " GPUs billed = " + Fmt("$%.2f", d.usd_per_hour) + " per hour");
  out += EnergyLine(r);
  if (!resolved_dump) return out;
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(s, &text);
  out += "\nResolved scenario (text format, defaults filled in):\n" + text;
  return out;
}

std::string FormatCheckJson(const ResolvedScenario& r) {
  std::string scenario_json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(r.scenario, &scenario_json, options);
  Derived d = Derive(r);
  nlohmann::ordered_json j;
  j["scenario"] = nlohmann::ordered_json::parse(scenario_json);
  auto& o = j["derived"];
  o["num_gpus"] = r.num_gpus;
  o["nodes"] = r.nodes;
  o["spare_nodes"] = r.spare_nodes;
  o["gpus_per_node"] = r.gpus_per_node;
  o["topology_levels"] = r.topology_levels;
  o["peak_tflops_per_gpu"] = r.peak_tflops;
  o["params"] = r.params;
  o["active_params"] = r.active_params;
  o["active_params_without_input_embedding"] = ActiveWithoutInputEmbedding(r);
  o["tokens_per_step"] = r.tokens_per_step;
  o["micro_batches_per_step"] = r.micro_batches_per_step;
  o["total_steps"] = r.total_steps ? nlohmann::ordered_json(*r.total_steps) : nullptr;
  o["total_tokens"] = r.total_tokens ? nlohmann::ordered_json(*r.total_tokens) : nullptr;
  o["training_duration_s"] =
      r.training_duration ? nlohmann::ordered_json(r.training_duration->seconds()) : nullptr;
  o["checkpoint_bytes"] = r.checkpoint_bytes;
  o["detection_delay_s"] = r.detection_delay.seconds();
  o["comm_init_s"] = r.comm_init.seconds();
  o["expected_failures_per_day"] = d.failures_per_day;
  o["usd_per_hour"] = d.usd_per_hour;
  o["gpu"] = r.gpu.name();
  o["nic"] = r.nic.name();
  o["node_type"] = r.node.name();
  // The memory verdict `run` applies (the CLI's check exits 2 on it; the Python check()
  // returns it here): null for a layout the memory model does not estimate.
  const Status fit = CheckFit(r);
  o["fits_in_memory"] = fit.ok();
  o["memory_message"] =
      fit.ok() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(fit.message());
  return j.dump(2) + "\n";
}

namespace {

// One preset's shape and counts, from its model with the scenario defaults filled in.
struct PresetRow {
  const scenarios::ModelPreset* preset;
  pb::Model model;
  int64_t params = 0, active = 0;
};

std::vector<PresetRow> PresetRows() {
  std::vector<PresetRow> rows;
  for (const scenarios::ModelPreset& p : scenarios::ModelPresets()) {
    pb::Scenario s;
    *s.mutable_model() = p.model;
    (void)scenarios::FillDefaults(&s);  // catalogue defaults only: cannot fail
    PresetRow row{&p, s.model()};
    const parallelism::ModelSpec spec = scenarios::MakeModelSpec(row.model);
    row.params = parallelism::ParameterCount(spec);
    row.active = parallelism::ActiveParameterCount(spec);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string Billions(int64_t n) { return Fmt("%.2f", static_cast<double>(n) / 1e9); }

}  // namespace

std::string FormatPresetList(bool json) {
  const std::vector<PresetRow> rows = PresetRows();
  if (json) {
    nlohmann::ordered_json j;
    j["presets"] = nlohmann::ordered_json::array();
    for (const PresetRow& r : rows) {
      const pb::Model& m = r.model;
      nlohmann::ordered_json o;
      o["name"] = r.preset->name;
      o["label"] = m.name();
      o["layers"] = m.layers();
      o["hidden"] = m.hidden();
      o["heads"] = m.heads();
      o["kv_heads"] = m.kv_heads();
      o["ffn_hidden"] = m.ffn_hidden();
      o["experts"] = m.has_moe() ? m.moe().experts() : 0;
      o["top_k"] = m.has_moe() ? m.moe().top_k() : 0;
      o["vocab"] = m.vocab();
      o["seq_len"] = m.seq_len();
      o["params"] = r.params;
      o["active_params"] = r.active;
      o["published_params_b"] = r.preset->published_total_b;
      o["published_active_params_b"] = r.preset->published_active_b;
      o["published_active_excludes_input_embedding"] =
          r.preset->published_active_excludes_input_embedding;
      o["source"] = r.preset->source;
      j["presets"].push_back(o);
    }
    return j.dump(2) + "\n";
  }
  std::string out =
      "Model presets (model { preset: \"NAME\" }; fields set in the scenario override the "
      "preset's)\n";
  // Columns: name, layers, hidden, heads/kv, ffn, experts, vocab, params B, active B, published.
  // The name column fits the longest name (and a space) so the columns stay aligned.
  size_t name_width = 16;
  for (const PresetRow& r : rows) name_width = std::max(name_width, r.preset->name.size() + 1);
  const size_t widths[] = {name_width, 7, 7, 10, 7, 9, 8, 10, 10, 14};
  auto row = [&](const std::vector<std::string>& cells) {
    std::string line = "  " + Pad(cells[0], widths[0]);
    for (size_t i = 1; i < cells.size(); ++i) line += AlignRight(cells[i], widths[i]);
    return line + "\n";
  };
  out += row({"name", "layers", "hidden", "heads/kv", "ffn", "experts", "vocab", "params B",
              "active B", "published B"});
  for (const PresetRow& r : rows) {
    const pb::Model& m = r.model;
    const std::string experts =
        m.has_moe() ? std::to_string(m.moe().top_k()) + "/" + std::to_string(m.moe().experts())
                    : "-";
    const std::string published = r.preset->published_total_b + "/" + r.preset->published_active_b +
                                  (r.preset->published_active_excludes_input_embedding ? "*" : "");
    out += row({r.preset->name, std::to_string(m.layers()), std::to_string(m.hidden()),
                std::to_string(m.heads()) + "/" + std::to_string(m.kv_heads()),
                std::to_string(m.ffn_hidden()), experts, std::to_string(m.vocab()),
                Billions(r.params), Billions(r.active), published});
  }
  out +=
      "  experts: top_k/routed. published B: total/active as the source prints them; * the "
      "active count leaves the input embedding out.\n  Sources: docs/models.md and "
      "scenarios/presets.cc.\n";
  return out;
}

Status CheckFit(const scenarios::ResolvedScenario& r) {
  const std::optional<LayoutMemory> memory = EstimateLayoutMemory(r);
  return memory ? parallelism::FitStatus(memory->report) : Status::Ok();
}

}  // namespace trainsim::cli::report

// `trainsim export megatron SCENARIO [--set ...] [--json]`: the Megatron-LM (Megatron-Core)
// pretrain_gpt.py arguments for the scenario's model and layout.
//
// Flag names follow megatron/training/arguments.py and the TransformerConfig /
// ModelParallelConfig / DistributedDataParallelConfig fields it turns into flags
// (ArgumentGroupFactory: field foo_bar -> --foo-bar; --disable-bias-linear and --fp8-format by
// argparse_meta). Lines starting with '#' say what has no Megatron flag or differs from it.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "parallelism/layout.h"
#include "scenarios/step_config.h"

namespace trainsim::cli {
namespace {

namespace pb = trainsim::pb;

struct ExportOptions {
  std::string format;
  ScenarioOptions scenario;
};

// Flags as (flag, value) pairs; an empty value is a switch.
struct Args {
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> notes;
  void Add(std::string flag, std::string value = "") {
    flags.emplace_back(std::move(flag), std::move(value));
  }
  void Add(std::string flag, int64_t value) { Add(std::move(flag), std::to_string(value)); }
};

// "([0]*3+[1]*58)": Megatron's --moe-layer-freq as a Python list expression (0 dense, 1 MoE);
// with interleave_step k the MoE layers are those past the dense ones with (i + 1) % k == 0
// (ModelSpec::IsMoeLayer): "([0]*F+([0]*(k-1)+[1])*n+[0]*r)" where k divides F, else the list
// written out.
std::string MoeLayerFreq(int first_dense, int step, int layers) {
  const int rest = layers - first_dense;
  if (step <= 1) {
    return "([0]*" + std::to_string(first_dense) + "+[1]*" + std::to_string(rest) + ")";
  }
  if (first_dense % step != 0) {
    std::string list = "[";
    for (int i = 0; i < layers; ++i) {
      list += std::string(i > 0 ? "," : "") + (i >= first_dense && (i + 1) % step == 0 ? "1" : "0");
    }
    return list + "]";
  }
  return "([0]*" + std::to_string(first_dense) + "+([0]*" + std::to_string(step - 1) + "+[1])*" +
         std::to_string(rest / step) + "+[0]*" + std::to_string(rest % step) + ")";
}

void ModelArgs(const pb::Model& m, const pb::Parallelism& p, Args* a) {
  const int tp = p.tp();
  a->Add("--num-layers", m.layers());
  a->Add("--hidden-size", m.hidden());
  a->Add("--num-attention-heads", m.heads());
  if (m.kv_heads() != m.heads()) {
    a->Add("--group-query-attention");
    a->Add("--num-query-groups", m.kv_heads());
  }
  if (!m.has_mla()) a->Add("--kv-channels", m.head_dim());
  a->Add("--ffn-hidden-size", m.ffn_hidden());
  a->Add("--seq-length", m.seq_len());
  a->Add("--max-position-embeddings", m.seq_len());
  // TokenizerConfig.vocab_size ("size of vocab before EOD or padding"), used as is by the null
  // tokenizer; a real tokenizer sets it. Megatron pads to --make-vocab-size-divisible-by × TP.
  a->Add("--vocab-size", m.vocab());
  const int64_t multiple = 128LL * tp;
  const int64_t padded = (int64_t(m.vocab()) + multiple - 1) / multiple * multiple;
  if (padded != m.vocab()) {
    a->notes.push_back("vocab " + std::to_string(m.vocab()) + ": Megatron pads it to " +
                       std::to_string(padded) + " (a multiple of 128 x TP " + std::to_string(tp) +
                       ", --make-vocab-size-divisible-by 128); trainsim counts " +
                       std::to_string(m.vocab()));
  }
  if (m.swiglu()) a->Add("--swiglu");
  if (m.normalization() == pb::Model::RMSNORM) a->Add("--normalization", "RMSNorm");
  if (!m.linear_bias()) a->Add("--disable-bias-linear");
  if (m.position_embedding() == pb::Model::ROPE) a->Add("--position-embedding-type", "rope");
  if (!m.tied_embeddings()) a->Add("--untie-embeddings-and-output-weights");
  if (!m.dropout()) {  // Megatron's defaults are 0.1 each
    a->Add("--attention-dropout", "0.0");
    a->Add("--hidden-dropout", "0.0");
  }
  if (m.has_moe()) {
    const pb::Moe& e = m.moe();
    a->Add("--num-experts", e.experts());
    a->Add("--moe-router-topk", e.top_k());
    a->Add("--moe-ffn-hidden-size", e.expert_ffn_hidden());
    if (e.shared_expert_ffn_hidden() > 0) {
      a->Add("--moe-shared-expert-intermediate-size", e.shared_expert_ffn_hidden());
    }
    if (e.first_dense_layers() > 0 || e.interleave_step() > 1) {
      a->Add("--moe-layer-freq",
             MoeLayerFreq(e.first_dense_layers(), e.interleave_step(), m.layers()));
    }
    if (e.capacity_factor() > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", e.capacity_factor());
      a->Add("--moe-expert-capacity-factor", buf);
    }
    // The scenario's dispatcher (parallelism.moe_token_dispatcher); experts as grouped GEMMs.
    a->Add("--moe-token-dispatcher-type",
           p.moe_token_dispatcher() == pb::Parallelism::ALLGATHER ? "allgather"
           : p.moe_token_dispatcher() == pb::Parallelism::FLEX    ? "flex"
                                                                  : "alltoall");
    if (p.moe_token_dispatcher() == pb::Parallelism::FLEX) {
      // trainsim prices FLEX as HybridEP runs (step/flex_dispatch.h); Megatron-Core's default
      // backend is DeepEP's.
      a->Add("--moe-flex-dispatcher-backend", "hybridep");
      if (p.moe_flex_sms() > 0) a->Add("--moe-flex-dispatcher-num-sms", p.moe_flex_sms());
    }
    a->Add("--moe-grouped-gemm");
    // Pads each expert's tokens to the FP8 GEMM alignment in the router (Megatron-LM's current
    // name; older releases called it --moe-router-padding-for-fp8).
    if (e.router_padding_for_quantization()) a->Add("--moe-router-padding-for-quantization");
  }
  if (m.has_mla()) {
    const pb::Mla& l = m.mla();
    a->Add("--multi-latent-attention");
    if (l.q_lora_rank() > 0) a->Add("--q-lora-rank", l.q_lora_rank());
    a->Add("--kv-lora-rank", l.kv_lora_rank());
    a->Add("--qk-head-dim", l.qk_nope_head_dim());
    a->Add("--qk-pos-emb-head-dim", l.qk_rope_head_dim());
    a->Add("--v-head-dim", l.v_head_dim());
  }
  // Architecture details of some presets that trainsim does not model but a Megatron run of
  // that model needs (docs/models.md, "Not modelled").
  if (m.preset().rfind("qwen3", 0) == 0) a->Add("--qk-layernorm");  // Qwen3's QK-norm
  if (m.preset() == "gpt-oss-120b") {
    a->notes.push_back(
        "gpt-oss: its attention sinks are not set here (trainsim does not model them)");
  }
  // Sliding-window attention: --window-size takes (left, right) token counts; causal: right 0.
  if (m.sliding_window() > 0) {
    a->Add("--window-size", std::to_string(m.sliding_window()) + ",0");
    if (m.sliding_window_full_every() > 0) {
      a->Add("--window-attn-skip-freq", m.sliding_window_full_every());
    }
  }
  // Hybrid Mamba models: the layer pattern (Megatron-LM's --hybrid-layer-pattern, which
  // replaced --hybrid-override-pattern) and the Mamba-2 mixer's TransformerConfig fields.
  if (!m.hybrid_pattern().empty()) {
    a->Add("--hybrid-layer-pattern", m.hybrid_pattern());
    a->notes.push_back(
        "hybrid layer pattern: Megatron-LM builds it with pretrain_mamba.py (the Mamba stack), "
        "and takes the layer count from the pattern");
  }
  if (m.has_mamba()) {
    const pb::Mamba& mb = m.mamba();
    a->Add("--mamba-num-heads", mb.heads());
    if (mb.has_head_dim()) a->Add("--mamba-head-dim", mb.head_dim());
    if (mb.has_state_dim()) a->Add("--mamba-state-dim", mb.state_dim());
    if (mb.has_groups()) a->Add("--mamba-num-groups", mb.groups());
  }
  switch (m.precision()) {
    case pb::BF16:
      a->Add("--bf16");
      break;
    case pb::FP16:
      a->Add("--fp16");
      break;
    case pb::FP8:  // Transformer Engine FP8 GEMMs over bf16 master weights
      a->Add("--bf16");
      a->Add("--fp8-format", "hybrid");
      // TransformerConfig.fp8_recipe (default "delayed"): Float8CurrentScaling is "tensorwise".
      a->Add("--fp8-recipe", m.fp8_recipe() == pb::Model::CURRENT ? "tensorwise"
                             : m.fp8_recipe() == pb::Model::MXFP8 ? "mxfp8"
                                                                  : "delayed");
      if (m.fp8_attention()) a->Add("--fp8-dot-product-attention");
      break;
    case pb::FP4:  // Transformer Engine NVFP4 GEMMs over bf16 master weights
      a->Add("--bf16");
      a->Add("--fp4-format", "e2m1");
      a->Add("--fp4-recipe", "nvfp4");
      break;
    default:
      a->notes.push_back("TF32: Megatron's default fp32 parameters, no precision flag");
  }
  // Main gradients: Megatron-LM turns fp32 accumulation on for bf16 by itself and leaves fp16
  // gradients in fp16; say so only where the scenario departs from that.
  if (m.precision() == pb::FP16 && p.grad_reduce_in_fp32()) {
    a->Add("--accumulate-allreduce-grads-in-fp32");
  } else if (m.precision() != pb::FP16 && m.precision() != pb::TF32 && !p.grad_reduce_in_fp32()) {
    a->Add("--grad-reduce-in-bf16");
  }
}

void RecomputeArgs(const pb::Parallelism& p, Args* a) {
  if (p.recompute() == pb::Parallelism::SELECTIVE) {
    a->Add("--recompute-granularity", "selective");
    if (p.recompute_modules_size() > 0) {
      std::string modules;  // Megatron's nargs="*" list
      for (const std::string& name : p.recompute_modules())
        modules += (modules.empty() ? "" : " ") + name;
      a->Add("--recompute-modules", modules);
    }
  } else if (p.recompute() == pb::Parallelism::FULL) {
    // trainsim's FULL: uniform groups of recompute_num_layers layers (default one layer per
    // checkpoint), or the block method's first recompute_num_layers layers of each chunk.
    a->Add("--recompute-granularity", "full");
    a->Add("--recompute-method",
           p.recompute_method() == pb::Parallelism::BLOCK ? "block" : "uniform");
    a->Add("--recompute-num-layers",
           int64_t(p.has_recompute_num_layers() ? p.recompute_num_layers() : 1));
  }
  // Megatron-LM turns --cpu-offloading on when this is > 0 (arguments.py); activations only.
  if (p.cpu_offloading_num_layers() > 0) {
    a->Add("--cpu-offloading-num-layers", int64_t(p.cpu_offloading_num_layers()));
  }
}

void DataParallelArgs(const pb::Parallelism& p, Args* a) {
  switch (p.zero_stage()) {
    case 1:  // optimizer states sharded: Megatron's distributed optimizer
      a->Add("--use-distributed-optimizer");
      break;
    case 2:  // + gradients: Megatron-FSDP's optim_grads
    case 3:  // + parameters: Megatron-FSDP's optim_grads_params (ZeRO-3)
      a->Add("--use-megatron-fsdp");
      a->Add("--data-parallel-sharding-strategy",
             p.zero_stage() == 2 ? "optim_grads" : "optim_grads_params");
      // arguments.py asserts Megatron-FSDP's checkpoint format; NVIDIA's Megatron-FSDP guide
      // runs it with the distributed optimizer and without fused gradient accumulation (which
      // arguments.py only warns about).
      a->Add("--ckpt-format", "fsdp_dtensor");
      a->Add("--use-distributed-optimizer");
      a->Add("--no-gradient-accumulation-fusion");
      if (p.shard_group() > 0) {
        a->notes.push_back("shard_group " + std::to_string(p.shard_group()) +
                           ": hybrid sharding (Megatron-FSDP HSDP) is set up by the launcher's "
                           "process groups, not one flag");
      }
      break;
    default:
      break;
  }
  if (p.overlap_grad_reduce()) a->Add("--overlap-grad-reduce");
  // DistributedDataParallelConfig.bucket_size, in parameters (trainsim's is in bytes of the
  // reduced gradients); unset, both take Megatron's default.
  if (p.dp_bucket_bytes() > 0) {
    const int64_t bytes_per_grad = p.grad_reduce_in_fp32() ? 4 : 2;
    a->Add("--ddp-bucket-size", int64_t(p.dp_bucket_bytes()) / bytes_per_grad);
  }
  if (p.overlap_param_gather()) a->Add("--overlap-param-gather");
  if (p.moe_a2a_overlap()) {
    a->Add("--overlap-moe-expert-parallel-comm");
    if (p.moe_delay_wgrad()) a->Add("--delay-wgrad-compute");
  }
}

// Megatron-Core's --pipeline-model-parallel-layout for the scenario's chunks (model order,
// chunk-major: index chunk·pp + rank, as ChunkLayerRanges gives them): "E" the embedding, "t"
// a transformer layer, "L" the loss, "|" between chunks; runs of equal chunks as "(...|)*n,"
// (Megatron drops commas: "E|(t|)*126,L").
std::string PipelineLayoutString(const std::vector<parallelism::ChunkLayers>& chunks) {
  std::vector<std::string> parts;
  for (size_t j = 0; j < chunks.size(); ++j) {
    std::string c = j == 0 ? "E" : "";
    const int n = chunks[j].layers;
    if (n > 0) c += n == 1 ? "t" : "t*" + std::to_string(n);
    if (j + 1 == chunks.size()) c += "L";
    parts.push_back(std::move(c));
  }
  std::string out;
  for (size_t j = 0; j < parts.size();) {
    size_t k = j + 1;
    while (k < parts.size() && parts[k] == parts[j]) ++k;
    // Every chunk but the last ends in '|'.
    if (k - j >= 3 && k < parts.size()) {
      out += "(" + parts[j] + "|)*" + std::to_string(k - j) + ",";  // a cosmetic comma
    } else {
      for (size_t i = j; i < k; ++i) out += parts[i] + (i + 1 < parts.size() ? "|" : "");
    }
    j = k;
  }
  return out;
}

// Uneven stages: --decoder-first/last-pipeline-num-layers where Megatron builds from them the
// chunks trainsim simulates (`chunks`, ChunkLayerRanges): no end stage of 0 layers
// (TransformerConfig refuses one) and, interleaved, every stage's layers split evenly into its
// chunks (--num-virtual-stages-per-pipeline-rank). Otherwise the layout string, which places
// each chunk's layers as trainsim does (an end chunk holding only the embedding or the loss).
void PipelineSplitArgs(const pb::Scenario& s, const std::vector<parallelism::ChunkLayers>& chunks,
                       Args* a) {
  const pb::Parallelism& p = s.parallelism();
  const int v = std::max(1, p.virtual_stages());
  if (!p.has_first_stage_layers() && !p.has_last_stage_layers()) {
    if (v > 1) {
      a->Add("--num-layers-per-virtual-pipeline-stage", s.model().layers() / (int64_t(p.pp()) * v));
    }
    return;
  }
  bool even_chunks = (!p.has_first_stage_layers() || p.first_stage_layers() > 0) &&
                     (!p.has_last_stage_layers() || p.last_stage_layers() > 0);
  const size_t pp = size_t(p.pp());
  for (size_t j = pp; j < chunks.size() && even_chunks; ++j) {
    even_chunks = chunks[j].layers == chunks[j % pp].layers;
  }
  if (!even_chunks) {
    a->Add("--pipeline-model-parallel-layout", PipelineLayoutString(chunks));
    return;
  }
  if (p.has_first_stage_layers()) {
    a->Add("--decoder-first-pipeline-num-layers", p.first_stage_layers());
  }
  if (p.has_last_stage_layers()) {
    a->Add("--decoder-last-pipeline-num-layers", p.last_stage_layers());
  }
  if (v > 1) a->Add("--num-virtual-stages-per-pipeline-rank", v);
}

void LayoutArgs(const pb::Scenario& s, const std::vector<parallelism::ChunkLayers>& chunks,
                Args* a) {
  const pb::Parallelism& p = s.parallelism();
  const pb::Model& m = s.model();
  a->Add("--tensor-model-parallel-size", p.tp());
  a->Add("--pipeline-model-parallel-size", p.pp());
  a->Add("--context-parallel-size", p.cp());
  if (p.cp() > 1) {
    a->Add("--cp-comm-type", p.cp_comm() == pb::Parallelism::ALL_GATHER ? "all_gather"
                             : p.cp_comm() == pb::Parallelism::A2A      ? "a2a"
                                                                        : "p2p");
  }
  if (m.has_moe()) {
    a->Add("--expert-model-parallel-size", p.ep());
    a->Add("--expert-tensor-parallel-size", p.etp());
  }
  PipelineSplitArgs(s, chunks, a);
  if (p.virtual_stages() > 1) {
    // Megatron overlaps the interleaved schedule's P2P by default (overlap_p2p_comm=True;
    // --no-overlap-p2p-communication turns it off; older releases had the opposite switch,
    // --overlap-p2p-communication).
    if (!p.overlap_p2p_comm()) a->Add("--no-overlap-p2p-communication");
  }
  if (p.schedule() == pb::Parallelism::GPIPE) {
    a->notes.push_back("schedule GPIPE: Megatron-LM runs 1F1B; it has no GPipe schedule");
  }
  if (p.sequence_parallel()) a->Add("--sequence-parallel");
  if (p.tp_comm_overlap()) {
    a->Add("--tp-comm-overlap");
    if (p.tp_comm_overlap_rs_method() == pb::Parallelism::RING_EXCHANGE) {
      a->notes.push_back(
          "tp_comm_overlap_rs_method RING_EXCHANGE: give --tp-comm-overlap-cfg a YAML with "
          "proj_fprop "
          "and fc2_fprop as {method: ring_exchange, num_sm: 1, cga_size: 1, set_sm_margin: true} "
          "(TE fills unset keys from its pipeline defaults: 16 SMs)");
    }
  }
  a->Add("--micro-batch-size", p.micro_batch());
  a->Add("--global-batch-size", p.global_batch());
  RecomputeArgs(p, a);
  DataParallelArgs(p, a);
}

// A value as one shell word: single-quoted when it holds anything but [A-Za-z0-9._-].
std::string ShellWord(const std::string& v) {
  for (char c : v) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return "'" + v + "'";
    }
  }
  return v;
}

std::string FormatText(const pb::Scenario& s, const Args& a) {
  std::string out = "# Megatron-LM arguments for scenario " +
                    (s.name().empty() ? std::string("(unnamed)") : "\"" + s.name() + "\"") +
                    " (trainsim export megatron): TP " + std::to_string(s.parallelism().tp()) +
                    " x CP " + std::to_string(s.parallelism().cp()) + " x PP " +
                    std::to_string(s.parallelism().pp()) + " x DP " +
                    std::to_string(s.parallelism().dp()) + "\n";
  for (const std::string& note : a.notes) out += "# " + note + "\n";
  for (size_t i = 0; i < a.flags.size(); ++i) {
    out += a.flags[i].first;
    if (!a.flags[i].second.empty()) out += " " + ShellWord(a.flags[i].second);
    out += i + 1 < a.flags.size() ? " \\\n" : "\n";
  }
  return out;
}

int RunExport(const ExportOptions& o) {
  if (o.format != "megatron") {
    return ReportError(
        Status::InvalidArgument("unknown export format \"" + o.format + "\" (formats: megatron)"));
  }
  auto resolved = LoadResolvedScenario(o.scenario);
  if (!resolved.ok()) return ReportError(resolved.status());
  const pb::Scenario& s = resolved->scenario;
  Result<step::StepConfig> cfg = scenarios::MakeStepConfig(*resolved);
  if (!cfg.ok()) return ReportError(cfg.status());
  Args a;
  ModelArgs(s.model(), s.parallelism(), &a);
  LayoutArgs(s, parallelism::ChunkLayerRanges(cfg->model, cfg->parallel), &a);
  if (o.scenario.json) {
    nlohmann::ordered_json j;
    j["args"] = nlohmann::ordered_json::array();
    for (const auto& [flag, value] : a.flags) {
      j["args"].push_back(flag);
      if (!value.empty()) j["args"].push_back(value);
    }
    j["notes"] = a.notes;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << FormatText(s, a);
  }
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* cmd =
      app.add_subcommand("export",
                         "Print a scenario as another tool's configuration (megatron: Megatron-LM "
                         "pretrain_gpt.py arguments for its model and layout)");
  cmd->add_option("FORMAT", options->format, "Output format: megatron")->required();
  AddScenarioOptions(cmd, &options->scenario);
  cmd->callback([options, exit_code] { *exit_code = RunExport(*options); });
}

}  // namespace trainsim::cli

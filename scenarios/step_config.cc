#include "scenarios/step_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallelism/model.h"
#include "scenarios/catalogue.h"
#include "scenarios/scenario.h"
#include "sim/parallel.h"

namespace trainsim::scenarios {
namespace {

// Whether `gpu`'s name or one of its aliases contains `pattern` (case-insensitive).
bool NameHas(const pb::GpuSpec& gpu, std::string_view pattern) {
  auto has = [&](const std::string& name) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char ch) { return char(std::toupper(ch)); });
    return upper.find(pattern) != std::string::npos;
  };
  if (has(gpu.name())) return true;
  return std::any_of(gpu.aliases().begin(), gpu.aliases().end(), has);
}

struct ArchAndSms {
  parallelism::GpuArch arch;
  int sms;
};

// The GPU's architecture and streaming-multiprocessor count, by name first (NVIDIA
// whitepapers: A100 108 SMs, "NVIDIA A100 Tensor Core GPU Architecture" (2020); H100 SXM5 132
// and H100 PCIe 114, "NVIDIA H100 Tensor Core GPU Architecture" (2022), H200 and H800 the same
// GH100 configuration as H100 SXM; B200 148 (2 dies × 74 SMs enabled), GB200's GPUs the same;
// B300/GB300 "Blackwell Ultra" 160, NVIDIA technical blog "Inside NVIDIA Blackwell Ultra"
// (2025)). Rule for an unknown name: the catalogue's `architecture` field with that family's
// flagship SM count (ampere 108, hopper 132, blackwell 148); no architecture either: Ampere's
// parameters and 108 SMs, the model's reference GPU.
ArchAndSms ArchOf(const pb::GpuSpec& gpu) {
  using parallelism::GpuArch;
  if (NameHas(gpu, "B300") || NameHas(gpu, "GB300")) return {GpuArch::kBlackwellUltra, 160};
  if (NameHas(gpu, "B200") || NameHas(gpu, "B100")) return {GpuArch::kBlackwell, 148};
  if (NameHas(gpu, "H100") && NameHas(gpu, "PCIE")) return {GpuArch::kHopper, 114};
  if (NameHas(gpu, "H100") || NameHas(gpu, "H200") || NameHas(gpu, "H800")) {
    return {GpuArch::kHopper, 132};
  }
  if (NameHas(gpu, "A100") || NameHas(gpu, "A800")) return {GpuArch::kAmpere, 108};
  if (gpu.architecture() == "hopper") return {GpuArch::kHopper, 132};
  if (gpu.architecture() == "blackwell") return {GpuArch::kBlackwell, 148};
  if (gpu.architecture() == "blackwell-ultra") return {GpuArch::kBlackwellUltra, 160};
  return {GpuArch::kAmpere, 108};
}

// scenario name → whether its micro-batch size is published.
// One line of DIR/published.csv.
struct PublishedEntry {
  bool micro_batch_published = true;
  double tokens_per_sec_per_gpu = 0;  // 0: not given
  double model_tflops_per_gpu = 0;
};

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  for (char ch : line) {
    if (ch == ',') {
      out.emplace_back();
    } else if (ch != '\r') {
      out.back() += ch;
    }
  }
  return out;
}

Result<std::map<std::string, PublishedEntry>> ReadPublishedTable(const std::filesystem::path& dir) {
  std::map<std::string, PublishedEntry> out;
  std::ifstream in(dir / "published.csv");
  if (!in) return out;  // no table: every row's micro-batch is taken as published
  std::string line;
  bool header = true;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    const std::vector<std::string> f = SplitCsv(line);
    const std::string where = (dir / "published.csv").string() + ":" + std::to_string(line_no);
    if (f.size() < 2 || f.size() > 4) {
      return Status::InvalidArgument(where +
                                     ": expected 'scenario,micro_batch_published"
                                     "[,tokens_per_sec_per_gpu,model_tflops_per_sec_per_gpu]'");
    }
    PublishedEntry e;
    e.micro_batch_published = f[1] == "true";
    for (size_t i = 2; i < f.size(); ++i) {
      if (f[i].empty()) continue;
      char* end = nullptr;
      const double v = std::strtod(f[i].c_str(), &end);
      if (end == f[i].c_str() || *end != '\0' || !(v > 0)) {
        return Status::InvalidArgument(where + ": '" + f[i] + "' is not a positive number");
      }
      (i == 2 ? e.tokens_per_sec_per_gpu : e.model_tflops_per_gpu) = v;
    }
    out[f[0]] = e;
  }
  return out;
}

// The fastest of `candidates` micro-batches (invalid or, unless allow_oom, non-fitting ones
// skipped); the last error when none runs.
Result<std::pair<step::StepResult, int>> FastestMicroBatch(const step::StepConfig& base,
                                                           const std::vector<int>& candidates) {
  std::optional<std::pair<step::StepResult, int>> best;
  Status last_error = Status::Ok();
  for (int mb : candidates) {
    step::StepConfig c = base;
    c.parallel.micro_batch = mb;
    Result<step::StepResult> r = step::SimulateStep(c);
    if (!r.ok()) {
      last_error = r.status();
      continue;  // does not divide the batch or does not fit: not a candidate
    }
    if (!best || r->time_s < best->first.time_s) best = {std::move(*r), mb};
  }
  if (!best) return last_error;
  return std::move(*best);
}

// The scenario's attention backend as the kernel model names it.
parallelism::AttentionBackend AttentionBackendOf(const pb::Model& m) {
  switch (m.attention_backend()) {
    case pb::Model::FLASH_ATTENTION:
      return parallelism::AttentionBackend::kFlashAttention;
    case pb::Model::SDPA:
      return parallelism::AttentionBackend::kSdpa;
    default:
      return parallelism::AttentionBackend::kTransformerEngine;
  }
}

// The scaling recipe of the model's low-precision GEMMs (FP4 runs TE's NVFP4 recipe).
parallelism::Fp8Recipe Fp8RecipeOf(const pb::Model& m) {
  using R = parallelism::Fp8Recipe;
  return m.precision() == pb::FP4               ? R::kNvfp4
         : m.fp8_recipe() == pb::Model::MXFP8   ? R::kMxfp8
         : m.fp8_recipe() == pb::Model::CURRENT ? R::kCurrent
                                                : R::kDelayed;
}

}  // namespace

comm::TopologySpec MakeTopologySpec(const ResolvedScenario& r) {
  comm::TopologySpec t;
  t.nodes = r.nodes;
  t.gpus_per_node = r.gpus_per_node;
  t.nvlink_GBps = r.gpu.nvlink_gbyte_per_s() > 0 ? r.gpu.nvlink_gbyte_per_s() : t.nvlink_GBps;
  t.nics_per_node = r.nics_per_node;
  t.nic_Gbps = r.nic.gbit_per_s() > 0 ? r.nic.gbit_per_s() : t.nic_Gbps;
  if (r.nic.latency_us() > 0) t.nic_latency_us = r.nic.latency_us();
  if (r.nic.switch_latency_ns() > 0) t.switch_latency_us = r.nic.switch_latency_ns() / 1000.0;
  t.rail_optimized = r.scenario.cluster().topology().rail_optimized();
  t.fat_tree_levels = r.topology_levels;
  t.oversubscription = r.scenario.cluster().topology().has_oversubscription()
                           ? r.scenario.cluster().topology().oversubscription()
                           : 1.0;
  // A leaf switch gives half its ports to end points; rail-optimised, each node puts one NIC
  // on a given rail's leaf, otherwise all its NICs.
  const int radix = r.nic.switch_radix() > 0 ? r.nic.switch_radix() : 64;
  const int per_node = t.rail_optimized ? 1 : std::max(1, t.nics_per_node);
  t.nodes_per_leaf = std::max(1, (radix / 2) / per_node);
  if (r.gpu.pcie_gbyte_per_s() > 0) t.pcie_GBps = r.gpu.pcie_gbyte_per_s();
  // NVLink SHARP needs NVSwitch 3 or later: Hopper and Blackwell NVSwitch systems (A100's
  // NVSwitch 2 has none). Efficiency relative to the ring's NVLink bandwidth: tuning.cc
  // nvlsEfficiency, Hopper 0.85, Blackwell 0.74.
  const bool nvswitch = r.node.nvswitch();
  const std::string& arch = r.gpu.architecture();
  t.nvls = nvswitch && (arch == "hopper" || arch == "blackwell");
  t.nvls_efficiency = arch == "blackwell" ? 0.74 : 0.85;
  // LL's ceiling inside one node, by GPU generation (tuning.cc llMaxBws, the N1 column).
  t.ll_max_one_node_GBps = arch == "blackwell" ? 282.0
                           : arch == "hopper"  ? 141.0
                           : arch == "ampere"  ? 87.7
                                               : 39.0;
  const bool roce = r.nic.fabric() == pb::NicSpec::ROCE;
  // SHARP is an InfiniBand switch feature (Quantum): ignored on an Ethernet fabric.
  t.sharp = r.scenario.cluster().topology().sharp() && !roce;
  if (roce) {
    // RoCEv2 headers per 4096-byte MTU: Ethernet 38 (header, FCS, preamble, gap) + IP 20 + UDP
    // 8 + BTH 12 + ICRC 4 = 82 bytes, against InfiniBand's 26 (LRH 8, BTH 12, ICRC 4, VCRC 2):
    // 4096/4178 over 4096/4122 = 0.987 of InfiniBand's data rate at the same line rate.
    t.nic_efficiency *= (4096.0 / 4178.0) / (4096.0 / 4122.0);
    // Up-links of a loaded Ethernet fat tree. ECMP pins each flow to one up-link by a hash: F
    // flows hashed uniformly onto F up-links leave a fraction (1 - 1/F)^F -> 1/e of them idle, so
    // the loaded tree delivers 1 - 1/e = 0.63 of its bandwidth (NVIDIA's Spectrum-X material
    // quotes ~60% effective bandwidth for standard Ethernet at scale). With adaptive routing
    // (Spectrum-X) NVIDIA quotes 95% effective bandwidth.
    t.uplink_efficiency = r.nic.adaptive_routing() ? 0.95 : 1.0 - std::exp(-1.0);
  }
  return t;
}

parallelism::ModelSpec MakeModelSpec(const pb::Model& m) {
  parallelism::ModelSpec spec;
  spec.num_layers = m.layers();
  spec.hidden = m.hidden();
  spec.heads = m.heads();
  spec.seq_len = m.seq_len();
  spec.vocab = m.vocab();
  spec.ffn_hidden = m.has_ffn_hidden() ? m.ffn_hidden() : 0;
  spec.kv_heads = m.has_kv_heads() ? m.kv_heads() : 0;
  spec.swiglu = m.swiglu();
  spec.flash_attention = m.flash_attention();
  spec.bytes_per_element = m.precision() == pb::TF32 ? 4 : 2;
  // What Transformer Engine saves of a low-precision GEMM's input (parallelism/model.h).
  if (m.precision() == pb::FP8 || m.precision() == pb::FP4) {
    spec.saved_gemm_input_bytes = parallelism::QuantizedBytesPerElement(Fp8RecipeOf(m));
    spec.fp8_attention_saved = m.precision() == pb::FP8 && m.fp8_attention();
  }
  spec.dropout = m.has_dropout() ? m.dropout() : true;
  spec.head_dim = m.has_head_dim() ? m.head_dim() : 0;
  spec.tied_embeddings = m.has_tied_embeddings() ? m.tied_embeddings() : true;
  spec.learned_position_embedding = m.position_embedding() == pb::Model::LEARNED;
  spec.linear_bias = m.has_linear_bias() ? m.linear_bias() : true;
  spec.rmsnorm = m.normalization() == pb::Model::RMSNORM;
  spec.eager_kernels = m.kernels() != pb::Model::FUSED;
  spec.eager_norm = m.kernels() == pb::Model::EAGER;
  if (m.has_moe()) {
    const pb::Moe& e = m.moe();
    spec.moe.experts = e.experts();
    spec.moe.top_k = e.top_k();
    spec.moe.expert_ffn_hidden = e.expert_ffn_hidden();
    spec.moe.shared_experts = e.shared_experts();
    spec.moe.shared_expert_ffn_hidden = e.shared_expert_ffn_hidden();
    spec.moe.first_dense_layers = e.first_dense_layers();
    spec.moe.interleave_step = e.has_interleave_step() ? e.interleave_step() : 1;
    spec.moe.capacity_factor = e.capacity_factor();
    spec.moe.load_imbalance = e.has_load_imbalance() ? e.load_imbalance() : 1.0;
    spec.moe.fp8 =
        m.precision() == pb::FP8 || m.precision() == pb::FP4;  // low-precision GEMM padding
    spec.moe.router_padding = e.router_padding_for_quantization();
  }
  spec.hybrid_pattern = m.hybrid_pattern();
  if (m.has_mamba()) {
    const pb::Mamba& a = m.mamba();
    spec.mamba.heads = a.heads();
    spec.mamba.head_dim = a.head_dim();
    spec.mamba.state_dim = a.state_dim();
    spec.mamba.groups = a.groups();
    spec.mamba.conv_kernel = a.conv_kernel();
    spec.mamba.chunk_size = a.chunk_size();
  }
  spec.window = m.sliding_window();
  spec.window_full_every = m.sliding_window_full_every();
  if (m.has_mla()) {
    const pb::Mla& a = m.mla();
    spec.mla.q_lora_rank = a.q_lora_rank();
    spec.mla.kv_lora_rank = a.kv_lora_rank();
    spec.mla.qk_rope_head_dim = a.qk_rope_head_dim();
    spec.mla.qk_nope_head_dim = a.qk_nope_head_dim();
    spec.mla.v_head_dim = a.v_head_dim();
  }
  return spec;
}

Result<double> MemoryHeadroomBytes(const std::string& text, double hbm_bytes,
                                   double fallback_fraction) {
  if (text.empty()) return fallback_fraction * hbm_bytes;
  const Status bad = Status::InvalidArgument(
      "cluster.memory_headroom '" + text +
      "': use a fraction of HBM below 1 (0.05), a percentage below 100 (5%) or a size below the "
      "GPU's memory (4GB, 4GiB)");
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return bad;
  }
  const std::string unit = text.substr(used);
  double bytes = 0;
  if (unit.empty()) {
    bytes = v * hbm_bytes;
  } else if (unit == "%") {
    bytes = v / 100 * hbm_bytes;
  } else if (unit == "GB") {
    bytes = v * 1e9;
  } else if (unit == "GiB") {
    bytes = v * double(1ULL << 30);
  } else {
    return bad;
  }
  if (!std::isfinite(v) || v < 0 || !(bytes < hbm_bytes)) return bad;
  return bytes;
}

namespace {
// The scenario's cp_comm as the step simulation's.
parallelism::CpComm CpCommOf(pb::Parallelism::CpComm c) {
  using parallelism::CpComm;
  return c == pb::Parallelism::ALL_GATHER ? CpComm::kAllGather
         : c == pb::Parallelism::A2A      ? CpComm::kAllToAll
                                          : CpComm::kP2P;
}
}  // namespace

Result<step::StepConfig> MakeStepConfig(const ResolvedScenario& r) {
  namespace par = parallelism;
  const pb::Scenario& s = r.scenario;
  step::StepConfig c;
  const pb::Model& m = s.model();
  c.model = MakeModelSpec(m);
  // Main gradients (parallelism.grad_reduce_in_fp32). Megatron-LM accumulates bf16 gradients
  // in an fp32 buffer and reduces them in fp32 ("bfloat16 requires gradient accumulation and
  // all-reduce to be done in fp32", arguments.py): 4 bytes per parameter in memory and on the
  // wire. FP8 and FP4 (Transformer Engine) cast only the GEMM inputs and keep the same main
  // gradients. With 16-bit main gradients (fp16's default, --grad-reduce-in-bf16) the buffer
  // and the reduction are 2 bytes, and the optimizer, which steps fp32 master weights, first
  // copies its shard's gradients to fp32 (_copy_model_grads_to_main_grads: .float()), 4 bytes
  // per parameter of the shard (parallelism/memory.h). TF32 trains fp32 parameters: 4 bytes.
  const bool sixteen_bit = m.precision() == pb::BF16 || m.precision() == pb::FP16 ||
                           m.precision() == pb::FP8 || m.precision() == pb::FP4;
  if (sixteen_bit) {
    const bool fp32_grads = s.parallelism().grad_reduce_in_fp32();
    c.memory.grad_bytes_per_param = fp32_grads ? 4 : 2;
    c.memory.step_grad_bytes_per_param = fp32_grads ? 0 : 4;
  }
  // The calibration's GEMM input type for the precision (TF32 has none: nothing matches).
  c.gemm_dtype = m.precision() == pb::FP16   ? "fp16"
                 : m.precision() == pb::FP8  ? "fp8"
                 : m.precision() == pb::FP4  ? "fp4"
                 : m.precision() == pb::TF32 ? "tf32"
                                             : "bf16";

  const pb::Parallelism& p = s.parallelism();
  c.parallel.tp = r.tp;
  c.parallel.pp = r.pp;
  c.parallel.dp = r.dp;
  c.parallel.cp = p.cp();
  c.parallel.cp_comm = CpCommOf(p.cp_comm());
  c.parallel.ep = p.ep();
  c.parallel.etp = p.etp();
  c.parallel.first_stage_layers = p.has_first_stage_layers() ? p.first_stage_layers() : -1;
  c.parallel.last_stage_layers = p.has_last_stage_layers() ? p.last_stage_layers() : -1;
  c.parallel.shard_group = p.shard_group();
  c.parallel.tp_comm_overlap = p.tp_comm_overlap();
  c.parallel.tp_overlap_rs_ring = p.tp_comm_overlap_rs_method() == pb::Parallelism::RING_EXCHANGE;
  c.parallel.overlap_param_gather = p.overlap_param_gather();
  c.parallel.moe_a2a_overlap = p.moe_a2a_overlap();
  c.parallel.moe_delay_wgrad = p.moe_delay_wgrad();
  c.parallel.moe_flex_sms = p.moe_flex_sms();
  c.nccl_min_ctas = p.nccl_min_ctas();
  c.nccl_max_ctas = p.nccl_max_ctas();
  // Activation offloading copies out at the GPU's device-to-host rate and back at its
  // host-to-device rate (its host link or PCIe, at the measured copy efficiency).
  if (const double out = HostCopyGBps(r.gpu, /*to_host=*/true); out > 0) c.host_d2h_Bps = out * 1e9;
  if (const double in = HostCopyGBps(r.gpu, /*to_host=*/false); in > 0) c.host_h2d_Bps = in * 1e9;
  c.parallel.moe_dispatcher =
      p.moe_token_dispatcher() == pb::Parallelism::ALLGATHER ? par::MoeDispatcher::kAllGather
      : p.moe_token_dispatcher() == pb::Parallelism::FLEX    ? par::MoeDispatcher::kFlex
                                                             : par::MoeDispatcher::kAllToAll;
  {
    const int ep_span = std::max(1, p.ep() * std::max(1, p.etp()));
    const int per_node = std::max(1, r.gpus_per_node);
    c.parallel.ep_nodes = (ep_span + per_node - 1) / per_node;
  }
  c.parallel.micro_batch = p.micro_batch();
  c.parallel.global_batch = p.global_batch();
  c.parallel.virtual_stages = r.virtual_stages;
  if (p.schedule() == pb::Parallelism::GPIPE) {
    c.parallel.schedule = par::PipelineSchedule::kGpipe;
  } else {
    c.parallel.schedule = r.virtual_stages > 1 ? par::PipelineSchedule::kInterleaved1F1B
                                               : par::PipelineSchedule::k1F1B;
  }
  switch (p.recompute()) {
    case pb::Parallelism::SELECTIVE:
      c.parallel.recompute = par::Recompute::kSelective;
      break;
    case pb::Parallelism::FULL:
      c.parallel.recompute = par::Recompute::kFull;
      break;
    default:
      c.parallel.recompute = par::Recompute::kNone;
  }
  c.parallel.recompute_block = p.recompute_method() == pb::Parallelism::BLOCK;
  if (p.has_recompute_num_layers()) c.parallel.recompute_num_layers = p.recompute_num_layers();
  c.parallel.cpu_offload_layers = p.cpu_offloading_num_layers();
  if (p.recompute_modules_size() > 0) {
    // Names checked by the validator (ValidateRecomputeModules).
    c.parallel.recompute_modules = 0;
    for (const std::string& name : p.recompute_modules()) {
      Result<uint32_t> bit = par::ParseRecomputeModule(name);
      if (bit.ok()) c.parallel.recompute_modules |= *bit;
    }
  }
  c.parallel.sequence_parallel = p.sequence_parallel();
  c.parallel.zero_stage = p.zero_stage();
  c.parallel.dp_bucket_bytes = double(p.dp_bucket_bytes());
  c.parallel.overlap_dp = p.has_overlap_grad_reduce() ? p.overlap_grad_reduce() : true;
  c.parallel.overlap_p2p = p.has_overlap_p2p_comm() && p.overlap_p2p_comm();
  c.parallel.tp_across_nodes = p.has_tp_across_nodes() && p.tp_across_nodes();

  c.gpu.name = r.gpu.name();
  const ArchAndSms arch = ArchOf(r.gpu);
  c.gpu.arch = arch.arch;
  c.gpu.num_sms = arch.sms;
  c.gpu.peak_flops = r.peak_tflops * 1e12;
  c.gpu.peak_bf16_flops = r.gpu.bf16_tflops() * 1e12;
  c.gpu.peak_fp8_flops = r.gpu.fp8_tflops() * 1e12;
  // Blackwell's tensor cores run MXFP8 (block-scaled FP8) at the FP8 rate (NVIDIA Blackwell
  // architecture technical brief); Hopper has no MXFP8.
  const bool blackwell =
      arch.arch == par::GpuArch::kBlackwell || arch.arch == par::GpuArch::kBlackwellUltra;
  c.gpu.peak_mxfp8_flops = blackwell ? c.gpu.peak_fp8_flops : 0.0;
  c.gpu.peak_nvfp4_flops = r.gpu.fp4_tflops() * 1e12;
  c.gpu.hbm_bytes_per_s = r.gpu.hbm_gbyte_per_s() * 1e9;
  c.gpu.memory_bytes = double(r.gpu.hbm_bytes());
  c.gpu.gemm_ceiling_16bit = r.gpu.gemm_ceiling_16bit();
  c.gpu.gemm_ceiling_fp8 = r.gpu.gemm_ceiling_fp8();
  Result<double> headroom = MemoryHeadroomBytes(s.cluster().memory_headroom(), c.gpu.memory_bytes);
  if (!headroom.ok()) return headroom.status();
  c.memory.headroom_bytes = *headroom;
  // The node type's CPU memory shared by its GPUs (a GB200 NVL72 rack: 36 Graces for 72).
  if (r.node.host_memory_bytes() > 0 && r.node.gpus_per_node() > 0) {
    c.memory.host_bytes_per_gpu = double(r.node.host_memory_bytes()) / r.node.gpus_per_node();
  }
  // FP4 runs as TE's low-precision GEMM path with the NVFP4 recipe (par::Fp8Recipe::kNvfp4).
  c.compute.precision = m.precision() == pb::FP8 || m.precision() == pb::FP4 ? par::Precision::kFp8
                        : m.precision() == pb::FP16                          ? par::Precision::kFp16
                        : m.precision() == pb::TF32                          ? par::Precision::kTf32
                                                    : par::Precision::kBf16;
  // TE casts each weight to FP8 on a step's first micro-batch and reuses it (Megatron-Core
  // passes is_first_microbatch): micro-batches per step = global batch / (micro-batch · DP).
  const int64_t per_step = std::max<int64_t>(1, int64_t(r.dp) * p.micro_batch());
  c.compute.fp8_recipe = Fp8RecipeOf(m);
  c.compute.fp8_attention = m.fp8_attention();
  c.compute.attention_backend = AttentionBackendOf(m);
  c.compute.fp8_weight_cast_reuse = int(std::max<int64_t>(1, p.global_batch() / per_step));
  if (c.gpu.peak_flops <= 0) {
    return Status::InvalidArgument("model.precision: GPU " + r.gpu.name() +
                                   " has no tensor-core peak at this precision");
  }
  c.topology = MakeTopologySpec(r);
  const pb::Input& in = s.input();
  c.input.workers = in.workers();
  c.input.cpu_s_per_sample = in.cpu_ms_per_sample() * 1e-3;
  c.input.prefetch = in.prefetch();
  c.input.read_bytes_per_s = in.read_gbyte_per_s() * 1e9;
  c.input.bytes_per_sample = double(in.bytes_per_sample());
  c.host.launch_s = s.host().launch_us() * 1e-6;
  c.host.step_s = s.host().step_ms() * 1e-3;
  c.host.cuda_graphs = p.cuda_graphs();
  return c;
}

step::ClusterState MakeFaultedClusterState(const ResolvedScenario& r) {
  step::ClusterState state;
  Result<comm::Topology> topo = comm::Topology::Build(MakeTopologySpec(r));
  for (const ResolvedFault& f : r.faults) {
    if (f.fault.kind() == pb::Fault::STRAGGLER) {
      state.gpu_slowdown.push_back(
          {f.fault.id(), f.fault.has_slowdown() ? f.fault.slowdown() : 2.0});
    } else if (f.fault.kind() == pb::Fault::LINK && topo.ok()) {
      const int nic = f.fault.id();
      const int num_nics = r.nodes * r.nics_per_node;
      if (nic < 0 || nic >= num_nics) continue;
      // degrade is the fraction of bandwidth lost (default 1: the link is down). A link that is
      // down takes its node out of the job (the run simulation treats it as a NIC failure,
      // MakeScheduledFault), so no step runs over it: a factor of 0 here made every step that
      // crosses it "never complete", and `run` failed on a scenario `check` accepted.
      const double degrade = f.fault.has_degrade() ? f.fault.degrade() : 1.0;
      if (degrade >= 1.0) continue;
      const double factor = 1.0 - degrade;
      state.links.push_back({topo->nic_tx(nic), factor});
      state.links.push_back({topo->nic_rx(nic), factor});
    }
  }
  return state;
}

Result<std::vector<ValidationRow>> RunValidation(const std::string& dir,
                                                 const std::vector<std::string>& sets,
                                                 int threads) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (fs::exists(dir, ec)) {
      return Status::InvalidArgument("validation directory '" + dir +
                                     "' is a file; give the folder of validation scenarios "
                                     "(default scenarios/validation)");
    }
    return Status::NotFound("validation directory '" + dir + "' does not exist");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".textproto") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return Status::NotFound("no *.textproto scenarios in '" + dir + "'");
  Result<std::map<std::string, PublishedEntry>> table = ReadPublishedTable(dir);
  if (!table.ok()) return table.status();

  // Row i is file i's alone (sim/parallel.h): the rows are one thread's, in file order, and an
  // error is the first failing file's.
  std::vector<std::optional<ValidationRow>> slots(files.size());
  TRAINSIM_RETURN_IF_ERROR(
      sim::ParallelFor(int64_t(files.size()), std::max(1, threads), [&](int64_t i) -> Status {
        const fs::path& file = files[size_t(i)];
        Result<pb::Scenario> scenario = scenarios::LoadScenario(file.string(), sets);
        if (!scenario.ok()) return scenario.status();
        Result<scenarios::ResolvedScenario> resolved = scenarios::Resolve(*scenario);
        if (!resolved.ok()) return resolved.status().WithPrefix(file.string());
        const pb::Published& pub = resolved->scenario.published();
        ValidationRow row;
        row.scenario = resolved->scenario.name();
        row.source = pub.source();
        auto it = table->find(row.scenario);
        const PublishedEntry entry = it != table->end() ? it->second : PublishedEntry{};
        if (entry.tokens_per_sec_per_gpu > 0) {
          row.metric = "tokens_per_sec_per_gpu";
          row.published = entry.tokens_per_sec_per_gpu;
        } else if (pub.has_tflops_per_gpu()) {
          row.metric = "tflops_per_gpu";
          row.published = pub.tflops_per_gpu();
        } else if (pub.has_iteration_time_s()) {
          row.metric = "iteration_time_s";
          row.published = pub.iteration_time_s();
        } else {
          return Status::Ok();  // nothing to compare with
        }
        Result<step::StepConfig> base = scenarios::MakeStepConfig(*resolved);
        if (!base.ok()) return base.status().WithPrefix(file.string());
        row.micro_batch_searched = !entry.micro_batch_published;
        std::vector<int> candidates = {base->parallel.micro_batch};
        if (row.micro_batch_searched) {
          candidates = {1, 2, 4, 8};
        } else {
          base->allow_oom = true;  // the published run fitted; memory_fits reports the model's view
        }
        Result<std::pair<step::StepResult, int>> best = FastestMicroBatch(*base, candidates);
        if (!best.ok()) return best.status().WithPrefix(file.string());
        const step::StepResult& res = best->first;
        row.micro_batch = best->second;
        row.step_time_s = res.time_s;
        row.mfu = res.mfu;
        row.memory_fits = res.memory.fits;
        row.peak_memory_gb = res.memory.peak_bytes / 1e9;
        row.breakdown = res.breakdown;
        const double gpus = double(resolved->num_gpus);
        const double batch = double(base->parallel.global_batch);
        if (row.metric == "tokens_per_sec_per_gpu") {
          row.predicted = batch * double(base->model.seq_len) / (res.time_s * gpus);
        } else {
          row.predicted = row.metric == "tflops_per_gpu" ? res.tflops_per_gpu : res.time_s;
        }
        if (entry.model_tflops_per_gpu > 0) {
          row.model_tflops_published = entry.model_tflops_per_gpu;
          row.model_tflops_predicted = parallelism::MegatronModelFlopsPerIteration(
                                           base->model, base->parallel.global_batch) /
                                       (res.time_s * gpus) / 1e12;
        }
        row.error = row.predicted / row.published - 1;
        slots[size_t(i)] = std::move(row);
        return Status::Ok();
      }));
  std::vector<ValidationRow> rows;
  for (std::optional<ValidationRow>& row : slots) {
    if (row) rows.push_back(std::move(*row));
  }
  // A MAPE over no rows (printed as 0.0%) would read as a perfect fit.
  if (rows.empty()) {
    return Status::InvalidArgument(
        "no scenario in '" + dir + "' (" + std::to_string(files.size()) +
        (files.size() == 1 ? " file" : " files") +
        ") has a published measurement to compare with (published { tflops_per_gpu | "
        "iteration_time_s }, or a row of the folder's published.csv)");
  }
  return rows;
}

}  // namespace trainsim::scenarios

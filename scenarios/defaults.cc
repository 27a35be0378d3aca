// FillDefaults: every default documented in scenario.proto, in one place.
#include <cmath>
#include <limits>
#include <vector>

#include "scenarios/internal.h"
#include "scenarios/presets.h"
#include "scenarios/scenario.h"

namespace trainsim::scenarios {
namespace detail {

// Defaults with their reasons (the proto comments carry the same text for users).
namespace {
constexpr const char* kDefaultGpu = "H100-SXM-80GB";
constexpr int kDefaultNodes = 16;  // DESIGN.md: 128 GPUs by default
// Llama 3 storage (Herd of Models §3.3.1): 2 TB/s sustained write, 7 TB/s peak, 2,048 nodes.
constexpr double kStorageWritePerNodeGBps = 2000.0 / 2048.0;
constexpr double kStorageReadPerNodeGBps = 7000.0 / 2048.0;
constexpr int kDefaultSeqLen = 2048;  // GPT-3 / Megatron-LM
constexpr int kDefaultVocab = 51200;  // GPT-2 BPE padded (Megatron-LM)
// Busiest expert over the mean, per micro-batch: Switch Transformer (Fedus et al., JMLR 2022,
// §2.2 and Table 1) trains at capacity factor 1.25 with under 1% of tokens dropped, i.e. the
// busiest expert of a batch rarely exceeds 1.25× the mean under an auxiliary balancing loss.
constexpr double kDefaultMoeLoadImbalance = 1.25;
constexpr double kDefaultBytesPerParam = 14;  // bf16 weights + fp32 master + 2 fp32 moments
// Llama 3 (Table 5): 419 unexpected interruptions in 54 days on 16,384 GPUs = 2,048 nodes.
constexpr double kLlama3NodeDayRate = 419.0 / (54.0 * 2048.0);
constexpr double kDefaultWeibullShape = 0.75;  // Schroeder & Gibson, DSN'06: 0.7-0.8

// The price and the energy model's defaults: their sources are in scenario.proto (Cost).
void FillCostDefaults(pb::Cost* cost) {
  if (!cost->has_usd_per_gpu_hour()) cost->set_usd_per_gpu_hour(2.50);  // illustrative
  if (!cost->has_bill_spares()) cost->set_bill_spares(true);
  if (!cost->has_usd_per_kwh()) cost->set_usd_per_kwh(0.08);  // EIA 2023 US industrial average
  if (!cost->has_pue()) cost->set_pue(1.10);  // Google fleet-wide TTM PUE, 2023 report
  if (!cost->has_gpu_idle_fraction()) cost->set_gpu_idle_fraction(0.3);  // see scenario.proto
}

void AddCause(pb::Failures* f, const char* name, pb::Fault::Kind kind, int count, bool replace) {
  pb::FailureCause* c = f->add_causes();
  c->set_name(name);
  c->set_kind(kind);
  c->set_fraction(count / 419.0);
  c->set_needs_replacement(replace);
}

// The data loader's and the host's defaults (scenario.proto Input, Host; step/input_pipeline.h
// and step/host_overhead.h carry the sources). The loader's never bind: no CPU time, no bytes.
// MoE communication settings: no EP overlap, and the all-to-all dispatcher (what the EP model
// charged before parallelism.moe_token_dispatcher existed; Megatron-Core's own default is
// allgather, which the recipes override).
void FillMoeParallelDefaults(pb::Parallelism* p) {
  if (!p->has_moe_a2a_overlap()) p->set_moe_a2a_overlap(false);
  if (!p->has_moe_delay_wgrad()) p->set_moe_delay_wgrad(true);
  if (!p->has_moe_flex_sms()) p->set_moe_flex_sms(0);
  if (!p->has_moe_token_dispatcher()) p->set_moe_token_dispatcher(pb::Parallelism::ALLTOALL);
}

// Megatron-LM accumulates and reduces bf16 gradients in fp32 (arguments.py: "bfloat16 requires
// gradient accumulation and all-reduce to be done in fp32"); fp16 keeps fp16 gradients unless
// --accumulate-allreduce-grads-in-fp32 is given.
void FillGradientDefaults(pb::Scenario* s) {
  pb::Parallelism* p = s->mutable_parallelism();
  if (!p->has_grad_reduce_in_fp32()) {
    p->set_grad_reduce_in_fp32(s->model().precision() != pb::FP16);
  }
  if (!p->has_cpu_offloading_num_layers()) p->set_cpu_offloading_num_layers(0);
  // Unset or 0: Megatron-Core's default bucket of max(40 M, 1 M x DP x CP) parameters
  // (distributed_data_parallel.py), which depends on the layout (a sweep's DP), so it is
  // resolved per layout in the step simulation (ParallelConfig::megatron_bucket_params).
  if (!p->has_dp_bucket_bytes()) p->set_dp_bucket_bytes(0);
}

void FillInputAndHostDefaults(pb::Scenario* s) {
  pb::Input* in = s->mutable_input();
  if (!in->has_workers()) in->set_workers(8);  // one DataLoader of 8 workers per 8-GPU node
  if (!in->has_cpu_ms_per_sample()) in->set_cpu_ms_per_sample(0);
  if (!in->has_prefetch()) in->set_prefetch(2);  // PyTorch DataLoader prefetch_factor
  const pb::Cluster& cl = s->cluster();
  if (!in->has_read_gbyte_per_s() && cl.nodes() > 0 && cl.storage().has_read_gbyte_per_s()) {
    in->set_read_gbyte_per_s(cl.storage().read_gbyte_per_s() / cl.nodes());
  }
  if (!in->has_bytes_per_sample()) in->set_bytes_per_sample(0);
  pb::Host* h = s->mutable_host();
  if (!h->has_launch_us()) h->set_launch_us(5);  // cudaLaunchKernel + dispatch, a few µs
  if (!h->has_step_ms()) h->set_step_ms(0);      // in published step times already
}

// The model's defaults: first the preset's values for every field the scenario leaves unset
// (scenarios/presets.h), then the documented defaults for what is still unset.
std::optional<FieldError> FillModelDefaults(pb::Model* m) {
  if (!m->preset().empty()) {
    if (Status st = ApplyModelPreset(m); !st.ok()) {
      return FieldError{"model.preset", st.message(), st.code()};
    }
  }
  if (m->has_heads() && !m->has_kv_heads()) m->set_kv_heads(m->heads());
  if (m->has_hidden() && !m->has_ffn_hidden() && m->hidden() > 0 &&
      m->hidden() <= std::numeric_limits<int32_t>::max() / 4) {
    m->set_ffn_hidden(4 * m->hidden());
  }
  if (!m->has_seq_len()) m->set_seq_len(kDefaultSeqLen);
  if (!m->has_vocab()) m->set_vocab(kDefaultVocab);
  if (!m->has_precision()) m->set_precision(pb::BF16);
  if (!m->has_swiglu()) m->set_swiglu(false);
  if (!m->has_flash_attention()) m->set_flash_attention(true);
  if (!m->has_head_dim() && m->has_hidden() && m->has_heads() && m->heads() > 0 &&
      m->hidden() % m->heads() == 0) {
    m->set_head_dim(m->hidden() / m->heads());
  }
  if (!m->has_tied_embeddings()) m->set_tied_embeddings(true);
  if (!m->has_position_embedding()) m->set_position_embedding(pb::Model::LEARNED);
  if (!m->has_linear_bias()) m->set_linear_bias(true);
  if (!m->has_normalization()) m->set_normalization(pb::Model::LAYERNORM);
  if (!m->has_dropout()) m->set_dropout(true);
  if (!m->has_fp8_recipe()) m->set_fp8_recipe(pb::Model::DELAYED);
  if (!m->has_fp8_attention()) m->set_fp8_attention(false);
  if (!m->has_attention_backend()) m->set_attention_backend(pb::Model::TRANSFORMER_ENGINE);
  if (!m->has_kernels()) m->set_kernels(pb::Model::FUSED);
  if (m->has_moe()) {
    pb::Moe* moe = m->mutable_moe();
    if (!moe->has_expert_ffn_hidden() && m->has_ffn_hidden()) {
      moe->set_expert_ffn_hidden(m->ffn_hidden());
    }
    if (!moe->has_shared_experts()) moe->set_shared_experts(0);
    // Computed in 64 bits and set only when it is a valid width: hostile inputs (negative
    // counts) are left for validation to reject.
    const int64_t shared = int64_t(moe->shared_experts()) * moe->expert_ffn_hidden();
    if (!moe->has_shared_expert_ffn_hidden() && moe->has_expert_ffn_hidden() && shared >= 0 &&
        shared <= std::numeric_limits<int32_t>::max()) {
      moe->set_shared_expert_ffn_hidden(static_cast<int32_t>(shared));
    }
    if (!moe->has_first_dense_layers()) moe->set_first_dense_layers(0);
    if (!moe->has_interleave_step()) moe->set_interleave_step(1);
    if (!moe->has_capacity_factor()) moe->set_capacity_factor(0);
    if (!moe->has_load_imbalance()) moe->set_load_imbalance(kDefaultMoeLoadImbalance);
  }
  if (m->has_mamba()) {
    // Megatron-Core's defaults (megatron/training/arguments.py: --mamba-head-dim 64,
    // --mamba-state-dim 128, --mamba-num-groups 8; MambaMixer's chunk_size 128; mamba_ssm's
    // d_conv 4).
    pb::Mamba* a = m->mutable_mamba();
    if (!a->has_head_dim()) a->set_head_dim(64);
    if (!a->has_state_dim()) a->set_state_dim(128);
    if (!a->has_groups()) a->set_groups(8);
    if (!a->has_conv_kernel()) a->set_conv_kernel(4);
    if (!a->has_chunk_size()) a->set_chunk_size(128);
  }
  if (m->has_mla()) {
    pb::Mla* mla = m->mutable_mla();
    if (!mla->has_q_lora_rank()) mla->set_q_lora_rank(0);
    if (!mla->has_qk_rope_head_dim()) mla->set_qk_rope_head_dim(0);
    if (!mla->has_qk_nope_head_dim()) mla->set_qk_nope_head_dim(m->head_dim());
    if (!mla->has_v_head_dim()) mla->set_v_head_dim(m->head_dim());
  }
  return std::nullopt;
}
// A negative zero ("-0" in a file or --set) is zero: stored as +0 so no report prints "$-0".
void NormalizeNegativeZeros(google::protobuf::Message* m) {
  namespace gp = google::protobuf;
  const gp::Reflection* r = m->GetReflection();
  std::vector<const gp::FieldDescriptor*> fields;
  r->ListFields(*m, &fields);
  for (const gp::FieldDescriptor* f : fields) {
    const int n = f->is_repeated() ? r->FieldSize(*m, f) : 1;
    for (int i = 0; i < n; ++i) {
      if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_DOUBLE) {
        const double v = f->is_repeated() ? r->GetRepeatedDouble(*m, f, i) : r->GetDouble(*m, f);
        if (v != 0 || !std::signbit(v)) continue;
        if (f->is_repeated()) {
          r->SetRepeatedDouble(m, f, i, 0.0);
        } else {
          r->SetDouble(m, f, 0.0);
        }
      } else if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) {
        NormalizeNegativeZeros(f->is_repeated() ? r->MutableRepeatedMessage(m, f, i)
                                                : r->MutableMessage(m, f));
      }
    }
  }
}

}  // namespace

namespace {
// TP communication overlap (off; its reduce-scatter TE's pipeline) and the parameter gather's.
void FillOverlapDefaults(pb::Parallelism* p) {
  if (!p->has_tp_comm_overlap()) p->set_tp_comm_overlap(false);
  if (!p->has_tp_comm_overlap_rs_method()) {
    p->set_tp_comm_overlap_rs_method(pb::Parallelism::PIPELINE);
  }
  if (!p->has_overlap_param_gather()) p->set_overlap_param_gather(false);
}
}  // namespace

std::optional<FieldError> FillDefaultsDetailed(pb::Scenario* s) {
  NormalizeNegativeZeros(s);
  // ---- cluster ----
  pb::Cluster* cl = s->mutable_cluster();
  const pb::NodeSpec* node = nullptr;
  if (!cl->node_type().empty()) {
    auto n = LookupNode(cl->node_type());
    if (!n.ok()) return FieldError{"cluster.node_type", n.status().message(), n.status().code()};
    node = FindNode(cl->node_type());
    cl->set_node_type(node->name());
    if (cl->gpu().empty()) cl->set_gpu(node->gpu());
  }
  if (cl->gpu().empty()) cl->set_gpu(kDefaultGpu);
  auto gpu = LookupGpu(cl->gpu());
  if (!gpu.ok()) return FieldError{"cluster.gpu", gpu.status().message(), gpu.status().code()};
  cl->set_gpu(gpu->name());
  if (node == nullptr) {
    for (const pb::NodeSpec& n : BuiltinCatalogue().node()) {
      if (n.gpu() == gpu->name()) {
        node = &n;
        break;
      }
    }
    if (node == nullptr) {
      return FieldError{"cluster.gpu",
                        "no catalogue node type holds " + gpu->name() + "; set cluster.node_type",
                        Status::Code::kNotFound};
    }
    cl->set_node_type(node->name());
  }
  if (!cl->has_nodes()) cl->set_nodes(kDefaultNodes);
  if (!cl->has_gpus_per_node()) cl->set_gpus_per_node(node->gpus_per_node());
  if (cl->nic().empty()) cl->set_nic(node->nic());
  auto nic = LookupNic(cl->nic());
  if (!nic.ok()) return FieldError{"cluster.nic", nic.status().message(), nic.status().code()};
  cl->set_nic(nic->name());
  if (!cl->has_nics_per_node()) cl->set_nics_per_node(node->nics_per_node());
  if (!cl->has_spare_nodes()) cl->set_spare_nodes(0);
  pb::Topology* topo = cl->mutable_topology();
  if (!topo->has_oversubscription()) topo->set_oversubscription(1.0);
  if (!topo->has_rail_optimized()) topo->set_rail_optimized(true);
  if (!topo->has_levels() && cl->nodes() > 0 && cl->nics_per_node() > 0 && cl->spare_nodes() >= 0 &&
      topo->oversubscription() >= 1.0) {
    topo->set_levels(TwoLevelFatTreeFits(*nic, cl->nodes(), cl->spare_nodes(), cl->nics_per_node(),
                                         topo->oversubscription())
                         ? 2
                         : 3);
  }
  pb::Storage* storage = cl->mutable_storage();
  if (cl->nodes() > 0) {
    if (!storage->has_read_gbyte_per_s()) {
      storage->set_read_gbyte_per_s(kStorageReadPerNodeGBps * cl->nodes());
    }
    if (!storage->has_write_gbyte_per_s()) {
      storage->set_write_gbyte_per_s(kStorageWritePerNodeGBps * cl->nodes());
    }
  }

  if (auto e = FillModelDefaults(s->mutable_model())) return e;

  // ---- parallelism ----
  pb::Parallelism* p = s->mutable_parallelism();
  if (!p->has_tp()) p->set_tp(1);
  if (!p->has_pp()) p->set_pp(1);
  if (!p->has_micro_batch()) p->set_micro_batch(1);
  if (!p->has_cp()) p->set_cp(1);
  if (!p->has_cp_comm()) p->set_cp_comm(pb::Parallelism::P2P);
  if (!p->has_ep()) p->set_ep(1);
  // Megatron-LM: --expert-tensor-parallel-size defaults to the tensor-parallel size
  // (arguments.py), so experts are split over TP unless told otherwise.
  if (!p->has_etp()) p->set_etp(s->model().has_moe() ? p->tp() : 1);
  if (!p->has_shard_group()) p->set_shard_group(0);
  FillOverlapDefaults(p);
  FillMoeParallelDefaults(p);
  if (!p->has_cuda_graphs()) p->set_cuda_graphs(false);
  FillInputAndHostDefaults(s);
  int64_t gpus = static_cast<int64_t>(cl->nodes()) * cl->gpus_per_node();
  int64_t tp_pp = static_cast<int64_t>(p->tp()) * p->pp() * p->cp();
  if (!p->has_dp() && tp_pp > 0 && gpus > 0 && gpus % tp_pp == 0) {
    p->set_dp(static_cast<int32_t>(gpus / tp_pp));
  }
  if (!p->has_global_batch() && p->has_dp() && p->dp() > 0 && p->micro_batch() > 0) {
    int64_t gb = static_cast<int64_t>(p->micro_batch()) * p->dp();
    if (gb <= std::numeric_limits<int32_t>::max()) p->set_global_batch(static_cast<int32_t>(gb));
  }
  if (!p->has_schedule()) p->set_schedule(pb::Parallelism::ONE_F_ONE_B);
  if (!p->has_virtual_stages()) p->set_virtual_stages(1);
  if (!p->has_recompute()) p->set_recompute(pb::Parallelism::NONE);
  if (!p->has_sequence_parallel()) p->set_sequence_parallel(false);
  if (!p->has_zero_stage()) p->set_zero_stage(0);
  if (!p->has_overlap_grad_reduce()) p->set_overlap_grad_reduce(true);
  FillGradientDefaults(s);
  if (!p->has_overlap_p2p_comm()) p->set_overlap_p2p_comm(false);
  if (!p->has_tp_across_nodes()) p->set_tp_across_nodes(false);

  // ---- checkpoint ----
  pb::Checkpoint* ck = s->mutable_checkpoint();
  if (!ck->has_enabled()) ck->set_enabled(true);
  if (!ck->has_policy()) ck->set_policy(pb::Checkpoint::SYNC);
  if (ck->interval().empty()) ck->set_interval("1h");
  if (!ck->has_persistent_every()) ck->set_persistent_every(10);
  if (!ck->has_bytes_per_param()) ck->set_bytes_per_param(kDefaultBytesPerParam);

  // ---- recovery ----
  pb::Recovery* rc = s->mutable_recovery();
  if (!rc->has_policy()) rc->set_policy(pb::Recovery::RESTART_ON_SPARE);
  // Detection: no uniform delay by default; each mechanism's delay defaults in
  // checkpoint::DetectionDelays (cited there and in docs/faults.md).
  if (rc->requeue().empty()) rc->set_requeue("2m");
  if (rc->process_start().empty()) rc->set_process_start("3m");
  if (rc->comm_init_base().empty()) rc->set_comm_init_base("10s");
  if (rc->comm_init_per_1k_gpus().empty()) rc->set_comm_init_per_1k_gpus("2s");
  if (rc->repair_time().empty()) rc->set_repair_time("4h");
  if (!rc->has_min_dp()) rc->set_min_dp(1);

  // ---- failures ----
  pb::Failures* f = s->mutable_failures();
  if (!f->has_enabled()) f->set_enabled(true);
  if (!f->has_node_day_rate()) f->set_node_day_rate(kLlama3NodeDayRate);
  if (!f->has_distribution()) f->set_distribution(pb::Failures::EXPONENTIAL);
  if (!f->has_weibull_shape()) f->set_weibull_shape(kDefaultWeibullShape);
  if (f->causes_size() == 0) {
    // Llama 3 Table 5 by how each fault shows itself (validation/llama3_interruptions_54d.csv):
    // GPU rows that crash the process (faulty GPU 148, HBM3 72, SRAM 19, GSP 17, thermal 6) =
    // 262; silent data corruption 6; host rows = 46; network switch or cable = 35; NIC = 7;
    // software crashes (bugs 54, dependency 2) = 56; NCCL watchdog timeouts (hangs) = 7.
    AddCause(f, "GPU (faulty GPU, HBM3, SRAM, GSP, thermal)", pb::Fault::GPU, 262, true);
    AddCause(f, "Silent data corruption", pb::Fault::SDC, 6, true);
    AddCause(f, "Host (maintenance, SSD, PSU, chassis, IO board, CPU, memory)", pb::Fault::NODE, 46,
             true);
    AddCause(f, "Network switch or cable", pb::Fault::LINK, 35, false);
    AddCause(f, "NIC", pb::Fault::NIC, 7, true);
    AddCause(f, "Software (bugs, dependency)", pb::Fault::SOFTWARE, 56, false);
    AddCause(f, "NCCL watchdog timeout", pb::Fault::HANG, 7, false);
  }

  // ---- faults ----
  for (pb::Fault& fault : *s->mutable_faults()) {
    if (fault.kind() == pb::Fault::STRAGGLER && !fault.has_slowdown()) fault.set_slowdown(2.0);
    if (fault.kind() == pb::Fault::LINK && !fault.has_degrade()) fault.set_degrade(1.0);
  }

  // ---- cost, seed ----
  pb::Cost* cost = s->mutable_cost();
  FillCostDefaults(cost);
  if (!s->has_seed()) s->set_seed(1);
  return std::nullopt;
}

double FatTreeEndpoints(const pb::NicSpec& nic, int levels, double oversubscription) {
  // Two levels: each leaf has d = k*r/(r+1) down-links and k/(r+1) up-links, and each spine
  // reaches k leaves, so the tree holds k*d endpoints (k^2/2 when non-blocking). Three levels:
  // k pods of k/2 leaves and k/2 aggregation switches under (k/2)^2 cores, k^3/4 endpoints
  // non-blocking; an oversubscribed leaf has d instead of k/2 down-links.
  const double k = nic.switch_radix();
  const double d = k * oversubscription / (oversubscription + 1.0);
  return levels <= 2 ? k * d : k * (k / 2) * d;
}

bool TwoLevelFatTreeFits(const pb::NicSpec& nic, int64_t nodes, int64_t spare_nodes,
                         int64_t nics_per_node, double oversubscription) {
  double endpoints = static_cast<double>(nodes + spare_nodes) * static_cast<double>(nics_per_node);
  return endpoints <= FatTreeEndpoints(nic, 2, oversubscription);
}

}  // namespace detail

Status FillDefaults(pb::Scenario* scenario) {
  if (auto err = detail::FillDefaultsDetailed(scenario)) {
    return detail::ToStatus(*err, "", nullptr);
  }
  return Status::Ok();
}

}  // namespace trainsim::scenarios

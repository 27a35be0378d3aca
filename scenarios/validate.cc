// ValidateScenario: semantic checks on a defaulted scenario. Each message says what is wrong
// and what would be valid; the path names the field so the loader can point at its line.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <sstream>
#include <vector>

#include "checkpoint/failure_model.h"
#include "run/run_config.h"
#include "scenarios/internal.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

namespace trainsim::scenarios {
namespace detail {
namespace {

using Error = std::optional<FieldError>;

FieldError Err(std::string path, std::string message) {
  return FieldError{std::move(path), std::move(message), Status::Code::kInvalidArgument};
}

std::string Str(int64_t v) { return std::to_string(v); }
std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// An integer field in [lo, hi].
Error Range(const std::string& path, int64_t v, int64_t lo, int64_t hi, const char* what) {
  if (v < lo || v > hi) {
    return Err(path, Str(v) + " is out of range: " + what + " must be between " + Str(lo) +
                         " and " + Str(hi));
  }
  return std::nullopt;
}

Error Finite(const std::string& path, double v, double lo, double hi, bool lo_open,
             const char* what) {
  if (!std::isfinite(v)) return Err(path, Num(v) + " is not a finite number; " + what);
  if (v < lo || (lo_open && v == lo) || v > hi) {
    return Err(path, Num(v) + " is out of range: " + what + " must be " + (lo_open ? "> " : ">= ") +
                         Num(lo) + " and <= " + Num(hi));
  }
  return std::nullopt;
}

Error Duration(const std::string& path, const std::string& text, bool positive,
               sim::Time* out = nullptr) {
  auto t = sim::ParseDuration(text);
  if (!t.ok()) return Err(path, t.status().message());
  if (positive && *t == sim::Time::Zero()) return Err(path, "must be longer than 0");
  if (out != nullptr) *out = *t;
  return std::nullopt;
}

// Divisors of n, as "1, 2, 4, 8", for "what would be valid".
std::string Divisors(int64_t n) {
  std::string out;
  int count = 0;
  for (int64_t d = 1; d <= n && count < 24; ++d) {
    if (n % d == 0) {
      out += (out.empty() ? "" : ", ") + Str(d);
      ++count;
    }
  }
  return out;
}

namespace gp = google::protobuf;

// Walks every set field of `m` and its sub-messages in field-number order (deterministic); the
// first error `leaf` reports for a non-message value (its message, field, index in a repeated
// field or 0, and path such as "faults[2].kind") is returned.
using LeafCheck =
    std::function<Error(const gp::Message&, const gp::FieldDescriptor*, int, const std::string&)>;
Error FirstLeafError(const gp::Message& m, const std::string& prefix, const LeafCheck& leaf) {
  const gp::Reflection* r = m.GetReflection();
  std::vector<const gp::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const gp::FieldDescriptor* f : fields) {
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    for (int i = 0, n = f->is_repeated() ? r->FieldSize(m, f) : 1; i < n; ++i) {
      std::string p = f->is_repeated() ? path + "[" + Str(i) + "]" : path;
      Error e = f->message_type() != nullptr
                    ? FirstLeafError(
                          f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f),
                          p, leaf)
                    : leaf(m, f, i, p);
      if (e) return e;
    }
  }
  return std::nullopt;
}

// Proto3 enums are open: text format and JSON accept any number ("recompute: 7"). Only the
// declared values mean something.
Error CheckEnums(const gp::Message& m, const std::string& prefix) {
  return FirstLeafError(
      m, prefix,
      [](const gp::Message& msg, const gp::FieldDescriptor* f, int i,
         const std::string& p) -> Error {
        if (f->enum_type() == nullptr) return std::nullopt;
        const gp::Reflection* r = msg.GetReflection();
        int v = f->is_repeated() ? r->GetRepeatedEnumValue(msg, f, i) : r->GetEnumValue(msg, f);
        if (f->enum_type()->FindValueByNumber(v) != nullptr) return std::nullopt;
        return Err(p, Str(v) + " is not a value of " + f->name() +
                          " (valid: " + JoinNames(EnumNames(*f->enum_type())) + ")");
      });
}

}  // namespace

std::optional<FieldError> CheckUtf8(const google::protobuf::Message& m, const std::string& prefix) {
  return FirstLeafError(
      m, prefix,
      [](const gp::Message& msg, const gp::FieldDescriptor* f, int i,
         const std::string& p) -> Error {
        if (f->cpp_type() != gp::FieldDescriptor::CPPTYPE_STRING) return std::nullopt;
        const gp::Reflection* r = msg.GetReflection();
        std::string scratch;
        const std::string& v = f->is_repeated() ? r->GetRepeatedStringReference(msg, f, i, &scratch)
                                                : r->GetStringReference(msg, f, &scratch);
        std::optional<size_t> bad = FirstInvalidUtf8(v);
        if (!bad) return std::nullopt;
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", unsigned{static_cast<unsigned char>(v[*bad])});
        return Err(p, "is not valid UTF-8 text (byte " + std::string(hex) + " at byte " +
                          Str(static_cast<int64_t>(*bad)) +
                          " of the value); scenario text must be UTF-8");
      });
}

namespace {

Error ValidateCluster(const pb::Scenario& s) {
  const pb::Cluster& c = s.cluster();
  const pb::NodeSpec* node = FindNode(c.node_type());
  const pb::NicSpec* nic = FindNic(c.nic());
  if (node == nullptr || nic == nullptr || FindGpu(c.gpu()) == nullptr) {
    return Err("cluster", "catalogue names do not resolve (run FillDefaults first)");
  }
  if (c.gpus_per_node() < 1 || c.gpus_per_node() > node->gpus_per_node()) {
    return Err("cluster.gpus_per_node", Str(c.gpus_per_node()) + " GPUs per node: a " +
                                            node->name() + " node holds 1 to " +
                                            Str(node->gpus_per_node()));
  }
  // The upper bound is kMaxGpus below (its message says why); the range quoted is the real one
  // for cluster.gpus_per_node (65,536 nodes of 8 GPUs), not a looser sanity bound.
  if (c.nodes() < 1) {
    return Err("cluster.nodes", Str(c.nodes()) + " is out of range: nodes must be between 1 and " +
                                    Str((int64_t{1} << 19) / c.gpus_per_node()) + " (nodes of " +
                                    Str(c.gpus_per_node()) + " GPUs)");
  }
  // The memory bound that makes the node limit real: measured peak RSS (Release, bench/limits.sh
  // style) grows ~5.1 KB per node for `run` and ~6.3 KB per GPU of the group for `collective`
  // (a flow-network simulation of every rank). 2^19 GPUs keeps both under ~3.4 GB, within the
  // 4 GiB working memory trainsim promises (docs/hardening.md, "Inputs and limits"), and is
  // still above the largest clusters announced (~200,000 GPUs). At 10^6 nodes x 8, `run` took
  // 4-6 GB and `collective` over 12 GB and died with bad_alloc while `check` accepted it.
  constexpr int64_t kMaxGpus = int64_t{1} << 19;
  if (const int64_t gpus = int64_t{c.nodes()} * c.gpus_per_node(); gpus > kMaxGpus) {
    return Err("cluster.nodes",
               Str(c.nodes()) + " nodes x " + Str(c.gpus_per_node()) + " GPUs = " + Str(gpus) +
                   " GPUs is above the limit of " + Str(kMaxGpus) +
                   " GPUs (simulating them would need about " +
                   Str(static_cast<int64_t>(static_cast<double>(gpus) * 6.3e3 / 1e9 + 0.5)) +
                   " GB, beyond the 4 GiB working-memory bound); use at most " +
                   Str(kMaxGpus / c.gpus_per_node()) + " nodes");
  }
  if (FindGpu(c.gpu())->name() != node->gpu()) {
    return Err("cluster.gpu", c.gpu() + " does not fit node type " + node->name() + " (it holds " +
                                  node->gpu() + "); set cluster.node_type to a node with " +
                                  c.gpu() + " or leave it empty");
  }
  if (auto e = Range("cluster.nics_per_node", c.nics_per_node(), 1, 1024, "NICs per node"))
    return e;
  if (auto e = Range("cluster.spare_nodes", c.spare_nodes(), 0, 1000000, "spare nodes")) return e;
  const pb::Topology& t = c.topology();
  if (auto e = Finite("cluster.topology.oversubscription", t.oversubscription(), 1.0, 1000.0, false,
                      "oversubscription (down:up bandwidth, 1 = non-blocking)")) {
    return e;
  }
  if (t.levels() != 2 && t.levels() != 3) {
    return Err("cluster.topology.levels",
               Str(t.levels()) + " levels: a fat tree here has 2 (leaf-spine) or 3 levels");
  }
  // Three levels, rail-optimised: each rail a plane of its own (one NIC per node), as clusters
  // past a 3-level tree's k^3/4 endpoints are built; two levels count every NIC (as before).
  const bool planes = t.levels() == 3 && t.rail_optimized();
  const double nics = double(c.nodes() + c.spare_nodes()) * (planes ? 1 : c.nics_per_node());
  if (const double cap = FatTreeEndpoints(*nic, t.levels(), t.oversubscription()); nics > cap) {
    return Err("cluster.topology.levels",
               "a " + Str(t.levels()) + "-level fat tree of " + Str(nic->switch_radix()) +
                   "-port " + nic->name() + " switches holds at most " + Num(std::floor(cap)) +
                   " NICs at oversubscription " + Num(t.oversubscription()) +
                   "; this cluster has " + Num(nics) + (planes ? " per rail" : "") +
                   (t.levels() == 2 ? ": use levels: 3 or a higher oversubscription"
                                    : ": use a higher oversubscription, or fewer nodes"));
  }
  if (auto e = Finite("cluster.storage.read_gbyte_per_s", c.storage().read_gbyte_per_s(), 0, 1e9,
                      true, "storage read bandwidth (GB/s)")) {
    return e;
  }
  if (auto e = Finite("cluster.storage.write_gbyte_per_s", c.storage().write_gbyte_per_s(), 0, 1e9,
                      true, "storage write bandwidth (GB/s)")) {
    return e;
  }
  // Checked here, not only when the step is configured, so that the message carries the file,
  // line and column of the field like every other bad value.
  if (!c.memory_headroom().empty()) {
    Result<double> h =
        MemoryHeadroomBytes(c.memory_headroom(), double(FindGpu(c.gpu())->hbm_bytes()));
    if (!h.ok()) {
      std::string why = h.status().message();
      const std::string prefix = "cluster.memory_headroom ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      return Err("cluster.memory_headroom", why);
    }
  }
  return std::nullopt;
}

Error ValidateModel(const pb::Scenario& s) {
  const pb::Model& m = s.model();
  for (const char* f : {"layers", "hidden", "heads"}) {
    const auto* fd = pb::Model::descriptor()->FindFieldByName(f);
    if (!m.GetReflection()->HasField(m, fd)) {
      return Err(std::string("model.") + f,
                 std::string("is required (the model has no default ") + f +
                     "); e.g. GPT-3 175B: layers 96, hidden 12288, heads 96");
    }
  }
  if (auto e = Range("model.layers", m.layers(), 1, 100000, "layers")) return e;
  if (auto e = Range("model.hidden", m.hidden(), 1, 1 << 20, "hidden")) return e;
  if (auto e = Range("model.heads", m.heads(), 1, m.hidden(), "heads")) return e;
  if (m.hidden() % m.heads() != 0) {
    return Err("model.heads", "hidden " + Str(m.hidden()) + " is not divisible by heads " +
                                  Str(m.heads()) + "; heads must divide hidden (e.g. one of " +
                                  Divisors(m.hidden()) + ")");
  }
  if (auto e = Range("model.kv_heads", m.kv_heads(), 1, m.heads(), "kv_heads")) return e;
  if (m.heads() % m.kv_heads() != 0) {
    return Err("model.kv_heads", "heads " + Str(m.heads()) + " is not divisible by kv_heads " +
                                     Str(m.kv_heads()) + "; use one of " + Divisors(m.heads()));
  }
  if (auto e = Range("model.ffn_hidden", m.ffn_hidden(), 1, 1 << 24, "ffn_hidden")) return e;
  if (auto e = Range("model.seq_len", m.seq_len(), 1, 1 << 24, "seq_len")) return e;
  if (auto e = Range("model.vocab", m.vocab(), 1, 1 << 30, "vocab")) return e;
  if (auto e = Range("model.head_dim", m.head_dim(), 1, 1 << 16, "head_dim")) return e;
  if (m.has_moe()) {
    const pb::Moe& e = m.moe();
    if (!e.has_experts() || !e.has_top_k()) {
      return Err(e.has_experts() ? "model.moe.top_k" : "model.moe.experts",
                 "is required in a moe block (e.g. Mixtral 8x7B: experts 8, top_k 2)");
    }
    if (auto r = Range("model.moe.experts", e.experts(), 1, 1 << 16, "experts")) return r;
    if (e.top_k() > e.experts()) {
      return Err("model.moe.top_k", "top_k " + Str(e.top_k()) + " exceeds the " + Str(e.experts()) +
                                        " experts; use 1 to " + Str(e.experts()));
    }
    if (auto r = Range("model.moe.top_k", e.top_k(), 1, e.experts(), "top_k")) return r;
    if (auto r = Range("model.moe.expert_ffn_hidden", e.expert_ffn_hidden(), 1, 1 << 24,
                       "expert_ffn_hidden")) {
      return r;
    }
    if (auto r =
            Range("model.moe.shared_experts", e.shared_experts(), 0, 1 << 10, "shared_experts")) {
      return r;
    }
    if (auto r = Range("model.moe.shared_expert_ffn_hidden", e.shared_expert_ffn_hidden(), 0,
                       1 << 26, "shared_expert_ffn_hidden")) {
      return r;
    }
    if (auto r = Range("model.moe.first_dense_layers", e.first_dense_layers(), 0, m.layers() - 1,
                       "first_dense_layers (at least one layer must be MoE)")) {
      return r;
    }
    if (auto r = Finite("model.moe.capacity_factor", e.capacity_factor(), 0, 1e6, false,
                        "capacity_factor (0 = dropless)"))
      return r;
    const double max_imbalance = double(e.experts()) / e.top_k();
    if (auto r = Finite("model.moe.load_imbalance", e.load_imbalance(), 1.0, max_imbalance, false,
                        "load_imbalance (busiest expert / mean, at most experts / top_k)")) {
      return r;
    }
  }
  if (m.has_mla()) {
    const pb::Mla& a = m.mla();
    if (auto r = Range("model.mla.kv_lora_rank", a.kv_lora_rank(), 1, 1 << 16, "kv_lora_rank")) {
      return r;
    }
    if (auto r = Range("model.mla.q_lora_rank", a.q_lora_rank(), 0, 1 << 16, "q_lora_rank")) {
      return r;
    }
    if (auto r = Range("model.mla.qk_rope_head_dim", a.qk_rope_head_dim(), 0, 1 << 12,
                       "qk_rope_head_dim")) {
      return r;
    }
    if (auto r = Range("model.mla.qk_nope_head_dim", a.qk_nope_head_dim(), 1, 1 << 12,
                       "qk_nope_head_dim")) {
      return r;
    }
    if (auto r = Range("model.mla.v_head_dim", a.v_head_dim(), 1, 1 << 12, "v_head_dim")) return r;
  }
  if (s.parallelism().has_grad_reduce_in_fp32() && !s.parallelism().grad_reduce_in_fp32() &&
      m.precision() == pb::TF32) {
    return Err("parallelism.grad_reduce_in_fp32",
               "false needs 16-bit parameters (precision BF16, FP16, FP8 or FP4); with TF32 the "
               "parameters and their gradients are fp32");
  }
  const pb::GpuSpec* gpu = FindGpu(s.cluster().gpu());
  if (PeakTflops(*gpu, m.precision()) <= 0) {
    return Err("model.precision", gpu->name() + " has no " + pb::Precision_Name(m.precision()) +
                                      " tensor cores; use BF16 or FP16");
  }
  return std::nullopt;
}

Error ValidateExpertAndContext(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const pb::Model& m = s.model();
  const int64_t gpus = static_cast<int64_t>(s.cluster().nodes()) * s.cluster().gpus_per_node();
  if (auto e = Range("parallelism.ep", p.ep(), 1, gpus, "ep")) return e;
  if (auto e = Range("parallelism.etp", p.etp(), 1, gpus, "etp")) return e;
  if (!m.has_moe() && (p.ep() > 1 || p.etp() > 1)) {
    return Err(p.ep() > 1 ? "parallelism.ep" : "parallelism.etp",
               "expert parallelism needs a mixture-of-experts model (set model.moe { experts, "
               "top_k })");
  }
  if (m.has_moe()) {
    const int64_t block = static_cast<int64_t>(p.tp()) * p.cp() * p.dp();
    if (m.moe().experts() % p.ep() != 0) {
      return Err("parallelism.ep", "ep " + Str(p.ep()) + " must divide the " +
                                       Str(m.moe().experts()) + " experts (one of " +
                                       Divisors(m.moe().experts()) + ")");
    }
    if (m.moe().expert_ffn_hidden() % p.etp() != 0) {
      return Err("parallelism.etp", "etp " + Str(p.etp()) +
                                        " must divide model.moe.expert_ffn_hidden " +
                                        Str(m.moe().expert_ffn_hidden()));
    }
    if (block % (static_cast<int64_t>(p.ep()) * p.etp()) != 0) {
      return Err(p.has_etp() && block % p.ep() == 0 ? "parallelism.etp" : "parallelism.ep",
                 "ep x etp = " + Str(p.ep()) + " x " + Str(p.etp()) +
                     " must divide tp x cp x dp = " + Str(block) +
                     " (Megatron-Core folds experts into the same ranks)");
    }
  }
  if (p.cp() > 1 && m.seq_len() % (2 * p.cp()) != 0) {
    return Err("parallelism.cp", "seq_len " + Str(m.seq_len()) + " must split into 2 x cp = " +
                                     Str(2 * p.cp()) + " equal chunks for causal load balancing");
  }
  // Megatron's sequence parallelism splits the sequence over TP (parallelism::ValidateLayout).
  if (p.sequence_parallel() && p.tp() > 1 && m.seq_len() % p.tp() != 0) {
    return Err("parallelism.sequence_parallel",
               "sequence parallelism needs tp " + Str(p.tp()) + " to divide model.seq_len " +
                   Str(m.seq_len()) + "; turn it off, or use a tp that divides seq_len");
  }
  if (p.cp() > 1 && p.cp_comm() == pb::Parallelism::A2A &&
      (m.heads() % (static_cast<int64_t>(p.tp()) * p.cp()) != 0 || m.kv_heads() % p.cp() != 0)) {
    return Err("parallelism.cp_comm", "A2A (Ulysses) needs tp x cp = " + Str(p.tp() * p.cp()) +
                                          " to divide heads " + Str(m.heads()) +
                                          " and cp to divide kv_heads " + Str(m.kv_heads()) +
                                          "; use P2P or ALL_GATHER");
  }
  // NCCL accepts 1..MAXCHANNELS (64 since NCCL 2.23, step/comm_sm_share.h); 0 = unset.
  if (auto e = Range("parallelism.nccl_min_ctas", p.nccl_min_ctas(), 0, 64, "nccl_min_ctas")) {
    return e;
  }
  if (auto e = Range("parallelism.nccl_max_ctas", p.nccl_max_ctas(), 0, 64, "nccl_max_ctas")) {
    return e;
  }
  if (p.nccl_max_ctas() > 0 && p.nccl_min_ctas() > p.nccl_max_ctas()) {
    return Err("parallelism.nccl_min_ctas", "nccl_min_ctas " + Str(p.nccl_min_ctas()) +
                                                " must not exceed nccl_max_ctas " +
                                                Str(p.nccl_max_ctas()));
  }
  // No GPU has more than 256 SMs (0 = HybridEP's default).
  if (auto e = Range("parallelism.moe_flex_sms", p.moe_flex_sms(), 0, 256, "SMs")) return e;
  if (auto e = Range("parallelism.shard_group", p.shard_group(), 0, gpus, "shard_group")) return e;
  if (p.shard_group() > 0 && p.dp() % p.shard_group() != 0) {
    return Err("parallelism.shard_group", "shard_group " + Str(p.shard_group()) +
                                              " must divide dp " + Str(p.dp()) + " (one of " +
                                              Divisors(p.dp()) + "; 0 shards over all of DP)");
  }
  if (p.shard_group() > 0 && p.zero_stage() == 0) {
    return Err("parallelism.shard_group", "needs zero_stage 1, 2 or 3 (zero_stage is 0)");
  }
  return std::nullopt;
}

Error ValidateStageLayers(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const pb::Model& m = s.model();
  const int v = p.virtual_stages();
  const bool uneven = p.has_first_stage_layers() || p.has_last_stage_layers();
  if (!uneven) {
    int64_t chunks = static_cast<int64_t>(p.pp()) * v;
    if (m.layers() % chunks == 0) return std::nullopt;
    std::string what =
        v > 1 ? "pp x virtual_stages = " + Str(p.pp()) + " x " + Str(v) + " = " + Str(chunks)
              : "pp " + Str(p.pp());
    return Err(v > 1 ? "parallelism.virtual_stages" : "parallelism.pp",
               "layers " + Str(m.layers()) + " is not divisible by " + what + " (divisors of " +
                   Str(m.layers()) + ": " + Divisors(m.layers()) +
                   "); or set parallelism.first_stage_layers / last_stage_layers for an uneven "
                   "split");
  }
  if (p.pp() < 2) {
    return Err(p.has_first_stage_layers() ? "parallelism.first_stage_layers"
                                          : "parallelism.last_stage_layers",
               "needs pp >= 2 (pp is " + Str(p.pp()) + ")");
  }
  int64_t rest = m.layers(), free_ranks = p.pp();
  if (p.has_first_stage_layers()) {
    if (auto e = Range("parallelism.first_stage_layers", p.first_stage_layers(), 0, m.layers(),
                       "first_stage_layers")) {
      return e;
    }
    rest -= p.first_stage_layers();
    --free_ranks;
  }
  if (p.has_last_stage_layers()) {
    if (auto e = Range("parallelism.last_stage_layers", p.last_stage_layers(), 0, m.layers(),
                       "last_stage_layers")) {
      return e;
    }
    rest -= p.last_stage_layers();
    --free_ranks;
  }
  const std::string field = p.has_last_stage_layers() ? "parallelism.last_stage_layers"
                                                      : "parallelism.first_stage_layers";
  if (rest < 0 || (free_ranks > 0 && rest < free_ranks)) {
    return Err(field, "first/last stage layers leave " + Str(rest) + " of the " + Str(m.layers()) +
                          " layers for the other " + Str(free_ranks) +
                          " stages; each stage needs at least one layer");
  }
  if (free_ranks == 0 && rest != 0) {
    return Err(field, "with pp 2 the first and last stage layers must add up to the " +
                          Str(m.layers()) + " layers");
  }
  if (free_ranks > 0 && rest % (free_ranks * v) != 0) {
    return Err(field, "the " + Str(rest) + " layers left for the " + Str(free_ranks) +
                          " middle stages do not divide evenly into " + Str(free_ranks) + " x " +
                          Str(v) + " chunks");
  }
  // With v chunks per stage, an end stage may be one layer short of a multiple of v: its first
  // (last) chunk then holds only the embedding (the loss), as Llama 3 ran (Megatron's
  // account_for_embedding/loss_in_pipeline_split).
  for (int given : {p.first_stage_layers(), p.last_stage_layers()}) {
    if (given % v != 0 && given % v != v - 1) {
      return Err(field, "stage layers " + Str(given) + " must be a multiple of virtual_stages " +
                            Str(v) +
                            ", or one less (the end chunk then holds only the "
                            "embedding or the loss)");
    }
  }
  return std::nullopt;
}

Error ValidateParallelism(const pb::Scenario& s) {
  const pb::Parallelism& p = s.parallelism();
  const pb::Model& m = s.model();
  const pb::Cluster& c = s.cluster();
  int64_t gpus = static_cast<int64_t>(c.nodes()) * c.gpus_per_node();
  std::string gpu_text =
      Str(gpus) + " GPUs (" + Str(c.nodes()) + " nodes x " + Str(c.gpus_per_node()) + ")";
  if (auto e = Range("parallelism.tp", p.tp(), 1, gpus, "tp")) return e;
  if (auto e = Range("parallelism.pp", p.pp(), 1, gpus, "pp")) return e;
  if (auto e = Range("parallelism.cp", p.cp(), 1, gpus, "cp")) return e;
  const bool with_cp = p.cp() > 1;
  const std::string tp_pp_text = with_cp ? "tp x cp x pp" : "tp x pp";
  const std::string tp_pp_values =
      Str(p.tp()) + " x " + (with_cp ? Str(p.cp()) + " x " : std::string()) + Str(p.pp());
  int64_t tp_pp = static_cast<int64_t>(p.tp()) * p.pp() * p.cp();
  if (!p.has_dp()) {
    return Err("parallelism", tp_pp_text + " = " + tp_pp_values + " = " + Str(tp_pp) +
                                  " does not divide the " + gpu_text + "; choose " + tp_pp_text +
                                  " from " + Divisors(gpus));
  }
  if (auto e = Range("parallelism.dp", p.dp(), 1, gpus, "dp")) return e;
  if (tp_pp * p.dp() != gpus) {
    std::string hint = gpus % tp_pp == 0 ? "; with " + tp_pp_text + " = " + tp_pp_values +
                                               ", dp would be " + Str(gpus / tp_pp)
                                         : "";
    return Err("parallelism.dp", tp_pp_text + " x dp = " + tp_pp_values + " x " + Str(p.dp()) +
                                     " = " + Str(tp_pp * p.dp()) + " must equal the " + gpu_text +
                                     hint);
  }
  if (auto e = ValidateExpertAndContext(s)) return e;
  if (m.heads() % p.tp() != 0) {
    return Err("parallelism.tp", "heads " + Str(m.heads()) + " is not divisible by tp " +
                                     Str(p.tp()) + "; tp must divide heads (one of " +
                                     Divisors(m.heads()) + ")");
  }
  if (m.kv_heads() % p.tp() != 0) {
    return Err("parallelism.tp", "kv_heads " + Str(m.kv_heads()) + " is not divisible by tp " +
                                     Str(p.tp()) + " (Megatron splits query groups across TP)");
  }
  if (m.ffn_hidden() % p.tp() != 0) {
    return Err("parallelism.tp",
               "ffn_hidden " + Str(m.ffn_hidden()) + " is not divisible by tp " + Str(p.tp()));
  }
  if (auto e = ValidateTpPlacement(s)) return e;
  if (auto e = Range("parallelism.virtual_stages", p.virtual_stages(), 1, 1024, "virtual_stages")) {
    return e;
  }
  if (p.virtual_stages() > 1 && p.schedule() == pb::Parallelism::GPIPE) {
    return Err("parallelism.virtual_stages",
               "virtual_stages > 1 (interleaving) needs schedule ONE_F_ONE_B, not GPIPE");
  }
  if (p.virtual_stages() > 1 && p.pp() < 2) {
    return Err("parallelism.virtual_stages", "virtual_stages " + Str(p.virtual_stages()) +
                                                 " needs pipeline parallelism (pp >= 2)");
  }
  if (auto e = ValidateStageLayers(s)) return e;
  if (auto e = Range("parallelism.micro_batch", p.micro_batch(), 1, 1 << 20, "micro_batch")) {
    return e;
  }
  if (!p.has_global_batch()) {
    return Err("parallelism.global_batch", "micro_batch x dp overflows; set global_batch");
  }
  if (auto e = Range("parallelism.global_batch", p.global_batch(), 1, 1 << 30, "global_batch")) {
    return e;
  }
  int64_t per_step = static_cast<int64_t>(p.micro_batch()) * p.dp();
  if (p.global_batch() % per_step != 0) {
    return Err("parallelism.global_batch",
               "global_batch " + Str(p.global_batch()) +
                   " is not divisible by micro_batch x dp = " + Str(p.micro_batch()) + " x " +
                   Str(p.dp()) + " = " + Str(per_step) + "; use a multiple of " + Str(per_step) +
                   " (e.g. " + Str(std::max<int64_t>(1, p.global_batch() / per_step) * per_step) +
                   ")");
  }
  int64_t micro_batches = p.global_batch() / per_step;
  if (p.virtual_stages() > 1 && micro_batches % p.pp() != 0) {
    return Err("parallelism.global_batch",
               "the interleaved schedule needs the micro-batches per step (" + Str(micro_batches) +
                   " = global_batch / (micro_batch x dp)) to be a multiple of pp " + Str(p.pp()) +
                   " (Megatron-LM's requirement)");
  }
  if (p.sequence_parallel() && p.tp() < 2) {
    return Err("parallelism.sequence_parallel",
               "sequence parallelism splits activations across tensor-parallel ranks and needs "
               "tp >= 2 (tp is " +
                   Str(p.tp()) + ")");
  }
  if (auto e = Range("parallelism.zero_stage", p.zero_stage(), 0, 3, "zero_stage")) return e;
  if (p.zero_stage() == 3 && p.pp() > 1) {
    return Err("parallelism.zero_stage",
               "ZeRO-3 (FSDP) with pipeline parallelism (pp " + Str(p.pp()) +
                   ") is not supported: every micro-batch would re-gather each stage's weights; "
                   "use zero_stage 1 or 2 with pp > 1, or pp 1 with zero_stage 3");
  }
  if (auto e = Range("parallelism.dp_bucket_bytes", p.dp_bucket_bytes(), 0, int64_t{1} << 40,
                     "dp_bucket_bytes")) {
    return e;
  }
  return std::nullopt;
}

Error ValidateTraining(const pb::Scenario& s, std::optional<sim::Time>* end) {
  const pb::Training& t = s.training();
  switch (t.goal_case()) {
    case pb::Training::kTokens:
      return Range("training.tokens", t.tokens(), 1, int64_t{1} << 60, "tokens");
    case pb::Training::kSteps:
      return Range("training.steps", t.steps(), 1, int64_t{1} << 40, "steps");
    case pb::Training::kDuration: {
      sim::Time d;
      if (auto e = Duration("training.duration", t.duration(), true, &d)) return e;
      // The run simulation covers up to RunConfig::max_wall_time; `run` refused a longer one
      // only after simulating that far.
      if (const sim::Time most = run::RunConfig{}.max_wall_time; d > most) {
        return Err("training.duration", "must be at most " + sim::FormatDuration(most) +
                                            " (the span the run simulation covers), got " +
                                            t.duration());
      }
      *end = d;
      return std::nullopt;
    }
    case pb::Training::GOAL_NOT_SET:
      break;
  }
  return Err("training",
             "set how long to train: one of tokens, steps or duration (e.g. "
             "training { duration: \"21d\" })");
}

Error ValidateCheckpoint(const pb::Scenario& s) {
  const pb::Checkpoint& c = s.checkpoint();
  auto interval = checkpoint::ParseCheckpointInterval(c.interval());
  if (!interval.ok()) return Err("checkpoint.interval", interval.status().message());
  if (auto e = Range("checkpoint.persistent_every", c.persistent_every(), 1, 1000000,
                     "persistent_every")) {
    return e;
  }
  if (c.has_keep_last()) {
    if (auto e = Range("checkpoint.keep_last", c.keep_last(), 0, 1000000,
                       "keep_last (checkpoints kept in storage; 0 = all)")) {
      return e;
    }
  }
  return Finite("checkpoint.bytes_per_param", c.bytes_per_param(), 0, 1000, true,
                "bytes per parameter (14 = bf16 weights + fp32 master + Adam moments)");
}

Error ValidateRecovery(const pb::Scenario& s) {
  const pb::Recovery& r = s.recovery();
  if (!r.detection_delay().empty()) {  // the legacy uniform override; unset = per mechanism
    if (auto e = Duration("recovery.detection_delay", r.detection_delay(), false)) return e;
  }
  if (auto e = Duration("recovery.requeue", r.requeue(), false)) return e;
  if (auto e = Duration("recovery.process_start", r.process_start(), false)) return e;
  if (auto e = Duration("recovery.comm_init_base", r.comm_init_base(), false)) return e;
  if (auto e = Duration("recovery.comm_init_per_1k_gpus", r.comm_init_per_1k_gpus(), false)) {
    return e;
  }
  if (auto e = Duration("recovery.repair_time", r.repair_time(), false)) return e;
  const pb::Recovery::Detect& d = r.detect();
  for (const auto& [field, text] :
       {std::pair{"process_exit", &d.process_exit()}, std::pair{"nccl_error", &d.nccl_error()},
        std::pair{"heartbeat", &d.heartbeat()},
        std::pair{"collective_timeout", &d.collective_timeout()},
        std::pair{"loss_check", &d.loss_check()}}) {
    if (text->empty()) continue;
    if (auto e = Duration(std::string("recovery.detect.") + field, *text, false)) return e;
  }
  const pb::Recovery::Straggler& st = r.straggler();
  if (!st.detect_after().empty()) {
    if (auto e = Duration("recovery.straggler.detect_after", st.detect_after(), false)) return e;
  }
  if (st.has_threshold() && !(std::isfinite(st.threshold()) && st.threshold() > 1)) {
    return Err("recovery.straggler.threshold",
               Num(st.threshold()) + " must be > 1 (a step-time factor: 1.1 = 10% slower)");
  }
  return Range("recovery.min_dp", r.min_dp(), 1, s.parallelism().dp(),
               "min_dp (the smallest data-parallel degree ELASTIC continues with)");
}

Error ValidateFailures(const pb::Scenario& s) {
  const pb::Failures& f = s.failures();
  if (auto e = Finite("failures.node_day_rate", f.node_day_rate(), 0, 1000, false,
                      "failures per node-day (Llama 3: 0.0038)")) {
    return e;
  }
  // Lower bound: checkpoint::kMinWeibullShape (below it the scale underflows 1 ns and every gap
  // rounds to 0, which hung run, whatif and sweep).
  if (auto e = Finite("failures.weibull_shape", f.weibull_shape(), checkpoint::kMinWeibullShape,
                      100, false,
                      "Weibull shape k (below 0.1 the scale underflows the 1 ns time resolution; "
                      "published fits are 0.5-0.8)")) {
    return e;
  }
  double sum = 0;
  for (int i = 0; i < f.causes_size(); ++i) {
    const pb::FailureCause& c = f.causes(i);
    std::string path = "failures.causes[" + Str(i) + "]";
    if (c.kind() == pb::Fault::KIND_UNSPECIFIED || c.kind() == pb::Fault::STRAGGLER) {
      return Err(path + ".kind",
                 "a failure cause takes out one of GPU, NODE, NIC, LINK, HANG, SOFTWARE or SDC");
    }
    if (auto e = Finite(path + ".fraction", c.fraction(), 0, 1, false, "fraction")) return e;
    sum += c.fraction();
  }
  if (std::fabs(sum - 1.0) > 1e-3) {
    return Err("failures.causes", "fractions sum to " + Num(sum) + "; they must sum to 1");
  }
  return std::nullopt;
}

}  // namespace

Error ValidateInputAndHost(const pb::Scenario& s) {
  const pb::Input& in = s.input();
  if (auto e = Range("input.workers", in.workers(), 1, 4096, "loader workers per node")) return e;
  if (auto e = Finite("input.cpu_ms_per_sample", in.cpu_ms_per_sample(), 0, 1e7, false,
                      "CPU time per sample (ms)")) {
    return e;
  }
  if (auto e = Range("input.prefetch", in.prefetch(), 0, 1000000, "micro-batches per worker")) {
    return e;
  }
  if (s.input().has_read_gbyte_per_s()) {
    if (auto e = Finite("input.read_gbyte_per_s", in.read_gbyte_per_s(), 0, 1e9, true,
                        "read bandwidth per node (GB/s)")) {
      return e;
    }
  }
  if (auto e = Range("input.bytes_per_sample", in.bytes_per_sample(), 0, int64_t(1) << 50,
                     "bytes per sample")) {
    return e;
  }
  if (auto e = Finite("host.launch_us", s.host().launch_us(), 0, 1e6, false,
                      "host time per kernel launch (us)")) {
    return e;
  }
  return Finite("host.step_ms", s.host().step_ms(), 0, 1e9, false,
                "host framework time per step (ms)");
}

std::optional<FieldError> ValidateDetailed(const pb::Scenario& s) {
  if (auto e = CheckUtf8(s, "")) return e;
  if (auto e = CheckEnums(s, "")) return e;
  if (auto e = ValidateCluster(s)) return e;
  if (auto e = ValidateModel(s)) return e;
  if (auto e = ValidateParallelism(s)) return e;
  if (auto e = ValidateHybridModel(s)) return e;
  if (auto e = ValidateRecomputeModules(s)) return e;
  if (auto e = ValidateInputAndHost(s)) return e;
  std::optional<sim::Time> end;
  if (auto e = ValidateTraining(s, &end)) return e;
  if (auto e = ValidateCheckpoint(s)) return e;
  if (auto e = ValidateRecovery(s)) return e;
  if (auto e = ValidateFailures(s)) return e;
  if (auto e = ValidateCost(s.cost())) return e;
  for (int i = 0; i < s.faults_size(); ++i) {
    if (auto e = CheckFault(s.faults(i), s.cluster().nodes(), s.cluster().gpus_per_node(),
                            s.cluster().nics_per_node(), end)) {
      return Err("faults[" + Str(i) + "]." + e->first, e->second);
    }
  }
  return std::nullopt;
}

}  // namespace detail

Status ValidateScenario(const pb::Scenario& scenario) {
  if (auto err = detail::ValidateDetailed(scenario)) return detail::ToStatus(*err, "", nullptr);
  return Status::Ok();
}

}  // namespace trainsim::scenarios

// ModelFromHfConfig (scenarios/presets.h): a Hugging Face config.json as a trainsim model.
//
// Field names are those of transformers' configuration classes: LlamaConfig / MistralConfig /
// Qwen2Config / Qwen3Config (dense), MixtralConfig and GptOssConfig (num_local_experts,
// num_experts_per_tok or experts_per_token), Qwen2MoeConfig / Qwen3MoeConfig (num_experts,
// moe_intermediate_size, shared_expert_intermediate_size), DeepseekV3Config (n_routed_experts,
// n_shared_experts, first_k_dense_replace and the MLA ranks), Llama4TextConfig (a shared expert,
// intermediate_size_mlp, interleave_moe_layer_step) and Gemma3TextConfig (GeGLU,
// sliding_window_pattern); a multimodal config's text_config (Llama 4, Gemma 3).
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "scenarios/presets.h"
#include "sim/json_reason.h"

namespace trainsim::scenarios {
namespace {

using nlohmann::json;

// 1-based line and column of byte offset `byte` in `text`.
std::pair<int, int> LineColumn(std::string_view text, size_t byte) {
  int line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

class ConfigReader {
 public:
  ConfigReader(const json& config, std::string name) : c_(config), name_(std::move(name)) {}

  bool Has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }

  // A positive integer field; nullopt (and an error) when absent or not one.
  std::optional<int32_t> Required(const char* key, const char* what) {
    if (!Has(key)) {
      Fail(std::string("missing \"") + key + "\" (" + what + ")");
      return std::nullopt;
    }
    return Positive(key, what);
  }

  // A positive integer field when present; `fallback` when absent.
  std::optional<int32_t> Optional(const char* key, const char* what, int32_t fallback) {
    if (!Has(key)) return fallback;
    return Positive(key, what);
  }

  // A non-negative integer field when present (0 and null allowed: "no LoRA rank").
  int32_t NonNegative(const char* key, const char* what) {
    if (!Has(key)) return 0;
    const json& v = c_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      Fail(std::string("\"") + key + "\" (" + what + ") must be a whole number >= 0, got " +
           v.dump());
      return 0;
    }
    return static_cast<int32_t>(v.get<int64_t>());
  }

  // A boolean field when present (an error when it is not one: "false" in quotes would
  // otherwise read as the fallback); `fallback` when absent.
  bool Bool(const char* key, bool fallback) {
    if (!Has(key)) return fallback;
    if (!c_[key].is_boolean()) {
      Fail(std::string("\"") + key + "\" must be true or false, got " + c_[key].dump());
      return fallback;
    }
    return c_[key].get<bool>();
  }
  double Number(const char* key, double fallback) const {
    return Has(key) && c_[key].is_number() ? c_[key].get<double>() : fallback;
  }
  std::string String(const char* key) const {
    return Has(key) && c_[key].is_string() ? c_[key].get<std::string>() : std::string();
  }
  const json& Get(const char* key) const { return c_[key]; }

  bool ok() const { return error_.empty(); }
  Status status() const { return Status::InvalidArgument(name_ + ": " + error_); }

 private:
  std::optional<int32_t> Positive(const char* key, const char* what) {
    const json& v = c_[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      Fail(std::string("\"") + key + "\" (" + what + ") must be a positive whole number, got " +
           v.dump());
      return std::nullopt;
    }
    return static_cast<int32_t>(v.get<int64_t>());
  }
  void Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  const json& c_;
  std::string name_;
  std::string error_;
};

// The routed-expert count under the name each family uses.
const char* ExpertsKey(const ConfigReader& r) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (r.Has(key)) return key;
  }
  return nullptr;
}

void ReadMoe(ConfigReader& r, pb::Model* m, std::vector<std::string>* notes) {
  const char* experts_key = ExpertsKey(r);
  if (experts_key == nullptr) return;
  pb::Moe* moe = m->mutable_moe();
  if (auto e = r.Required(experts_key, "routed experts per MoE layer")) moe->set_experts(*e);
  // num_experts_per_tok in most families, experts_per_token in GPT-OSS's.
  if (!r.Has("num_experts_per_tok") && !r.Has("experts_per_token")) {
    r.Required("num_experts_per_tok",
               "experts each token is routed to; GPT-OSS names it experts_per_token");
  } else if (auto k = r.Required(
                 r.Has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token",
                 "experts each token is routed to")) {
    moe->set_top_k(*k);
  }
  if (r.Has("moe_intermediate_size")) {
    if (auto f = r.Required("moe_intermediate_size", "FFN width of one expert")) {
      moe->set_expert_ffn_hidden(*f);
    }
  } else if (m->has_ffn_hidden()) {
    moe->set_expert_ffn_hidden(m->ffn_hidden());  // Mixtral, GPT-OSS: intermediate_size
  }
  moe->set_shared_experts(0);
  if (r.Has("n_shared_experts")) {  // DeepSeek: n shared experts of the routed width
    const int32_t n = r.NonNegative("n_shared_experts", "shared experts");
    moe->set_shared_experts(n);
    moe->set_shared_expert_ffn_hidden(n * moe->expert_ffn_hidden());
  } else if (r.Has("shared_expert_intermediate_size")) {  // Qwen2-MoE: one shared expert
    const int32_t f = r.NonNegative("shared_expert_intermediate_size", "shared expert FFN width");
    moe->set_shared_experts(f > 0 ? 1 : 0);
    moe->set_shared_expert_ffn_hidden(f);
  }
  moe->set_first_dense_layers(r.NonNegative("first_k_dense_replace", "leading dense layers"));
  if (r.String("model_type") == "llama4_text") {
    // Llama4TextMoe: one shared expert beside the routed ones, both intermediate_size wide; the
    // dense layers between MoE layers use intermediate_size_mlp; a MoE layer every
    // interleave_moe_layer_step-th layer (moe_layers = range(step - 1, layers, step)).
    moe->set_shared_experts(1);
    moe->set_shared_expert_ffn_hidden(moe->expert_ffn_hidden());
    if (r.Has("intermediate_size_mlp")) {
      if (auto f = r.Required("intermediate_size_mlp", "dense layers' MLP inner size")) {
        m->set_ffn_hidden(*f);
      }
    }
    if (auto k = r.Optional("interleave_moe_layer_step", "every k-th layer MoE", 1)) {
      moe->set_interleave_step(*k);
    }
    if (r.Has("moe_layers") && r.Get("moe_layers").is_array()) {
      notes->push_back("moe_layers " + r.Get("moe_layers").dump() +
                       " not read: every interleave_moe_layer_step-th layer is taken as MoE");
    }
    if (r.Has("attention_chunk_size")) {
      notes->push_back("attention_chunk_size " + r.Get("attention_chunk_size").dump() +
                       " (chunked attention on the RoPE layers) not modelled: full causal "
                       "attention, the same up to sequences of that length");
    }
  }
  if (r.Has("mlp_only_layers") && r.Get("mlp_only_layers").is_array() &&
      !r.Get("mlp_only_layers").empty()) {
    notes->push_back(
        "mlp_only_layers " + r.Get("mlp_only_layers").dump() +
        " not modelled: the MoE layers are those interleave_step places after first_dense_layers");
  }
  // Qwen2/3-MoE: layer i is MoE when (i + 1) % decoder_sparse_step == 0, the layers
  // interleave_step places (every k-th, the last of each group of k).
  if (r.Has("decoder_sparse_step")) {
    if (auto k = r.Optional("decoder_sparse_step", "every k-th layer MoE", 1); k && *k > 1) {
      moe->set_interleave_step(*k);
    }
  }
  // DeepSeek-V2/V3: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0;
  // interleave_step k puts them where (i + 1) % k == 0 (Llama 4's and Qwen's): one layer
  // earlier, as many or one more or fewer. Said with both counts.
  if (r.Has("moe_layer_freq")) {
    if (auto k = r.Optional("moe_layer_freq", "every k-th layer MoE", 1); k && *k > 1) {
      moe->set_interleave_step(*k);
      const int first = moe->first_dense_layers(), layers = m->layers();
      int deepseek = 0, here = 0;
      for (int i = first; i < layers; ++i) {
        deepseek += i % *k == 0 ? 1 : 0;
        here += (i + 1) % *k == 0 ? 1 : 0;
      }
      notes->push_back("moe_layer_freq " + std::to_string(*k) + ": DeepSeek's MoE layers are the " +
                       std::to_string(deepseek) + " multiples of " + std::to_string(*k) +
                       " from layer " + std::to_string(first) + "; interleave_step places " +
                       std::to_string(here) + ", one layer earlier in each group");
    }
  }
  // DeepSeek-V3's multi-token prediction module (the README's "not modelled").
  if (r.Has("num_nextn_predict_layers") && r.Number("num_nextn_predict_layers", 0) > 0) {
    notes->push_back("num_nextn_predict_layers " + r.Get("num_nextn_predict_layers").dump() +
                     " (multi-token prediction) not modelled: its layer's work and weights are "
                     "not counted");
  }
}

void ReadMla(ConfigReader& r, pb::Model* m) {
  if (!r.Has("kv_lora_rank")) return;
  pb::Mla* mla = m->mutable_mla();
  if (auto v = r.Required("kv_lora_rank", "MLA KV compression rank")) mla->set_kv_lora_rank(*v);
  mla->set_q_lora_rank(r.NonNegative("q_lora_rank", "MLA Q compression rank"));
  if (auto v = r.Required("qk_rope_head_dim", "MLA rotary head dim")) mla->set_qk_rope_head_dim(*v);
  if (auto v = r.Required("qk_nope_head_dim", "MLA non-rotary head dim")) {
    mla->set_qk_nope_head_dim(*v);
  }
  if (auto v = r.Required("v_head_dim", "MLA value head dim")) mla->set_v_head_dim(*v);
}

// Sliding-window attention: `sliding_window` keys, and with `layer_types` (GPT-OSS) the layers
// that keep full attention, when they are every k-th one (Megatron's window_attn_skip_freq).
// The window is taken as Megatron-Core's --window-size (Megatron-Bridge's GPT-OSS provider maps
// HF's 128 to window_size (128, 0)).
void ReadSlidingWindow(ConfigReader& r, pb::Model* m, std::vector<std::string>* notes) {
  if (!r.Has("sliding_window") || !r.Get("sliding_window").is_number_integer() ||
      !r.Bool("use_sliding_window", true) || r.Get("sliding_window").get<int64_t>() <= 0 ||
      r.Get("sliding_window").get<int64_t>() > (1 << 24)) {
    return;
  }
  const auto w = static_cast<int32_t>(r.Get("sliding_window").get<int64_t>());
  if (!r.Has("layer_types") || !r.Get("layer_types").is_array()) {
    m->set_sliding_window(w);  // every layer windowed
    // Gemma 3: every sliding_window_pattern-th layer keeps full attention (5 local : 1 global).
    if (r.Has("sliding_window_pattern")) {
      if (auto k = r.Required("sliding_window_pattern", "every k-th layer global")) {
        m->set_sliding_window_full_every(*k);
      }
    }
    return;
  }
  const json& types = r.Get("layer_types");
  const auto n = int32_t(types.size());
  for (int32_t k = 0; k <= n; ++k) {  // k = 0: every layer windowed
    bool fits = true;
    for (int32_t i = 0; i < n && fits; ++i) {
      const bool full = k > 0 && (i + 1) % k == 0;
      fits = types[size_t(i)] == (full ? "full_attention" : "sliding_attention");
    }
    if (fits) {
      m->set_sliding_window(w);
      m->set_sliding_window_full_every(k);
      return;
    }
  }
  notes->push_back("layer_types " + types.dump() +
                   " is not every k-th layer full: full attention is assumed");
}

// Nemotron-H (model_type nemotron_h): the hybrid pattern, the Mamba-2 mixer and the MLP's
// activation (mlp_hidden_act relu2: not gated). Its layer_norm_epsilon key names RMSNorm's
// epsilon (NemotronHRMSNorm).
void ReadHybrid(ConfigReader& r, pb::Model* m) {
  if (r.String("model_type") != "nemotron_h" || !r.Has("hybrid_override_pattern")) return;
  m->set_hybrid_pattern(r.String("hybrid_override_pattern"));
  m->set_swiglu(r.String("mlp_hidden_act") == "silu");
  m->set_normalization(pb::Model::RMSNORM);
  pb::Mamba* a = m->mutable_mamba();
  if (auto v = r.Required("mamba_num_heads", "Mamba heads")) a->set_heads(*v);
  if (auto v = r.Optional("mamba_head_dim", "Mamba head dim", 64)) a->set_head_dim(*v);
  if (auto v = r.Optional("ssm_state_size", "SSM state size", 128)) a->set_state_dim(*v);
  if (auto v = r.Optional("n_groups", "Mamba groups", 8)) a->set_groups(*v);
  if (auto v = r.Optional("conv_kernel", "conv1d width", 4)) a->set_conv_kernel(*v);
  if (auto v = r.Optional("chunk_size", "SSD chunk", 128)) a->set_chunk_size(*v);
  if (m->has_moe() && r.Has("moe_shared_expert_intermediate_size")) {
    m->mutable_moe()->set_shared_expert_ffn_hidden(
        r.NonNegative("moe_shared_expert_intermediate_size", "shared expert FFN width"));
  }
}

// Architecture switches: gated SiLU MLP, RMSNorm or LayerNorm, RoPE, biases, dropout, tying.
void ReadSwitches(ConfigReader& r, pb::Model* m, std::vector<std::string>* notes) {
  const std::string act = r.String("hidden_act");
  // Every family above gates its SiLU MLP (gate_proj/up_proj/down_proj); GELU configs are
  // GPT-2-style plain MLPs, except Gemma's, which gates a GELU (GeGLU: the same three
  // matrices as SwiGLU).
  const bool gemma = r.String("model_type").rfind("gemma", 0) == 0;
  m->set_swiglu(act.empty() || act == "silu" || act == "swish" || act == "swiglu" || gemma);
  if (gemma) {
    notes->push_back(
        "Gemma's GeGLU MLP as a gated MLP (swiglu: same matrices); its extra "
        "post-attention and post-MLP RMSNorms not modelled");
  }
  m->set_normalization(r.Has("layer_norm_eps") || r.Has("layer_norm_epsilon") ? pb::Model::LAYERNORM
                                                                              : pb::Model::RMSNORM);
  m->set_position_embedding(r.Has("n_positions") && !r.Has("rope_theta") ? pb::Model::LEARNED
                                                                         : pb::Model::ROPE);
  const bool attention_bias = r.Bool("attention_bias", false);
  const bool mlp_bias = r.Bool("mlp_bias", attention_bias);
  m->set_linear_bias(attention_bias || mlp_bias);
  if (attention_bias != mlp_bias) {
    notes->push_back(std::string("attention_bias ") + (attention_bias ? "true" : "false") +
                     " and mlp_bias " + (mlp_bias ? "true" : "false") +
                     " differ; linear_bias covers both, set to true");
  }
  if (r.String("model_type") == "qwen2" || r.String("model_type") == "qwen2_moe") {
    notes->push_back("Qwen2's Q/K/V biases (no others) are not modelled: linear_bias false");
  }
  // transformers' PretrainedConfig default: tie_word_embeddings true when the key is absent.
  m->set_tied_embeddings(r.Bool("tie_word_embeddings", true));
  m->set_dropout(r.Number("attention_dropout", 0) > 0 || r.Number("hidden_dropout", 0) > 0);
  ReadSlidingWindow(r, m, notes);
  if (r.Bool("qk_norm", false) || r.Bool("use_qk_norm", false) ||
      r.String("model_type").rfind("qwen3", 0) == 0) {
    notes->push_back("QK-norm (two RMSNorms of head_dim per layer) not modelled");
  }
}

}  // namespace

Result<pb::Model> ModelFromHfConfig(std::string_view text, const std::string& name,
                                    std::vector<std::string>* notes_out) {
  std::vector<std::string> notes;
  json config;
  try {
    config = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    auto [line, column] = LineColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    return Status::InvalidArgument(name + ":" + std::to_string(line) + ":" +
                                   std::to_string(column) + ": not JSON (" + JsonReason(e.what()) +
                                   ")");
  }
  if (!config.is_object()) {
    return Status::InvalidArgument(name + ": a config.json is a JSON object {...}, got " +
                                   std::string(config.type_name()));
  }
  // A multimodal config (Llama 4, Gemma 3) nests its language model under text_config: that is
  // the model trained here; the vision encoder is not modelled.
  if (!config.contains("num_hidden_layers") && config.contains("text_config") &&
      config["text_config"].is_object()) {
    json text = config["text_config"];
    if (!text.contains("tie_word_embeddings") && config.contains("tie_word_embeddings")) {
      text["tie_word_embeddings"] = config["tie_word_embeddings"];
    }
    notes.push_back("the language model (text_config) of a " +
                    (config.contains("model_type") && config["model_type"].is_string()
                         ? config["model_type"].get<std::string>()
                         : std::string("multimodal")) +
                    " config; its vision encoder is not modelled");
    config = std::move(text);
  }
  ConfigReader r(config, name);
  pb::Model m;
  m.set_name(r.String("model_type"));
  if (auto v = r.Required("num_hidden_layers", "transformer layers")) m.set_layers(*v);
  if (auto v = r.Required("hidden_size", "hidden size")) m.set_hidden(*v);
  if (auto v = r.Required("num_attention_heads", "attention heads")) m.set_heads(*v);
  if (auto v = r.Optional("num_key_value_heads", "K/V heads", m.heads())) m.set_kv_heads(*v);
  if (r.Has("head_dim")) {
    if (auto v = r.Required("head_dim", "per-head width")) m.set_head_dim(*v);
  }
  if (auto v = r.Required("vocab_size", "vocabulary size")) m.set_vocab(*v);
  if (r.Has("intermediate_size") || !ExpertsKey(r)) {
    if (auto v = r.Required("intermediate_size", "MLP inner size")) m.set_ffn_hidden(*v);
  }
  if (auto v = r.Required("max_position_embeddings", "sequence length")) m.set_seq_len(*v);
  if (r.Has("rope_scaling") && r.Get("rope_scaling").is_object() &&
      r.Get("rope_scaling").contains("original_max_position_embeddings")) {
    notes.push_back("seq_len is max_position_embeddings; pre-training used " +
                    r.Get("rope_scaling")["original_max_position_embeddings"].dump() +
                    " (rope_scaling.original_max_position_embeddings)");
  }
  ReadSwitches(r, &m, &notes);
  ReadMoe(r, &m, &notes);
  ReadMla(r, &m);
  ReadHybrid(r, &m);
  if (m.has_moe() && !m.has_ffn_hidden() && m.moe().has_expert_ffn_hidden()) {
    m.set_ffn_hidden(m.moe().expert_ffn_hidden());
  }
  if (!r.ok()) return r.status();
  if (notes_out != nullptr) *notes_out = std::move(notes);
  return m;
}

}  // namespace trainsim::scenarios

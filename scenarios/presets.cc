// The model presets: published architectures, each value from the cited config or paper.
//
// Conventions for every preset below: `seq_len` is the main pre-training sequence length the
// source states (not the long-context extension), `vocab` the tokenizer's vocabulary as the
// config gives it (Megatron pads it when training; see `trainsim export megatron`). Settings of
// a run rather than of the architecture (precision, flash attention, MoE capacity factor and
// load imbalance) are left to the scenario's defaults.
#include "scenarios/presets.h"

#include <google/protobuf/text_format.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "scenarios/internal.h"

namespace trainsim::scenarios {
namespace {

struct PresetText {
  const char* name;
  const char* source;
  const char* total_b;
  const char* active_b;
  bool active_excludes_input_embedding;
  const char* model;  // pb::Model in text format
};

// Llama 3 / Mixtral / DeepSeek / Qwen / GPT-OSS: RMSNorm, RoPE, SwiGLU, no dropout, untied
// output layer (tie_word_embeddings false in each config), no linear biases unless noted.
constexpr const char* kLlamaStyle =
    "swiglu: true tied_embeddings: false position_embedding: ROPE linear_bias: false "
    "normalization: RMSNORM dropout: false ";

const PresetText kPresets[] = {
    // GPT-3 175B. Brown et al., "Language Models are Few-Shot Learners" (arXiv:2005.14165),
    // Table 2.1: n_layers 96, d_model 12288, n_heads 96, d_head 128, n_ctx 2048, 175.0 B. §2.1:
    // "the same model and architecture as GPT-2", whose config
    // (https://huggingface.co/openai-community/gpt2/blob/main/config.json) gives vocab_size
    // 50257, n_inner null (4·d_model), a tied lm_head, learned positions (n_positions), LayerNorm,
    // biases and dropout 0.1. GPT-3's alternating locally banded sparse attention layers are
    // not modelled (dense attention in every layer).
    {"gpt3-175b", "arXiv:2005.14165 Table 2.1; huggingface.co/openai-community/gpt2 config.json",
     "175.0", "175.0", false,
     "name: \"GPT-3 175B\" layers: 96 hidden: 12288 heads: 96 kv_heads: 96 head_dim: 128 "
     "ffn_hidden: 49152 seq_len: 2048 vocab: 50257 swiglu: false tied_embeddings: true "
     "position_embedding: LEARNED linear_bias: true normalization: LAYERNORM dropout: true"},
    // Llama 3 8B. https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json:
    // num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, num_key_value_heads 8,
    // intermediate_size 14336, vocab_size 128256, tie_word_embeddings false, hidden_act silu,
    // attention_bias false. "The Llama 3 Herd of Models" (arXiv:2407.21783) Table 3 (same
    // shape) and §3.4: pre-trained on 8K-token sequences. 8.03 B: the model card's count.
    {"llama3-8b", "huggingface.co/meta-llama/Meta-Llama-3-8B config.json; arXiv:2407.21783", "8.03",
     "8.03", false,
     "name: \"Llama 3 8B\" layers: 32 hidden: 4096 heads: 32 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 14336 seq_len: 8192 vocab: 128256"},
    // Llama 3 70B. https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json:
    // 80 layers, hidden 8192, 64 heads, 8 KV heads, intermediate 28672, vocab 128256, untied.
    // arXiv:2407.21783 Table 3; 70.6 B: the model card's count.
    {"llama3-70b", "huggingface.co/meta-llama/Meta-Llama-3-70B config.json; arXiv:2407.21783",
     "70.6", "70.6", false,
     "name: \"Llama 3 70B\" layers: 80 hidden: 8192 heads: 64 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 28672 seq_len: 8192 vocab: 128256"},
    // Llama 3.1 405B. https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json:
    // 126 layers, hidden 16384, 128 heads, 8 KV heads, head_dim 128, intermediate 53248, vocab
    // 128256, untied; rope_scaling.original_max_position_embeddings 8192 (§3.4.1: pre-training
    // starts at 8K tokens, extended to 128K at the end). 405.9 B: the published figure.
    {"llama3-405b", "huggingface.co/meta-llama/Llama-3.1-405B config.json; arXiv:2407.21783",
     "405.9", "405.9", false,
     "name: \"Llama 3.1 405B\" layers: 126 hidden: 16384 heads: 128 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 53248 seq_len: 8192 vocab: 128256"},
    // Mixtral 8x7B. https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json:
    // 32 layers, hidden 4096, 32 heads, 8 KV heads, intermediate 14336 (per expert),
    // num_local_experts 8, num_experts_per_tok 2, vocab 32000, max_position_embeddings 32768,
    // untied. Jiang et al., "Mixtral of Experts" (arXiv:2401.04088): 32k-token context, 46.7 B
    // parameters, 12.9 B active.
    {"mixtral-8x7b", "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json; arXiv:2401.04088",
     "46.7", "12.9", false,
     "name: \"Mixtral 8x7B\" layers: 32 hidden: 4096 heads: 32 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 14336 seq_len: 32768 vocab: 32000 "
     "moe { experts: 8 top_k: 2 expert_ffn_hidden: 14336 shared_experts: 0 "
     "first_dense_layers: 0 }"},
    // Mixtral 8x22B.
    // https://huggingface.co/mistral-community/Mixtral-8x22B-v0.1/blob/main/config.json: 56
    // layers, hidden 6144, 48 heads, 8 KV heads, intermediate 16384, 8 experts, top 2, vocab
    // 32000, max_position_embeddings 65536, untied. https://mistral.ai/news/mixtral-8x22b: 141 B
    // parameters, 39 B active, 64K context.
    {"mixtral-8x22b",
     "huggingface.co/mistral-community/Mixtral-8x22B-v0.1 config.json; "
     "mistral.ai/news/mixtral-8x22b",
     "141", "39", false,
     "name: \"Mixtral 8x22B\" layers: 56 hidden: 6144 heads: 48 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 16384 seq_len: 65536 vocab: 32000 "
     "moe { experts: 8 top_k: 2 expert_ffn_hidden: 16384 shared_experts: 0 "
     "first_dense_layers: 0 }"},
    // DeepSeek-V3. https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json: 61
    // layers, hidden 7168, 128 heads (num_key_value_heads 128), intermediate 18432 (dense
    // layers), moe_intermediate_size 2048, n_routed_experts 256, n_shared_experts 1,
    // num_experts_per_tok 8, first_k_dense_replace 3, q_lora_rank 1536, kv_lora_rank 512,
    // qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, vocab 129280, untied.
    // arXiv:2412.19437 §4.2: pre-training sequence length 4K. README: 671 B main model (the
    // 14 B multi-token-prediction module, num_nextn_predict_layers 1, is not modelled), 37 B
    // active; README_WEIGHTS.md: 36.6 B active, which leaves out the input embedding.
    {"deepseek-v3", "huggingface.co/deepseek-ai/DeepSeek-V3 config.json; arXiv:2412.19437", "671",
     "36.6", true,
     "name: \"DeepSeek-V3\" layers: 61 hidden: 7168 heads: 128 kv_heads: 128 "
     "ffn_hidden: 18432 seq_len: 4096 vocab: 129280 "
     "moe { experts: 256 top_k: 8 expert_ffn_hidden: 2048 shared_experts: 1 "
     "shared_expert_ffn_hidden: 2048 first_dense_layers: 3 } "
     "mla { q_lora_rank: 1536 kv_lora_rank: 512 qk_rope_head_dim: 64 qk_nope_head_dim: 128 "
     "v_head_dim: 128 }"},
    // Llama 4 Maverick. https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E config.json
    // text_config: 48 layers, hidden 5120, 40 heads, 8 KV heads, head_dim 128, 128 experts
    // (num_local_experts), top-1, intermediate_size 8192 (each routed expert and the shared
    // one), intermediate_size_mlp 16384 (the dense layers), interleave_moe_layer_step 2, vocab
    // 202048, untied. Meta's model card: 17 B active, 400 B total (the vision encoder is not
    // modelled). Chunked attention (8192-token chunks on three of four layers) is taken as
    // full causal attention: the same at the 8192-token sequences set here.
    {"llama4-maverick",
     "huggingface.co/meta-llama/Llama-4-Maverick-17B-128E config.json; Llama 4 model card", "400",
     "17", false,
     "name: \"Llama 4 Maverick\" layers: 48 hidden: 5120 heads: 40 kv_heads: 8 head_dim: 128 "
     "ffn_hidden: 16384 seq_len: 8192 vocab: 202048 "
     "moe { experts: 128 top_k: 1 expert_ffn_hidden: 8192 shared_experts: 1 "
     "shared_expert_ffn_hidden: 8192 first_dense_layers: 0 interleave_step: 2 }"},
    // Qwen3-235B-A22B. https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json: 94
    // layers, hidden 4096, 64 heads, 4 KV heads, head_dim 128, intermediate 12288 (no dense
    // layer uses it: decoder_sparse_step 1, mlp_only_layers []), moe_intermediate_size 1536,
    // num_experts 128, num_experts_per_tok 8, vocab 151936, untied. Qwen3 Technical Report
    // (arXiv:2505.09388) Table 2: 235 B total, 22 B active; §3.2: general stage at 4,096
    // tokens. Its QK-norm (two RMSNorms of head_dim per layer, 256 parameters) is not modelled.
    {"qwen3-235b-a22b", "huggingface.co/Qwen/Qwen3-235B-A22B config.json; arXiv:2505.09388", "235",
     "22", false,
     "name: \"Qwen3-235B-A22B\" layers: 94 hidden: 4096 heads: 64 kv_heads: 4 head_dim: 128 "
     "ffn_hidden: 12288 seq_len: 4096 vocab: 151936 "
     "moe { experts: 128 top_k: 8 expert_ffn_hidden: 1536 shared_experts: 0 "
     "first_dense_layers: 0 }"},
    // Qwen3-30B-A3B. https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json: 48 layers,
    // hidden 2048, 32 heads, 4 KV heads, head_dim 128, intermediate 6144 (unused),
    // moe_intermediate_size 768, 128 experts, top 8, vocab 151936, untied. arXiv:2505.09388
    // Table 2: 30.5 B total, 3.3 B active. QK-norm not modelled, as above.
    {"qwen3-30b-a3b", "huggingface.co/Qwen/Qwen3-30B-A3B config.json; arXiv:2505.09388", "30.5",
     "3.3", false,
     "name: \"Qwen3-30B-A3B\" layers: 48 hidden: 2048 heads: 32 kv_heads: 4 head_dim: 128 "
     "ffn_hidden: 6144 seq_len: 4096 vocab: 151936 "
     "moe { experts: 128 top_k: 8 expert_ffn_hidden: 768 shared_experts: 0 "
     "first_dense_layers: 0 }"},
    // GPT-OSS-120B. https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json: 36
    // layers, hidden 2880, 64 heads, 8 KV heads, head_dim 64, intermediate_size 2880 (per
    // expert), num_local_experts 128, experts_per_token 4, vocab 201088, untied,
    // attention_bias true (and the experts' and router's biases: linear_bias), SwiGLU (clamped),
    // RMSNorm, RoPE (YaRN), initial_context_length 4096, sliding_window 128 with layer_types
    // alternating sliding_attention (layer 0) and full_attention: Megatron-Bridge's GPT-OSS
    // provider sets window_size (128, 0) and window_attn_skip_freq 2 (every 2nd layer full).
    // Not modelled: the per-head attention sinks (64 parameters per layer). Model card (OpenAI,
    // arXiv:2508.10925) Table 1: 116.83 B total, 5.13 B active per token (the input embedding
    // left out).
    {"gpt-oss-120b", "huggingface.co/openai/gpt-oss-120b config.json; arXiv:2508.10925", "116.83",
     "5.13", true,
     "name: \"GPT-OSS-120B\" layers: 36 hidden: 2880 heads: 64 kv_heads: 8 head_dim: 64 "
     "ffn_hidden: 2880 seq_len: 4096 vocab: 201088 swiglu: true tied_embeddings: false "
     "position_embedding: ROPE linear_bias: true normalization: RMSNORM dropout: false "
     "moe { experts: 128 top_k: 4 expert_ffn_hidden: 2880 shared_experts: 0 "
     "first_dense_layers: 0 } sliding_window: 128 sliding_window_full_every: 2"},
    // NVIDIA Nemotron 3 Nano 30B-A3B, a hybrid Mamba-2 / attention / MoE model.
    // https://huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/blob/main/config.json:
    // num_hidden_layers 52, hybrid_override_pattern below (23 Mamba-2, 23 MoE, 6 attention),
    // hidden_size 2688, 32 heads, 2 KV heads, head_dim 128, mamba_num_heads 64, mamba_head_dim
    // 64, ssm_state_size 128, n_groups 8, conv_kernel 4, chunk_size 128, use_conv_bias true,
    // mamba_proj_bias / mlp_bias / attention_bias false, n_routed_experts 128,
    // num_experts_per_tok 6, moe_intermediate_size 1856, moe_shared_expert_intermediate_size 3712
    // (1 shared expert), intermediate_size 1856 (no dense MLP layer uses it), mlp_hidden_act
    // relu2 (squared ReLU, not gated: modelled as the two-matrix GELU MLP), RMSNorm, vocab
    // 131072, tie_word_embeddings false. The attention layers use no position embedding; ROPE
    // (no parameters) is the nearest setting, and charges a RoPE kernel on the 6 attention
    // layers (under 0.1% of the step). The MoE router's expert bias (128 per layer) is not
    // counted. Nemotron 3 Nano technical report (NVIDIA, 2025-12): 31.6 B total, 3.2 B active
    // (3.6 B with the embeddings); pre-training sequence length 8192 (Megatron-Bridge's recipe).
    {"nemotron-3-nano-30b-a3b",
     "huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json; Nemotron 3 Nano "
     "technical report",
     "31.6", "3.2", true,
     "name: \"Nemotron-3-Nano-30B-A3B\" layers: 52 hidden: 2688 heads: 32 kv_heads: 2 "
     "head_dim: 128 ffn_hidden: 1856 seq_len: 8192 vocab: 131072 swiglu: false "
     "tied_embeddings: false position_embedding: ROPE linear_bias: false normalization: RMSNORM "
     "dropout: false "
     "hybrid_pattern: \"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME\" "
     "mamba { heads: 64 head_dim: 64 state_dim: 128 groups: 8 conv_kernel: 4 chunk_size: 128 } "
     "moe { experts: 128 top_k: 6 expert_ffn_hidden: 1856 shared_experts: 1 "
     "shared_expert_ffn_hidden: 3712 first_dense_layers: 0 }"},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<ModelPreset> BuildPresets() {
  std::vector<ModelPreset> out;
  for (const PresetText& t : kPresets) {
    ModelPreset p;
    p.name = t.name;
    p.source = t.source;
    p.published_total_b = t.total_b;
    p.published_active_b = t.active_b;
    p.published_active_excludes_input_embedding = t.active_excludes_input_embedding;
    // GPT-3's text sets every field itself; the others start from the Llama-style common part,
    // which their own fields then extend (text format rejects a field given twice, so the
    // common part only holds what the per-model text does not).
    const std::string text = std::string(t.model).find("swiglu:") == std::string::npos
                                 ? kLlamaStyle + std::string(t.model)
                                 : std::string(t.model);
    if (!google::protobuf::TextFormat::ParseFromString(text, &p.model)) {
      // A defect in the table above, covered by presets_test; never user input.
      std::fprintf(stderr, "trainsim: internal error: preset %s does not parse\n", t.name);
      std::abort();
    }
    p.model.set_preset(t.name);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset> presets = BuildPresets();
  return presets;
}

const ModelPreset* FindModelPreset(std::string_view name) {
  const std::string key = Lower(name);
  for (const ModelPreset& p : ModelPresets()) {
    if (p.name == key) return &p;
  }
  return nullptr;
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const ModelPreset& p : ModelPresets()) names.push_back(p.name);
  return names;
}

Status ApplyModelPreset(pb::Model* model) {
  if (model->preset().empty()) return Status::Ok();
  const ModelPreset* preset = FindModelPreset(model->preset());
  if (preset == nullptr) {
    const std::vector<std::string> names = ModelPresetNames();
    std::string msg = "unknown preset \"" + model->preset() + "\"";
    const std::string closest = detail::ClosestName(model->preset(), names);
    if (!closest.empty()) msg += "; did you mean \"" + closest + "\"?";
    msg += " (presets: " + detail::JoinNames(names) + ")";
    return Status::NotFound(msg);
  }
  // MergeFrom copies the fields `model` sets (proto3 optional presence; non-empty strings;
  // submessages field by field) over the preset's, so explicit values win.
  pb::Model merged = preset->model;
  merged.MergeFrom(*model);
  merged.set_preset(preset->name);
  *model = std::move(merged);
  return Status::Ok();
}

std::string FormatModelBlock(const pb::Model& model) {
  std::string body;
  google::protobuf::TextFormat::Printer printer;
  printer.SetInitialIndentLevel(1);
  printer.PrintToString(model, &body);
  return "model {\n" + body + "}\n";
}

}  // namespace trainsim::scenarios

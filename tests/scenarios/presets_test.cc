// Model presets (scenarios/presets.h): every preset loads as a scenario, carries its published
// config's values, counts the published parameters to the published precision, yields to
// explicit fields; unknown names are rejected with the list. `import hf`'s config.json mapping
// (fixtures in tests/scenarios/hf/, written by hand from the published configs) gives the same
// architecture as the preset of the same model.
#include "scenarios/presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "parallelism/model.h"
#include "scenarios/scenario.h"
#include "scenarios/step_config.h"

namespace trainsim::scenarios {
namespace {

namespace fs = std::filesystem;
const fs::path kHfDir = fs::path(TRAINSIM_SOURCE_DIR) / "tests/scenarios/hf";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scenario that is just a cluster, a preset and a layout (the issue's example).
// TP 2: every preset's K/V heads divide it (Nemotron 3 Nano has 2).
Result<pb::Scenario> PresetScenario(const std::string& preset, const std::string& extra = "") {
  return ParseScenarioText("cluster { nodes: 16 }\nmodel { preset: \"" + preset + "\" " + extra +
                               "}\nparallelism { tp: 2 }\ntraining { steps: 10 }\n",
                           "preset.textproto");
}

// Published counts are printed to some precision ("37", "70.6", "116.83") and some sources
// truncate rather than round (Qwen3: 30.53 B printed "30.5", 3.35 B printed "3.3"): the count
// must lie within one unit of the last printed digit, or within 0.5%.
double PublishedTolerance(const std::string& billions) {
  const size_t dot = billions.find('.');
  const int decimals = dot == std::string::npos ? 0 : int(billions.size() - dot - 1);
  const double value = std::atof(billions.c_str()) * 1e9;
  return std::max(0.005 * value, std::pow(10.0, -decimals) * 1e9);
}

TEST(PresetsTest, TheIssuesPresetsAndTheValidationOnesExist) {
  for (const char* name : {"gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b",
                           "mixtral-8x22b", "deepseek-v3", "qwen3-235b-a22b", "qwen3-30b-a3b",
                           "gpt-oss-120b", "nemotron-3-nano-30b-a3b"}) {
    const ModelPreset* p = FindModelPreset(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_FALSE(p->source.empty()) << name;
    EXPECT_EQ(p->model.preset(), name);
  }
  EXPECT_NE(FindModelPreset("Llama3-70B"), nullptr) << "names are case-insensitive";
  EXPECT_EQ(FindModelPreset("llama3-7b"), nullptr);
}

TEST(PresetsTest, EveryPresetResolvesAsAScenarioOfJustClusterPresetAndLayout) {
  for (const ModelPreset& p : ModelPresets()) {
    auto s = PresetScenario(p.name);
    ASSERT_TRUE(s.ok()) << p.name << ": " << s.status().message();
    auto r = Resolve(*s);
    ASSERT_TRUE(r.ok()) << p.name << ": " << r.status().message();
    EXPECT_EQ(r->params, ParameterCount(s->model()));
  }
}

TEST(PresetsTest, ParameterCountsMatchThePublishedFiguresToTheirPrecision) {
  for (const ModelPreset& p : ModelPresets()) {
    auto s = PresetScenario(p.name);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto r = Resolve(*s);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double total = double(r->params);
    double active = double(r->active_params);
    if (p.published_active_excludes_input_embedding) {
      active -= double(s->model().vocab()) * s->model().hidden();
    }
    const double published_total = std::atof(p.published_total_b.c_str()) * 1e9;
    const double published_active = std::atof(p.published_active_b.c_str()) * 1e9;
    EXPECT_NEAR(total, published_total, PublishedTolerance(p.published_total_b))
        << p.name << ": " << total / 1e9 << " B";
    EXPECT_NEAR(active, published_active, PublishedTolerance(p.published_active_b))
        << p.name << ": active " << active / 1e9 << " B";
  }
}

TEST(PresetsTest, LlamaAndMixtralTotalsAreWithinHalfAPercentOfTheIssuesFigures) {
  struct Case {
    const char* name;
    double total, active;
  } cases[] = {{"llama3-8b", 8.03e9, 8.03e9},     {"llama3-70b", 70.6e9, 70.6e9},
               {"llama3-405b", 405.9e9, 405.9e9}, {"mixtral-8x7b", 46.7e9, 12.9e9},
               {"mixtral-8x22b", 141e9, 39e9},    {"deepseek-v3", 671e9, 0}};
  for (const Case& c : cases) {
    auto r = Resolve(*PresetScenario(c.name));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_NEAR(double(r->params), c.total, 0.005 * c.total) << c.name;
    if (c.active > 0) {
      EXPECT_NEAR(double(r->active_params), c.active, 0.005 * c.active) << c.name;
    }
  }
}

TEST(PresetsTest, PresetsCarryThePublishedConfigValues) {
  // meta-llama/Llama-3.1-405B config.json.
  const pb::Model& l = FindModelPreset("llama3-405b")->model;
  EXPECT_EQ(l.layers(), 126);
  EXPECT_EQ(l.hidden(), 16384);
  EXPECT_EQ(l.heads(), 128);
  EXPECT_EQ(l.kv_heads(), 8);
  EXPECT_EQ(l.ffn_hidden(), 53248);
  EXPECT_EQ(l.vocab(), 128256);
  EXPECT_FALSE(l.tied_embeddings());
  EXPECT_EQ(l.position_embedding(), pb::Model::ROPE);
  EXPECT_EQ(l.normalization(), pb::Model::RMSNORM);
  EXPECT_FALSE(l.linear_bias());
  EXPECT_FALSE(l.dropout());
  EXPECT_TRUE(l.swiglu());
  // deepseek-ai/DeepSeek-V3 config.json.
  const pb::Model& d = FindModelPreset("deepseek-v3")->model;
  EXPECT_EQ(d.layers(), 61);
  EXPECT_EQ(d.moe().experts(), 256);
  EXPECT_EQ(d.moe().top_k(), 8);
  EXPECT_EQ(d.moe().expert_ffn_hidden(), 2048);
  EXPECT_EQ(d.moe().shared_experts(), 1);
  EXPECT_EQ(d.moe().first_dense_layers(), 3);
  EXPECT_EQ(d.mla().q_lora_rank(), 1536);
  EXPECT_EQ(d.mla().kv_lora_rank(), 512);
  EXPECT_EQ(d.mla().qk_rope_head_dim(), 64);
  EXPECT_EQ(d.mla().qk_nope_head_dim(), 128);
  EXPECT_EQ(d.mla().v_head_dim(), 128);
  // GPT-3: tied, learned positions, biases, LayerNorm, GELU (Brown et al.; GPT-2's config).
  const pb::Model& g = FindModelPreset("gpt3-175b")->model;
  EXPECT_TRUE(g.tied_embeddings());
  EXPECT_EQ(g.position_embedding(), pb::Model::LEARNED);
  EXPECT_TRUE(g.linear_bias());
  EXPECT_FALSE(g.swiglu());
  // openai/gpt-oss-120b: attention (and expert) biases.
  EXPECT_TRUE(FindModelPreset("gpt-oss-120b")->model.linear_bias());
}

TEST(PresetsTest, ExplicitFieldsOverrideThePresetFieldByField) {
  auto s = PresetScenario("mixtral-8x7b", "seq_len: 4096 moe { top_k: 1 } ");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const pb::Model& m = s->model();
  EXPECT_EQ(m.seq_len(), 4096);
  EXPECT_EQ(m.moe().top_k(), 1);
  EXPECT_EQ(m.moe().experts(), 8) << "the preset's other moe fields stay";
  EXPECT_EQ(m.layers(), 32);
  EXPECT_EQ(m.name(), "Mixtral 8x7B");
  EXPECT_EQ(m.precision(), pb::BF16) << "run settings keep the scenario defaults";
  // --set overrides apply before the preset too.
  auto set = ParseScenarioText(
      "model { preset: \"llama3-8b\" }\nparallelism { tp: 8 }\ntraining { steps: 1 }\n", "x",
      {"model.layers=16"});
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->model().layers(), 16);
  EXPECT_EQ(set->model().hidden(), 4096);
}

TEST(PresetsTest, AnUnknownPresetIsRejectedAtItsLineWithTheList) {
  auto s = ParseScenarioText("model {\n  preset: \"llama3-7b\"\n}\ntraining { steps: 1 }\n",
                             "p.textproto");
  ASSERT_FALSE(s.ok());
  const std::string& msg = s.status().message();
  EXPECT_EQ(msg.rfind("p.textproto:2:", 0), 0u) << msg;
  EXPECT_NE(msg.find("unknown preset \"llama3-7b\"; did you mean \"llama3-8b\"?"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(presets: gpt3-175b, llama3-8b"), std::string::npos) << msg;
}

// The architecture fields an import and a preset of the same model must share.
void ExpectSameArchitecture(const pb::Model& a, const pb::Model& b, const std::string& what) {
  EXPECT_EQ(a.layers(), b.layers()) << what;
  EXPECT_EQ(a.hidden(), b.hidden()) << what;
  EXPECT_EQ(a.heads(), b.heads()) << what;
  EXPECT_EQ(a.kv_heads(), b.kv_heads()) << what;
  EXPECT_EQ(a.vocab(), b.vocab()) << what;
  EXPECT_EQ(a.swiglu(), b.swiglu()) << what;
  EXPECT_EQ(a.tied_embeddings(), b.tied_embeddings()) << what;
  EXPECT_EQ(a.linear_bias(), b.linear_bias()) << what;
  EXPECT_EQ(a.normalization(), b.normalization()) << what;
  EXPECT_EQ(a.position_embedding(), b.position_embedding()) << what;
  EXPECT_EQ(a.has_moe(), b.has_moe()) << what;
  EXPECT_EQ(a.has_mla(), b.has_mla()) << what;
}

TEST(HfImportTest, ConfigsGiveTheSameModelAsThePresetOfTheSameArchitecture) {
  struct Case {
    const char* file;
    const char* preset;
  } cases[] = {
      {"llama3_8b.json", "llama3-8b"},       {"mixtral_8x7b.json", "mixtral-8x7b"},
      {"deepseek_v3.json", "deepseek-v3"},   {"qwen3_30b_a3b.json", "qwen3-30b-a3b"},
      {"gpt_oss_120b.json", "gpt-oss-120b"}, {"nemotron_3_nano.json", "nemotron-3-nano-30b-a3b"}};
  for (const Case& c : cases) {
    auto imported = ModelFromHfConfig(ReadFile(kHfDir / c.file), c.file);
    ASSERT_TRUE(imported.ok()) << c.file << ": " << imported.status().message();
    const pb::Model& preset = FindModelPreset(c.preset)->model;
    ExpectSameArchitecture(*imported, preset, c.file);
    // The counts depend on every field but seq_len (no learned positions): they must agree.
    pb::Model same_seq = *imported;
    same_seq.set_seq_len(preset.seq_len());
    pb::Scenario a, b;
    *a.mutable_model() = same_seq;
    *b.mutable_model() = preset;
    ASSERT_TRUE(FillDefaults(&a).ok());
    ASSERT_TRUE(FillDefaults(&b).ok());
    EXPECT_EQ(ParameterCount(a.model()), ParameterCount(b.model())) << c.file;
  }
}

// GPT-OSS's layer_types (sliding, full, sliding, ...) and Nemotron-H's hybrid pattern and Mamba
// fields map to the scenario's fields, as the presets (from the same configs) have them.
TEST(HfImportTest, SlidingWindowAndHybridFieldsMap) {
  auto oss = ModelFromHfConfig(ReadFile(kHfDir / "gpt_oss_120b.json"), "oss");
  ASSERT_TRUE(oss.ok()) << oss.status().message();
  EXPECT_EQ(oss->sliding_window(), 128);
  EXPECT_EQ(oss->sliding_window_full_every(), 2);
  auto nano = ModelFromHfConfig(ReadFile(kHfDir / "nemotron_3_nano.json"), "nano");
  ASSERT_TRUE(nano.ok()) << nano.status().message();
  const pb::Model& preset = FindModelPreset("nemotron-3-nano-30b-a3b")->model;
  EXPECT_EQ(nano->hybrid_pattern(), preset.hybrid_pattern());
  EXPECT_EQ(nano->mamba().heads(), 64);
  EXPECT_EQ(nano->mamba().head_dim(), 64);
  EXPECT_EQ(nano->mamba().state_dim(), 128);
  EXPECT_EQ(nano->mamba().groups(), 8);
  EXPECT_EQ(nano->moe().shared_expert_ffn_hidden(), 3712);
  EXPECT_FALSE(nano->swiglu());              // relu2
  EXPECT_FALSE(nano->has_sliding_window());  // "sliding_window": null
}

TEST(HfImportTest, QwenMoeSharedExpertAndDeepSeekFieldsMap) {
  // Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408, top 4, one shared expert of 5632.
  auto q = ModelFromHfConfig(ReadFile(kHfDir / "qwen1_5_moe_a2_7b.json"), "q");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->moe().experts(), 60);
  EXPECT_EQ(q->moe().top_k(), 4);
  EXPECT_EQ(q->moe().expert_ffn_hidden(), 1408);
  EXPECT_EQ(q->moe().shared_experts(), 1);
  EXPECT_EQ(q->moe().shared_expert_ffn_hidden(), 5632);
  // Its model card: 14.3 B parameters, 2.7 B activated (Q/K/V biases, not modelled, are
  // 0.3 M per layer).
  pb::Scenario s;
  *s.mutable_model() = *q;
  ASSERT_TRUE(FillDefaults(&s).ok());
  const parallelism::ModelSpec spec = MakeModelSpec(s.model());
  EXPECT_NEAR(double(parallelism::ParameterCount(spec)), 14.3e9, 0.05e9);
  EXPECT_NEAR(double(parallelism::ActiveParameterCount(spec)), 2.7e9, 0.05e9);

  std::vector<std::string> notes;
  auto d = ModelFromHfConfig(ReadFile(kHfDir / "deepseek_v3.json"), "d", &notes);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->moe().first_dense_layers(), 3);
  EXPECT_EQ(d->moe().shared_expert_ffn_hidden(), 2048);
  EXPECT_EQ(d->ffn_hidden(), 18432);
  EXPECT_EQ(d->seq_len(), 163840) << "max_position_embeddings";
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("pre-training used 4096"), std::string::npos) << notes[0];
}

// Multimodal configs nest the language model under text_config (the vision encoder is not
// modelled). Llama 4 Maverick (meta-llama/Llama-4-Maverick-17B-128E): 128 experts, top-1, one
// shared expert, a MoE layer every second layer and 16384-wide dense MLPs between them; Meta's
// model card: 400 B parameters, 17 B active. Gemma 3 27B (google/gemma-3-27b-pt): GeGLU, five
// sliding-window layers to each global one; 27 B.
TEST(HfImportTest, MultimodalTextConfigsOfLlama4AndGemma3Map) {
  std::vector<std::string> notes;
  auto l4 = ModelFromHfConfig(ReadFile(kHfDir / "llama4_maverick.json"), "l4", &notes);
  ASSERT_TRUE(l4.ok()) << l4.status().message();
  EXPECT_EQ(l4->layers(), 48);
  EXPECT_EQ(l4->ffn_hidden(), 16384) << "intermediate_size_mlp: the dense layers";
  EXPECT_EQ(l4->moe().expert_ffn_hidden(), 8192);
  EXPECT_EQ(l4->moe().shared_experts(), 1);
  EXPECT_EQ(l4->moe().shared_expert_ffn_hidden(), 8192);
  EXPECT_EQ(l4->moe().interleave_step(), 2);
  EXPECT_FALSE(l4->tied_embeddings());
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("text_config"), std::string::npos) << notes[0];
  pb::Scenario s;
  *s.mutable_model() = *l4;
  ASSERT_TRUE(FillDefaults(&s).ok());
  parallelism::ModelSpec spec = MakeModelSpec(s.model());
  EXPECT_FALSE(spec.IsMoeLayer(0));
  EXPECT_TRUE(spec.IsMoeLayer(1));
  EXPECT_NEAR(double(parallelism::ParameterCount(spec)), 400e9, 0.01 * 400e9);
  EXPECT_NEAR(double(parallelism::ActiveParameterCount(spec)), 17e9, PublishedTolerance("17"));
  // Every layer MoE (Scout's step, 1) would hold twice the experts.
  spec.moe.interleave_step = 1;
  EXPECT_GT(double(parallelism::ParameterCount(spec)), 750e9);

  auto g = ModelFromHfConfig(ReadFile(kHfDir / "gemma3_27b.json"), "g");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->swiglu()) << "GeGLU: gated, three matrices";
  EXPECT_EQ(g->sliding_window(), 1024);
  EXPECT_EQ(g->sliding_window_full_every(), 6);
  EXPECT_TRUE(g->tied_embeddings());
  pb::Scenario gs;
  *gs.mutable_model() = *g;
  ASSERT_TRUE(FillDefaults(&gs).ok());
  EXPECT_NEAR(double(parallelism::ParameterCount(MakeModelSpec(gs.model()))), 27e9,
              PublishedTolerance("27"));
}

TEST(HfImportTest, TheBlockParsesBackAsAScenarioModel) {
  auto m = ModelFromHfConfig(ReadFile(kHfDir / "mixtral_8x7b.json"), "m");
  ASSERT_TRUE(m.ok());
  const std::string text = FormatModelBlock(*m) + "training { steps: 1 }\n";
  auto s = ParseScenarioText(text, "imported");
  ASSERT_TRUE(s.ok()) << s.status().message() << "\n" << text;
  EXPECT_EQ(s->model().moe().experts(), 8);
}

TEST(HfImportTest, MissingFieldsAndBrokenJsonAreNamed) {
  auto missing = ModelFromHfConfig(ReadFile(kHfDir / "missing_layers.json"), "missing.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "missing.json: missing \"num_hidden_layers\" (transformer layers)");
  auto broken = ModelFromHfConfig(ReadFile(kHfDir / "not_json.json"), "broken.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message().rfind("broken.json:4:", 0), 0u) << broken.status().message();
  EXPECT_NE(broken.status().message().find("not JSON"), std::string::npos);
  auto wrong = ModelFromHfConfig("{\"num_hidden_layers\": \"32\"}", "w");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("\"num_hidden_layers\" (transformer layers) must be a "
                                          "positive whole number, got \"32\""),
            std::string::npos)
      << wrong.status().message();
  EXPECT_FALSE(ModelFromHfConfig("[1, 2]", "a").ok());
  EXPECT_FALSE(ModelFromHfConfig("", "e").ok());
}

// The same text with one "key": value replaced (the configs are as published, one key a line).
std::string WithValue(std::string text, const std::string& key, const std::string& value) {
  const size_t at = text.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos) return text;
  const size_t start = at + key.size() + 3;
  const size_t end = text.find_first_of(",\n}", start);
  return text.substr(0, start) + " " + value + text.substr(end);
}

// Every k-th layer MoE under the two families' keys. Qwen's decoder_sparse_step k: layer i is
// MoE when (i + 1) % k == 0 (transformers' Qwen3MoeDecoderLayer). DeepSeek's moe_layer_freq k:
// when i >= first_k_dense_replace and i % k == 0 (DeepseekV3DecoderLayer); with 3 dense layers
// and k 2 those are the 29 layers 4, 6, ..., 60; interleave_step 2 holds the 29 layers 3, 5, ...,
// 59 (a note says so). They were read as every layer MoE, twice the experts.
TEST(HfImportTest, SparseMoeStepsOfQwenAndDeepSeekPlaceEveryKthLayer) {
  auto q = ModelFromHfConfig(
      WithValue(ReadFile(kHfDir / "qwen3_30b_a3b.json"), "decoder_sparse_step", "2"), "q");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->moe().interleave_step(), 2);
  pb::Scenario qs;
  *qs.mutable_model() = *q;
  ASSERT_TRUE(FillDefaults(&qs).ok());
  const parallelism::ModelSpec qspec = MakeModelSpec(qs.model());
  for (int i = 0; i < qspec.num_layers; ++i) EXPECT_EQ(qspec.IsMoeLayer(i), (i + 1) % 2 == 0) << i;

  std::vector<std::string> notes;
  auto d = ModelFromHfConfig(
      WithValue(ReadFile(kHfDir / "deepseek_v3.json"), "moe_layer_freq", "2"), "d", &notes);
  ASSERT_TRUE(d.ok()) << d.status().message();
  pb::Scenario ds;
  *ds.mutable_model() = *d;
  ASSERT_TRUE(FillDefaults(&ds).ok());
  const parallelism::ModelSpec dspec = MakeModelSpec(ds.model());
  int moe_layers = 0;
  for (int i = 0; i < dspec.num_layers; ++i) moe_layers += dspec.IsMoeLayer(i) ? 1 : 0;
  EXPECT_EQ(moe_layers, 29);
  EXPECT_FALSE(dspec.IsMoeLayer(2));
  // Its multi-token prediction layer is named as not modelled.
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("num_nextn_predict_layers 1") != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find(
               "moe_layer_freq 2: DeepSeek's MoE layers are the 29 multiples of 2 from layer "
               "3; interleave_step places 29") != std::string::npos;
  }));
}

// A boolean given as a string read as the default ("false" in quotes tied the embeddings);
// a missing top-k named only GPT-OSS's key.
TEST(HfImportTest, WronglyTypedBooleansAndAMissingTopKAreNamed) {
  auto tied = ModelFromHfConfig(
      WithValue(ReadFile(kHfDir / "llama3_8b.json"), "tie_word_embeddings", "\"false\""), "t");
  ASSERT_FALSE(tied.ok());
  EXPECT_NE(tied.status().message().find("\"tie_word_embeddings\" must be true or false, got "
                                         "\"false\""),
            std::string::npos)
      << tied.status().message();
  std::string mixtral = ReadFile(kHfDir / "mixtral_8x7b.json");
  mixtral = WithValue(mixtral, "num_experts_per_tok", "null");
  auto topk = ModelFromHfConfig(mixtral, "m");
  ASSERT_FALSE(topk.ok());
  EXPECT_NE(topk.status().message().find("missing \"num_experts_per_tok\""), std::string::npos)
      << topk.status().message();
  EXPECT_NE(topk.status().message().find("experts_per_token"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::scenarios

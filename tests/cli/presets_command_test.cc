// Model presets through the binary: `check --presets`, `check` of a preset scenario (active
// parameters), `import hf CONFIG.json` and `export megatron SCENARIO`, with their bad input
// (exit 2, one error line, nothing on stdout).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/run_trainsim.h"

namespace {

namespace fs = std::filesystem;
using trainsim::test_util::Contains;
using trainsim::test_util::RunResult;
using trainsim::test_util::RunTrainsim;

const fs::path kSource = TRAINSIM_SOURCE_DIR;
const std::string kDemo = (kSource / "scenarios/examples/demo.textproto").string();
const fs::path kHf = kSource / "tests/scenarios/hf";

// A scenario file in the test's temporary directory.
std::string WriteScenario(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("trainsim_presets_" + name + ".textproto");
  std::ofstream(p) << text;
  return p.string();
}

// "--flag value" pairs (and switches, value "") of `export megatron`'s text output.
std::map<std::string, std::string> ParseFlags(const std::string& out) {
  std::map<std::string, std::string> flags;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0) {
      line.resize(line.size() - 2);
    }
    const size_t space = line.find(' ');
    flags[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return flags;
}

void ExpectBadInput(const std::vector<std::string>& args, const std::string& fragment) {
  RunResult r = RunTrainsim(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(Contains(r.err, "trainsim: error: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, fragment)) << fragment << "\n" << r.err;
}

TEST(PresetsCliTest, CheckPresetsListsEveryPresetWithoutAScenario) {
  RunResult r = RunTrainsim({"check", "--presets"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name :
       {"gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "mixtral-8x22b",
        "deepseek-v3", "qwen3-235b-a22b", "qwen3-30b-a3b", "gpt-oss-120b"}) {
    EXPECT_TRUE(Contains(r.out, name)) << name << "\n" << r.out;
  }
  RunResult j = RunTrainsim({"check", "--presets", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto presets = nlohmann::json::parse(j.out)["presets"];
  ASSERT_GE(presets.size(), 10u);
  EXPECT_EQ(presets[0]["name"], "gpt3-175b");
  // Without --presets a scenario is still required.
  ExpectBadInput({"check"}, "SCENARIO is required");
}

TEST(PresetsCliTest, CheckOfAPresetScenarioPrintsTotalAndActiveParameters) {
  const std::string path =
      WriteScenario("mixtral",
                    "cluster { nodes: 8 }\nmodel { preset: \"mixtral-8x7b\" }\n"
                    "parallelism { tp: 2 pp: 4 ep: 8 }\ntraining { steps: 10 }\n");
  RunResult r = RunTrainsim({"check", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Mixtral 8x7B: per layer attention 4096·(4096 + 2·1024) + 4096·4096, two RMSNorms, router
  // 4096·8, experts 3·4096·14336 each; 32 layers; embedding and output 32000·4096 each.
  const double h = 4096, attn = h * (h + 2048) + h * h, expert = 3 * h * 14336;
  const double total = 32 * (attn + 2 * h + 8 * h + 8 * expert) + 2 * 32000 * h;
  const double active = 32 * (attn + 2 * h + 8 * h + 2 * expert) + 2 * 32000 * h;
  EXPECT_TRUE(Contains(r.out, "46.7 B")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Active params")) << r.out;
  EXPECT_TRUE(Contains(r.out, "12.9 B")) << r.out;
  RunResult j = RunTrainsim({"check", "--json", path});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto derived = nlohmann::json::parse(j.out)["derived"];
  EXPECT_EQ(derived["params"].get<double>(), total);
  EXPECT_EQ(derived["active_params"].get<double>(), active);
  // A dense model's active count is its total.
  RunResult demo = RunTrainsim({"check", "--json", kDemo});
  auto d = nlohmann::json::parse(demo.out)["derived"];
  EXPECT_EQ(d["active_params"], d["params"]);
}

TEST(PresetsCliTest, AnUnknownPresetExitsTwoWithTheList) {
  const std::string path =
      WriteScenario("unknown", "model { preset: \"llama4-400b\" }\ntraining { steps: 10 }\n");
  ExpectBadInput({"check", path}, path + ":1:9: model.preset: unknown preset \"llama4-400b\"");
  RunResult r = RunTrainsim({"check", path});
  EXPECT_TRUE(Contains(r.err, "(presets: gpt3-175b, llama3-8b, llama3-70b")) << r.err;
}

TEST(PresetsCliTest, ImportHfPrintsAModelBlockThatChecks) {
  RunResult r =
      RunTrainsim({"import", "hf", (kHf / "llama3_8b.json").string(), "--name", "Llama 3 8B"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part :
       {"model {", "name: \"Llama 3 8B\"", "layers: 32", "hidden: 4096", "kv_heads: 8",
        "ffn_hidden: 14336", "vocab: 128256", "tied_embeddings: false", "position_embedding: ROPE",
        "normalization: RMSNORM"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
  // The block is a scenario's model: with a layout it checks, and counts Llama 3 8B's 8.03 B:
  // 32 × (4096·(4096 + 2·1024) + 4096·4096 + 3·4096·14336 + 2·4096) + 2·128256·4096.
  const std::string path =
      WriteScenario("imported", r.out + "parallelism { tp: 8 }\ntraining { steps: 10 }\n");
  RunResult check = RunTrainsim({"check", path});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_TRUE(Contains(check.out, "8.0 B (8,030,257,152)")) << check.out;
}

TEST(PresetsCliTest, ImportBadInputNamesTheFieldOrPosition) {
  ExpectBadInput({"import", "hf", (kHf / "missing_layers.json").string()},
                 "missing \"num_hidden_layers\" (transformer layers)");
  ExpectBadInput({"import", "hf", (kHf / "not_json.json").string()},
                 (kHf / "not_json.json").string() + ":4:");
  ExpectBadInput({"import", "hf", (kHf / "no_such_file.json").string()}, "cannot read the file");
  ExpectBadInput({"import", "gguf", (kHf / "llama3_8b.json").string()},
                 "unknown import format \"gguf\" (formats: hf)");
}

TEST(PresetsCliTest, ExportMegatronOfTheBundledDemoUsesItsModelAndLayout) {
  RunResult j = RunTrainsim({"check", "--json", kDemo});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto s = nlohmann::json::parse(j.out)["scenario"];
  RunResult r = RunTrainsim({"export", "megatron", kDemo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto flags = ParseFlags(r.out);
  auto str = [](const nlohmann::json& v) { return std::to_string(v.get<int64_t>()); };
  EXPECT_EQ(flags["--num-layers"], str(s["model"]["layers"]));
  EXPECT_EQ(flags["--hidden-size"], str(s["model"]["hidden"]));
  EXPECT_EQ(flags["--num-attention-heads"], str(s["model"]["heads"]));
  EXPECT_EQ(flags["--ffn-hidden-size"], str(s["model"]["ffn_hidden"]));
  EXPECT_EQ(flags["--seq-length"], str(s["model"]["seq_len"]));
  EXPECT_EQ(flags["--tensor-model-parallel-size"], str(s["parallelism"]["tp"]));
  EXPECT_EQ(flags["--pipeline-model-parallel-size"], str(s["parallelism"]["pp"]));
  EXPECT_EQ(flags["--micro-batch-size"], str(s["parallelism"]["micro_batch"]));
  EXPECT_EQ(flags["--global-batch-size"], str(s["parallelism"]["global_batch"]));
  // The demo: SELECTIVE recompute, sequence parallelism, ZeRO-1, BF16, a GPT (tied, learned
  // positions, biases: none of the Llama switches).
  EXPECT_EQ(flags["--recompute-granularity"], "selective");
  EXPECT_TRUE(flags.count("--sequence-parallel"));
  EXPECT_TRUE(flags.count("--use-distributed-optimizer"));
  EXPECT_TRUE(flags.count("--bf16"));
  for (const char* absent : {"--swiglu", "--untie-embeddings-and-output-weights",
                             "--disable-bias-linear", "--num-experts"}) {
    EXPECT_FALSE(flags.count(absent)) << absent;
  }  // Interleaving: 96 layers / (PP 8 × 2 chunks) = 6 layers per virtual stage; the scenario's
  // default overlap_p2p_comm false is Megatron's --no-overlap-p2p-communication.
  RunResult vp =
      RunTrainsim({"export", "megatron", kDemo, "--set", "parallelism.virtual_stages=2"});
  ASSERT_EQ(vp.exit_code, 0) << vp.err;
  auto vflags = ParseFlags(vp.out);
  EXPECT_EQ(vflags["--num-layers-per-virtual-pipeline-stage"], "6");
  EXPECT_TRUE(vflags.count("--no-overlap-p2p-communication"));
}

TEST(PresetsCliTest, ExportMegatronOfAnMoeMlaLayoutCarriesExpertsLatentAttentionAndCp) {
  const std::string path =
      WriteScenario("dsv3",
                    "cluster { nodes: 128 }\nmodel { preset: \"deepseek-v3\" precision: FP8 }\n"
                    "parallelism { tp: 2 pp: 16 cp: 2 cp_comm: A2A ep: 32 first_stage_layers: 3 "
                    "last_stage_layers: 2 zero_stage: 1 global_batch: 4096 recompute: FULL }\n"
                    "training { steps: 10 }\n");
  RunResult r = RunTrainsim({"export", "megatron", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto flags = ParseFlags(r.out);
  const std::map<std::string, std::string> expected = {
      {"--num-experts", "256"},
      {"--moe-router-topk", "8"},
      {"--moe-ffn-hidden-size", "2048"},
      {"--moe-shared-expert-intermediate-size", "2048"},
      {"--moe-layer-freq", "'([0]*3+[1]*58)'"},  // 3 dense layers, then 58 MoE layers
      {"--q-lora-rank", "1536"},
      {"--kv-lora-rank", "512"},
      {"--qk-head-dim", "128"},
      {"--qk-pos-emb-head-dim", "64"},
      {"--v-head-dim", "128"},
      {"--context-parallel-size", "2"},
      {"--cp-comm-type", "a2a"},
      {"--expert-model-parallel-size", "32"},
      // Not set in the scenario: Megatron-LM (and trainsim) default it to the TP size.
      {"--expert-tensor-parallel-size", "2"},
      {"--decoder-first-pipeline-num-layers", "3"},
      {"--decoder-last-pipeline-num-layers", "2"},
      {"--recompute-granularity", "full"},
      {"--recompute-method", "uniform"},
      {"--normalization", "RMSNorm"},
      {"--position-embedding-type", "rope"},
      {"--fp8-format", "hybrid"},
      {"--global-batch-size", "4096"}};
  for (const auto& [flag, value] : expected) {
    ASSERT_TRUE(flags.count(flag)) << flag << "\n" << r.out;
    EXPECT_EQ(flags[flag], value) << flag;
  }
  for (const char* sw : {"--multi-latent-attention", "--swiglu", "--disable-bias-linear",
                         "--untie-embeddings-and-output-weights", "--bf16"}) {
    EXPECT_TRUE(flags.count(sw)) << sw;
  }
  EXPECT_FALSE(flags.count("--kv-channels")) << "MLA sets its head dims instead";
  // Router padding is off unless the scenario asks for it (Megatron's default too).
  EXPECT_FALSE(flags.count("--moe-router-padding-for-quantization"));
  RunResult padded = RunTrainsim(
      {"export", "megatron", path, "--set", "model.moe.router_padding_for_quantization=true"});
  ASSERT_EQ(padded.exit_code, 0) << padded.err;
  EXPECT_TRUE(ParseFlags(padded.out).count("--moe-router-padding-for-quantization"));
  // bf16 main gradients: Megatron-LM reduces bf16 gradients in fp32 unless told
  // --grad-reduce-in-bf16, so the flag appears only when the scenario asks for it.
  EXPECT_FALSE(flags.count("--grad-reduce-in-bf16"));
  RunResult bf16_grads =
      RunTrainsim({"export", "megatron", path, "--set", "parallelism.grad_reduce_in_fp32=false"});
  ASSERT_EQ(bf16_grads.exit_code, 0) << bf16_grads.err;
  EXPECT_TRUE(ParseFlags(bf16_grads.out).count("--grad-reduce-in-bf16"));
  // FLEX is HybridEP (Megatron-Core's default flex backend is DeepEP), with the SMs the
  // scenario gives it; its default is HybridEP's own, so no flag.
  RunResult flex =
      RunTrainsim({"export", "megatron", path, "--set", "parallelism.moe_token_dispatcher=FLEX"});
  ASSERT_EQ(flex.exit_code, 0) << flex.err;
  EXPECT_EQ(ParseFlags(flex.out)["--moe-flex-dispatcher-backend"], "hybridep");
  EXPECT_FALSE(ParseFlags(flex.out).count("--moe-flex-dispatcher-num-sms"));
  EXPECT_FALSE(flags.count("--moe-flex-dispatcher-backend"));  // the all-to-all dispatcher
  RunResult sms =
      RunTrainsim({"export", "megatron", path, "--set", "parallelism.moe_token_dispatcher=FLEX",
                   "--set", "parallelism.moe_flex_sms=32"});
  ASSERT_EQ(sms.exit_code, 0) << sms.err;
  EXPECT_EQ(ParseFlags(sms.out)["--moe-flex-dispatcher-num-sms"], "32");
  // The EP overlap brings --delay-wgrad-compute with it unless the scenario turns it off.
  EXPECT_FALSE(flags.count("--overlap-moe-expert-parallel-comm"));
  for (bool delay : {true, false}) {
    RunResult o = RunTrainsim(
        {"export", "megatron", path, "--set", "parallelism.moe_a2a_overlap=true", "--set",
         std::string("parallelism.moe_delay_wgrad=") + (delay ? "true" : "false")});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    auto f = ParseFlags(o.out);
    EXPECT_TRUE(f.count("--overlap-moe-expert-parallel-comm"));
    EXPECT_EQ(f.count("--delay-wgrad-compute"), delay ? 1u : 0u);
  }
  // --json gives the same arguments as a list.
  RunResult j = RunTrainsim({"export", "megatron", "--json", path});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["args"][0], "--num-layers");
  ExpectBadInput({"export", "deepspeed", path}, "unknown export format \"deepspeed\"");
  ExpectBadInput({"export", "megatron", path, "--set", "parallelism.ep=7"}, "parallelism.ep");
}

TEST(PresetsCliTest, ExportOfAQwen3PresetAddsItsQkNormAndDisablesNothingElse) {
  // Qwen3-30B-A3B as Megatron-Bridge ran it (validation rows: 16 H100, EP 16).
  const std::string path =
      WriteScenario("qwen3",
                    "cluster { nodes: 2 }\nmodel { preset: \"qwen3-30b-a3b\" seq_len: 4096 }\n"
                    "parallelism { ep: 16 global_batch: 1024 }\ntraining { steps: 10 }\n");
  RunResult r = RunTrainsim({"export", "megatron", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto flags = ParseFlags(r.out);
  EXPECT_TRUE(flags.count("--qk-layernorm"));
  EXPECT_EQ(flags["--num-query-groups"], "4");
  EXPECT_EQ(flags["--kv-channels"], "128");
  EXPECT_EQ(flags["--moe-ffn-hidden-size"], "768");
  EXPECT_EQ(flags["--expert-model-parallel-size"], "16");
  EXPECT_FALSE(flags.count("--moe-layer-freq")) << "every layer is a MoE layer";
  EXPECT_FALSE(flags.count("--moe-shared-expert-intermediate-size"));
  // Every second layer MoE (Llama 4 Maverick's interleave): 48 layers are 24 × [dense, MoE].
  RunResult every2 =
      RunTrainsim({"export", "megatron", path, "--set", "model.moe.interleave_step=2"});
  ASSERT_EQ(every2.exit_code, 0) << every2.err;
  EXPECT_EQ(ParseFlags(every2.out)["--moe-layer-freq"], "'([0]*0+([0]*1+[1])*24+[0]*0)'");
  // After 3 dense layers, every second layer is MoE where (i + 1) % 2 == 0: 5, 7, ..., 47 (the
  // simulated layers, ModelSpec::IsMoeLayer), not 4, 6, ... as "every second after them" reads.
  RunResult dense3 =
      RunTrainsim({"export", "megatron", path, "--set", "model.moe.interleave_step=2", "--set",
                   "model.moe.first_dense_layers=3"});
  ASSERT_EQ(dense3.exit_code, 0) << dense3.err;
  std::string expected = "[";
  for (int i = 0; i < 48; ++i)
    expected += std::string(i ? "," : "") + (i >= 3 && i % 2 ? "1" : "0");
  EXPECT_EQ(ParseFlags(dense3.out)["--moe-layer-freq"], "'" + expected + "]'");
  ExpectBadInput({"export", "megatron", path, "--set", "model.moe.interleave_step=0"},
                 "model.moe.interleave_step");
}

// The sliding window and the hybrid pattern reach Megatron-LM's flags: GPT-OSS's 128-token
// window on every other layer (--window-size 128,0 --window-attn-skip-freq 2, as
// Megatron-Bridge's GPT-OSS config sets them) and Nemotron 3 Nano's layer pattern and Mamba-2
// mixer (--hybrid-layer-pattern, --mamba-*), each from the scenario that the validation row uses.
TEST(PresetsCliTest, ExportCarriesTheSlidingWindowAndTheHybridMambaLayers) {
  RunResult gpt = RunTrainsim(
      {"export", "megatron", "scenarios/validation/bridge_h100_gpt_oss_120b_bf16.textproto"});
  ASSERT_EQ(gpt.exit_code, 0) << gpt.err;
  auto g = ParseFlags(gpt.out);
  EXPECT_EQ(g["--window-size"], "'128,0'");  // shell-quoted, as every value with a comma
  EXPECT_EQ(g["--window-attn-skip-freq"], "2");
  RunResult nano = RunTrainsim(
      {"export", "megatron", "scenarios/validation/bridge_h100_nemotron3_nano_fp8.textproto"});
  ASSERT_EQ(nano.exit_code, 0) << nano.err;
  auto n = ParseFlags(nano.out);
  std::string pattern = n["--hybrid-layer-pattern"];
  ASSERT_GE(pattern.size(), 2u);
  ASSERT_EQ(pattern.front(), '\'');  // shell-quoted: '*' would glob
  pattern = pattern.substr(1, pattern.size() - 2);
  EXPECT_EQ(pattern.size(), 52u) << "Nemotron 3 Nano's 52 layers";
  EXPECT_EQ(pattern.find_first_not_of("M*-E"), std::string::npos) << pattern;
  EXPECT_TRUE(n.count("--mamba-num-heads"));
  EXPECT_FALSE(n.count("--window-size")) << "Nemotron's attention layers are full";
}

// Megatron-Core's reading of --pipeline-model-parallel-layout
// (PipelineParallelLayerLayout.parse_str_to_list): commas dropped, "(...)*n" then "x*n"
// unrolled, then one string per virtual stage, split at '|'.
std::vector<std::string> MegatronLayoutStages(std::string layout) {
  if (layout.size() >= 2 && layout.front() == '\'') layout = layout.substr(1, layout.size() - 2);
  layout.erase(std::remove(layout.begin(), layout.end(), ','), layout.end());
  for (const char* pattern : {R"(\(([^)]+)\)\*(\d+))", R"((.)\*(\d+))"}) {
    const std::regex re(pattern);
    std::smatch m;
    while (std::regex_search(layout, m, re)) {
      std::string unrolled;
      for (int i = 0; i < std::stoi(m[2].str()); ++i) unrolled += m[1].str();
      layout = m.prefix().str() + unrolled + m.suffix().str();
    }
  }
  std::vector<std::string> stages(1);
  for (char c : layout) {
    if (c == '|') {
      stages.emplace_back();
    } else {
      stages.back() += c;
    }
  }
  return stages;
}

// Megatron refuses --decoder-first-pipeline-num-layers 7 with 8 chunks per rank ("must be
// divisible by virtual pipeline parallel degree") and a first stage of 0 layers; the layout
// string places the same chunks. Llama 3.1 405B's 126 layers on PP 16 × 8 chunks: 128 chunks,
// the first holding only the embedding, the last only the loss, one layer in each other.
TEST(PresetsCliTest, ExportOfStagesMegatronCannotSplitWritesTheLayoutString) {
  RunResult r = RunTrainsim(
      {"export", "megatron", "scenarios/examples/llama3_405b_long_context_h100.textproto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto flags = ParseFlags(r.out);
  for (const char* absent :
       {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
        "--num-virtual-stages-per-pipeline-rank", "--num-layers-per-virtual-pipeline-stage"}) {
    EXPECT_FALSE(flags.count(absent)) << absent << " with the layout string: Megatron refuses both";
  }
  std::vector<std::string> stages = MegatronLayoutStages(flags["--pipeline-model-parallel-layout"]);
  ASSERT_EQ(stages.size(), 128u) << flags["--pipeline-model-parallel-layout"];
  EXPECT_EQ(stages.front(), "E");
  EXPECT_EQ(stages.back(), "L");
  for (size_t j = 1; j + 1 < stages.size(); ++j) EXPECT_EQ(stages[j], "t") << j;
  // The demo's 96 layers with end stages of 0 layers (embedding and loss alone) on PP 8: the six
  // middle stages take 16 each.
  RunResult zero =
      RunTrainsim({"export", "megatron", kDemo, "--set", "parallelism.first_stage_layers=0",
                   "--set", "parallelism.last_stage_layers=0"});
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  auto z = ParseFlags(zero.out);
  EXPECT_FALSE(z.count("--decoder-first-pipeline-num-layers"));
  stages = MegatronLayoutStages(z["--pipeline-model-parallel-layout"]);
  ASSERT_EQ(stages.size(), 8u);
  EXPECT_EQ(stages.front(), "E");
  EXPECT_EQ(stages.back(), "L");
  for (size_t j = 1; j + 1 < stages.size(); ++j) EXPECT_EQ(stages[j], std::string(16, 't')) << j;
  // Where every stage divides into its chunks (12 + 6 × 12 + 12 layers, 2 chunks each), the
  // first/last flags with --num-virtual-stages-per-pipeline-rank say the same.
  RunResult even = RunTrainsim(
      {"export", "megatron", kDemo, "--set", "parallelism.first_stage_layers=12", "--set",
       "parallelism.last_stage_layers=12", "--set", "parallelism.virtual_stages=2"});
  ASSERT_EQ(even.exit_code, 0) << even.err;
  auto e = ParseFlags(even.out);
  EXPECT_EQ(e["--decoder-first-pipeline-num-layers"], "12");
  EXPECT_EQ(e["--decoder-last-pipeline-num-layers"], "12");
  EXPECT_EQ(e["--num-virtual-stages-per-pipeline-rank"], "2");
  EXPECT_FALSE(e.count("--pipeline-model-parallel-layout"));
}

// What Megatron needs to run what was simulated: the FP8 recipe (its default is delayed
// scaling), Megatron-FSDP's required checkpoint format, and the bucket size in parameters.
TEST(PresetsCliTest, ExportCarriesTheFp8RecipeFsdpFormatAndBucketSize) {
  const std::pair<const char*, const char*> recipes[] = {
      {"DELAYED", "delayed"}, {"CURRENT", "tensorwise"}, {"MXFP8", "mxfp8"}};
  for (const auto& [recipe, megatron] : recipes) {
    RunResult r = RunTrainsim({"export", "megatron", kDemo, "--set", "model.precision=FP8", "--set",
                               std::string("model.fp8_recipe=") + recipe});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ParseFlags(r.out)["--fp8-recipe"], megatron) << recipe;
  }
  RunResult z3 = RunTrainsim({"export", "megatron", kDemo, "--set", "parallelism.zero_stage=3",
                              "--set", "parallelism.pp=1", "--set", "parallelism.dp=16"});
  ASSERT_EQ(z3.exit_code, 0) << z3.err;
  auto f = ParseFlags(z3.out);
  EXPECT_EQ(f["--data-parallel-sharding-strategy"], "optim_grads_params");
  EXPECT_EQ(f["--ckpt-format"], "fsdp_dtensor");  // arguments.py asserts it
  EXPECT_TRUE(f.count("--use-distributed-optimizer"));
  // 256 MiB of fp32 main gradients (BF16's default) = 64 Mi parameters.
  RunResult b =
      RunTrainsim({"export", "megatron", kDemo, "--set", "parallelism.dp_bucket_bytes=268435456"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(ParseFlags(b.out)["--ddp-bucket-size"], std::to_string(64 << 20));
}

}  // namespace

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/scenario.h"

namespace trainsim::scenarios {
namespace {

namespace fs = std::filesystem;
using google::protobuf::util::MessageDifferencer;

const char kMinimal[] = R"(
model { layers: 24 hidden: 2048 heads: 16 }
training { steps: 100 }
)";

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

pb::Scenario MustParse(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = ParseScenarioText(text, "test.textproto", sets);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : pb::Scenario();
}

std::string ErrorOf(const std::string& text, const std::vector<std::string>& sets = {}) {
  auto r = ParseScenarioText(text, "test.textproto", sets);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  return r.ok() ? "" : r.status().message();
}

TEST(LoaderTest, MinimalScenarioGetsEveryDocumentedDefault) {
  pb::Scenario s = MustParse(kMinimal);
  EXPECT_EQ(s.cluster().gpu(), "H100-SXM-80GB");
  EXPECT_EQ(s.cluster().node_type(), "DGX-H100");
  EXPECT_EQ(s.cluster().nodes(), 16);
  EXPECT_EQ(s.cluster().gpus_per_node(), 8);
  EXPECT_EQ(s.cluster().nic(), "NDR-400");
  EXPECT_EQ(s.cluster().nics_per_node(), 8);
  EXPECT_EQ(s.cluster().spare_nodes(), 0);
  EXPECT_EQ(s.cluster().topology().levels(), 2);  // 128 NICs << 64^2/2
  EXPECT_TRUE(s.cluster().topology().rail_optimized());
  EXPECT_DOUBLE_EQ(s.cluster().topology().oversubscription(), 1.0);
  // Llama 3 storage per node x 16 nodes.
  EXPECT_DOUBLE_EQ(s.cluster().storage().write_gbyte_per_s(), 16 * 2000.0 / 2048);
  EXPECT_DOUBLE_EQ(s.cluster().storage().read_gbyte_per_s(), 16 * 7000.0 / 2048);
  EXPECT_EQ(s.model().ffn_hidden(), 4 * 2048);
  EXPECT_EQ(s.model().kv_heads(), 16);
  EXPECT_EQ(s.model().seq_len(), 2048);
  EXPECT_EQ(s.model().vocab(), 51200);
  EXPECT_EQ(s.model().precision(), pb::BF16);
  EXPECT_TRUE(s.model().flash_attention());
  EXPECT_EQ(s.parallelism().tp(), 1);
  EXPECT_EQ(s.parallelism().pp(), 1);
  EXPECT_EQ(s.parallelism().dp(), 128);            // all GPUs
  EXPECT_EQ(s.parallelism().global_batch(), 128);  // micro_batch x dp
  EXPECT_EQ(s.parallelism().schedule(), pb::Parallelism::ONE_F_ONE_B);
  EXPECT_EQ(s.parallelism().recompute(), pb::Parallelism::NONE);
  EXPECT_EQ(s.parallelism().dp_bucket_bytes(), 0);  // Megatron-Core's, resolved per layout
  EXPECT_EQ(s.checkpoint().policy(), pb::Checkpoint::SYNC);
  EXPECT_EQ(s.checkpoint().interval(), "1h");
  EXPECT_DOUBLE_EQ(s.checkpoint().bytes_per_param(), 2 + 4 + 4 + 4);
  EXPECT_EQ(s.recovery().policy(), pb::Recovery::RESTART_ON_SPARE);
  // No uniform detection delay: each fault kind is detected by its mechanism (docs/faults.md).
  EXPECT_EQ(s.recovery().detection_delay(), "");
  EXPECT_TRUE(s.failures().enabled());
  EXPECT_DOUBLE_EQ(s.failures().node_day_rate(), 419.0 / (54 * 2048));
  ASSERT_EQ(s.failures().causes_size(), 7);
  double sum = 0;
  for (const auto& c : s.failures().causes()) sum += c.fraction();
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // GPU rows of Table 5 that crash the process (268 less the 6 silent data corruptions).
  EXPECT_DOUBLE_EQ(s.failures().causes(0).fraction(), 262.0 / 419);
  EXPECT_DOUBLE_EQ(s.failures().causes(1).fraction(), 6.0 / 419);
  EXPECT_EQ(s.seed(), 1u);
}

TEST(LoaderTest, DetectionMechanismAloneSetsNoUniformDelay) {
  pb::Scenario s = MustParse(std::string(kMinimal) + "recovery { detection: HEARTBEAT }");
  EXPECT_EQ(s.recovery().detection_delay(), "");  // per-mechanism delays still apply
}

TEST(LoaderTest, NodeTypeAloneImpliesItsGpuAndNic) {
  pb::Scenario s = MustParse(std::string(kMinimal) + "cluster { node_type: \"DGX-A100\" }");
  EXPECT_EQ(s.cluster().gpu(), "A100-SXM-80GB");
  EXPECT_EQ(s.cluster().nic(), "HDR-200");
}

TEST(LoaderTest, AliasesAreCanonicalised) {
  pb::Scenario s = MustParse(std::string(kMinimal) + "cluster { gpu: \"h200\" }");
  EXPECT_EQ(s.cluster().gpu(), "H200-SXM-141GB");
  EXPECT_EQ(s.cluster().node_type(), "DGX-H200");
}

TEST(LoaderTest, FillDefaultsAndValidateAreIdempotent) {
  pb::Scenario s = MustParse(kMinimal);
  pb::Scenario again = s;
  ASSERT_TRUE(FillDefaults(&again).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(s, again));
  EXPECT_TRUE(ValidateScenario(again).ok());
}

TEST(LoaderTest, JsonAndTextGiveTheSameScenario) {
  const char kJson[] = R"({
    "model": {"layers": 24, "hidden": 2048, "heads": 16},
    "training": {"steps": "100"},
    "parallelism": {"tp": 2, "recompute": "SELECTIVE", "sequence_parallel": true},
    "faults": [{"kind": "GPU", "id": 3, "at": "16h"}]
  })";
  const std::string text = std::string(kMinimal) +
                           "parallelism { tp: 2 recompute: SELECTIVE sequence_parallel: true }\n"
                           "faults { kind: GPU id: 3 at: \"16h\" }\n";
  pb::Scenario from_json = MustParse(kJson);
  pb::Scenario from_text = MustParse(text);
  EXPECT_TRUE(MessageDifferencer::Equals(from_json, from_text));
}

TEST(LoaderTest, JsonAcceptsCamelCaseNames) {
  pb::Scenario s = MustParse(
      R"({"model": {"layers": 24, "hidden": 2048, "heads": 16, "seqLen": 4096},
          "training": {"steps": 10}})");
  EXPECT_EQ(s.model().seq_len(), 4096);
}

TEST(LoaderTest, TextSyntaxErrorsGiveLineAndColumn) {
  // The misspelt field is on line 3, column 3.
  std::string msg = ErrorOf("model {\n  layers: 24\n  hiden: 2048\n}\n");
  EXPECT_EQ(msg.rfind("test.textproto:3:3: ", 0), 0u) << msg;
  EXPECT_TRUE(Contains(msg, "did you mean \"hidden\"?")) << msg;
}

TEST(LoaderTest, AnUnknownEnumValueIsReportedAtTheValueNotTheNextToken) {
  // Protobuf reports it at the token after the value (here line 4, the next field); the user's
  // mistake is on line 3, column 14.
  std::string msg = ErrorOf(
      "model {\n  layers: 24 hidden: 2048 heads: 16\n  precision: BF17\n  seq_len: 2048\n}\n"
      "training { steps: 100 }\n");
  EXPECT_EQ(msg.rfind("test.textproto:3:14: ", 0), 0u) << msg;
  EXPECT_TRUE(Contains(msg, "BF17")) << msg;
  // The same with the value last in its block: the next token is the '}' on the next line.
  std::string last =
      ErrorOf("model {\n  layers: 24 hidden: 2048 heads: 16\n  precision: BF17\n}\n");
  EXPECT_EQ(last.rfind("test.textproto:3:14: ", 0), 0u) << last;
}

TEST(LoaderTest, JsonErrorsGiveLineAndColumnFromTheOffset) {
  // Line 3 is `  "training": {"stepz": 1}`: the key's opening quote is at column 16.
  std::string msg = ErrorOf(
      "{\n  \"model\": {\"layers\": 24, \"hidden\": 2048, \"heads\": 16},\n"
      "  \"training\": {\"stepz\": 1}\n}");
  EXPECT_EQ(msg.rfind("test.textproto:3:16: ", 0), 0u) << msg;
  EXPECT_TRUE(Contains(msg, "did you mean \"steps\"?")) << msg;
  // A missing value: the error is at the '}' on line 1, column 12.
  std::string syntax = ErrorOf("{\"model\": }");
  EXPECT_EQ(syntax.rfind("test.textproto:1:11: ", 0), 0u) << syntax;
}

TEST(LoaderTest, SemanticErrorsPointAtTheOffendingField) {
  // tp 32 divides the 128 GPUs but not the 16 heads.
  std::string msg = ErrorOf(std::string(kMinimal) + "parallelism {\n  tp: 32\n}\n");
  // kMinimal is three lines (a leading newline), so "tp: 32" is line 5, column 3.
  EXPECT_EQ(msg.rfind("test.textproto:5:3: parallelism.tp: heads 16 is not divisible by tp 32", 0),
            0u)
      << msg;
}

TEST(LoaderTest, OverridesSetScalarsEnumsBoolsStringsAndListEntries) {
  pb::Scenario s = MustParse(
      kMinimal, {"parallelism.tp=4", "parallelism.recompute=full",
                 "parallelism.sequence_parallel=true", "failures.node_day_rate=0.01",
                 "cluster.gpu=B200", "faults.0.kind=GPU", "faults.0.id=37", "faults.0.at=16h",
                 "faults.1.kind=NODE", "faults.1.id=3", "faults.1.at=2d", "faults.0.at=20h"});
  EXPECT_EQ(s.parallelism().tp(), 4);
  EXPECT_EQ(s.parallelism().dp(), 32);
  EXPECT_EQ(s.parallelism().recompute(), pb::Parallelism::FULL);
  EXPECT_TRUE(s.parallelism().sequence_parallel());
  EXPECT_DOUBLE_EQ(s.failures().node_day_rate(), 0.01);
  EXPECT_EQ(s.cluster().gpu(), "B200");
  ASSERT_EQ(s.faults_size(), 2);
  EXPECT_EQ(s.faults(0).id(), 37);
  EXPECT_EQ(s.faults(0).at(), "20h");  // later --set wins
  EXPECT_EQ(s.faults(1).kind(), pb::Fault::NODE);
}

TEST(LoaderTest, OverridingOneTrainingGoalReplacesTheOther) {
  pb::Scenario s = MustParse(kMinimal, {"training.tokens=1000000"});
  EXPECT_EQ(s.training().goal_case(), pb::Training::kTokens);
}

TEST(LoaderTest, OverrideErrorsNameThePathAndWhatIsValid) {
  std::string msg = ErrorOf(kMinimal, {"parallelism.tpp=4"});
  EXPECT_EQ(msg.rfind("--set parallelism.tpp=4: unknown field \"tpp\" in parallelism; did you "
                      "mean \"tp\"?",
                      0),
            0u)
      << msg;
  msg = ErrorOf(kMinimal, {"parallelism.recompute=PARTIAL"});
  EXPECT_TRUE(Contains(msg, "(valid: NONE, SELECTIVE, FULL)")) << msg;
  msg = ErrorOf(kMinimal, {"parallelism.tp=four"});
  EXPECT_TRUE(Contains(msg, "\"four\" is not a 32-bit integer; parallelism.tp takes an integer"))
      << msg;
  msg = ErrorOf(kMinimal, {"parallelism.tp=99999999999"});
  EXPECT_TRUE(Contains(msg, "not a 32-bit integer")) << msg;
  msg = ErrorOf(kMinimal, {"parallelism"});
  EXPECT_TRUE(Contains(msg, "expected PATH=VALUE")) << msg;
  msg = ErrorOf(kMinimal, {"parallelism=3"});
  EXPECT_TRUE(Contains(msg, "parallelism is a section; set one of its fields (tp, pp")) << msg;
  msg = ErrorOf(kMinimal, {"parallelism.tp.x=3"});
  EXPECT_TRUE(Contains(msg, "not a section")) << msg;
  msg = ErrorOf(kMinimal, {"faults.5.at=1h"});
  EXPECT_TRUE(Contains(msg, "it has 0 entries")) << msg;
  msg = ErrorOf(kMinimal, {"failures.node_day_rate=nan"});
  EXPECT_TRUE(Contains(msg, "not a finite number")) << msg;
  msg = ErrorOf(kMinimal, {"parallelism.sequence_parallel=yes"});
  EXPECT_TRUE(Contains(msg, "takes true or false")) << msg;
}

TEST(LoaderTest, SemanticErrorsFromOverridesSaySo) {
  std::string msg = ErrorOf(kMinimal, {"parallelism.global_batch=100", "parallelism.tp=8"});
  EXPECT_EQ(msg.rfind("test.textproto: parallelism.global_batch: global_batch 100", 0), 0u) << msg;
  EXPECT_TRUE(Contains(msg, "(set on the command line)")) << msg;
}

TEST(LoaderTest, MissingFilesAndDirectoriesAreReportedNotCrashed) {
  auto missing = LoadScenario("/nonexistent/dir/x.textproto");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "cannot open")) << missing.status().message();
  auto dir = LoadScenario(TRAINSIM_SOURCE_DIR);
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(Contains(dir.status().message(), "is a directory"));
}

TEST(LoaderTest, RelativeCalibrationPathsResolveAgainstTheScenarioFile) {
  fs::path dir = fs::temp_directory_path() / "trainsim_loader_test";
  fs::create_directories(dir);
  fs::path file = dir / "s.textproto";
  {
    std::ofstream out(file);
    out << kMinimal << "cluster { calibration: \"cal/h100.json\" }\n";
  }
  // Missing, it is an error naming the resolved path.
  auto missing = LoadScenario(file.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(
      Contains(missing.status().message(),
               "calibration file \"" + (dir / "cal/h100.json").string() + "\" does not exist"))
      << missing.status().message();
  fs::create_directories(dir / "cal");
  std::ofstream(dir / "cal/h100.json") << "{}";
  auto s = LoadScenario(file.string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster().calibration(), (dir / "cal/h100.json").string());
  fs::remove_all(dir);
}

TEST(LoaderTest, EveryBundledScenarioLoadsAndResolves) {
  int count = 0;
  for (const char* sub :
       {"scenarios/examples", "scenarios/validation", "scenarios/validation/checks"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / sub)) {
      if (entry.path().extension() != ".textproto" && entry.path().extension() != ".json") {
        continue;
      }
      auto s = LoadScenario(entry.path().string());
      ASSERT_TRUE(s.ok()) << s.status().message();
      auto r = Resolve(*s);
      ASSERT_TRUE(r.ok()) << r.status().message();
      ++count;
    }
  }
  EXPECT_GE(count, 1 + 5 + 4);  // demo, 5 Megatron rows, 2 recompute rows x 2 modes
}

// Every scalar field of the schema, assigned hostile values through --set, gives either a valid
// scenario or an error: never a crash, an abort or an exception.
void CollectScalarPaths(const google::protobuf::Descriptor& d, const std::string& prefix, int depth,
                        std::vector<std::string>* out) {
  for (int i = 0; i < d.field_count(); ++i) {
    const auto* f = d.field(i);
    std::string path = prefix + f->name();
    if (f->is_repeated()) path += ".0";
    if (f->message_type() != nullptr) {
      if (depth < 4) CollectScalarPaths(*f->message_type(), path + ".", depth + 1, out);
    } else if (!f->is_repeated() || f->message_type() != nullptr) {
      out->push_back(path);
    }
  }
}

TEST(LoaderTest, HostileOverridesOfEveryFieldNeverCrash) {
  std::vector<std::string> paths;
  CollectScalarPaths(*pb::Scenario::descriptor(), "", 0, &paths);
  ASSERT_GT(paths.size(), 60u);
  const char* kValues[] = {"0",   "-1",       "2147483647", "-2147483648", "1e308", "-1e-308",
                           "abc", "",         "GPU",        "FULL",        "-5h",   "999999999d",
                           "1.5", "steps:-3", "auto",       "true"};
  int accepted = 0;
  for (const std::string& path : paths) {
    for (const char* v : kValues) {
      auto r = ParseScenarioText(kMinimal, "fuzz", {path + "=" + v});
      if (r.ok()) {
        ++accepted;
        EXPECT_TRUE(Resolve(*r).ok()) << path << "=" << v;
      } else {
        EXPECT_FALSE(r.status().message().empty());
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(LoaderTest, TruncatedAndCorruptedFilesNeverCrash) {
  const std::string demo = std::string(kMinimal) +
                           "parallelism { tp: 2 pp: 2 virtual_stages: 2 global_batch: 64 }\n"
                           "faults { kind: STRAGGLER id: 5 at: \"1h\" duration: \"4h\" }\n";
  for (size_t n = 0; n <= demo.size(); ++n) {
    (void)ParseScenarioText(demo.substr(0, n), "cut");
  }
  uint64_t x = 88172645463325252ULL;  // xorshift64, fixed seed
  for (int i = 0; i < 3000; ++i) {
    std::string copy = demo;
    for (int k = 0; k < 3; ++k) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      copy[x % copy.size()] = static_cast<char>(x >> 40);
    }
    (void)ParseScenarioText(copy, "corrupt");
  }
}

// --- input text: UTF-8 and the byte-order mark (issue 21) ---

TEST(Utf8Test, FirstInvalidUtf8FollowsRfc3629) {
  EXPECT_EQ(FirstInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("\xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9"), std::nullopt);  // € 😀 é
  EXPECT_EQ(FirstInvalidUtf8("a\xFF"), 1u);                              // never a UTF-8 byte
  EXPECT_EQ(FirstInvalidUtf8("ab\x80"), 2u);                             // a lone continuation byte
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);                           // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xE0\x80\xAF"), 0u);                       // overlong 3-byte form
  EXPECT_EQ(FirstInvalidUtf8("\xED\xA0\x80"), 0u);                       // surrogate U+D800
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x90\x80\x80"), 0u);                   // U+110000
  EXPECT_EQ(FirstInvalidUtf8("x\xE2\x82"), 1u);                          // truncated at the end
  EXPECT_EQ(FirstInvalidUtf8(std::string_view("\0", 1)), std::nullopt);  // NUL is UTF-8
}

// A name with byte \377 made `run --json` and `validate --json` abort (nlohmann type_error 316).
TEST(Utf8Test, StringThatIsNotUtf8IsRefusedWithLineColumnAndField) {
  std::string msg = ErrorOf(std::string(kMinimal) + "name: \"run \\377\"\n");
  EXPECT_TRUE(Contains(msg, "test.textproto:4:")) << msg;
  EXPECT_TRUE(Contains(msg, "name: is not valid UTF-8 text (byte 0xFF at byte 4")) << msg;
  // Raw bytes, and a field deeper down.
  msg = ErrorOf(
      "model { name: \"\xC0\xAF\" layers: 24 hidden: 2048 heads: 16 }\n"
      "training { steps: 100 }\n");
  EXPECT_TRUE(Contains(msg, "test.textproto:1:")) << msg;
  EXPECT_TRUE(Contains(msg, "model.name: is not valid UTF-8")) << msg;
}

TEST(Utf8Test, SetValueThatIsNotUtf8IsRefusedAndSaysSo) {
  std::string msg = ErrorOf(kMinimal, {"name=\xFF"});
  EXPECT_TRUE(Contains(msg, "name: is not valid UTF-8")) << msg;
  EXPECT_TRUE(Contains(msg, "(set on the command line)")) << msg;
}

TEST(Utf8Test, ValidUtf8NamesAreKeptByteForByte) {
  const std::string name = "Llama \xE2\x80\x94 \xE6\xB5\x8B\xE8\xAF\x95 \xF0\x9F\x9A\x80";
  EXPECT_EQ(MustParse(std::string(kMinimal) + "name: \"" + name + "\"\n").name(), name);
}

// Chosen behaviour: a UTF-8 byte-order mark is skipped (it used to give a message with no
// line:column); positions after it are those of the text without it.
TEST(Utf8Test, ByteOrderMarkIsSkippedInTextAndJson) {
  const std::string bom = "\xEF\xBB\xBF";
  EXPECT_TRUE(MessageDifferencer::Equals(MustParse(bom + kMinimal), MustParse(kMinimal)));
  pb::Scenario j = MustParse(bom + R"({"model": {"layers": 24, "hidden": 2048, "heads": 16},
                                       "training": {"steps": 100}})");
  EXPECT_EQ(j.model().layers(), 24);
  std::string msg = ErrorOf(bom + "model { hiden: 1 }\n");
  EXPECT_TRUE(Contains(msg, "test.textproto:1:9")) << msg;
}

// --- numbers ---

TEST(LoaderTest, NegativeZeroIsStoredAsZero) {
  pb::Scenario s = MustParse(kMinimal, {"cost.usd_per_gpu_hour=-0"});
  EXPECT_EQ(s.cost().usd_per_gpu_hour(), 0.0);
  EXPECT_FALSE(std::signbit(s.cost().usd_per_gpu_hour()));  // prints "$0", not "$-0"
  s = MustParse(std::string(kMinimal) + "cost { usd_per_gpu_hour: -0.0 }\n");
  EXPECT_FALSE(std::signbit(s.cost().usd_per_gpu_hour()));
}

// strtod reports ERANGE for a denormal; it was called "not a finite number".
TEST(LoaderTest, DenormalFromSetIsANumberAndOverflowSaysSo) {
  pb::Scenario s = MustParse(kMinimal, {"failures.node_day_rate=1e-310"});
  EXPECT_GT(s.failures().node_day_rate(), 0.0);
  EXPECT_LT(s.failures().node_day_rate(), 1e-300);
  std::string msg = ErrorOf(kMinimal, {"failures.node_day_rate=1e400"});
  EXPECT_TRUE(Contains(msg, "beyond the range of a number")) << msg;
  EXPECT_FALSE(Contains(msg, "not a finite number")) << msg;
}

// k = 0.02 was accepted and hung run, whatif and sweep (checkpoint::kMinWeibullShape).
TEST(LoaderTest, WeibullShapeBelowTheMinimumIsRefusedWithItsReason) {
  std::string msg = ErrorOf(std::string(kMinimal) + "failures { weibull_shape: 0.02 }\n");
  EXPECT_TRUE(Contains(msg, "test.textproto:4:")) << msg;
  EXPECT_TRUE(Contains(msg, "failures.weibull_shape")) << msg;
  EXPECT_TRUE(Contains(msg, "must be >= 0.1")) << msg;
  MustParse(std::string(kMinimal) + "failures { weibull_shape: 0.1 }\n");
}

TEST(LoaderTest, FaultFieldsOfAnotherKindAreRefused) {
  std::string msg =
      ErrorOf(std::string(kMinimal) + "faults { kind: GPU id: 1 at: \"1h\" duration: \"1h\" }\n");
  EXPECT_TRUE(Contains(msg, "faults[0].duration: a GPU fault has no duration")) << msg;
  msg = ErrorOf(std::string(kMinimal) + "faults { kind: GPU id: 1 at: \"1h\" degrade: 0.5 }\n");
  EXPECT_TRUE(Contains(msg, "faults[0].degrade: degrade applies to LINK faults only")) << msg;
  msg = ErrorOf(std::string(kMinimal) + "faults { kind: NODE id: 0 at: \"1h\" slowdown: 2 }\n");
  EXPECT_TRUE(Contains(msg, "faults[0].slowdown: slowdown applies to STRAGGLER")) << msg;
  // A link that goes down takes its node out until recovery, as a NIC failure: its duration
  // was dropped without a word (a new user's whatif --fail link:5@3h+30m).
  msg =
      ErrorOf(std::string(kMinimal) + "faults { kind: LINK id: 1 at: \"1h\" duration: \"1h\" }\n");
  EXPECT_TRUE(Contains(msg, "faults[0].duration: a LINK fault that takes the link down")) << msg;
  // What each kind takes is still accepted: a degraded link lasts its duration.
  MustParse(std::string(kMinimal) +
            "faults { kind: LINK id: 1 at: \"1h\" duration: \"1h\" degrade: 0.5 }\n");
}

// 2^19 GPUs: run ~5.1 KB per node, collective ~6.3 KB per GPU (measured), under 4 GiB.
TEST(LoaderTest, GpuCountAboveTheMemoryBoundIsRefusedWithTheNodeLimit) {
  std::string msg = ErrorOf(kMinimal, {"cluster.nodes=65537"});
  EXPECT_TRUE(Contains(msg, "524296 GPUs is above the limit of 524288 GPUs")) << msg;
  EXPECT_TRUE(Contains(msg, "use at most 65536 nodes")) << msg;
}

}  // namespace
}  // namespace trainsim::scenarios

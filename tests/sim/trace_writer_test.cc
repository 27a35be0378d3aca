#include "sim/trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace trainsim::sim {
namespace {

using nlohmann::json;

TEST(TraceWriterTest, WritesExactlyTheDocumentedFormat) {
  TraceWriter t;
  t.SetThreadName(1, 0, "GPU 0");
  t.SetProcessName(1, "node 0");
  t.Complete("fwd", "compute", 1, 0, Time::Nanos(1500), Time::Micros(2));
  // Hand-written expectation: metadata first, µs with exact nanosecond fractions.
  EXPECT_EQ(t.ToJson(),
            "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
            "\"node 0\"}},\n"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
            "\"GPU 0\"}},\n"
            "{\"ph\":\"X\",\"name\":\"fwd\",\"pid\":1,\"tid\":0,\"ts\":1.500,\"dur\":2,\"cat\":"
            "\"compute\"}\n"
            "]}\n");
}

TEST(TraceWriterTest, EmptyTraceIsValidJson) {
  TraceWriter t;
  json j = json::parse(t.ToJson());
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_TRUE(j["traceEvents"].empty());
}

TEST(TraceWriterTest, AllEventKindsParseWithTheirFields) {
  TraceWriter t;
  for (int gpu = 0; gpu < 3; ++gpu) t.SetThreadName(7, gpu, "GPU " + std::to_string(gpu));
  t.SetProcessName(7, "node 7");
  t.SetProcessSortIndex(7, 2);
  t.SetThreadSortIndex(7, 1, 5);
  t.Complete("all-reduce", "comm", 7, 1, Time::Millis(3), Time::Nanos(1),
             {{"bytes", int64_t{1} << 30}, {"algo", std::string("ring")}, {"busbw_GBps", 361.5}});
  t.Instant("GPU 37 failed", "fault", 7, 2, Time::Hours(16), TraceWriter::InstantScope::kGlobal);
  t.Counter("inflight", 7, Time::Seconds(1), {{"flows", 12.0}, {"GBps", 0.25}});
  EXPECT_EQ(t.event_count(), 3u);

  json j = json::parse(t.ToJson());
  const json& ev = j["traceEvents"];
  // 3 thread names + 1 process name + 2 sort indices, then the 3 events.
  ASSERT_EQ(ev.size(), 9u);
  int meta = 0;
  for (const json& e : ev) meta += e["ph"] == "M";
  EXPECT_EQ(meta, 6);

  const json& x = ev[6];
  EXPECT_EQ(x["ph"], "X");
  EXPECT_EQ(x["name"], "all-reduce");
  EXPECT_EQ(x["cat"], "comm");
  EXPECT_DOUBLE_EQ(x["ts"].get<double>(), 3000.0);  // 3 ms in µs
  EXPECT_DOUBLE_EQ(x["dur"].get<double>(), 0.001);  // 1 ns in µs
  EXPECT_EQ(x["args"]["bytes"], int64_t{1} << 30);
  EXPECT_EQ(x["args"]["algo"], "ring");
  EXPECT_DOUBLE_EQ(x["args"]["busbw_GBps"].get<double>(), 361.5);

  const json& i = ev[7];
  EXPECT_EQ(i["ph"], "i");
  EXPECT_EQ(i["s"], "g");
  EXPECT_DOUBLE_EQ(i["ts"].get<double>(), 16.0 * 3600 * 1e6);

  const json& c = ev[8];
  EXPECT_EQ(c["ph"], "C");
  EXPECT_DOUBLE_EQ(c["args"]["flows"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(c["args"]["GBps"].get<double>(), 0.25);
}

TEST(TraceWriterTest, FlowEventsPairByIdAndBindToEnclosingSlice) {
  TraceWriter t;
  t.Complete("send", "p2p", 0, 3, Time::Micros(10), Time::Micros(5));
  t.FlowStart("activation", "p2p", 0, 3, Time::Micros(12), 42);
  t.Complete("recv", "p2p", 1, 0, Time::Micros(11), Time::Micros(8));
  t.FlowEnd("activation", "p2p", 1, 0, Time::Micros(17), 42);
  json j = json::parse(t.ToJson());
  const json& s = j["traceEvents"][1];
  const json& f = j["traceEvents"][3];
  EXPECT_EQ(s["ph"], "s");
  EXPECT_EQ(f["ph"], "f");
  EXPECT_EQ(s["id"], 42);
  EXPECT_EQ(f["id"], 42);
  EXPECT_EQ(f["bp"], "e");
  EXPECT_EQ(f["pid"], 1);
  EXPECT_DOUBLE_EQ(f["ts"].get<double>(), 17.0);
}

TEST(TraceWriterTest, StringsAreEscapedAndInvalidUtf8Replaced) {
  // Quotes, backslash, control characters and valid 2- and 3-byte UTF-8 survive a round trip.
  const std::string valid = "q\"b\\s/\n\t\x01 \xc3\xa9 \xe2\x82\xac ";
  // A stray byte, a truncated 2-byte sequence before '(', and an encoded surrogate (3 bytes).
  const std::string invalid = "\xff\xc3(\xed\xa0\x80";
  TraceWriter t;
  t.SetProcessName(0, valid + invalid);
  t.Instant(valid + invalid, valid, 0, 0, Time::Zero());
  json j = json::parse(t.ToJson());  // throws if not valid JSON / UTF-8
  const std::string name = j["traceEvents"][1]["name"];
  ASSERT_EQ(name.substr(0, valid.size()), valid);
  // Each invalid byte becomes U+FFFD (EF BF BD); '(' survives.
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(name.substr(valid.size()), fffd + fffd + "(" + fffd + fffd + fffd);
  EXPECT_EQ(j["traceEvents"][0]["args"]["name"], name);
  EXPECT_EQ(j["traceEvents"][1]["cat"], valid);
}

TEST(TraceWriterTest, NumbersAreExactAndNonFiniteBecomesNull) {
  std::string s;
  TraceWriter::AppendMicros(s, 0);
  s += ' ';
  TraceWriter::AppendMicros(s, 999);
  s += ' ';
  TraceWriter::AppendMicros(s, 1000);
  s += ' ';
  TraceWriter::AppendMicros(s, 1234567891);
  s += ' ';
  TraceWriter::AppendMicros(s, -1);
  s += ' ';
  TraceWriter::AppendMicros(s, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(s, "0 0.999 1 1234567.891 -0.001 -9223372036854775.808");

  s.clear();
  TraceWriter::AppendDouble(s, 0.1);
  s += ' ';
  TraceWriter::AppendDouble(s, 1e300);
  s += ' ';
  TraceWriter::AppendDouble(s, std::nan(""));
  s += ' ';
  TraceWriter::AppendDouble(s, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s, "0.1 1e+300 null null");
}

TEST(TraceWriterTest, OutputIsDeterministicAndMetadataOrderedById) {
  auto build = [](bool reversed) {
    TraceWriter t;
    for (int k = 0; k < 4; ++k) {
      const int pid = reversed ? 3 - k : k;
      t.SetProcessName(pid, "node " + std::to_string(pid));
      t.SetThreadName(pid, 0, "GPU");
    }
    t.Complete("a", "c", 0, 0, Time::Zero(), Time::Nanos(5));
    return t.ToJson();
  };
  EXPECT_EQ(build(false), build(true));
  const std::string out = build(false);
  EXPECT_LT(out.find("node 0"), out.find("node 1"));
  EXPECT_LT(out.find("node 2"), out.find("node 3"));
}

TEST(TraceWriterTest, WriteToProducesTheSameBytesAndReportsBadPaths) {
  TraceWriter t;
  t.Complete("a", "c", 0, 0, Time::Zero(), Time::Nanos(5));
  const std::string path = "/tmp/trainsim_trace_writer_test." + std::to_string(::getpid());
  ASSERT_TRUE(t.WriteTo(path).ok());
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), t.ToJson());
  ::unlink(path.c_str());

  Status s = t.WriteTo("/nonexistent-dir/trace.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::sim

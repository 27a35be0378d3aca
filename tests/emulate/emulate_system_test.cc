// The emulation as a system: the trainsim binary as coordinator and workers on loopback, real
// kills, stops and throttles. Every test bounds its waits and checks that no process it caused
// is left: the test is a child subreaper, so an orphaned worker would be re-parented to it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Proc {
  pid_t pid = -1;
  std::string out, err;  // files
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class EmulateSystem : public ::testing::Test {
 protected:
  void SetUp() override {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/emulate_sys_" + info->name() + "_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A copy of the scenario under the unique directory: every worker's command line names it.
    scenario_ = dir_ + "/faults.textproto";
    fs::copy_file(std::string(TRAINSIM_TEST_DIR) + "/faults.textproto", scenario_);
    clean_ = dir_ + "/clean.textproto";
    fs::copy_file(std::string(TRAINSIM_TEST_DIR) + "/clean.textproto", clean_);
    for (const char* name : {"inmemory", "wait_repair", "elastic", "sdc", "failures"}) {
      fs::copy_file(std::string(TRAINSIM_TEST_DIR) + "/" + name + ".textproto",
                    dir_ + "/" + name + ".textproto");
    }
  }
  void TearDown() override {
    EXPECT_EQ(LeftOver(), "") << "processes left behind";
    fs::remove_all(dir_);
  }

  // `ignore_sigint`: start it as a shell starts a background job, with SIGINT ignored.
  Proc Start(std::vector<std::string> args, const std::string& tag, bool ignore_sigint = false) {
    Proc p;
    p.out = dir_ + "/" + tag + ".out";
    p.err = dir_ + "/" + tag + ".err";
    args.insert(args.begin(), TRAINSIM_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    p.pid = ::fork();
    if (p.pid == 0) {
      const int o = ::open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      if (ignore_sigint) ::signal(SIGINT, SIG_IGN);  // kept across exec
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return p;
  }

  // Up to `limit_s` for a committed manifest in `dir`: renamed into place, not its .tmp, which a
  // kill may strand (the coordinator creates the directory a moment after it starts).
  static bool WaitForManifest(const std::string& dir, double limit_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("manifest-", 0) == 0 && e.path().extension() == ".txt") return true;
      }
    }
    return false;
  }

  // The exit code, or -1 after killing it when `limit_s` passes.
  static int Wait(const Proc& p, double limit_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    for (;;) {
      int st = 0;
      if (::waitpid(p.pid, &st, WNOHANG) == p.pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
      if (std::chrono::steady_clock::now() > end) {
        ::kill(p.pid, SIGKILL);
        ::waitpid(p.pid, &st, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Processes re-parented to us or naming our directory; reaped (and killed) so none outlives
  // the test, and listed so the test fails.
  std::string LeftOver() {
    std::string found;
    for (int round = 0; round < 50; ++round) {  // up to 1 s for exiting workers to finish
      found.clear();
      for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = Slurp(e.path().string() + "/stat");
        const size_t rp = stat.rfind(')');
        if (rp == std::string::npos) continue;
        std::istringstream rest(stat.substr(rp + 2));
        char state = 0;
        int ppid = 0;
        rest >> state >> ppid;
        std::string cmd = Slurp(e.path().string() + "/cmdline");
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        if (ppid == ::getpid() || cmd.find(dir_) != std::string::npos) {
          found += name + " " + cmd + "\n";
          int st = 0;
          if (state == 'Z') ::waitpid(std::stoi(name), &st, WNOHANG);
        }
      }
      if (found.empty()) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const auto& e : fs::directory_iterator("/proc")) {  // clean up, then report
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (Slurp(e.path().string() + "/cmdline").find(dir_) != std::string::npos) {
        ::kill(std::stoi(name), SIGKILL);
      }
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return found;
  }

  // The HOST:PORT a coordinator started with --listen 127.0.0.1:0 prints on stderr ("" after
  // 30 s): binding port 0 itself leaves no window for another process to take the port.
  static std::string ListeningOn(const Proc& p) {
    const std::string tag = "coordinator listening on ";
    for (int i = 0; i < 600; ++i) {
      const std::string err = Slurp(p.err);
      const size_t at = err.find(tag);
      const size_t nl = at == std::string::npos ? at : err.find('\n', at);
      if (nl != std::string::npos) return err.substr(at + tag.size(), nl - at - tag.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }

  static int FreePort() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t n = sizeof a;
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
    ::close(s);
    return ntohs(a.sin_port);
  }

  // `trainsim emulate` of tests/emulate/NAME.textproto at --time-scale 250 (a step computes
  // 4.4 ms) with 64 KiB of state; asserts exit 0 and returns the --json document.
  nlohmann::json Emulate(const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"emulate",       dir_ + "/" + name + ".textproto",
                                     "--time-scale",  "250",
                                     "--state-bytes", "65536",
                                     "--dir",         dir_ + "/ckpt-" + name,
                                     "--timeout",     "60",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    Proc p = Start(args, "emulate-" + name);
    const int rc = Wait(p, 90);
    EXPECT_EQ(rc, 0) << Slurp(p.err) << Slurp(p.out);
    if (rc != 0) return nlohmann::json::object();
    return nlohmann::json::parse(Slurp(p.out));
  }

  std::string dir_, scenario_, clean_;
};

// The faults of a --json document that were failures (not slowdowns), in injection order.
std::vector<nlohmann::json> Failures(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  for (const auto& f : doc["faults"]) {
    if (f["kind"] != "LINK" && f["kind"] != "STRAGGLER") out.push_back(f);
  }
  return out;
}

TEST_F(EmulateSystem, InMemoryRestoresFromThePeerCopyAndFromStorageWhenThePeerDiedToo) {
  const nlohmann::json doc = Emulate("inmemory", {"--workers", "4", "--steps", "420"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  EXPECT_EQ(doc["plan"]["checkpoint_policy"], "IN_MEMORY");
  const std::vector<nlohmann::json> f = Failures(doc);
  ASSERT_EQ(f.size(), 3u) << doc["faults"].dump();
  // One kill: rank 1's slice is also in rank 2's memory, so every slice is restored from a
  // live process's memory, not from DIR.
  EXPECT_EQ(f[0]["restored_from"], "memory") << f[0].dump();
  // Ranks 1 and 2 together: slice 1 was held by exactly those two; the newest persisted
  // manifest (every 2nd checkpoint) is the fallback.
  EXPECT_EQ(f[1]["restored_from"], "storage") << f[1].dump();
  EXPECT_FALSE(f[2]["detected_after_s"].is_null()) << f[2].dump();  // found by the same poll
  EXPECT_EQ(doc["measured"]["memory_restores"], 1);
  EXPECT_GT(doc["measured"]["memory_checkpoints"].get<int>(), 0);
  EXPECT_GT(doc["measured"]["peer_copy_s"].get<double>(), 0);
  EXPECT_EQ(doc["measured"]["processes_started"], 4 + 3);  // a spare per killed process
}

TEST_F(EmulateSystem, WaitForRepairWaitsTheScaledRepairTimeBeforeRestarting) {
  const nlohmann::json doc = Emulate("wait_repair", {"--workers", "3", "--steps", "300"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  const std::vector<nlohmann::json> f = Failures(doc);
  ASSERT_EQ(f.size(), 1u) << doc["faults"].dump();
  // repair_time 100 s at time scale 250: the restart cannot come before 0.4 s.
  EXPECT_GE(f[0]["restart_s"].get<double>(), 100.0 / 250) << f[0].dump();
  EXPECT_EQ(f[0]["world_after"], 3);
}

TEST_F(EmulateSystem, ElasticContinuesWithOneWorkerFewerAndMatchesItsWorldScheduleReference) {
  const nlohmann::json doc = Emulate("elastic", {"--workers", "4", "--steps", "300"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  const std::vector<nlohmann::json> f = Failures(doc);
  ASSERT_EQ(f.size(), 1u) << doc["faults"].dump();
  EXPECT_EQ(f[0]["world_after"], 3);
  EXPECT_EQ(doc["measured"]["processes_started"], 4);  // no spare: the job shrank
  // 4 workers up to the restored checkpoint (a multiple of 20 steps), 3 after it.
  const std::string schedule = doc["measured"]["world_schedule"];
  ASSERT_EQ(schedule.rfind("0:4,", 0), 0u) << schedule;
  const int64_t from = std::stoll(schedule.substr(4));
  EXPECT_EQ(from % 20, 0) << schedule;
  EXPECT_EQ(schedule.substr(schedule.size() - 2), ":3") << schedule;
}

TEST_F(EmulateSystem, TreeAllReduceOfFiveWorkersSurvivesAnElasticShrinkBitForBit) {
  const nlohmann::json doc =
      Emulate("elastic", {"--workers", "5", "--steps", "300", "--algorithm", "tree"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_EQ(doc["plan"]["algorithm"], "tree");
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  EXPECT_EQ(Failures(doc).at(0)["world_after"], 4);
  EXPECT_GT(doc["measured"]["bytes_moved"].get<double>(), 0);
}

TEST_F(EmulateSystem, SilentCorruptionIsFoundByTheLossCheckAndRolledBackBitForBit) {
  const nlohmann::json doc = Emulate("sdc", {"--workers", "4", "--steps", "300"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  const std::vector<nlohmann::json> f = Failures(doc);
  ASSERT_EQ(f.size(), 1u) << doc["faults"].dump();
  EXPECT_EQ(f[0]["kind"], "SDC");
  EXPECT_EQ(f[0]["mechanism"], "LOSS_CHECK") << f[0].dump();
  // Found at the next check: within the check interval (0.2 s) plus 0.5 s for a loaded machine.
  EXPECT_LE(f[0]["detected_after_s"].get<double>(), f[0]["detection_bound_s"].get<double>() + 0.5);
  EXPECT_GT(f[0]["lost_steps"].get<int64_t>(), 0);
  // Every checkpoint written after the corruption was set aside, never restored.
  for (const auto& s : doc["skipped_manifests"]) {
    EXPECT_NE(s.get<std::string>().find("set aside"), std::string::npos) << s;
  }
}

TEST_F(EmulateSystem, FailureModelFaultsAreTheRunSimulationsDrawsTimeScaled) {
  const nlohmann::json doc = Emulate("failures", {"--workers", "4", "--steps", "300"});
  ASSERT_TRUE(doc.contains("faults"));
  EXPECT_TRUE(doc["state_identical"].get<bool>()) << doc.dump();
  std::vector<nlohmann::json> drawn;
  for (const auto& f : doc["faults"]) {
    if (f["source"] == "failures") drawn.push_back(f);
  }
  ASSERT_FALSE(drawn.empty()) << doc.dump();
  // The run simulation of the same (unscaled) scenario sees the same first failure: the
  // emulation called its sampler on its stream.
  Proc run = Start({"run", dir_ + "/failures.textproto", "--json"}, "run");
  ASSERT_EQ(Wait(run, 60), 0) << Slurp(run.err);
  const nlohmann::json sim = nlohmann::json::parse(Slurp(run.out));
  const nlohmann::json& records =
      sim.contains("failure_records") ? sim["failure_records"] : sim["run"]["failure_records"];
  ASSERT_FALSE(records.empty()) << sim.dump();
  EXPECT_NEAR(drawn[0]["scenario_at_s"].get<double>(), records[0]["at_s"].get<double>(), 1e-6);
  EXPECT_NEAR(drawn[0]["planned_at_s"].get<double>(), records[0]["at_s"].get<double>() / 250, 1e-6);
}

TEST_F(EmulateSystem, EightWorkersSurviveKillTornCheckpointHangAndThrottleBitForBit) {
  // 700 steps of 4.4 ms compute (the scenario's step / 250) plus the ring: 5-8 s.
  Proc p = Start({"emulate",
                  scenario_,
                  "--workers",
                  "8",
                  "--steps",
                  "700",
                  "--time-scale",
                  "250",
                  "--state-bytes",
                  "65536",
                  "--dir",
                  dir_ + "/ckpt",
                  "--kill-during-checkpoint",
                  "3",
                  "--kill-rank",
                  "5",
                  "--timeout",
                  "60",
                  "--json",
                  "--trace",
                  dir_ + "/trace.json"},
                 "emulate");
  const int rc = Wait(p, 90);
  ASSERT_EQ(rc, 0) << Slurp(p.err) << Slurp(p.out);
  const nlohmann::json doc = nlohmann::json::parse(Slurp(p.out));
  EXPECT_TRUE(doc["state_identical"].get<bool>());
  EXPECT_EQ(doc["state_hash"], doc["reference_hash"]);
  std::map<std::string, int> kinds;
  for (const auto& f : doc["faults"]) {
    const std::string kind = f["kind"];
    ++kinds[kind];
    if (kind == "LINK") {
      EXPECT_TRUE(f["detected_after_s"].is_null());  // a slowdown is not a failure
      continue;
    }
    ASSERT_FALSE(f["detected_after_s"].is_null()) << f.dump();
    // Within the mechanism's bound: a poll/deadline of bound_s, plus 0.5 s for a loaded machine
    // (a 2-core CI box under ASan schedules 10 processes).
    EXPECT_LE(f["detected_after_s"].get<double>(), f["detection_bound_s"].get<double>() + 0.5)
        << f.dump();
    EXPECT_GT(f["detected_after_s"].get<double>(), 0) << f.dump();
    EXPECT_EQ(f["mechanism"], f["expected_mechanism"]) << f.dump();
  }
  EXPECT_EQ(kinds["LINK"], 1);
  EXPECT_EQ(kinds["HANG"], 1);
  EXPECT_EQ(kinds["GPU"], 2);  // the scheduled kill and the kill in the third checkpoint's write
  // The torn checkpoint (step 60, rank 5 killed half way) was never committed: the restore went
  // back to step 40 and redid at least the 20 steps since.
  bool torn_seen = false;
  for (const auto& f : doc["faults"]) {
    if (f["kind"] == "GPU" && f["rank"] == 5 && f["lost_steps"].get<int64_t>() >= 20) {
      torn_seen = true;
    }
  }
  EXPECT_TRUE(torn_seen) << doc["faults"].dump();
  EXPECT_TRUE(doc["predicted"].contains("wall_time_s")) << doc["predicted"].dump();
  // The measured run as a trace in run --trace's format: three detections and three restarts.
  const nlohmann::json trace = nlohmann::json::parse(Slurp(dir_ + "/trace.json"));
  std::map<std::string, int> slices;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "X") ++slices[e.value("name", "")];
  }
  EXPECT_EQ(slices["detection"], 3) << trace.dump();
  EXPECT_EQ(slices["restart"], 3) << trace.dump();
}

TEST_F(EmulateSystem, PortInUseIsRefusedWithExit2) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  const std::string listen = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  Proc p = Start({"emulate", scenario_, "--workers", "2", "--steps", "10", "--time-scale", "250",
                  "--dir", dir_ + "/ckpt", "--listen", listen},
                 "emulate");
  EXPECT_EQ(Wait(p, 60), 2);
  const std::string err = Slurp(p.err);
  EXPECT_NE(err.find("trainsim: error: --listen " + listen), std::string::npos) << err;
  EXPECT_NE(err.find("in use"), std::string::npos) << err;
  ::close(s);
}

TEST_F(EmulateSystem, UnreachableCoordinatorIsRefusedWithExit2) {
  const std::string where = "127.0.0.1:" + std::to_string(FreePort());
  Proc p =
      Start({"worker", scenario_, "--coordinator", where, "--connect-timeout", "0.3"}, "worker");
  EXPECT_EQ(Wait(p, 60), 2);
  EXPECT_NE(Slurp(p.err).find("trainsim: error: cannot reach the coordinator at " + where),
            std::string::npos)
      << Slurp(p.err);
}

TEST_F(EmulateSystem, WorkersStartedSeparatelyJoinAndAnotherScenarioIsRefused) {
  Proc coord = Start({"emulate", clean_, "--workers", "2", "--steps", "200", "--time-scale", "250",
                      "--state-bytes", "4096", "--dir", dir_ + "/ckpt", "--listen", "127.0.0.1:0",
                      "--no-spawn", "--timeout", "60", "--json"},
                     "emulate");
  const std::string where = ListeningOn(coord);
  ASSERT_NE(where, "") << Slurp(coord.err);
  // A worker of a different scenario (another --set) is refused before it gets a rank.
  Proc wrong =
      Start({"worker", clean_, "--coordinator", where, "--set", "training.steps=7"}, "wrong");
  EXPECT_EQ(Wait(wrong, 60), 2);
  EXPECT_NE(Slurp(wrong.err).find("refused this worker: scenario hash"), std::string::npos)
      << Slurp(wrong.err) << Slurp(coord.err);
  Proc w1 = Start({"worker", clean_, "--coordinator", where}, "w1");
  Proc w2 = Start({"worker", clean_, "--coordinator", where}, "w2");
  EXPECT_EQ(Wait(coord, 60), 0) << Slurp(coord.err);
  EXPECT_EQ(Wait(w1, 30), 0) << Slurp(w1.err);
  EXPECT_EQ(Wait(w2, 30), 0) << Slurp(w2.err);
  const nlohmann::json doc = nlohmann::json::parse(Slurp(coord.out));
  EXPECT_TRUE(doc["state_identical"].get<bool>());
  EXPECT_EQ(doc["measured"]["processes_started"], 0);
}

}  // namespace

TEST_F(EmulateSystem, KilledCoordinatorEndsItsWorkersAndResumeContinuesFromTheLastManifest) {
  const std::string ckpt = dir_ + "/ckpt";
  // 400 steps of 4.4 ms (~2 s): the coordinator is killed at its first manifest (step 20).
  const std::vector<std::string> run = {"--workers",    "2",   "--steps",       "400",
                                        "--time-scale", "250", "--state-bytes", "4096",
                                        "--timeout",    "60"};
  std::vector<std::string> first = {"emulate",  clean_,        "--dir",     ckpt,
                                    "--listen", "127.0.0.1:0", "--no-spawn"};
  first.insert(first.end(), run.begin(), run.end());
  Proc coord = Start(first, "emulate");
  const std::string where = ListeningOn(coord);
  ASSERT_NE(where, "") << Slurp(coord.err);
  Proc w1 = Start({"worker", clean_, "--coordinator", where}, "w1");
  Proc w2 = Start({"worker", clean_, "--coordinator", where}, "w2");
  ASSERT_TRUE(WaitForManifest(ckpt, 30)) << Slurp(coord.err);
  ::kill(coord.pid, SIGKILL);
  EXPECT_EQ(Wait(coord, 10), -2);  // killed by the signal
  // The workers see their coordinator's connection close and exit 1 at once.
  EXPECT_EQ(Wait(w1, 10), 1) << Slurp(w1.err);
  EXPECT_EQ(Wait(w2, 10), 1) << Slurp(w2.err);
  EXPECT_NE(Slurp(w1.err).find("lost the coordinator"), std::string::npos) << Slurp(w1.err);

  std::vector<std::string> again = {"emulate", clean_, "--resume", ckpt, "--json"};
  again.insert(again.end(), run.begin(), run.end());
  Proc resumed = Start(again, "resumed");
  ASSERT_EQ(Wait(resumed, 90), 0) << Slurp(resumed.err);
  const nlohmann::json doc = nlohmann::json::parse(Slurp(resumed.out));
  EXPECT_GT(doc["measured"]["start_step"].get<int64_t>(), 0);
  EXPECT_TRUE(doc["state_identical"].get<bool>());
}

// SIGTERM (a scheduler's cancel) to the coordinator: it reaps its workers, says why, and then
// dies of the signal like every other command (docs/commands.md), so the shell sees 128 + 15
// rather than exit 2, which means bad input.
TEST_F(EmulateSystem, TerminatedCoordinatorReapsItsWorkersAndDiesOfTheSignal) {
  const std::string ckpt = dir_ + "/ckpt";
  Proc coord =
      Start({"emulate", clean_, "--dir", ckpt, "--listen", "127.0.0.1:0", "--workers", "2",
             "--steps", "4000", "--time-scale", "250", "--state-bytes", "4096", "--timeout", "60"},
            "emulate");
  ASSERT_NE(ListeningOn(coord), "") << Slurp(coord.err);
  // Training has started once the first manifest is committed (step 20, ~0.1 s in).
  ASSERT_TRUE(WaitForManifest(ckpt, 30)) << Slurp(coord.err);
  ::kill(coord.pid, SIGTERM);
  EXPECT_EQ(Wait(coord, 20), -2) << Slurp(coord.err);  // died of a signal, not exit 2
  EXPECT_NE(Slurp(coord.err).find("interrupted by signal 15"), std::string::npos)
      << Slurp(coord.err);
}

// A coordinator started with SIGINT ignored (a shell's background job) keeps ignoring it, as
// any program does, and finishes its run; SIGTERM still stops it (the test above).
TEST_F(EmulateSystem, CoordinatorStartedWithSigintIgnoredKeepsIgnoringIt) {
  const std::string ckpt = dir_ + "/ckpt";
  Proc coord =
      Start({"emulate", clean_, "--dir", ckpt, "--listen", "127.0.0.1:0", "--workers", "2",
             "--steps", "400", "--time-scale", "250", "--state-bytes", "4096", "--timeout", "60"},
            "emulate", /*ignore_sigint=*/true);
  ASSERT_NE(ListeningOn(coord), "") << Slurp(coord.err);
  ASSERT_TRUE(WaitForManifest(ckpt, 30)) << Slurp(coord.err);
  ::kill(coord.pid, SIGINT);
  EXPECT_EQ(Wait(coord, 60), 0) << Slurp(coord.err);
}

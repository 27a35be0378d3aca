// The emulation's protocol, training arithmetic and checkpoint store, in-process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "emulate/checkpoint_store.h"
#include "emulate/protocol.h"

namespace trainsim::emulate {
namespace {

std::string TempDir(const std::string& name) {
  const std::string d =
      ::testing::TempDir() + "/emulate_store_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(EmulateProtocol, MessagesRoundTripThroughTheirEncoding) {
  Message m{"ASSIGN", {}};
  m.Set("rank", 3).SetReal("compute_s", 0.1).Set("dir", "/tmp/a b");
  Result<Message> back = Decode(Encode(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, "ASSIGN");
  EXPECT_EQ(back->Int("rank"), 3);
  EXPECT_EQ(back->Real("compute_s"), 0.1);  // %.17g round-trips a double exactly
  EXPECT_EQ(back->Get("dir"), "/tmp/a b");
  EXPECT_EQ(ParseLengthPrefix(reinterpret_cast<const unsigned char*>(LengthPrefix(70000).data())),
            70000u);
}

TEST(EmulateProtocol, MalformedPayloadIsRefusedNotGuessed) {
  EXPECT_FALSE(Decode("").ok());
  EXPECT_FALSE(Decode("HELLO\nno-equals-sign\n").ok());
  EXPECT_FALSE(Decode("HELLO\nkey=unterminated").ok());
}

TEST(EmulateArithmetic, ReferenceOfOneStepIsTheRingOrderedSumApplied) {
  // One step by hand: chunk c is summed g[c] + g[c+1] + ... in ring order, then state -= lr*sum/N.
  const int world = 3;
  const int64_t n = 7;
  std::vector<double> state = InitialState(1, n);
  std::vector<std::vector<double>> g(world, std::vector<double>(n));
  for (int r = 0; r < world; ++r) Gradient(1, r, 1, &g[r]);
  for (int c = 0; c < world; ++c) {
    auto [lo, hi] = ChunkRange(n, world, c);
    for (int64_t i = lo; i < hi; ++i) {
      const double sum = (g[c][i] + g[(c + 1) % world][i]) + g[(c + 2) % world][i];
      state[i] -= kLearningRate * (sum / world);
    }
  }
  const std::vector<double> ref = ReferenceState(1, n, world, 1);
  EXPECT_EQ(0, std::memcmp(ref.data(), state.data(), n * sizeof(double)));
}

TEST(EmulateArithmetic, ChunksTileTheBufferWithoutGaps) {
  int64_t next = 0;
  for (int c = 0; c < 8; ++c) {
    auto [lo, hi] = ChunkRange(1001, 8, c);
    EXPECT_EQ(lo, next);
    next = hi;
  }
  EXPECT_EQ(next, 1001);
}

TEST(EmulateCheckpointStore, RestoresTheNewestCompleteManifest) {
  const std::string dir = TempDir("newest");
  const std::vector<double> state = InitialState(7, 10);
  for (int64_t step : {10, 20}) {
    Manifest m{step, 2, 10, {}, ""};
    for (int r = 0; r < 2; ++r) {
      auto [lo, hi] = ChunkRange(10, 2, r);
      Result<uint64_t> sum = WriteShard(dir, step, r, 2, state.data() + lo, hi - lo);
      ASSERT_TRUE(sum.ok());
      m.checksums.push_back(*sum);
    }
    ASSERT_TRUE(CommitManifest(dir, m).ok());
  }
  std::vector<double> back;
  Result<Restorable> r = FindRestorable(dir, 2, 10, &back);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->found);
  EXPECT_EQ(r->manifest.step, 20);
  EXPECT_TRUE(r->skipped.empty());
  EXPECT_EQ(0, std::memcmp(back.data(), state.data(), 10 * sizeof(double)));
  std::filesystem::remove_all(dir);
}

TEST(EmulateCheckpointStore, FallsBackToThePreviousManifestWhenAShardIsCorrupt) {
  const std::string dir = TempDir("torn");
  const std::vector<double> state = InitialState(7, 10);
  for (int64_t step : {10, 20}) {
    Manifest m{step, 2, 10, {}, ""};
    for (int r = 0; r < 2; ++r) {
      auto [lo, hi] = ChunkRange(10, 2, r);
      m.checksums.push_back(*WriteShard(dir, step, r, 2, state.data() + lo, hi - lo));
    }
    ASSERT_TRUE(CommitManifest(dir, m).ok());
  }
  // Flip one byte of the newest checkpoint's shard 1: its checksum no longer matches.
  {
    std::fstream f(ShardPath(dir, 20, 1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x5a');
  }
  Result<Restorable> r = FindRestorable(dir, 2, 10, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->found);
  EXPECT_EQ(r->manifest.step, 10);
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_NE(r->skipped[0].find("manifest-20: shard 1 checksum mismatch"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(EmulateCheckpointStore, AShardWithoutAManifestIsNeverRestored) {
  const std::string dir = TempDir("uncommitted");
  const std::vector<double> state = InitialState(7, 4);
  ASSERT_TRUE(WriteShard(dir, 5, 0, 1, state.data(), 4).ok());
  Result<Restorable> r = FindRestorable(dir, 1, 4, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->found);
  std::filesystem::remove_all(dir);
}

// Writes a complete checkpoint of `world` ranks at `step` (schedule `schedule`) into `dir`.
void WriteCheckpoint(const std::string& dir, int64_t step, int world, const std::string& schedule) {
  const std::vector<double> state = InitialState(7, 12);
  Manifest m{step, world, 12, {}, schedule};
  for (int r = 0; r < world; ++r) {
    auto [lo, hi] = ChunkRange(12, world, r);
    Result<uint64_t> sum = WriteShard(dir, step, r, world, state.data() + lo, hi - lo);
    ASSERT_TRUE(sum.ok());
    m.checksums.push_back(*sum);
  }
  ASSERT_TRUE(CommitManifest(dir, m).ok());
}

TEST(EmulateCheckpointStore, AnyWorldRestoresACheckpointOfAnotherWorldWithItsSchedule) {
  const std::string dir = TempDir("anyworld");
  WriteCheckpoint(dir, 10, 4, "0:4");
  std::vector<double> back;
  Result<Restorable> r = FindRestorable(dir, 0, 12, &back);  // an elastic job of 3 restores it
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->found);
  EXPECT_EQ(r->manifest.world, 4);
  EXPECT_EQ(r->manifest.schedule, "0:4");
  EXPECT_EQ(0, std::memcmp(back.data(), InitialState(7, 12).data(), 12 * sizeof(double)));
  std::filesystem::remove_all(dir);
}

TEST(EmulateCheckpointStore, KeepLastDeletesAllButTheNewestManifestsAndTheirShards) {
  const std::string dir = TempDir("keeplast");
  for (int64_t step : {10, 20, 30}) WriteCheckpoint(dir, step, 2, "");
  ASSERT_TRUE(PruneManifests(dir, 2).ok());
  EXPECT_FALSE(std::filesystem::exists(ManifestPath(dir, 10)));
  EXPECT_FALSE(std::filesystem::exists(ShardPath(dir, 10, 1)));
  EXPECT_TRUE(std::filesystem::exists(ManifestPath(dir, 20)));
  EXPECT_TRUE(std::filesystem::exists(ManifestPath(dir, 30)));
  std::filesystem::remove_all(dir);
}

TEST(EmulateCheckpointStore, CheckpointsAfterACorruptionAreSetAsideNeverRestored) {
  const std::string dir = TempDir("setaside");
  for (int64_t step : {10, 20, 30}) WriteCheckpoint(dir, step, 2, "");
  EXPECT_EQ(SetAsideManifestsAfter(dir, 15), (std::vector<int64_t>{30, 20}));
  Result<Restorable> r = FindRestorable(dir, 2, 12, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->manifest.step, 10);
  std::filesystem::remove_all(dir);
}

TEST(EmulateArithmetic, TreeAndRingRoundInTheirOwnOrder) {
  // Three ranks, three elements; element 2 is ring chunk 2. 1e16 + 1 rounds to 1e16 (the
  // spacing of doubles there is 2, ties to even), 1e16 + 2 is exact.
  const std::vector<std::vector<double>> g = {{1, 1, 1}, {1e16, 1e16, 1e16}, {1, 1, 1}};
  std::vector<double> tree(3), ring(3);
  ReduceInOrder(g, 3, Algorithm::kTree, &tree);
  ReduceInOrder(g, 3, Algorithm::kRing, &ring);
  EXPECT_EQ(tree[2], 1e16);      // (g0 + g1) + g2: each 1 is lost
  EXPECT_EQ(ring[2], 1e16 + 2);  // g0 + g2 first (= 2), then + g1
  EXPECT_EQ(ring[0], 1e16);      // chunk 0 starts at g0: g1 + g0 loses the 1, as the tree does
}

TEST(EmulateArithmetic, ScheduleReferenceRunsEachSegmentWithItsWorld) {
  const int64_t n = 12;
  EXPECT_EQ(ReferenceState(3, n, {{0, 4}}, 5, Algorithm::kRing), ReferenceState(3, n, 4, 5));
  // Steps 1-2 with 4 ranks, step 3 with 3: the update divides by the world of its step.
  std::vector<double> want = ReferenceState(3, n, 4, 2);
  std::vector<std::vector<double>> g(3, std::vector<double>(n));
  for (int r = 0; r < 3; ++r) Gradient(3, r, 3, &g[r]);
  std::vector<double> sum(n);
  ReduceInOrder(g, 3, Algorithm::kRing, &sum);
  ApplyUpdate(sum, 3, &want);
  EXPECT_EQ(ReferenceState(3, n, {{0, 4}, {2, 3}}, 3, Algorithm::kRing), want);
}

TEST(EmulateArithmetic, SchedulesRoundTripAndMalformedOnesAreEmpty) {
  const std::vector<WorldSegment> s = {{0, 8}, {120, 7}};
  EXPECT_EQ(FormatSchedule(s), "0:8,120:7");
  const std::vector<WorldSegment> back = ParseSchedule("0:8,120:7");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].from_step, 120);
  EXPECT_EQ(back[1].world, 7);
  EXPECT_TRUE(ParseSchedule("0:8,0:7").empty());  // not increasing
  EXPECT_TRUE(ParseSchedule("0-8").empty());
}

}  // namespace
}  // namespace trainsim::emulate

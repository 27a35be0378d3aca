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
    Manifest m{step, 2, 10, {}};
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
    Manifest m{step, 2, 10, {}};
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

}  // namespace
}  // namespace trainsim::emulate

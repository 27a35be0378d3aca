#include "sim/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::sim {
namespace {

std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  return s;
}

TEST(ProgressBarTest, DisabledBarWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar::Options o;
    o.enabled = false;
    o.out = f;
    ProgressBar bar("sweep", 10, o);
    for (int i = 0; i < 10; ++i) bar.Add();
    EXPECT_EQ(bar.done(), 10u);
  }
  EXPECT_EQ(Contents(f), "");
  std::fclose(f);
}

TEST(ProgressBarTest, HiddenWhenCiIsSet) {
  // Whatever stderr is, CI set means no bar.
  const char* old = std::getenv("CI");
  std::string saved = old ? old : "";
  ::setenv("CI", "true", 1);
  EXPECT_FALSE(ProgressBar::ShouldShowOnStderr());
  if (old) {
    ::setenv("CI", saved.c_str(), 1);
  } else {
    ::unsetenv("CI");
  }
}

TEST(ProgressBarTest, EnabledBarDrawsInPlaceAndEndsWithNewline) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressBar::Options o;
  o.enabled = true;
  o.out = f;
  o.min_redraw_interval = std::chrono::milliseconds(0);
  o.width = 10;
  {
    ProgressBar bar("trials", 4, o);
    for (int i = 0; i < 4; ++i) bar.Add();
    bar.Finish();
    bar.Finish();  // idempotent
  }
  const std::string out = Contents(f);
  EXPECT_EQ(out.front(), '\r');
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
  EXPECT_NE(out.find("trials [##########] 100% 4/4"), std::string::npos) << out;
  std::fclose(f);
}

TEST(ProgressBarTest, RedrawsAreThrottled) {
  std::FILE* f = std::tmpfile();
  ProgressBar::Options o;
  o.enabled = true;
  o.out = f;
  o.min_redraw_interval = std::chrono::hours(1);
  ProgressBar bar("x", 100000, o);
  for (int i = 0; i < 100000; ++i) bar.Add();
  EXPECT_EQ(bar.redraws(), 1u);  // the first Add draws; the next is an hour away
  bar.Finish();
  EXPECT_EQ(bar.redraws(), 2u);
  std::fclose(f);
}

TEST(ProgressBarTest, ConcurrentAddsAreAllCounted) {
  std::FILE* f = std::tmpfile();
  ProgressBar::Options o;
  o.enabled = true;
  o.out = f;
  o.min_redraw_interval = std::chrono::milliseconds(0);
  ProgressBar bar("mc", 40000, o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&bar] {
      for (int i = 0; i < 10000; ++i) bar.Add();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bar.done(), 40000u);
  bar.Finish();
  EXPECT_NE(Contents(f).find("100% 40000/40000"), std::string::npos);
  std::fclose(f);
}

TEST(ProgressBarTest, RenderShowsFractionAndUnknownTotals) {
  EXPECT_EQ(ProgressBar::Render("sweep", 4, 10, 10, 0), "sweep [####......]  40% 4/10");
  EXPECT_EQ(ProgressBar::Render("sweep", 7, 0, 10, 0), "sweep 7 done");
  // 2 of 10 in 10 s -> 40 s left.
  EXPECT_EQ(ProgressBar::Render("s", 2, 10, 4, 10.0), "s [....]  20% 2/10  ~40 s left");
  // More done than total (a caller miscount) clamps instead of overflowing the bar.
  EXPECT_EQ(ProgressBar::Render("s", 12, 10, 4, 0), "s [####] 100% 10/10");
}

}  // namespace
}  // namespace trainsim::sim

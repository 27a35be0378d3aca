// step_cpu: the thread CPU of one step simulation of a scenario (issue 20's "one step of any
// layout" figure), without the run simulation `trainsim run` adds.
//   build/bench/step_cpu SCENARIO [--set PATH=VALUE]... [--reps N] [--no-trains] [--no-steady]
//   [--no-folds]
// --no-trains simulates every gradient bucket flow by flow (StepConfig::bucket_trains off), the
// reference the trains must reproduce; --no-steady simulates every micro-batch
// (StepConfig::steady_state_extrapolation off), the reference the extrapolation must reproduce;
// --no-folds runs every CP ring exchange as flows (StepConfig::fold_exchanges off).
// Prints each repetition's thread CPU (CLOCK_THREAD_CPUTIME_ID), their median, the flows started
// and the simulated step time.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "scenarios/session.h"
#include "step/step_simulation.h"

namespace {
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::vector<std::string> sets;
  int reps = 3;
  bool trains = true;
  bool folds = true;
  bool steady = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--set" && i + 1 < argc) {
      sets.push_back(argv[++i]);
    } else if (a == "--no-folds") {
      folds = false;
    } else if (a == "--no-trains") {
      trains = false;
    } else if (a == "--no-steady") {
      steady = false;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      path = a;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr,
                 "usage: step_cpu SCENARIO [--set PATH=VALUE]... [--reps N] [--no-trains] "
                 "[--no-steady] [--no-folds]\n");
    return 2;
  }
  using namespace trainsim;
  Result<pb::Scenario> sc = scenarios::LoadScenario(path, sets);
  if (!sc.ok()) {
    std::fprintf(stderr, "%s\n", sc.status().message().c_str());
    return 1;
  }
  Result<scenarios::ResolvedScenario> r = scenarios::Resolve(*sc);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().message().c_str());
    return 1;
  }
  // The scenario's step config as every command builds it (calibration attached).
  Result<scenarios::StepOutcome> first = scenarios::SimulateScenarioStep(*r, {});
  if (!first.ok()) {
    std::fprintf(stderr, "%s\n", first.status().message().c_str());
    return 1;
  }
  step::StepConfig config = first->config;
  config.bucket_trains = trains;
  config.fold_exchanges = folds;
  config.steady_state_extrapolation = steady;
  std::vector<double> cpu;
  for (int k = 0; k < reps; ++k) {
    const double t0 = ThreadCpuSeconds();
    Result<step::StepResult> out = step::SimulateStep(config);
    const double t1 = ThreadCpuSeconds();
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().message().c_str());
      return 1;
    }
    cpu.push_back(t1 - t0);
    std::printf("rep %d: %.4f s CPU, %llu flows, %llu events, step %.9f s\n", k, t1 - t0,
                static_cast<unsigned long long>(out->flows),
                static_cast<unsigned long long>(out->events), out->time_s);
  }
  std::sort(cpu.begin(), cpu.end());
  std::printf("median %.4f s CPU over %d\n", cpu[cpu.size() / 2], reps);
  return 0;
}

// Throughput of sim::EventQueue and sim::Engine in the classic "hold" model (Vaucher & Duval,
// CACM 1975): the queue is pre-filled with N pending events, then each iteration pops the
// earliest and pushes one at a random later time, so the queue stays at N. One item = one pop
// plus one push. N = 1K is a step simulation's typical frontier; 1M stresses the memory system.
//
// Target (bench/README.md): >= 10 M events/s with 1K pending on one core.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "sim/engine.h"
#include "sim/event_queue.h"
#include "sim/random.h"
#include "sim/trace_writer.h"

namespace trainsim::sim {
namespace {

// Delays uniform in [1, 2^20] ns, so new events land among the pending ones rather than always
// at the back (which would flatter a heap).
constexpr uint64_t kMaxDelayNs = uint64_t{1} << 20;

void BM_EventQueueHold(benchmark::State& state) {
  const int64_t pending = state.range(0);
  Rng rng(1);
  EventQueue q;
  int64_t counter = 0;
  for (int64_t i = 0; i < pending; ++i) {
    q.Push(Time::Nanos(static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))), 0,
           [&counter] { ++counter; });
  }
  for (auto _ : state) {
    EventQueue::Event ev = q.Pop();
    ev.handler();
    const int64_t at = ev.time.nanos() + 1 + static_cast<int64_t>(rng.UniformInt(kMaxDelayNs));
    q.Push(Time::Nanos(at), 0, std::move(ev.handler));
  }
  benchmark::DoNotOptimize(counter);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueueHold)->Arg(1 << 10)->Arg(1 << 20);

// The same model through the Engine: each handler schedules its successor, as simulation code
// does. One item = one event run (pop, handler call, schedule).
struct HoldState {
  Engine* engine;
  Rng* rng;
};

void Hold(HoldState* s) {
  s->engine->Schedule(Time::Nanos(1 + static_cast<int64_t>(s->rng->UniformInt(kMaxDelayNs))),
                      [s] { Hold(s); });
}

void BM_EngineHold(benchmark::State& state) {
  const int64_t pending = state.range(0);
  Rng rng(1);
  Engine engine;
  HoldState hs{&engine, &rng};
  for (int64_t i = 0; i < pending; ++i) {
    engine.ScheduleAt(Time::Nanos(static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))),
                      [&hs] { Hold(&hs); });
  }
  for (auto _ : state) engine.Step();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineHold)->Arg(1 << 10)->Arg(1 << 20);

// Schedule then cancel half before they run: the cost of Cancel and of skipping dead keys.
void BM_EngineHoldWithCancel(benchmark::State& state) {
  const int64_t pending = state.range(0);
  Rng rng(1);
  Engine engine;
  for (int64_t i = 0; i < pending; ++i) {
    engine.ScheduleAt(Time::Nanos(static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))), [] {});
  }
  for (auto _ : state) {
    const Time base = engine.now();
    const EventId a = engine.ScheduleAt(
        base + Time::Nanos(1 + static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))), [] {});
    engine.ScheduleAt(base + Time::Nanos(1 + static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))),
                      [] {});
    engine.Cancel(a);
    engine.Step();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineHoldWithCancel)->Arg(1 << 10)->Arg(1 << 20);

// As BM_EngineHold, but each handler captures 40 bytes (more than std::function's 16-byte inline
// buffer in libstdc++), so every Schedule allocates: the price of a fat capture.
struct FatHold {
  HoldState* s;
  int64_t payload[4];
  void operator()() const;
};

void FatHold::operator()() const {
  FatHold next = *this;
  ++next.payload[0];
  s->engine->Schedule(Time::Nanos(1 + static_cast<int64_t>(s->rng->UniformInt(kMaxDelayNs))), next);
}

void BM_EngineHoldFatCapture(benchmark::State& state) {
  const int64_t pending = state.range(0);
  Rng rng(1);
  Engine engine;
  HoldState hs{&engine, &rng};
  for (int64_t i = 0; i < pending; ++i) {
    engine.ScheduleAt(Time::Nanos(static_cast<int64_t>(rng.UniformInt(kMaxDelayNs))),
                      FatHold{&hs, {i, 0, 0, 0}});
  }
  for (auto _ : state) engine.Step();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineHoldFatCapture)->Arg(1 << 10);

// Random draws, as Monte Carlo failure sampling makes them.
void BM_RngUniform(benchmark::State& state) {
  Rng rng = RandomStreams(1).Stream("bench");
  for (auto _ : state) benchmark::DoNotOptimize(rng.Uniform());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RngUniform);

void BM_RngUniformInt(benchmark::State& state) {
  Rng rng = RandomStreams(1).Stream("bench");
  for (auto _ : state) benchmark::DoNotOptimize(rng.UniformInt(1000003));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RngUniformInt);

void BM_RngExponential(benchmark::State& state) {
  Rng rng = RandomStreams(1).Stream("bench");
  for (auto _ : state) benchmark::DoNotOptimize(rng.Exponential(3600.0));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RngExponential);

void BM_RngWeibull(benchmark::State& state) {
  Rng rng = RandomStreams(1).Stream("bench");
  for (auto _ : state) benchmark::DoNotOptimize(rng.Weibull(0.7, 3600.0));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RngWeibull);

// Recording complete events (a step trace has one per op per GPU).
void BM_TraceWriterComplete(benchmark::State& state) {
  TraceWriter t;
  int64_t i = 0;
  for (auto _ : state) {
    t.Complete("fwd", "compute", static_cast<int>(i % 8), static_cast<int>(i % 64),
               Time::Nanos(i * 1000 + 7), Time::Nanos(950));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(t.ToJson().size()));
}
BENCHMARK(BM_TraceWriterComplete);

}  // namespace
}  // namespace trainsim::sim

BENCHMARK_MAIN();

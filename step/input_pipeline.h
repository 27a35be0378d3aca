// step/input_pipeline.h — the data loader beside the GPUs: how fast one node's loader produces
// the micro-batches its first-stage ranks consume, and when each of a step's micro-batches is
// ready.
//
// Model: a node runs `workers` loader processes (PyTorch DataLoader workers). A sample costs
// cpu_s_per_sample of one worker's CPU and bytes_per_sample read from the dataset store at the
// node's read bandwidth; the node's rate is the lower of its CPU rate (workers / cpu time) and
// its read rate (bandwidth / bytes). The node loads the samples of every data-parallel replica
// whose first pipeline stage sits on it (TP and CP peers share one copy: Megatron loads on TP
// rank 0 and broadcasts). The loader never stops between steps, so a step starts with its
// prefetch queue full: workers × prefetch batches (DataLoader's prefetch_factor per worker),
// shared by the node's replicas, i.e. q = ⌊workers · prefetch / replicas⌋ micro-batches of the
// whole node; micro-batch i ≥ q is ready (i − q + 1) · t after the step starts, t the loader's
// time per micro-batch of the node. Over many steps the loader loads all m micro-batches of
// each and the queue refills no faster than it runs, so a loader slower than the GPUs sets the
// step at m · t (SimulateStep adds what a step from a full queue leaves as input stall).
//
// Promises: deterministic; the default spec (no CPU time, no bytes) never binds: every
// micro-batch is ready at time 0.
#ifndef TRAINSIM_STEP_INPUT_PIPELINE_H_
#define TRAINSIM_STEP_INPUT_PIPELINE_H_

#include <cstdint>

namespace trainsim::step {

struct InputPipelineSpec {
  // DataLoader worker processes per node. PyTorch's default is 0 (load in the main process);
  // 8 is the common setting for one loader per node of 8 GPUs.
  int workers = 8;
  double cpu_s_per_sample = 0;  // one worker's CPU time per sample (0: free)
  // Micro-batches each worker loads ahead: DataLoader's default prefetch_factor, 2.
  int prefetch = 2;
  double read_bytes_per_s = 0;  // the node's read bandwidth from the dataset store (0: unlimited)
  double bytes_per_sample = 0;  // bytes read per sample (0: cached)
};

// Samples per second one node's loader produces (infinity when nothing is charged).
double LoaderSamplesPerSecond(const InputPipelineSpec& spec);

// Seconds the loader needs for one micro-batch of all the replicas it feeds
// (`samples_per_micro_batch` = micro_batch × replicas whose first stage is on the node); 0 when
// the loader is free.
double LoaderSecondsPerMicroBatch(const InputPipelineSpec& spec, double samples_per_micro_batch);

// Micro-batches of the whole node the prefetch queue holds when `replicas` replicas share the
// node's loader.
int64_t QueuedMicroBatches(const InputPipelineSpec& spec, int replicas);

// When micro-batch `index` (from 0) of a step is ready, seconds after the step starts, with
// `queued` micro-batches loaded before it starts.
double MicroBatchReadyS(double seconds_per_micro_batch, int64_t queued, int64_t index);

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_INPUT_PIPELINE_H_

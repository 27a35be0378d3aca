#include "step/input_pipeline.h"

#include <algorithm>
#include <limits>

namespace trainsim::step {

double LoaderSamplesPerSecond(const InputPipelineSpec& spec) {
  double rate = std::numeric_limits<double>::infinity();
  if (spec.cpu_s_per_sample > 0) rate = std::max(1, spec.workers) / spec.cpu_s_per_sample;
  if (spec.bytes_per_sample > 0 && spec.read_bytes_per_s > 0) {
    rate = std::min(rate, spec.read_bytes_per_s / spec.bytes_per_sample);
  }
  return rate;
}

double LoaderSecondsPerMicroBatch(const InputPipelineSpec& spec, double samples_per_micro_batch) {
  const double rate = LoaderSamplesPerSecond(spec);
  if (!(rate < std::numeric_limits<double>::infinity())) return 0;
  return samples_per_micro_batch / rate;
}

int64_t QueuedMicroBatches(const InputPipelineSpec& spec, int replicas) {
  return int64_t(std::max(1, spec.workers)) * std::max(0, spec.prefetch) / std::max(1, replicas);
}

double MicroBatchReadyS(double seconds_per_micro_batch, int64_t queued, int64_t index) {
  if (seconds_per_micro_batch <= 0 || index < queued) return 0;
  return double(index - queued + 1) * seconds_per_micro_batch;
}

}  // namespace trainsim::step

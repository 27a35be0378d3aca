// profile/kineto_profile.h — a PyTorch profiler (Kineto) trace in Chrome trace-event JSON,
// reduced to what `trainsim diagnose --profile` compares with the model: per profiler step, the
// time of GPU kernels (or, in a CPU-only trace, of the top-level CPU operators) in four groups
// — GEMM, attention, NCCL, elementwise/other — and the idle time between them.
//
// What is read: the events of "ph":"X" (complete events). Steps are the "ProfilerStep#N"
// annotations torch.profiler writes when prof.step() is called each iteration (the GPU-side
// "gpu_user_annotation" copies when present, else the CPU ones). Kernels are events of category
// "kernel" (also "gpu_memcpy"/"gpu_memset"); a trace without any is a CPU trace, and its work is
// the operators and record_function ranges ("cpu_op", "user_annotation", or no category as the
// legacy profiler of PyTorch 1.13 without Kineto writes them) not nested inside another of the
// same thread. An event belongs to
// the step its start falls in. Busy time is the union of the step's work intervals; idle is the
// rest of the step. Groups sum each event's duration clipped to its step (on several streams
// they may add up to more than busy time).
//
// Refused with InvalidArgument (the message names the file and what to do): text that is not
// JSON, JSON that is not a Chrome trace (no traceEvents), a trace without ProfilerStep
// annotations, a trace whose kernels run on more than one device or whose steps repeat (several
// ranks' traces merged into one: profile one rank per file), a step annotation without a numeric
// start or a positive numeric duration, and a trace none of whose work starts inside a step.
#ifndef TRAINSIM_PROFILE_KINETO_PROFILE_H_
#define TRAINSIM_PROFILE_KINETO_PROFILE_H_

#include <string>
#include <vector>

#include "sim/status.h"

namespace trainsim::profile {

enum class KernelGroup { kGemm, kAttention, kNccl, kOther };
inline constexpr int kNumGroups = 4;
const char* GroupName(KernelGroup g);  // "gemm", "attention", "nccl", "other"

// The group of a kernel or operator name (case-insensitive substrings: "nccl"/"allreduce"/
// "all_gather"/"reduce_scatter"/"c10d" → NCCL; "flash"/"fmha"/"attention"/
// "scaled_dot_product" → attention; "gemm"/"cublas"/"cutlass"/"xmma"/"aten::mm"/"aten::addmm"/
// "aten::bmm"/"aten::linear"/"aten::matmul"/"mmbackward" → GEMM; the rest other).
KernelGroup ClassifyKernel(const std::string& name);

struct ProfileStep {
  int number = 0;       // N of ProfilerStep#N
  double start_us = 0;  // the annotation's start and duration
  double duration_us = 0;
  int events = 0;                    // kernels (or top-level CPU operators) in the step
  double group_us[kNumGroups] = {};  // by KernelGroup
  double busy_us = 0;                // union of the events' intervals within the step
  double idle_us() const { return duration_us > busy_us ? duration_us - busy_us : 0.0; }
};

struct Profile {
  std::string path;
  bool gpu = true;  // GPU kernels found; false: a CPU trace (cpu_op events)
  std::vector<ProfileStep> steps;
  // Means over the steps.
  double mean_step_us() const;
  double mean_group_us(KernelGroup g) const;
  double mean_idle_us() const;
  double idle_share() const;  // idle over step time, all steps
};

// Parses `text` (the file's contents; `path` names it in messages).
Result<Profile> ParseKinetoTrace(const std::string& text, const std::string& path);

// Reads `path` (at most 2 GiB; a .gz file is refused with a hint to gunzip it) and parses it.
Result<Profile> ReadKinetoTrace(const std::string& path);

}  // namespace trainsim::profile

#endif  // TRAINSIM_PROFILE_KINETO_PROFILE_H_

// step/pipeline.h — internal to step/: the pipeline executors of a simulated step.
//
// Each executor runs its stage's schedule (parallelism/schedule.h) task by task: a task waits
// for its input (the previous stage's activation or the next stage's gradient), lasts its
// chunk's compute (× the stage's slowdown) plus its TP collectives, and then sends its output
// to the neighbouring stage as a flow on the network. With blocking sends (overlap_p2p off)
// the send is posted when the receiver ends its current task, and the sender waits until it
// has drained. Gradient buckets become ready during backward passes (GradientSync).
#ifndef TRAINSIM_STEP_PIPELINE_H_
#define TRAINSIM_STEP_PIPELINE_H_

#include <string>
#include <vector>

#include "parallelism/schedule.h"
#include "step/gradient_sync.h"
#include "step/pass_costs.h"
#include "step/step_state.h"

namespace trainsim::step {

class Pipeline {
 public:
  Pipeline(StepState* state, std::vector<ChunkCost> costs, GradientSync* sync);
  // Runs the step to its end; FailedPrecondition if a down link stopped it.
  Status Run();

 private:
  struct KernelTime {
    std::string name;
    double fwd_s = 0, bwd_s = 0;
    bool selective = false;
    std::string fwd_args, bwd_args;  // the op's roofline as trace-event args
  };
  struct Send {  // a pipeline send: from executor src to dst's inbox[idx]
    int src = 0, dst = 0;
    size_t idx = 0;
    double bytes = 0;
    double produced_s = 0;  // when src's task ended
  };

  size_t MsgIndex(bool forward, int chunk, int64_t mb) const;
  void TryStart(int ei);
  bool Held(int ei, const parallelism::Task& t, int j);
  void RunTask(int ei, double gather_s);
  void KernelSlices(const Executor& e, const parallelism::Task& t, double start);
  void TaskDone(int ei, parallelism::Task t, int j);
  void StartSend(size_t s);
  void Advance(int ei);

  StepState* st_;
  std::vector<ChunkCost> costs_;
  GradientSync* sync_;
  double send_bytes_ = 0;
  std::vector<std::vector<parallelism::Task>> orders_;
  std::vector<Send> sends_;
  std::vector<size_t> free_sends_;
  std::vector<KernelTime> layer_ops_;             // one dense layer's kernels, for the trace
  std::vector<KernelTime> moe_ops_;               // one MoE layer's kernels
  std::vector<parallelism::ChunkLayers> ranges_;  // each virtual stage's layers
};

}  // namespace trainsim::step

#endif  // TRAINSIM_STEP_PIPELINE_H_

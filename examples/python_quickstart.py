# trainsim from Python: a notebook-style quick start (each "# %%" is a cell; Jupyter, VS Code
# and `python3 examples/python_quickstart.py` all run it). From the repository root, after
# `make build`:
#
#     PYTHONPATH=build/python python3 examples/python_quickstart.py
#
# Every call returns the document `trainsim <command> --json` prints, with attribute access.
# docs/python.md lists the functions and their options. ctest runs this file
# (python_quickstart_example), so it stays correct.

# %% The demo: GPT-3 175B on 128 H100s, TP 8 x PP 8 x DP 2.
import trainsim

DEMO = "scenarios/examples/demo.textproto"
result = trainsim.run(DEMO)
print("layout:", result.layout)
print("step time %.2f s, MFU %.1f%%" % (result.step.time_s, 100 * result.step.mfu))
print("where the step goes (s):")
for part, seconds in result.step.breakdown_s.items():
    print("  %-16s %8.3f" % (part, seconds))

# %% What the run costs with failures and checkpoints.
run = result.run
print("%d steps in %.1f days: useful compute %.3f, ETTR %.4f, %d failure(s), $%.0f" % (
    run.steps, run.wall_time_s / 86400, run.useful_compute_fraction, run.ettr, run.failures, run.cost_usd))

# %% Overrides, as --set on the command line: another layout of the same 128 GPUs.
# A layout that does not fit in memory raises trainsim.Error, with the command's message.
for tp, dp in [(8, 2), (4, 4), (2, 8)]:
    try:
        r = trainsim.run(DEMO, sets=["parallelism.tp=%d" % tp, "parallelism.dp=%d" % dp])
        print("TP %d x PP 8 x DP %d: MFU %.1f%%" % (tp, dp, 100 * r.step.mfu))
    except trainsim.Error as e:
        print("TP %d x PP 8 x DP %d: %s" % (tp, dp, e.message[:60]))

# %% A scenario built in Python: a dict in the scenario's JSON form (scenario.proto).
small = {
    "name": "notebook",
    "cluster": {"gpu": "A100-SXM-80GB", "nodes": 1},
    "model": {"name": "GPT 1.3B", "layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048},
    "parallelism": {"tp": 2, "pp": 1, "dp": 4, "micro_batch": 4, "global_batch": 512},
    "training": {"tokens": "26000000000"},
}
print("1.3B on 8 A100s: MFU %.1f%%" % (100 * trainsim.run(small).step.mfu))

# %% The best layouts for it (sweep), and a what-if: one GPU failure 16 hours in.
best = trainsim.sweep(small, top=3)
for layout in best.top:
    print(
        "tp %d pp %d dp %d mb %d, recompute %s, ZeRO-%d: %.2f s/step, %.1f h to train, $%.0f"
        % (layout.tp, layout.pp, layout.dp, layout.micro_batch, layout.recompute,
           layout.zero_stage, layout.step_time_s, layout.time_to_train_s / 3600, layout.cost_usd)
    )
whatif = trainsim.whatif(DEMO, fail=["gpu:37@16h"])
print("one GPU failure costs", whatif.delta.to_dict())

# %% An all-reduce over the demo's network, like nccl-tests.
for row in trainsim.collective(DEMO, op="all_reduce", sizes="1MiB:1GiB", step_factor=32):
    print("%12d B  busbw %7.1f GB/s  %s/%s" % (row.size_bytes, row.busbw_GBps, row.algo, row.protocol))

# %% Bad input raises trainsim.Error (a ValueError) with the command line's message.
try:
    trainsim.run(DEMO, sets=["parallelism.tp=3"])
except trainsim.Error as e:
    print("error:", e.message)

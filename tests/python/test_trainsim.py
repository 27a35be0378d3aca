"""The Python module `trainsim` (python/, docs/python.md) against the `trainsim` command.

Run by ctest (tests/python/CMakeLists.txt) from the source tree with PYTHONPATH=build/python and
TRAINSIM_BINARY=build/trainsim. Every document the module returns must equal what the command
prints with --json for the same scenario and options (both call cli/api.h); errors must carry
the command's message.
"""

import json
import os
import subprocess
import tempfile
import unittest

import trainsim

BINARY = os.environ.get("TRAINSIM_BINARY", "build/trainsim")
DEMO = "scenarios/examples/demo.textproto"
SMALL_JSON = "scenarios/examples/small.json"  # a 1.3B GPT on one 8-GPU node, with a token budget


def command(*args):
    """The command's --json document, or (exit code, stderr) when it fails."""
    done = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return done.returncode, done.stderr
    return json.loads(done.stdout)


def command_error(*args):
    """The message the command prints after "trainsim: error: " (it must fail with exit 2)."""
    code, stderr = command(*args)
    assert code == 2, (code, stderr)
    prefix = "trainsim: error: "
    assert stderr.startswith(prefix), stderr
    return stderr[len(prefix) :].rstrip("\n")


class RunTest(unittest.TestCase):
    def test_run_step_mfu_equals_the_command_lines_json(self):
        expected = command("run", DEMO, "--json")
        result = trainsim.run(DEMO)
        self.assertEqual(result.step.mfu, expected["step"]["mfu"])
        self.assertEqual(result["step"]["mfu"], expected["step"]["mfu"])
        self.assertEqual(result.to_dict(), expected)

    def test_run_options_mirror_the_command_line(self):
        expected = command("run", DEMO, "--json", "--trials", "5", "--seed", "7", "--events")
        result = trainsim.run(DEMO, trials=5, seed=7, events=True)
        self.assertEqual(result.to_dict(), expected)
        self.assertIn("run_stats", result)

    def test_run_accepts_a_path_like(self):
        import pathlib

        self.assertEqual(trainsim.run(pathlib.Path(DEMO)).to_dict(), command("run", DEMO, "--json"))

    def test_trials_out_of_the_command_lines_range_raise(self):
        with self.assertRaises(trainsim.Error):
            trainsim.run(DEMO, trials=-1)

    def test_load_checks_the_scenario_at_once(self):
        # tp 4 x pp 8 x dp 2 = 64 is not the demo's 128 GPUs.
        with self.assertRaises(trainsim.Error):
            trainsim.load(DEMO, sets="parallelism.tp=4")


class OverrideTest(unittest.TestCase):
    def test_sets_apply_like_set_on_the_command_line(self):
        sets = ["parallelism.tp=4", "parallelism.dp=4"]  # 4 x 8 x 4 = the demo's 128 GPUs
        checked = trainsim.check(DEMO, sets=sets)
        self.assertEqual(checked.scenario.parallelism.tp, 4)
        self.assertEqual(checked.scenario.parallelism.dp, 4)
        result = trainsim.run(DEMO, sets=sets)
        self.assertTrue(result.layout.startswith("TP 4 x PP 8 x DP 4"), result.layout)
        self.assertEqual(
            result.to_dict(),
            command("run", DEMO, "--json", "--set", sets[0], "--set", sets[1]),
        )
        self.assertNotEqual(result.step.mfu, trainsim.run(DEMO).step.mfu)

    def test_a_scenario_keeps_its_sets_and_later_ones_win(self):
        four = trainsim.load(DEMO, sets=["parallelism.tp=4", "parallelism.dp=4"])
        self.assertEqual(four.check().scenario.parallelism.tp, 4)
        scenario = four.with_sets(["parallelism.tp=8", "parallelism.dp=2"])
        self.assertEqual(scenario.check().scenario.parallelism.tp, 8)
        self.assertEqual(scenario.run().to_dict(), command("run", DEMO, "--json"))

    def test_a_bad_override_raises_the_command_lines_message(self):
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.run(DEMO, sets=["parallelism.tpp=2"])
        self.assertEqual(
            caught.exception.message, command_error("run", DEMO, "--set", "parallelism.tpp=2")
        )
        self.assertIsNone(caught.exception.location)  # it names the --set, not a position


class ErrorTest(unittest.TestCase):
    def test_a_bad_scenario_file_raises_error_with_file_line_column(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.textproto")
            with open(path, "w") as f:
                # Line 3, the unknown field's name starting at column 3 (after two spaces).
                f.write('name: "bad"\nmodel {\n  layerz: 4\n}\n')
            with self.assertRaises(trainsim.Error) as caught:
                trainsim.check(path)
            e = caught.exception
            self.assertIsInstance(e, ValueError)
            self.assertEqual(e.kind, "bad_input")
            self.assertEqual((e.file, e.line, e.column), (path, 3, 3))
            self.assertEqual(e.location, path + ":3:3")
            self.assertEqual(str(e), command_error("check", path))
            self.assertIn("did you mean", e.message)

    def test_a_missing_file_raises_the_command_lines_message(self):
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.run("/nonexistent/scenario.textproto")
        self.assertEqual(
            caught.exception.message, command_error("run", "/nonexistent/scenario.textproto")
        )

    def test_a_bad_option_raises_the_command_lines_message(self):
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.sweep(SMALL_JSON, objective="speed")
        self.assertEqual(
            caught.exception.message, command_error("sweep", SMALL_JSON, "--objective", "speed")
        )


class DictTest(unittest.TestCase):
    def test_a_dict_runs_like_the_file_it_came_from(self):
        with open(SMALL_JSON) as f:
            scenario = json.load(f)
        self.assertEqual(trainsim.run(scenario).to_dict(), command("run", SMALL_JSON, "--json"))

    def test_a_dict_with_sets(self):
        with open(SMALL_JSON) as f:
            scenario = json.load(f)
        # tp 2 x dp 4 on 8 GPUs becomes tp 4 x dp 2.
        result = trainsim.run(scenario, sets=["parallelism.tp=4", "parallelism.dp=2"])
        self.assertTrue(result.layout.startswith("TP 4 x PP 1 x DP 2"), result.layout)

    def test_a_bad_dict_raises_error_located_in_its_json(self):
        # json.dumps(indent=2): "{" on line 1, "model" on line 2, "layerz" on line 3.
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.check({"model": {"layerz": 2}})
        e = caught.exception
        self.assertEqual((e.file, e.line), ("<dict>", 3))
        self.assertIn("layerz", e.message)

    def test_something_else_is_a_type_error(self):
        with self.assertRaises(TypeError):
            trainsim.run(42)


class CommandsTest(unittest.TestCase):
    def test_check_returns_the_scenario_and_its_derived_values(self):
        result = trainsim.check(DEMO)
        self.assertEqual(set(result), {"scenario", "derived"})
        self.assertEqual(result.derived.num_gpus, 16 * 8)  # 16 DGX H100 nodes of 8 GPUs
        self.assertEqual(result.to_dict(), command("check", DEMO, "--json"))

    def test_whatif_returns_both_sides_and_the_delta(self):
        result = trainsim.whatif(DEMO, fail="gpu:37@16h", trials=3)
        for key in ("added_faults", "baseline", "whatif", "delta", "trials"):
            self.assertIn(key, result)
        self.assertEqual(len(result.added_faults), 1)
        self.assertEqual(
            result.to_dict(),
            command("whatif", DEMO, "--fail", "gpu:37@16h", "--trials", "3", "--json"),
        )

    def test_whatif_without_a_fault_raises_like_the_command(self):
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.whatif(DEMO)
        self.assertEqual(caught.exception.message, command_error("whatif", DEMO))

    def test_sweep_returns_the_ranked_layouts_and_the_pareto_front(self):
        result = trainsim.sweep(SMALL_JSON, top=3)
        for key in ("top", "pareto", "evaluated", "rejected", "objective"):
            self.assertIn(key, result)
        self.assertLessEqual(len(result.top), 3)
        self.assertGreater(len(result.top), 0)
        self.assertEqual(result.to_dict(), command("sweep", SMALL_JSON, "--top", "3", "--json"))

    def test_collective_returns_one_row_per_size(self):
        result = trainsim.collective(DEMO, op="all_gather", sizes="1MiB:4MiB", group=[0, 8])
        self.assertIsInstance(result, trainsim.ResultList)
        # 1 MiB doubling to 4 MiB: three rows.
        self.assertEqual([row.size_bytes for row in result], [1 << 20, 2 << 20, 4 << 20])
        for key in ("op", "algo", "protocol", "group", "time_s", "algbw_GBps", "busbw_GBps"):
            self.assertIn(key, result[0])
        self.assertEqual(
            result.to_list(),
            command(
                "collective", DEMO, "--op", "all_gather", "--sizes", "1MiB:4MiB", "--group",
                "0,8", "--json",
            ),
        )


class ResultTest(unittest.TestCase):
    def test_a_missing_key_is_an_attribute_error_naming_the_keys(self):
        result = trainsim.check(DEMO)
        with self.assertRaises(AttributeError) as caught:
            result.nothing_here
        self.assertIn("derived", str(caught.exception))

    def test_results_copy_and_pickle(self):
        import copy
        import pickle

        result = trainsim.check(DEMO)
        self.assertEqual(copy.deepcopy(result), result)
        self.assertEqual(pickle.loads(pickle.dumps(result)), result)
        self.assertEqual(pickle.loads(pickle.dumps(result.scenario.faults)), result.scenario.faults)

    def test_to_dict_is_a_copy(self):
        result = trainsim.check(DEMO)
        plain = result.to_dict()
        plain["derived"]["num_gpus"] = 0
        self.assertEqual(result.derived.num_gpus, 128)
        self.assertEqual(json.loads(result.to_json()), result.to_dict())


if __name__ == "__main__":
    unittest.main()

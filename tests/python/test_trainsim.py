"""The Python module `trainsim` (python/, docs/python.md) against the `trainsim` command.

Run by ctest (tests/python/CMakeLists.txt) from the source tree with PYTHONPATH=build/python and
TRAINSIM_BINARY=build/trainsim. Every document the module returns must equal what the command
prints with --json for the same scenario and options (both call cli/api.h); errors must carry
the command's message.
"""

import inspect
import json
import os
import re
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

    def test_the_trials_range_in_the_message_includes_zero_for_no_monte_carlo(self):
        # trials=0 (the default) is accepted: no Monte Carlo, as without --trials.
        self.assertNotIn("run_stats", trainsim.run(DEMO, trials=0))
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.run(DEMO, trials=-1)
        self.assertEqual(caught.exception.message, "--trials: -1 is not in [0, 1000000]")

    def test_integer_options_refuse_other_types_with_a_type_error_naming_them(self):
        # The scenario is never read: the options are checked first.
        calls = [
            (trainsim.run, DEMO, "trials"),
            (trainsim.run, DEMO, "gpu"),
            (trainsim.run, DEMO, "seed"),
            (trainsim.whatif, DEMO, "trial"),
            (trainsim.whatif, DEMO, "trials"),
            (trainsim.sweep, SMALL_JSON, "top"),
            (trainsim.sweep, SMALL_JSON, "trials"),
            (trainsim.collective, DEMO, "step_factor"),
        ]
        for function, scenario, option in calls:
            for value in ("x", 2.5, 2.0, True):  # not truncated, not read as 1
                with self.subTest(function=function.__name__, option=option, value=value):
                    with self.assertRaises(TypeError) as caught:
                        function(scenario, **{option: value})
                    self.assertEqual(
                        str(caught.exception),
                        "%s: expected an integer, got %r (%s)"
                        % (option, value, type(value).__name__),
                    )
        for option in ("gpus", "micro_batches", "cp", "ep", "etp", "zero"):
            for value in (["x"], [8.0], [True], "8", 8.5):
                with self.subTest(option=option, value=value):
                    with self.assertRaises(TypeError) as caught:
                        trainsim.sweep(SMALL_JSON, **{option: value})
                    self.assertTrue(str(caught.exception).startswith(option + ": expected"))
        with self.assertRaises(TypeError) as caught:
            trainsim.sweep(SMALL_JSON, tokens="x")
        self.assertEqual(str(caught.exception), "tokens: expected a number, got 'x' (str)")

    def test_an_integer_the_command_cannot_hold_raises_error(self):
        cases = [
            (trainsim.run, DEMO, "seed", -1, "--seed: -1 is not in [0, 18446744073709551615]"),
            (trainsim.run, DEMO, "gpu", 1 << 40, "--gpu: %d" % (1 << 40)),
            (trainsim.sweep, SMALL_JSON, "top", 1 << 40, "--top: %d" % (1 << 40)),
            (trainsim.sweep, SMALL_JSON, "gpus", [1 << 40], "--gpus: %d" % (1 << 40)),
            (trainsim.collective, DEMO, "step_factor", 1 << 40, "--step-factor: %d" % (1 << 40)),
        ]
        for function, scenario, option, value, message in cases:
            with self.subTest(option=option):
                with self.assertRaises(trainsim.Error) as caught:
                    function(scenario, **{option: value})
                if not message.startswith("--seed"):
                    message += " does not fit in a 32-bit integer"
                self.assertEqual(caught.exception.message, message)
        # Inside the width, the command's own checks and messages.
        with self.assertRaises(trainsim.Error) as caught:
            trainsim.sweep(SMALL_JSON, top=0)
        self.assertEqual(caught.exception.message, command_error("sweep", SMALL_JSON, "--top", "0"))

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

    def test_a_nan_or_infinity_in_a_dict_raises_error_naming_its_path_and_line(self):
        with open(SMALL_JSON) as f:
            scenario = json.load(f)
        cases = [
            (("model", "hidden"), float("nan"), "model.hidden: NaN"),
            (("training", "tokens"), float("-inf"), "training.tokens: -Infinity"),
            (("faults", 0, "slowdown"), float("inf"), "faults[0].slowdown: Infinity"),
        ]
        for keys, value, what in cases:
            with self.subTest(what=what):
                bad = json.loads(json.dumps(scenario))
                parent = bad
                for key in keys[:-1]:
                    parent = parent[key]
                parent[keys[-1]] = value
                # The line json.dumps(indent=2) writes the number on, the key's column.
                lines = json.dumps(bad, indent=2).split("\n")
                ends = ("NaN", "Infinity")
                line = next(n for n, text in enumerate(lines, 1) if text.rstrip(",").endswith(ends))
                column = lines[line - 1].index('"') + 1
                with self.assertRaises(trainsim.Error) as caught:
                    trainsim.check(bad)
                e = caught.exception
                self.assertEqual(e.kind, "bad_input")
                self.assertEqual((e.file, e.line, e.column), ("<dict>", line, column))
                self.assertEqual(
                    e.message,
                    "<dict>:%d:%d: %s is not a number a scenario can hold" % (line, column, what),
                )

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

    def test_the_sweep_docstring_names_every_objective_the_command_takes(self):
        done = subprocess.run([BINARY, "sweep", "--help"], capture_output=True, text=True)
        line = next(l for l in done.stdout.splitlines() if l.strip().startswith("--objective"))
        objectives = re.findall(r"'(\w+)'", line)
        self.assertIn("energy", objectives)
        for objective in objectives:
            self.assertIn('"%s"' % objective, trainsim.sweep.__doc__)
        with open("docs/python.md") as f:
            docs = f.read()
        for objective in objectives:
            self.assertIn('"%s"' % objective, docs)

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


class DocsTest(unittest.TestCase):
    def test_the_docs_table_gives_each_functions_defaults(self):
        # docs/python.md's table: `run(s, sets, ...)` | `run --json` | `trials=0, seed=None, ...`
        with open("docs/python.md") as f:
            rows = [l for l in f.read().splitlines() if re.match(r"\| `\w+\(s, sets", l)]
        self.assertEqual(len(rows), 5)
        for row in rows:
            name = re.match(r"\| `(\w+)\(", row).group(1)
            options = row.split(" | ")[2]
            parameters = inspect.signature(getattr(trainsim, name)).parameters
            documented = re.findall(r"(\w+)=(\[\]|\"[^\"]*\"|[\w.]+)", options)
            self.assertEqual(
                [option for option, _ in documented],
                [p for p in parameters if p not in ("scenario", "sets")],
                name,
            )
            for option, text in documented:
                with self.subTest(function=name, option=option):
                    default = parameters[option].default
                    if isinstance(default, tuple):
                        default = list(default)
                    literal = {"None": "null", "False": "false", "True": "true"}.get(text, text)
                    self.assertEqual(json.loads(literal), default)

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

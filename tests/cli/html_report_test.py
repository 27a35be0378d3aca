#!/usr/bin/env python3
"""The --html reports loaded in headless Chromium (issue 19, item 1).

  html_report_test.py TRAINSIM SOURCE_DIR OUT_DIR [bad-web-dir]

For run, whatif --trials 100, sweep, collective and validate on the demo scenario (diagnose on
the low_utilisation example, emulate on the emulate example: 8 real processes, one killed),
writes the
report together with the --json document (one invocation: stdout is the JSON, --html the page),
then loads the page in `chromium --headless` and checks:
  * the browser logs no console message at all (errors, warnings, uncaught exceptions) and the
    page reports no error of its own (no data-errors on <body>);
  * every plot rendered: <body data-rendered="N"> with N = the number of plot <div>s, and each
    of them holds an <svg> of non-zero size with at least one drawn data mark;
  * the numbers equal the JSON's: the embedded report is the --json document, and every key
    figure's data-value equals the field this test reads from the JSON by its own mapping;
  * the plots' extra data obey relations the JSON fixes (peak memory = the largest stage's, the
    phases tile the wall time, the trials' mean, the Pareto set, MAPE = mean |error|);
  * a screenshot is written to OUT_DIR/<command>.png;
  * the collective page is byte-identical when written twice.
Exit 77 (ctest: skipped) with the reason when chromium or the plotting libraries are missing.
With `bad-web-dir`: only checks that a missing TRAINSIM_WEB_DIR is one exit-2 error line before
any work (no chromium needed).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

SKIP = 77
# Generous bounds on a 2-core machine shared with other builds: the sweep and the run's interval
# scan take ~30 s each there; a page renders in ~5 s.
COMMAND_TIMEOUT_S = 600
CHROMIUM_TIMEOUT_S = 180
# Virtual time Chromium grants the page's scripts before dumping the DOM: vega-embed renders
# asynchronously; 30 s of virtual time is far more than any page here needs.
VIRTUAL_TIME_BUDGET_MS = 30000
# Screenshot heights (pixels, at 1200 wide) that hold each page's plots with little blank below.
SCREENSHOT_HEIGHT = {"run": 2700, "whatif": 1400, "sweep": 780, "collective": 740,
                     "validate": 1260, "diagnose": 900, "emulate": 900}


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def run_bounded(args, timeout, **kwargs):
    """Runs `args` in its own process group; kills and reaps the whole group when it ends or
    times out (Chromium forks helpers)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise Failure(f"timed out after {timeout} s: {' '.join(args)}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


class PageParser(HTMLParser):
    """Collects the figures, the plot divs (their svg sizes and drawn data marks), <body>'s
    attributes and the embedded JSON of a dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body = {}
        self.figures = {}
        self.plots = {}  # id → {"svgs": [(w, h)], "marks": count}
        self.stack = []  # (tag, plot id or None, inside a role-mark group)
        self.script_id = None
        self.scripts = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        plot = self.stack[-1][1] if self.stack else None
        in_mark = self.stack[-1][2] if self.stack else False
        if tag == "body":
            self.body = a
        if a.get("id", "").startswith("fig-"):
            self.figures[a["id"][4:]] = a.get("data-value")
        if tag == "div" and a.get("id", "").startswith("plot-"):
            plot = a["id"]
            self.plots[plot] = {"svgs": [], "marks": 0}
        if plot and tag == "svg":
            self.plots[plot]["svgs"].append((float(a.get("width", 0)), float(a.get("height", 0))))
        if tag == "g" and "role-mark" in a.get("class", "").split():
            in_mark = True
        if plot and in_mark and tag in ("path", "line", "rect", "circle", "text"):
            self.plots[plot]["marks"] += 1
        if tag == "script":
            self.script_id = a.get("id")
        if tag not in ("meta", "br", "img", "input", "link", "hr"):
            self.stack.append((tag, plot, in_mark))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if tag == "script":
            self.script_id = None

    def handle_data(self, data):
        if self.script_id:
            self.scripts[self.script_id] = self.scripts.get(self.script_id, "") + data


def chromium_base(chromium, profile):
    # A fresh profile per test run; nothing listens on any port (no remote debugging).
    return [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
            "--disable-extensions", "--disable-background-networking",
            f"--user-data-dir={profile}", f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
            "--hide-scrollbars"]


def load_page(chromium, profile, page, screenshot, height):
    url = "file://" + os.path.abspath(page)
    rc, dom, err = run_bounded(chromium_base(chromium, profile) +
                               ["--enable-logging=stderr", "--v=0", "--dump-dom", url],
                               CHROMIUM_TIMEOUT_S)
    check(rc == 0, f"chromium --dump-dom {page} exited {rc}: {err[-2000:]}")
    console = [line for line in err.splitlines() if ":CONSOLE" in line]
    check(not console, f"{page}: console messages:\n" + "\n".join(console))
    rc, _, err = run_bounded(chromium_base(chromium, profile) +
                             [f"--window-size=1200,{height}", f"--screenshot={screenshot}", url],
                             CHROMIUM_TIMEOUT_S)
    check(rc == 0 and os.path.exists(screenshot), f"chromium --screenshot {page}: {err[-2000:]}")
    with open(screenshot, "rb") as f:
        png = f.read()
    # A blank 1200-pixel-wide PNG compresses to a few kB; a page of plots is tens of kB.
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000,
          f"{screenshot}: not a PNG of a drawn page ({len(png)} bytes)")
    parser = PageParser()
    parser.feed(dom)
    return parser


def check_page(name, parser, doc, figures):
    check("data-errors" not in parser.body, f"{name}: the page reports errors")
    plots = parser.plots
    check(plots, f"{name}: no plots")
    check(parser.body.get("data-rendered") == str(len(plots)),
          f"{name}: data-rendered={parser.body.get('data-rendered')} for {len(plots)} plots")
    for pid, p in plots.items():
        check(p["svgs"] and all(w > 0 and h > 0 for w, h in p["svgs"]),
              f"{name} {pid}: no non-empty svg ({p['svgs']})")
        check(p["marks"] > 0, f"{name} {pid}: the svg draws no data marks")
    data = json.loads(parser.scripts["trainsim-data"])
    check(data["report"] == doc, f"{name}: the embedded report differs from the --json output")
    for fid, expected in figures.items():
        shown = parser.figures.get(fid)
        check(shown is not None, f"{name}: figure {fid} missing")
        check(float(shown) == float(expected),
              f"{name}: figure {fid} shows {shown}, the JSON has {expected}")
    check(set(parser.figures) == set(figures),
          f"{name}: figures {sorted(parser.figures)} vs checked {sorted(figures)}")
    return data["extra"]


def check_run(doc, extra):
    step, run = doc["step"], doc["run"]
    peak = max(s["total_bytes"] for s in extra["memory_per_stage"])
    check(close(peak, step["memory"]["peak_bytes_per_gpu"]),
          f"run: largest stage {peak} B vs peak_bytes_per_gpu")
    phases = extra["timeline"]["phases"]
    check(phases[0]["start_h"] == 0, "run: the timeline does not start at 0")
    for a, b in zip(phases, phases[1:]):
        check(close(a["end_h"], b["start_h"], 1e-12), "run: phases do not tile the run")
    check(close(phases[-1]["end_h"] * 3600, run["wall_time_s"]), "run: phases end before the end")
    failures = [m for m in extra["timeline"]["marks"] if m["kind"] == "failure"]
    check(len(failures) == run["failures"], f"run: {len(failures)} failure marks")
    scan = extra["checkpoint_interval"]
    check(scan["young_s"] > 0 and scan["daly_s"] > 0 and len(scan["scan"]) > 3,
          "run: no interval scan")


def check_whatif(doc, extra):
    samples = extra["trials"]["delta_wall_time_s"]
    check(len(samples) == doc["trials"]["n"] == 100, f"whatif: {len(samples)} samples")
    check(close(sum(samples) / len(samples), doc["trials"]["delta_wall_time_s"]["mean"]),
          "whatif: the samples' mean is not the JSON's")
    costs = extra["trials"]["delta_cost_usd"]
    check(close(sum(costs) / len(costs), doc["trials"]["delta_cost_usd"]["mean"]),
          "whatif: the cost samples' mean is not the JSON's")


def check_sweep(doc, extra):
    ev = extra["evaluated"]
    check(len(ev) == doc["evaluated"], f"sweep: {len(ev)} points vs evaluated {doc['evaluated']}")

    def key(r):
        return (r["time_to_train_s"], r["cost_usd"])
    check(sorted(key(r) for r in ev if r["pareto"]) == sorted(key(r) for r in doc["pareto"]),
          "sweep: the plotted Pareto front is not the JSON's")
    check(sorted(key(r) for r in ev if r["top"]) == sorted(key(r) for r in doc["top"]),
          "sweep: the plotted top layouts are not the JSON's")


def check_collective(doc, extra):
    # --algo auto picks the fastest algorithm (docs/collectives.md), so each row's busbw is the
    # largest any algorithm reaches at that size.
    for row in doc:
        best = max(r["busbw_GBps"] for r in extra["per_algorithm"]
                   if r["size_bytes"] == row["size_bytes"])
        check(close(row["busbw_GBps"], best),
              f"collective: auto at {row['size_bytes']} B is {row['busbw_GBps']}, best {best}")


def check_validate(doc, extra):
    errors = [abs(r["error"]) for r in doc["rows"]]
    check(close(doc["mape"], sum(errors) / len(errors)), "validate: MAPE is not mean |error|")


def check_diagnose(doc, extra):
    # Every proposal keeps the model and the global batch, so the model FLOPs per step are the
    # same and MFU x step time is too (MFU = FLOPs / (step x peak)).
    work = doc["mfu"] * doc["step_time_s"]
    for p in doc["proposals"]:
        check(close(p["predicted_mfu"] * p["predicted_step_s"], work, rel=1e-6),
              f"diagnose: {p['change']}: MFU x step {p['predicted_mfu'] * p['predicted_step_s']}"
              f" differs from today's {work}")
    check(doc["causes"] and doc["proposals"], "diagnose: no causes or no proposals")


def check_emulate(doc, extra):
    # The comparison panels are the JSON's own pairs; steps redone is the faults' sum.
    pairs = {(r["quantity"], r["side"]): r["value"] for r in extra["comparison"]}
    check(close(pairs[("wall time (s)", "measured")], doc["measured"]["wall_time_s"]) and
          close(pairs[("wall time (s)", "predicted")], doc["predicted"]["wall_time_s"]),
          "emulate: the wall-time panel differs from the JSON")
    check(pairs[("steps redone", "measured")] == sum(f["lost_steps"] for f in doc["faults"]),
          "emulate: steps redone is not the faults' lost steps")
    check(pairs[("steps redone", "predicted")] == doc["predicted"]["steps_rolled_back"],
          "emulate: predicted steps redone differs from the JSON")
    # Each fault: detection from at_s for detected_after_s, then the restart; all in the run.
    segments = extra["fault_timeline"]
    check(len(segments) == 2 * len(doc["faults"]) and doc["faults"],
          "emulate: not two timeline segments per fault (or no fault at all)")
    for f, (detect, restart) in zip(doc["faults"], zip(segments[0::2], segments[1::2])):
        check(close(detect["start_s"], f["at_s"]) and
              close(detect["end_s"], f["at_s"] + f["detected_after_s"]) and
              close(restart["start_s"], detect["end_s"]) and
              close(restart["end_s"], detect["end_s"] + f["restart_s"]),
              f"emulate: fault at {f['at_s']} s is drawn at other times")
        check(restart["end_s"] <= doc["measured"]["wall_time_s"],
              "emulate: a restart ends after the run")
    check(doc["state_identical"], "emulate: the final state differs from the reference")


def cases(demo, out_dir):
    checkpoints = os.path.join(out_dir, "emulate-checkpoints")
    shutil.rmtree(checkpoints, ignore_errors=True)
    return [
        ("run", ["run", demo], lambda d: {
            "step_time_s": d["step"]["time_s"], "mfu": d["step"]["mfu"],
            "tokens_per_s": d["step"]["tokens_per_s"],
            "peak_memory": d["step"]["memory"]["peak_bytes_per_gpu"],
            "wall_time_s": d["run"]["wall_time_s"], "useful_compute_fraction": d["run"]["useful_compute_fraction"],
            "ettr": d["run"]["ettr"], "failures": d["run"]["failures"],
            "cost_usd": d["run"]["cost_usd"]}, check_run),
        ("whatif", ["whatif", demo, "--fail", "gpu:37@16h", "--trials", "100"], lambda d: {
            "delta_wall_time_s": d["delta"]["wall_time_s"],
            "delta_cost_usd": d["delta"]["cost_usd"],
            "delta_lost_work_s": d["delta"]["lost_work_s"], "trials": d["trials"]["n"],
            "delta_wall_time_mean_s": d["trials"]["delta_wall_time_s"]["mean"],
            "delta_wall_time_p90_s": d["trials"]["delta_wall_time_s"]["p90"],
            "delta_cost_mean_usd": d["trials"]["delta_cost_usd"]["mean"]}, check_whatif),
        # The demo trains for a duration; a sweep compares layouts on a token budget. Three GPU
        # counts, so the plot shows how time and cost trade across cluster sizes.
        ("sweep", ["sweep", demo, "--gpus", "64,128,256", "--top", "5", "--tokens", "300e9"],
         lambda d: {
            "evaluated": d["evaluated"], "rejected": d["rejected"],
            "best_time_s": d["top"][0]["time_to_train_s"],
            "best_cost_usd": d["top"][0]["cost_usd"], "best_mfu": d["top"][0]["mfu"]},
         check_sweep),
        ("collective", ["collective", demo], lambda d: {
            "group": d[0]["group"], "largest_bytes": d[-1]["size_bytes"],
            "largest_busbw": d[-1]["busbw_GBps"], "largest_time_s": d[-1]["time_s"]},
         check_collective),
        ("validate", ["validate"], lambda d: dict(
            [("mape", d["mape"])] +
            [(f"mape_{i}", v) for i, (_, v) in enumerate(sorted(d["mape_by_source"].items()))]),
         check_validate),
        ("diagnose", ["diagnose", "scenarios/examples/low_utilisation.textproto"],
         lambda d: {"step_time_s": d["step_time_s"], "mfu": d["mfu"]}, check_diagnose),
        # 120 steps (about 6 s): the example's GPU kill (10 min of scenario time, ~3 s here)
        # falls inside them.
        ("emulate", ["emulate", "scenarios/examples/emulate.textproto", "--steps", "120",
                     "--dir", checkpoints],
         lambda d: {"measured_wall": d["measured"]["wall_time_s"],
                    "predicted_wall": d["predicted"]["wall_time_s"],
                    "difference_pct": d["difference_pct"],
                    "processes": d["measured"]["processes_started"]}, check_emulate),
    ]


def bad_web_dir(trainsim, source_dir, out_dir):
    page = os.path.join(out_dir, "never.html")
    if os.path.exists(page):
        os.remove(page)
    env = dict(os.environ, TRAINSIM_WEB_DIR=os.path.join(out_dir, "no-such-dir"))
    for args in (["run", "scenarios/examples/demo.textproto"], ["validate"]):
        rc, out, err = run_bounded([trainsim] + args + ["--html", page], COMMAND_TIMEOUT_S,
                                   cwd=source_dir, env=env)
        check(rc == 2, f"{args[0]} with a missing TRAINSIM_WEB_DIR exited {rc}")
        check(out == "", f"{args[0]}: printed {out[:200]!r} before failing")
        lines = err.splitlines()
        check(len(lines) == 1 and lines[0].startswith("trainsim: error: --html:") and
              "setup-web.sh" in lines[0] and "no-such-dir" in lines[0],
              f"{args[0]}: stderr {err!r}")
        check(not os.path.exists(page), f"{args[0]}: wrote {page}")
    print("ok: a missing TRAINSIM_WEB_DIR is one exit-2 error line and writes nothing")
    return 0


def main():
    trainsim, source_dir, out_dir = (os.path.abspath(p) for p in sys.argv[1:4])
    os.makedirs(out_dir, exist_ok=True)
    if sys.argv[4:] == ["bad-web-dir"]:
        return bad_web_dir(trainsim, source_dir, out_dir)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP: chromium is not installed (Debian package: chromium)")
        return SKIP
    demo = "scenarios/examples/demo.textproto"
    with tempfile.TemporaryDirectory(prefix="trainsim-html-") as profile:
        for name, args, figures, extra_check in cases(demo, out_dir):
            height = SCREENSHOT_HEIGHT[name]
            page = os.path.join(out_dir, name + ".html")
            rc, out, err = run_bounded([trainsim] + args + ["--json", "--html", page],
                                       COMMAND_TIMEOUT_S, cwd=source_dir)
            if rc == 2 and "setup-web.sh" in err:
                print("SKIP: the plotting libraries are not installed (run scripts/setup-web.sh):"
                      f" {err.strip()}")
                return SKIP
            check(rc == 0, f"trainsim {' '.join(args)} --html exited {rc}: {err}")
            doc = json.loads(out)
            if name == "collective":  # cheap to repeat: same input, byte-identical page
                again = page + ".again"
                rc, _, err = run_bounded([trainsim] + args + ["--html", again],
                                         COMMAND_TIMEOUT_S, cwd=source_dir)
                with open(page, "rb") as a, open(again, "rb") as b:
                    check(rc == 0 and a.read() == b.read(), "collective: the page differs "
                          "between two runs of the same command")
            parser = load_page(chromium, profile, page, os.path.join(out_dir, name + ".png"),
                               height)
            extra = check_page(name, parser, doc, figures(doc))
            extra_check(doc, extra)
            print(f"ok: {name}: {len(parser.plots)} plots rendered, {len(parser.figures)} "
                  f"figures equal the JSON, screenshot {name}.png")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)

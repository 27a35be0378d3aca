"""trainsim from Python: the simulator's commands as functions.

    import trainsim
    r = trainsim.run("scenarios/examples/demo.textproto", sets=["parallelism.tp=4"])
    print(r.step.mfu, r.run.useful_compute_fraction)

Each function takes a scenario -- a file path, a dict (the scenario's JSON form), or a
Scenario from trainsim.load() -- plus --set style overrides (``sets=["path=value", ...]``) and
keyword options named like the command's options, and returns the document
``trainsim <command> --json`` prints, as a Result: attribute access (``r.step.mfu``), item
access (``r["step"]["mfu"]``) and ``r.to_dict()`` for the plain dicts and lists. Bad input
raises trainsim.Error (a ValueError) with the message the command prints after
"trainsim: error: ", including its FILE:LINE:COLUMN where there is one.

The work is done by the same C++ code as the ``trainsim`` command (cli/api.h); see
docs/python.md.
"""

import copy
import json
import os
import re
from collections.abc import Mapping, Sequence

from . import _trainsim

__all__ = [
    "Error",
    "Result",
    "ResultList",
    "Scenario",
    "load",
    "check",
    "run",
    "whatif",
    "sweep",
    "collective",
]

__version__ = _trainsim.__version__


class Error(ValueError):
    """Bad input (or an unavailable backend): the command line's error, as an exception.

    str(e) and e.message are the message `trainsim` prints after "trainsim: error: ".
    e.kind is "bad_input" (the command's exit code 2), "unavailable" (3) or "internal" (1).
    e.file, e.line and e.column locate a syntax error ("demo.textproto:12:5: ..."); e.location
    is "FILE:LINE:COLUMN"; all None when the message names a field or an option instead.
    """

    # "PATH:LINE:COLUMN: message", as scenarios/scenario.h promises for syntax errors.
    _LOCATION = re.compile(r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<column>\d+): ")

    def __init__(self, message, kind="bad_input"):
        super().__init__(message)
        self.message = message
        self.kind = kind
        match = self._LOCATION.match(message)
        self.file = match.group("file") if match else None
        self.line = int(match.group("line")) if match else None
        self.column = int(match.group("column")) if match else None
        self.location = (
            "%s:%d:%d" % (self.file, self.line, self.column) if match else None
        )


def _wrap(value):
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return ResultList(value)
    return value


class _Document:
    """What Result and ResultList share: the plain JSON data they wrap, compared, printed and
    copied out the same way."""

    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __len__(self):
        return len(self._data)

    def __eq__(self, other):
        if isinstance(other, _Document):
            other = other._data
        return self._data == other

    __hash__ = None

    def __repr__(self):
        return "trainsim.%s(%s)" % (type(self).__name__, json.dumps(self._data)[:400])

    def to_dict(self):
        """A deep copy of the plain data (a dict, or a list for a ResultList)."""
        return copy.deepcopy(self._data)

    def to_json(self, indent=2):
        return json.dumps(self._data, indent=indent)


class Result(_Document, Mapping):
    """A JSON object from a command's --json document.

    Keys read as attributes (r.step.mfu) or items (r["step"]["mfu"]); nested objects and arrays
    come back wrapped the same way. A key that is also a method name (keys, items, values, get)
    is read as an item. to_dict() returns a deep copy of the plain data; to_json() the JSON text.
    """

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__") or name == "_data":  # copy/pickle probing a half-built object
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(
                "no key %r here (keys: %s)" % (name, ", ".join(self._data))
            ) from None

    def __setattr__(self, name, value):
        raise AttributeError("a trainsim.Result is read-only; use to_dict() for a copy")

    def __reduce__(self):
        return (Result, (self._data,))

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __iter__(self):
        return iter(self._data)

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})


class ResultList(_Document, Sequence):
    """A JSON array from a command's --json document; its objects come back as Results."""

    __slots__ = ()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ResultList(self._data[index])
        return _wrap(self._data[index])

    def to_list(self):
        return self.to_dict()


class Scenario:
    """A scenario to simulate: a file or a dict, with --set overrides; see load()."""

    def __init__(self, path=None, text=None, name="<scenario>", sets=()):
        if (path is None) == (text is None):
            raise TypeError("Scenario needs exactly one of path or text")
        self.path = path
        self.text = text
        self.name = name
        self.sets = list(sets)

    def with_sets(self, sets):
        """This scenario with more overrides after its own (later ones win, as with --set)."""
        return Scenario(self.path, self.text, self.name, self.sets + _list_of_str(sets, "sets"))

    def _args(self, sets):
        return (
            self.path or "",
            self.text if self.text is not None else "",
            self.name,
            self.sets + _list_of_str(sets, "sets"),
        )

    def check(self, sets=None):
        return check(self, sets)

    def run(self, sets=None, **options):
        return run(self, sets, **options)

    def whatif(self, sets=None, **options):
        return whatif(self, sets, **options)

    def sweep(self, sets=None, **options):
        return sweep(self, sets, **options)

    def collective(self, sets=None, **options):
        return collective(self, sets, **options)

    def __repr__(self):
        where = self.path if self.path is not None else self.name
        return "trainsim.Scenario(%r, sets=%r)" % (where, self.sets)


def _list_of_str(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out = list(value)
    for item in out:
        if not isinstance(item, str):
            raise TypeError("%s: expected strings, got %r" % (what, item))
    return out


def _list_of_int(value, what):
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def _scenario(source, sets=None):
    """A Scenario from a path, a dict or a Scenario, with `sets` applied after its own."""
    if isinstance(source, Scenario):
        base = source
    elif isinstance(source, Mapping):
        # The dict goes through the loader's JSON path: dumped with one key a line, so an error's
        # line:column points into this text (shown by e.location, named "<dict>").
        base = Scenario(text=json.dumps(source, indent=2), name="<dict>")
    elif isinstance(source, (str, os.PathLike)):
        base = Scenario(path=os.fspath(source))
    else:
        raise TypeError(
            "a scenario is a file path, a dict or a trainsim.Scenario, not %s"
            % type(source).__name__
        )
    return base.with_sets(sets) if sets else base


def _document(function, *args):
    try:
        text = function(*args)
    except _trainsim.Error as e:
        raise Error(*e.args) from None
    return _wrap(json.loads(text))


def _check_range(name, value, low, high, zero_ok=True):
    if zero_ok and value == 0:
        return
    if not low <= value <= high:
        raise Error("--%s: %d is not in [%d, %d]" % (name, value, low, high))


def load(source, sets=None):
    """A Scenario from a path or a dict, checked now: bad input raises trainsim.Error here."""
    scenario = _scenario(source, sets)
    check(scenario)
    return scenario


def check(scenario, sets=None):
    """`trainsim check --json`: the scenario resolved (defaults filled, derived values)."""
    return _document(_trainsim.check, *_scenario(scenario, sets)._args(None))


def run(
    scenario,
    sets=None,
    *,
    allow_oom=False,
    gpu=0,
    events=False,
    trials=0,
    seed=None,
    optimize_checkpoint_interval=False,
    calibration="",
    progress=False,
):
    """`trainsim run --json`: one step (r.step: time, MFU, memory, breakdown), then the run
    (r.run: wall time, useful compute fraction, ETTR, cost). trials > 0 adds the Monte Carlo statistics."""
    # The command line's ranges (cli/run_command.cc).
    _check_range("trials", trials, 1, 1000000)
    return _document(
        _trainsim.run,
        *_scenario(scenario, sets)._args(None),
        bool(allow_oom),
        int(gpu),
        bool(events),
        int(trials),
        seed,
        bool(optimize_checkpoint_interval),
        os.fspath(calibration),
        bool(progress),
    )


def whatif(scenario, sets=None, *, fail=(), slow=(), events=False, trial=0, trials=None):
    """`trainsim whatif --json`: the run with and without added faults, e.g.
    fail=["gpu:37@16h"], slow=["gpu:5x1.3@1h+4h"]. trials: failure histories the delta's
    distribution is taken over; None (the command's default) = 100 when stochastic failures are
    on, else 0; 0 = one history only."""
    # The command line's ranges (cli/whatif_command.cc).
    _check_range("trial", trial, 0, 1 << 40)
    if trials is None:
        trials = -1
    else:
        _check_range("trials", trials, 0, 100000)
    return _document(
        _trainsim.whatif,
        *_scenario(scenario, sets)._args(None),
        _list_of_str(fail, "fail"),
        _list_of_str(slow, "slow"),
        bool(events),
        int(trial),
        int(trials),
    )


def sweep(
    scenario,
    sets=None,
    *,
    gpus=(),
    objective="time",
    top=10,
    tokens=0,
    tp_across_nodes=False,
    micro_batches=(),
    trials=0,
    cp=(),
    ep=(),
    etp=(),
    zero=(),
    no_uneven=False,
    no_overlaps=False,
    progress=False,
):
    """`trainsim sweep --json`: every valid layout ranked by `objective` ("time" or "cost"),
    the top `top` confirmed, and the time-cost Pareto front. Runs in this process (no MPI)."""
    return _document(
        _trainsim.sweep,
        *_scenario(scenario, sets)._args(None),
        _list_of_int(gpus, "gpus"),
        str(objective),
        int(top),
        float(tokens),
        bool(tp_across_nodes),
        _list_of_int(micro_batches, "micro_batches"),
        int(trials),
        _list_of_int(cp, "cp"),
        _list_of_int(ep, "ep"),
        _list_of_int(etp, "etp"),
        _list_of_int(zero, "zero"),
        bool(no_uneven),
        bool(no_overlaps),
        bool(progress),
    )


def collective(
    scenario,
    sets=None,
    *,
    op="all_reduce",
    algo="auto",
    group="",
    sizes="8B:8GiB",
    step_factor=2,
    expand=False,
    calibration="",
):
    """`trainsim collective --json`: one row per size {op, algo, protocol, group, size_bytes,
    time_s, algbw_GBps, busbw_GBps, ...}, as a ResultList."""
    if isinstance(group, (list, tuple)):
        group = ",".join(str(g) for g in group)
    return _document(
        _trainsim.collective,
        *_scenario(scenario, sets)._args(None),
        str(op),
        str(algo),
        str(group),
        str(sizes),
        int(step_factor),
        bool(expand),
        os.fspath(calibration),
    )

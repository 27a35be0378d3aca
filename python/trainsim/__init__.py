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
import math
import numbers
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


# The widths of the C++ parameters (python/trainsim_module.cc): a value outside one cannot reach
# the command's own checks (those give the command's messages), so it is refused here.
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (0, (1 << 64) - 1)
_WIDTHS = {_INT32: "a 32-bit integer", _INT64: "a 64-bit integer"}


def _integer(name, value, low, high, what="an integer"):
    """`value` as an int: a TypeError for anything but an integer (bool and float included),
    trainsim.Error when it is not in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s: expected %s, got %r (%s)" % (name, what, value, type(value).__name__))
    value = int(value)
    if not low <= value <= high:
        if (low, high) in _WIDTHS:
            raise Error(
                "--%s: %d does not fit in %s"
                % (name.replace("_", "-"), value, _WIDTHS[(low, high)])
            )
        raise Error("--%s: %d is not in [%d, %d]" % (name.replace("_", "-"), value, low, high))
    return value


def _number(name, value):
    """`value` as a float: a TypeError for anything but an int or a float (bool included)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s: expected a number, got %r (%s)" % (name, value, type(value).__name__))
    return float(value)


def _list_of_int(value, what):
    if value is None:
        return []
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [value]
    elif isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            "%s: expected an integer or a list of integers, got %r (%s)"
            % (what, value, type(value).__name__)
        )
    return [_integer(what, v, *_INT32, what="integers") for v in value]


def _scenario(source, sets=None):
    """A Scenario from a path, a dict or a Scenario, with `sets` applied after its own."""
    if isinstance(source, Scenario):
        base = source
    elif isinstance(source, Mapping):
        # The dict goes through the loader's JSON path: dumped with one key a line, so an error's
        # line:column points into this text (shown by e.location, named "<dict>").
        base = Scenario(text=_dict_text(source), name="<dict>")
    elif isinstance(source, (str, os.PathLike)):
        base = Scenario(path=os.fspath(source))
    else:
        raise TypeError(
            "a scenario is a file path, a dict or a trainsim.Scenario, not %s"
            % type(source).__name__
        )
    return base.with_sets(sets) if sets else base


def _dict_text(source):
    """A scenario dict as JSON text (two spaces of indent, one key a line). A NaN or infinity
    (which JSON cannot write) raises trainsim.Error located like the loader's errors:
    "<dict>:LINE:COLUMN: model.hidden: NaN is not a number a scenario can hold"."""
    try:
        return json.dumps(source, indent=2, allow_nan=False)
    except ValueError:
        found = _non_finite(source, "", set())
        if found is None:  # not a NaN (a circular reference): json's own message
            raise
    path, value = found
    word = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    # Python's JSON writes the number as `word`; with one value a line, the first line whose
    # unquoted value is such a word holds the first one _non_finite met (both go in dict order).
    location = ""
    lines = json.dumps(source, indent=2).split("\n")
    for number, line in enumerate(lines, start=1):
        if line.rstrip(",").endswith(("NaN", "Infinity")):
            location = "<dict>:%d:%d: " % (number, len(line) - len(line.lstrip()) + 1)
            break
    raise Error("%s%s: %s is not a number a scenario can hold" % (location, path, word))


def _non_finite(value, path, seen):
    """(path, value) of the first NaN or infinity in `value`, in json.dumps's order, or None;
    `seen`: the ids of the containers above (a container inside itself is json's error)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if id(value) in seen:
        return None
    if isinstance(value, dict):
        items = ((("%s.%s" % (path, k)) if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = (("%s[%d]" % (path, i), v) for i, v in enumerate(value))
    else:
        return None
    seen.add(id(value))
    for item_path, item in items:
        found = _non_finite(item, item_path, seen)
        if found is not None:
            return found
    seen.discard(id(value))
    return None


def _document(function, *args):
    try:
        text = function(*args)
    except _trainsim.Error as e:
        raise Error(*e.args) from None
    return _wrap(json.loads(text))


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
    (r.run: wall time, useful compute fraction, ETTR, cost). trials > 0 adds the Monte Carlo
    statistics; 0 (the default) = none."""
    # The command line's ranges (cli/run_command.cc), with 0 for no Monte Carlo.
    trials = _integer("trials", trials, 0, 1000000)
    if seed is not None:
        seed = _integer("seed", seed, *_UINT64)
    return _document(
        _trainsim.run,
        *_scenario(scenario, sets)._args(None),
        bool(allow_oom),
        _integer("gpu", gpu, *_INT32),
        bool(events),
        trials,
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
    trial = _integer("trial", trial, 0, 1 << 40)
    trials = -1 if trials is None else _integer("trials", trials, 0, 100000)
    return _document(
        _trainsim.whatif,
        *_scenario(scenario, sets)._args(None),
        _list_of_str(fail, "fail"),
        _list_of_str(slow, "slow"),
        bool(events),
        trial,
        trials,
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
    """`trainsim sweep --json`: every valid layout ranked by `objective` ("time", "cost" or
    "energy"), the top `top` confirmed, and the time-cost Pareto front. Runs in this process
    (no MPI)."""
    return _document(
        _trainsim.sweep,
        *_scenario(scenario, sets)._args(None),
        _list_of_int(gpus, "gpus"),
        str(objective),
        _integer("top", top, *_INT32),
        _number("tokens", tokens),
        bool(tp_across_nodes),
        _list_of_int(micro_batches, "micro_batches"),
        _integer("trials", trials, *_INT64),
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
        _integer("step_factor", step_factor, *_INT32),
        bool(expand),
        os.fspath(calibration),
    )

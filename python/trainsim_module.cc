// python/trainsim_module.cc — `trainsim._trainsim`, the extension under the Python package
// (python/trainsim/__init__.py wraps it). Each function takes the scenario (a path, or text with
// a name for messages), the --set overrides and the command's options, calls cli/api.h — the
// code the `trainsim` commands call — and returns the command's --json document as a string.
// Errors raise _trainsim.Error with args (message, kind): the message exactly as the command
// prints it after "trainsim: error: ", and kind "bad_input", "unavailable" or "internal" (the
// command's exit codes 2, 3 and 1). The simulation runs with the GIL released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/api.h"
#include "sweep/distributed.h"

namespace py = pybind11;
namespace api = trainsim::cli::api;
using trainsim::Result;
using trainsim::Status;

namespace {

// A Status on its way to Python.
struct ApiError {
  std::string message;
  std::string kind;
};

const char* KindOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kInternal:
      return "internal";
    default:
      return "bad_input";
  }
}

api::ScenarioInput Input(const std::string& path, const std::string& text, const std::string& name,
                         const std::vector<std::string>& sets) {
  api::ScenarioInput input;
  input.path = path;
  input.text = text;
  if (!name.empty()) input.name = name;
  input.sets = sets;
  return input;
}

// Runs `work` without the GIL and returns its document, or throws ApiError.
std::string Document(const std::function<Result<std::string>()>& work) {
  std::optional<Result<std::string>> doc;
  {
    py::gil_scoped_release release;
    doc.emplace(work());
  }
  if (!doc->ok()) throw ApiError{api::ErrorMessage(doc->status()), KindOf(doc->status())};
  return std::move(*doc).value();
}

std::string Check(const std::string& path, const std::string& text, const std::string& name,
                  const std::vector<std::string>& sets) {
  return Document([&] { return api::CheckDocument(Input(path, text, name, sets)); });
}

std::string Run(const std::string& path, const std::string& text, const std::string& name,
                const std::vector<std::string>& sets, bool allow_oom, int gpu, bool events,
                int64_t trials, std::optional<uint64_t> seed, bool optimize_interval,
                const std::string& calibration, bool progress) {
  api::RunOptions options;
  options.allow_oom = allow_oom;
  options.gpu = gpu;
  options.events = events;
  options.keep_log = events;  // the document carries the log only with events
  options.trials = trials;
  options.seed = seed;
  options.optimize_interval = optimize_interval;
  options.calibration = calibration;
  options.progress = progress;
  return Document([&]() -> Result<std::string> {
    Result<api::RunOutcome> outcome = api::Run(Input(path, text, name, sets), options);
    if (!outcome.ok()) return outcome.status();
    return api::RunDocument(*outcome, events);
  });
}

std::string WhatIf(const std::string& path, const std::string& text, const std::string& name,
                   const std::vector<std::string>& sets, const std::vector<std::string>& fail,
                   const std::vector<std::string>& slow, bool events, int64_t trial,
                   int64_t trials) {
  api::WhatIfOptions options;
  options.fail = fail;
  options.slow = slow;
  options.events = events;
  options.trial = trial;
  options.trials = trials;
  return Document([&]() -> Result<std::string> {
    Result<api::WhatIfOutcome> outcome = api::WhatIf(Input(path, text, name, sets), options);
    if (!outcome.ok()) return outcome.status();
    return api::WhatIfDocument(*outcome, options);
  });
}

std::string Sweep(const std::string& path, const std::string& text, const std::string& name,
                  const std::vector<std::string>& sets, const api::SweepOptions& options) {
  return Document([&]() -> Result<std::string> {
    // One process: the whole sweep here (MPI is for the command under mpirun).
    trainsim::sweep::LocalCommunicator comm;
    Result<api::SweepOutcome> outcome = api::Sweep(Input(path, text, name, sets), options, &comm);
    if (!outcome.ok()) return outcome.status();
    return api::SweepDocument(*outcome);
  });
}

std::string Collective(const std::string& path, const std::string& text, const std::string& name,
                       const std::vector<std::string>& sets,
                       const api::CollectiveOptions& options) {
  return Document([&]() -> Result<std::string> {
    Result<api::CollectiveOutcome> outcome =
        api::Collective(Input(path, text, name, sets), options);
    if (!outcome.ok()) return outcome.status();
    return api::CollectiveDocument(*outcome);
  });
}

}  // namespace

PYBIND11_MODULE(_trainsim, m) {
  m.doc() = "trainsim's commands as functions returning their --json documents (see trainsim)";
  m.attr("__version__") = TRAINSIM_VERSION;
  // Never destroyed: a static py::object would be released after the interpreter has gone.
  static auto* error = new py::exception<ApiError>(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ApiError& e) {
      PyErr_SetObject(error->ptr(), py::make_tuple(e.message, e.kind).ptr());
    }
  });

  m.def("check", &Check, py::arg("path"), py::arg("text"), py::arg("name"), py::arg("sets"));
  m.def("run", &Run, py::arg("path"), py::arg("text"), py::arg("name"), py::arg("sets"),
        py::arg("allow_oom"), py::arg("gpu"), py::arg("events"), py::arg("trials"), py::arg("seed"),
        py::arg("optimize_interval"), py::arg("calibration"), py::arg("progress"));
  m.def("whatif", &WhatIf, py::arg("path"), py::arg("text"), py::arg("name"), py::arg("sets"),
        py::arg("fail"), py::arg("slow"), py::arg("events"), py::arg("trial"), py::arg("trials"));
  m.def(
      "sweep",
      [](const std::string& path, const std::string& text, const std::string& name,
         const std::vector<std::string>& sets, const std::vector<int>& gpus,
         const std::string& objective, int top, double tokens, bool tp_across_nodes,
         const std::vector<int>& micro_batches, int64_t trials, const std::vector<int>& cp,
         const std::vector<int>& ep, const std::vector<int>& etp, const std::vector<int>& zero,
         bool no_uneven, bool no_overlaps, bool progress) {
        api::SweepOptions o;
        o.gpus = gpus;
        o.objective = objective;
        o.top = top;
        o.tokens = tokens;
        o.tp_across_nodes = tp_across_nodes;
        o.micro_batches = micro_batches;
        o.trials = trials;
        o.cp = cp;
        o.ep = ep;
        o.etp = etp;
        o.zero = zero;
        o.no_uneven = no_uneven;
        o.no_overlaps = no_overlaps;
        o.progress = progress;
        return Sweep(path, text, name, sets, o);
      },
      py::arg("path"), py::arg("text"), py::arg("name"), py::arg("sets"), py::arg("gpus"),
      py::arg("objective"), py::arg("top"), py::arg("tokens"), py::arg("tp_across_nodes"),
      py::arg("micro_batches"), py::arg("trials"), py::arg("cp"), py::arg("ep"), py::arg("etp"),
      py::arg("zero"), py::arg("no_uneven"), py::arg("no_overlaps"), py::arg("progress"));
  m.def(
      "collective",
      [](const std::string& path, const std::string& text, const std::string& name,
         const std::vector<std::string>& sets, const std::string& op, const std::string& algo,
         const std::string& group, const std::string& sizes, int step_factor, bool expand,
         const std::string& calibration) {
        api::CollectiveOptions o;
        o.op = op;
        o.algo = algo;
        o.group = group;
        o.sizes = sizes;
        o.step_factor = step_factor;
        o.expand = expand;
        o.calibration = calibration;
        return Collective(path, text, name, sets, o);
      },
      py::arg("path"), py::arg("text"), py::arg("name"), py::arg("sets"), py::arg("op"),
      py::arg("algo"), py::arg("group"), py::arg("sizes"), py::arg("step_factor"),
      py::arg("expand"), py::arg("calibration"));
}

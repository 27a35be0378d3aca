// ToStatus and OverridePath (scenarios/internal.h): a validation error as a Status that points
// at the field in the scenario file, or says the command line set it; kept apart from loader.cc.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/internal.h"
#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios::detail {

std::string OverridePath(std::string_view assignment) {
  std::string_view path = assignment.substr(0, assignment.find('='));
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string_view seg = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    bool index = !seg.empty() && std::all_of(seg.begin(), seg.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (index) {
      out += '[';
      out.append(seg);
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out.append(seg);
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

Status ToStatus(const FieldError& error, const std::string& name_for_errors, const SourceMap* map,
                const std::vector<std::string>& overridden) {
  std::string prefix = name_for_errors;
  bool from_set = std::find(overridden.begin(), overridden.end(), error.path) != overridden.end();
  // A field of a section only the command line wrote (--set model.moe.experts=8 on a file with
  // no moe block): the file's nearest section (model) is not where it is. Find gives a missing
  // section its parent's position.
  std::string created;
  if (const size_t dot = error.path.rfind('.');
      !from_set && map != nullptr && dot != std::string::npos) {
    const std::string section = error.path.substr(0, dot);
    const bool set_inside =
        std::any_of(overridden.begin(), overridden.end(),
                    [&](const std::string& p) { return p.rfind(section + ".", 0) == 0; });
    const size_t up = section.rfind('.');
    if (set_inside && map->Find(*pb::Scenario::descriptor(), section) ==
                          (up == std::string::npos
                               ? std::nullopt
                               : map->Find(*pb::Scenario::descriptor(), section.substr(0, up)))) {
      created = section;
    }
  }
  if (map != nullptr && !name_for_errors.empty() && !from_set && created.empty()) {
    auto lc = map->Find(*pb::Scenario::descriptor(), error.path);
    if (lc) prefix = At(name_for_errors, *lc);
  }
  std::string msg = (prefix.empty() ? "" : prefix + ": ") +
                    (error.path.empty() ? "" : error.path + ": ") + error.message +
                    (from_set          ? " (set on the command line)"
                     : created.empty() ? ""
                                       : " (" + created + " set on the command line)");
  // A scenario's field is missing or out of range, else invalid (a lookup's other codes too).
  using C = Status::Code;
  return Status::FromCode(
      error.code == C::kNotFound || error.code == C::kOutOfRange ? error.code : C::kInvalidArgument,
      msg);
}

}  // namespace trainsim::scenarios::detail

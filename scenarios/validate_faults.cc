// CheckFault (scenarios/internal.h): one scheduled fault of a scenario checked against the
// cluster and the end of training, kept apart from validate.cc. Each message names the fault's
// field and what would be valid.
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "scenarios/internal.h"
#include "sim/time.h"

namespace trainsim::scenarios::detail {
namespace {

std::string Number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::optional<std::pair<std::string, std::string>> CheckFault(const pb::Fault& f, int64_t nodes,
                                                              int64_t gpus_per_node,
                                                              int64_t nics_per_node,
                                                              std::optional<sim::Time> end) {
  using P = std::pair<std::string, std::string>;
  if (f.kind() == pb::Fault::KIND_UNSPECIFIED) {
    return P{"kind",
             "every fault needs a kind: GPU, NODE, NIC, LINK, STRAGGLER, HANG, SOFTWARE or SDC"};
  }
  if (f.at().empty()) return P{"at", "every fault needs a time, e.g. at: \"16h\""};
  auto at = sim::ParseDuration(f.at());
  if (!at.ok()) return P{"at", at.status().message()};
  if (end && *at >= *end) {
    return P{"at", "\"" + f.at() + "\" is at or after the end of training (" +
                       sim::FormatDuration(*end) + ")"};
  }
  int64_t limit = 0;
  std::string what;
  switch (f.kind()) {
    case pb::Fault::GPU:
    case pb::Fault::STRAGGLER:
    case pb::Fault::HANG:
    case pb::Fault::SDC:
      limit = nodes * gpus_per_node;
      what = "GPU";
      break;
    case pb::Fault::NODE:
      limit = nodes;
      what = "node";
      break;
    case pb::Fault::NIC:
    case pb::Fault::LINK:
      limit = nodes * nics_per_node;
      what = f.kind() == pb::Fault::LINK ? "a link is named by the NIC at its end, and NIC" : "NIC";
      break;
    default:
      break;
  }
  if (limit > 0) {
    if (!f.has_id()) return P{"id", "a " + pb::Fault::Kind_Name(f.kind()) + " fault needs an id"};
    if (f.id() < 0 || f.id() >= limit) {
      return P{"id", pb::Fault::Kind_Name(f.kind()) + " id " + std::to_string(f.id()) +
                         " does not exist: " + what + " ids are 0.." + std::to_string(limit - 1)};
    }
  }
  if (!f.duration().empty()) {
    auto d = sim::ParseDuration(f.duration());
    if (!d.ok()) return P{"duration", d.status().message()};
    if (*d == sim::Time::Zero()) return P{"duration", "must be longer than 0"};
    // A failure lasts until recovery brings the job back (recovery.repair_time for the node);
    // only a slowdown and a link fault have a length of their own.
    if (f.kind() != pb::Fault::STRAGGLER && f.kind() != pb::Fault::LINK) {
      return P{"duration", "a " + pb::Fault::Kind_Name(f.kind()) +
                               " fault has no duration (its repair time comes from recovery); "
                               "duration applies to STRAGGLER faults and degraded LINK faults"};
    }
    // A link that goes down takes its node out of the job (as a NIC failure) until recovery;
    // a duration was dropped without a word.
    if (f.kind() == pb::Fault::LINK && (!f.has_degrade() || f.degrade() >= 1)) {
      return P{"duration",
               "a LINK fault that takes the link down has no duration (its node leaves the job "
               "until recovery); duration applies to a degraded link (degrade below 1)"};
    }
  }
  if (f.has_slowdown() && f.kind() != pb::Fault::STRAGGLER) {
    return P{"slowdown",
             "slowdown applies to STRAGGLER faults only, not " + pb::Fault::Kind_Name(f.kind())};
  }
  if (f.has_degrade() && f.kind() != pb::Fault::LINK) {
    return P{"degrade",
             "degrade applies to LINK faults only, not " + pb::Fault::Kind_Name(f.kind())};
  }
  if (f.kind() == pb::Fault::STRAGGLER &&
      (!std::isfinite(f.slowdown()) || f.slowdown() <= 1.0 || f.slowdown() > 1000)) {
    return P{"slowdown", Number(f.slowdown()) +
                             " is not a slowdown: a straggler's step-time factor is > 1 and "
                             "<= 1000 (e.g. 1.3)"};
  }
  if (f.kind() == pb::Fault::LINK &&
      (!std::isfinite(f.degrade()) || f.degrade() <= 0 || f.degrade() > 1)) {
    return P{"degrade", Number(f.degrade()) +
                            " is not a fraction of bandwidth lost: use (0, 1], 1 = link down"};
  }
  return std::nullopt;
}

}  // namespace trainsim::scenarios::detail

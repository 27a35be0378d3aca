#include "comm/message_size.h"

#include <cctype>
#include <string>

namespace trainsim::comm {

namespace {

constexpr uint64_t kMaxBytes = uint64_t{1} << 62;

struct Unit {
  std::string_view name;
  uint64_t multiplier;
};

constexpr Unit kUnits[] = {
    {"B", 1},
    {"KB", 1000},
    {"MB", 1000 * 1000},
    {"GB", 1000 * 1000 * 1000},
    {"TB", uint64_t{1000} * 1000 * 1000 * 1000},
    {"KiB", uint64_t{1} << 10},
    {"MiB", uint64_t{1} << 20},
    {"GiB", uint64_t{1} << 30},
    {"TiB", uint64_t{1} << 40},
};

Status BadSize(std::string_view text, const std::string& why) {
  return Status::InvalidArgument(
      "bad size '" + std::string(text) + "': " + why +
      " (write a whole number with an optional unit: B, KB/MB/GB/TB = powers of 10, "
      "KiB/MiB/GiB/TiB = powers of 2, e.g. 8B, 64KiB, 8GiB)");
}

}  // namespace

Result<uint64_t> ParseMessageSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0) return BadSize(text, "it does not start with a number");
  if (digits > 19) return BadSize(text, "too large");
  const uint64_t number = std::stoull(std::string(text.substr(0, digits)));
  const std::string_view unit_text = text.substr(digits);
  uint64_t multiplier = 0;
  if (unit_text.empty()) {
    multiplier = 1;
  } else {
    for (const Unit& u : kUnits) {
      if (u.name == unit_text) multiplier = u.multiplier;
    }
  }
  if (multiplier == 0) return BadSize(text, "unknown unit '" + std::string(unit_text) + "'");
  if (number == 0) return BadSize(text, "a size must be > 0");
  if (number > kMaxBytes / multiplier) return BadSize(text, "too large");
  return number * multiplier;
}

Result<std::vector<uint64_t>> ParseSizeRange(std::string_view text, uint64_t factor) {
  if (factor < 2) {
    return Status::InvalidArgument("step factor must be an integer >= 2, got " +
                                   std::to_string(factor));
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    Result<uint64_t> one = ParseMessageSize(text);
    if (!one.ok()) return one.status();
    return std::vector<uint64_t>{*one};
  }
  Result<uint64_t> lo = ParseMessageSize(text.substr(0, colon));
  if (!lo.ok()) return lo.status();
  Result<uint64_t> hi = ParseMessageSize(text.substr(colon + 1));
  if (!hi.ok()) return hi.status();
  if (*lo > *hi) {
    return Status::InvalidArgument("bad size range '" + std::string(text) +
                                   "': the first size is larger than the second");
  }
  std::vector<uint64_t> sizes;
  for (uint64_t s = *lo; s <= *hi; s *= factor) {
    sizes.push_back(s);
    if (s > *hi / factor) break;
  }
  return sizes;
}

std::string FormatMessageSize(uint64_t bytes) {
  static constexpr const char* kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kBinary[u];
}

}  // namespace trainsim::comm

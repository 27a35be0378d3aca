// emulate/protocol.cc — frames, messages and the deterministic training arithmetic.
#include "emulate/protocol.h"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace trainsim::emulate {

std::string Message::Get(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

int64_t Message::Int(const std::string& key) const {
  const std::string v = Get(key);
  int64_t out = 0;
  std::from_chars(v.data(), v.data() + v.size(), out);
  return out;
}

double Message::Real(const std::string& key) const {
  const std::string v = Get(key);
  return v.empty() ? 0.0 : std::strtod(v.c_str(), nullptr);
}

Message& Message::Set(const std::string& key, const std::string& value) {
  fields[key] = value;
  return *this;
}
Message& Message::Set(const std::string& key, int64_t value) {
  return Set(key, std::to_string(value));
}
Message& Message::SetReal(const std::string& key, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);  // round-trips a double exactly
  return Set(key, buf);
}

std::string Encode(const Message& m) {
  std::string out = m.type + "\n";
  for (const auto& [k, v] : m.fields) out += k + "=" + v + "\n";
  return out;
}

Result<Message> Decode(const std::string& payload) {
  Message m;
  size_t pos = payload.find('\n');
  if (pos == std::string::npos || pos == 0) {
    return Status::InvalidArgument("malformed message (no type line)");
  }
  m.type = payload.substr(0, pos);
  ++pos;
  while (pos < payload.size()) {
    const size_t end = payload.find('\n', pos);
    if (end == std::string::npos) return Status::InvalidArgument("malformed message (no newline)");
    const std::string line = payload.substr(pos, end - pos);
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("malformed message line \"" + line + "\"");
    }
    m.fields[line.substr(0, eq)] = line.substr(eq + 1);
    pos = end + 1;
  }
  return m;
}

std::string LengthPrefix(uint32_t n) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

uint32_t ParseLengthPrefix(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

uint64_t Fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;  // the FNV-1a 64-bit prime
  }
  return h;
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {
// SplitMix64 (Steele, Lea & Flood 2014): a well-mixed 64-bit function of its input.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// A double in [-1, 1) from 53 random bits.
double Unit(uint64_t x) { return static_cast<double>(Mix(x) >> 11) * 0x1.0p-52 - 1.0; }
}  // namespace

std::vector<double> InitialState(uint64_t seed, int64_t elements) {
  std::vector<double> s(static_cast<size_t>(elements));
  for (int64_t i = 0; i < elements; ++i) s[i] = Unit(Mix(seed) ^ static_cast<uint64_t>(i));
  return s;
}

void Gradient(uint64_t seed, int rank, int64_t step, std::vector<double>* out) {
  const uint64_t base = Mix(Mix(seed ^ 0x5eedull) + static_cast<uint64_t>(rank)) +
                        Mix(static_cast<uint64_t>(step) * 0x100000001b3ull);
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = Unit(base + i);
}

std::pair<int64_t, int64_t> ChunkRange(int64_t elements, int world, int c) {
  return {elements * c / world, elements * (c + 1) / world};
}

void ApplyUpdate(const std::vector<double>& sum, int world, std::vector<double>* state) {
  for (size_t i = 0; i < state->size(); ++i) {
    (*state)[i] -= kLearningRate * (sum[i] / world);
  }
}

std::vector<double> ReferenceState(uint64_t seed, int64_t elements, int world, int64_t steps) {
  return ReferenceState(seed, elements, {{0, world}}, steps, Algorithm::kRing);
}

const char* AlgorithmName(Algorithm a) { return a == Algorithm::kTree ? "tree" : "ring"; }

void ReduceInOrder(const std::vector<std::vector<double>>& g, int world, Algorithm alg,
                   std::vector<double>* sum) {
  const auto elements = static_cast<int64_t>(sum->size());
  if (alg == Algorithm::kRing) {
    for (int c = 0; c < world; ++c) {
      auto [lo, hi] = ChunkRange(elements, world, c);
      for (int64_t i = lo; i < hi; ++i) {
        double acc = g[c][i];
        for (int k = 1; k < world; ++k) acc = g[(c + k) % world][i] + acc;
        (*sum)[i] = acc;
      }
    }
    return;
  }
  std::vector<double> a(static_cast<size_t>(world));
  for (int64_t i = 0; i < elements; ++i) {
    for (int r = world - 1; r >= 0; --r) {  // children (higher indices) before their parent
      a[r] = g[r][i];
      if (2 * r + 1 < world) a[r] = a[r] + a[2 * r + 1];
      if (2 * r + 2 < world) a[r] = a[r] + a[2 * r + 2];
    }
    (*sum)[i] = a[0];
  }
}

std::string FormatSchedule(const std::vector<WorldSegment>& s) {
  std::string out;
  for (const WorldSegment& w : s) {
    if (!out.empty()) out += ",";
    out += std::to_string(w.from_step) + ":" + std::to_string(w.world);
  }
  return out;
}

std::vector<WorldSegment> ParseSchedule(const std::string& text) {
  std::vector<WorldSegment> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return {};
    WorldSegment w;
    auto r1 = std::from_chars(item.data(), item.data() + colon, w.from_step);
    auto r2 = std::from_chars(item.data() + colon + 1, item.data() + item.size(), w.world);
    if (r1.ec != std::errc() || r2.ec != std::errc() || w.world < 1) return {};
    if (!out.empty() && w.from_step <= out.back().from_step) return {};
    out.push_back(w);
    pos = end + 1;
  }
  return out;
}

std::vector<double> ReferenceState(uint64_t seed, int64_t elements,
                                   const std::vector<WorldSegment>& schedule, int64_t steps,
                                   Algorithm alg) {
  std::vector<double> state = InitialState(seed, elements);
  std::vector<double> sum(state.size());
  std::vector<std::vector<double>> g;
  size_t seg = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    while (seg + 1 < schedule.size() && schedule[seg + 1].from_step < step) ++seg;
    const int world = schedule[seg].world;
    g.resize(static_cast<size_t>(world), std::vector<double>(state.size()));
    for (int r = 0; r < world; ++r) Gradient(seed, r, step, &g[r]);
    ReduceInOrder(g, world, alg, &sum);
    ApplyUpdate(sum, world, &state);
  }
  return state;
}

}  // namespace trainsim::emulate

// emulate/checkpoint_store.cc — shard files with checksums, atomic manifests, verified restore.
#include "emulate/checkpoint_store.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "emulate/protocol.h"

namespace trainsim::emulate {
namespace {

Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::InvalidArgument("cannot write " + path + ": " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Writes `text` + `data` to `path` and fsyncs it.
Status WriteFileSynced(const std::string& path, const std::string& text, const char* data, size_t n,
                       bool die_halfway) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::InvalidArgument("cannot create " + path + ": " + std::strerror(errno));
  Status s = WriteAll(fd, text.data(), text.size(), path);
  if (s.ok() && die_halfway) {
    s = WriteAll(fd, data, n / 2, path);
    ::fsync(fd);  // the torn half reaches the disk, as a crash mid-write would leave it
    ::raise(SIGKILL);
  }
  if (s.ok()) s = WriteAll(fd, data, n, path);
  if (s.ok() && ::fsync(fd) != 0) {
    s = Status::InvalidArgument("cannot fsync " + path + ": " + std::strerror(errno));
  }
  ::close(fd);
  return s;
}

std::string ReadWhole(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Manifest> ReadManifest(const std::string& path) {
  bool ok = false;
  const std::string text = ReadWhole(path, &ok);
  if (!ok) return Status::NotFound("cannot read " + path);
  std::istringstream in(text);
  std::string magic;
  Manifest m;
  int n = 0;
  in >> magic >> m.step >> m.world >> m.elements >> n;
  if (!in || magic != "trainsim-manifest-v1" || n != m.world || n <= 0) {
    return Status::InvalidArgument(path + ": not a manifest");
  }
  for (int r = 0; r < n; ++r) {
    std::string hex;
    in >> hex;
    if (!in) return Status::InvalidArgument(path + ": truncated");
    m.checksums.push_back(std::stoull(hex, nullptr, 16));
  }
  std::string key;
  if (in >> key && key == "schedule") in >> m.schedule;
  return m;
}

}  // namespace

std::string ShardPath(const std::string& dir, int64_t step, int rank) {
  return dir + "/shard-" + std::to_string(step) + "-" + std::to_string(rank) + ".bin";
}
std::string ManifestPath(const std::string& dir, int64_t step) {
  return dir + "/manifest-" + std::to_string(step) + ".txt";
}

Result<uint64_t> WriteShard(const std::string& dir, int64_t step, int rank, int world,
                            const double* data, int64_t n, bool die_halfway) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  const uint64_t sum = Fnv1a64(data, bytes);
  const std::string header = "trainsim-shard v1 " + std::to_string(step) + " " +
                             std::to_string(rank) + " " + std::to_string(world) + " " +
                             std::to_string(n) + " " + Hex64(sum) + "\n";
  TRAINSIM_RETURN_IF_ERROR(WriteFileSynced(
      ShardPath(dir, step, rank), header, reinterpret_cast<const char*>(data), bytes, die_halfway));
  return sum;
}

Status ReadShard(const std::string& dir, int64_t step, int rank, int world, uint64_t checksum,
                 std::vector<double>* out) {
  const std::string path = ShardPath(dir, step, rank);
  bool ok = false;
  const std::string text = ReadWhole(path, &ok);
  if (!ok) return Status::NotFound("shard " + std::to_string(rank) + " missing");
  const size_t nl = text.find('\n');
  if (nl == std::string::npos) return Status::InvalidArgument("shard header torn");
  std::istringstream h(text.substr(0, nl));
  std::string magic, version, hex;
  int64_t s = 0, n = 0;
  int r = 0, w = 0;
  h >> magic >> version >> s >> r >> w >> n >> hex;
  if (!h || magic != "trainsim-shard" || s != step || r != rank || w != world || n < 0) {
    return Status::InvalidArgument("shard " + std::to_string(rank) + " header mismatch");
  }
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  if (text.size() - nl - 1 != bytes) {
    return Status::InvalidArgument("shard " + std::to_string(rank) + " torn (" +
                                   std::to_string(text.size() - nl - 1) + " of " +
                                   std::to_string(bytes) + " bytes)");
  }
  const uint64_t sum = Fnv1a64(text.data() + nl + 1, bytes);
  if (sum != checksum || Hex64(sum) != hex) {
    return Status::InvalidArgument("shard " + std::to_string(rank) + " checksum mismatch");
  }
  const size_t old = out->size();
  out->resize(old + static_cast<size_t>(n));
  std::memcpy(out->data() + old, text.data() + nl + 1, bytes);
  return Status::Ok();
}

Status CommitManifest(const std::string& dir, const Manifest& m) {
  std::string text = "trainsim-manifest-v1 " + std::to_string(m.step) + " " +
                     std::to_string(m.world) + " " + std::to_string(m.elements) + " " +
                     std::to_string(m.checksums.size()) + "\n";
  for (uint64_t c : m.checksums) text += Hex64(c) + "\n";
  if (!m.schedule.empty()) text += "schedule " + m.schedule + "\n";
  const std::string final_path = ManifestPath(dir, m.step);
  const std::string tmp = final_path + ".tmp";
  TRAINSIM_RETURN_IF_ERROR(WriteFileSynced(tmp, text, nullptr, 0, false));
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return Status::InvalidArgument("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  // The rename itself is durable once the directory is synced.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

namespace {
// The steps of DIR's committed manifests, newest first.
Result<std::vector<int64_t>> ManifestSteps(const std::string& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("manifest-", 0) == 0 && name.size() > 13 &&
        name.compare(name.size() - 4, 4, ".txt") == 0) {
      const std::string num = name.substr(9, name.size() - 13);
      if (!num.empty() && std::all_of(num.begin(), num.end(), ::isdigit)) {
        steps.push_back(std::stoll(num));
      }
    }
  }
  if (ec) return Status::InvalidArgument("cannot list " + dir + ": " + ec.message());
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}
}  // namespace

Status PruneManifests(const std::string& dir, int keep_last) {
  if (keep_last <= 0) return Status::Ok();
  Result<std::vector<int64_t>> steps = ManifestSteps(dir);
  if (!steps.ok()) return steps.status();
  for (size_t i = static_cast<size_t>(keep_last); i < steps->size(); ++i) {
    const int64_t step = (*steps)[i];
    Result<Manifest> m = ReadManifest(ManifestPath(dir, step));
    std::error_code ec;
    std::filesystem::remove(ManifestPath(dir, step), ec);  // the manifest first: never half
    for (int r = 0; m.ok() && r < m->world; ++r)
      std::filesystem::remove(ShardPath(dir, step, r), ec);
  }
  return Status::Ok();
}

std::vector<int64_t> SetAsideManifestsAfter(const std::string& dir, int64_t clean_step) {
  std::vector<int64_t> out;
  Result<std::vector<int64_t>> steps = ManifestSteps(dir);
  if (!steps.ok()) return out;
  for (int64_t step : *steps) {
    if (step <= clean_step) continue;
    const std::string to = dir + "/corrupt-manifest-" + std::to_string(step) + ".txt";
    if (std::rename(ManifestPath(dir, step).c_str(), to.c_str()) == 0) out.push_back(step);
  }
  return out;
}

Result<Restorable> FindRestorable(const std::string& dir, int world, int64_t elements,
                                  std::vector<double>* state) {
  Result<std::vector<int64_t>> listed = ManifestSteps(dir);
  if (!listed.ok()) return listed.status();
  const std::vector<int64_t>& steps = *listed;
  Restorable out;
  for (int64_t step : steps) {
    const std::string label = "manifest-" + std::to_string(step);
    Result<Manifest> m = ReadManifest(ManifestPath(dir, step));
    if (!m.ok()) {
      out.skipped.push_back(label + ": " + m.status().message());
      continue;
    }
    if ((world > 0 && m->world != world) || m->elements != elements) {
      out.skipped.push_back(label + ": written by " + std::to_string(m->world) + " ranks of " +
                            std::to_string(m->elements) + " elements");
      continue;
    }
    std::vector<double> full;
    Status bad;
    for (int r = 0; r < m->world && bad.ok(); ++r) {
      bad = ReadShard(dir, step, r, m->world, m->checksums[r], &full);
    }
    if (!bad.ok()) {
      out.skipped.push_back(label + ": " + bad.message());
      continue;
    }
    out.found = true;
    out.manifest = *m;
    if (state != nullptr) *state = std::move(full);
    return out;
  }
  return out;
}

}  // namespace trainsim::emulate

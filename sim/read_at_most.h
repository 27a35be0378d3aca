// ReadAtMost: the whole of a stream that should be small (a scenario, a calibration, a model
// config), reading at most one byte past `max_bytes`, so that a huge file, a sparse one or
// /dev/zero is refused after that much rather than exhausting memory or never returning. The
// caller words the errors (its file's kind and typical size). A file costs about its own size
// (the body grows by 64 KiB reads, its capacity by doubling): a buffer of max_bytes zeroed up
// front, 16 MiB for a scenario, cost every command ~50 ms of page faults.
#ifndef TRAINSIM_SIM_READ_AT_MOST_H_
#define TRAINSIM_SIM_READ_AT_MOST_H_

#include <cstddef>
#include <istream>
#include <string>

namespace trainsim {

struct BoundedRead {
  std::string body;
  bool failed = false;     // the stream reported an error
  bool too_large = false;  // more than max_bytes (body then holds max_bytes + 1 of them)
};

inline BoundedRead ReadAtMost(std::istream& in, size_t max_bytes) {
  constexpr size_t kChunk = size_t{64} << 10;
  BoundedRead r;
  while (r.body.size() <= max_bytes) {
    const size_t have = r.body.size();
    const size_t room = max_bytes - have;  // the last read asks for one byte past the limit
    const size_t want = room >= kChunk ? kChunk : room + 1;
    r.body.resize(have + want);
    in.read(r.body.data() + have, static_cast<std::streamsize>(want));
    const size_t got = static_cast<size_t>(in.gcount());
    r.body.resize(have + got);
    if (in.bad()) {
      r.failed = true;
      break;
    }
    if (got < want) break;  // the end of the stream
  }
  r.too_large = r.body.size() > max_bytes;
  return r;
}

}  // namespace trainsim

#endif  // TRAINSIM_SIM_READ_AT_MOST_H_

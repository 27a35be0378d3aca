// ReadAtMost: the whole of a stream that should be small (a scenario, a calibration, a model
// config), reading at most one byte past `max_bytes`, so that a huge file, a sparse one or
// /dev/zero is refused after that much rather than exhausting memory or never returning. The
// caller words the errors (its file's kind and typical size).
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
  BoundedRead r;
  r.body.assign(max_bytes + 1, '\0');
  in.read(r.body.data(), static_cast<std::streamsize>(r.body.size()));
  r.failed = in.bad();
  r.body.resize(static_cast<size_t>(in.gcount()));
  r.too_large = r.body.size() > max_bytes;
  return r;
}

}  // namespace trainsim

#endif  // TRAINSIM_SIM_READ_AT_MOST_H_

// sim::WriteFileAtomically and sim::AtomicFileWriter — write a file so that readers see either
// the old contents or the complete new contents, never a half-written file.
//
// How: the bytes go to a temporary file in the same directory ("<path>.tmp.<pid>.<n>", so the
// rename never crosses a file system), which is flushed and fsync'd, then renamed over `path`
// (rename(2) is atomic on POSIX), then the directory is fsync'd so the rename itself survives a
// crash. On any failure the temporary file is removed and a Status names the path, the step that
// failed and the errno text; `path` is left untouched.
//
// Invariants: after an OK return `path` holds exactly the bytes written; after a failed return,
// or an AtomicFileWriter destroyed without Commit(), `path` is unchanged and no temporary file
// remains. Two writers of one path each get their own temporary file; the last rename wins.
#ifndef TRAINSIM_SIM_ATOMIC_FILE_H_
#define TRAINSIM_SIM_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "sim/status.h"

namespace trainsim::sim {

// Replaces `path` with `contents` atomically. Errors: kNotFound when the directory does not
// exist, kInvalidArgument for other failures the user can fix (permissions, a directory at
// `path`, disk full), each message naming the path and errno text.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Streaming variant for outputs built incrementally (traces, CSV):
//   AtomicFileWriter w;
//   TRAINSIM_RETURN_IF_ERROR(w.Open(path));
//   w.Append(...); ...
//   TRAINSIM_RETURN_IF_ERROR(w.Commit());
// Append buffers and writes through; the first write error is remembered and returned by
// Commit(). Destroying the writer without a successful Commit() removes the temporary file.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Creates the temporary file next to `path`. REQUIRES: not already open.
  Status Open(const std::string& path);
  // Appends bytes. Errors are deferred to Commit(). No-op when not open.
  void Append(std::string_view data);
  // Flushes, fsyncs and renames the temporary file over the target. After Commit() (OK or not)
  // the writer is closed.
  Status Commit();
  // Removes the temporary file without touching the target. Safe to call at any time.
  void Abort();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  Status FlushBuffer();

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  std::string buffer_;
  Status error_;  // first deferred write error
};

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_ATOMIC_FILE_H_

// sim::WriteFileAtomically and sim::AtomicFileWriter — write an output file so that readers see
// either the old contents or the complete new contents, never a half-written file, while
// respecting what the target is.
//
// What the target is decides how it is written (ClassifyOutput):
//  - a regular file, or a name that does not exist yet: the bytes go to a temporary file in the
//    target's directory ("<target>.tmp.<pid>.<n>", so the rename never crosses a file system),
//    which is flushed and fsync'd, given the old file's permission bits, then renamed over the
//    target (rename(2) is atomic on POSIX), then the directory is fsync'd. A symbolic link is
//    followed to its final target, which is replaced; the link itself is left as it is.
//  - a character device or a FIFO (/dev/null, /dev/full, /dev/stdout, a named pipe) and the
//    standard-stream aliases (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/.../fd/N): opened and
//    written directly, never replaced; a write error (ENOSPC on /dev/full) is reported.
//  - refused with kInvalidArgument: an empty name, a directory, a block device or socket, a
//    read-only regular file (no write permission bit: it is not silently given a new mode).
//
// Temporary files and signals: InstallTempFileCleanup() (called once by main) makes SIGINT,
// SIGTERM, SIGHUP and SIGQUIT unlink every temporary file a writer holds before the process dies
// of the signal, and ignores SIGXFSZ so a write over the file-size limit fails with EFBIG and is
// reported instead of killing the process with the temporary file left behind.
//
// Invariants: after an OK return the target holds exactly the bytes written; after a failed
// return, or an AtomicFileWriter destroyed without Commit(), a replaced target is unchanged and
// no temporary file remains (a device or FIFO may have received part of the bytes: it cannot be
// rolled back). Two writers of one path each get their own temporary file; the last rename wins.
#ifndef TRAINSIM_SIM_ATOMIC_FILE_H_
#define TRAINSIM_SIM_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "sim/status.h"

namespace trainsim::sim {

// How an output path will be written.
struct OutputTarget {
  enum class Kind { kReplace, kDirect };
  Kind kind = Kind::kReplace;
  // kReplace: the file to replace (symbolic links followed); kDirect: the path as given.
  std::string path;
  bool exists = false;  // kReplace: a file is there now
  unsigned mode = 0;    // kReplace and exists: its permission bits, kept by the new file
};

// Decides how `path` is written without creating or changing anything. Errors (kInvalidArgument
// or kNotFound, naming the path and what would be valid): see the file comment; a missing
// directory is kNotFound.
Result<OutputTarget> ClassifyOutput(const std::string& path);

// Replaces or writes `path` with `contents` (see the file comment). Errors: kNotFound when the
// directory does not exist, kInvalidArgument for other failures the user can fix (permissions,
// a directory at `path`, disk full), each message naming the path and errno text.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Streaming variant for outputs built incrementally (traces, CSV):
//   AtomicFileWriter w;
//   TRAINSIM_RETURN_IF_ERROR(w.Open(path));   // before the long work: a bad path fails early
//   w.Append(...); ...
//   TRAINSIM_RETURN_IF_ERROR(w.Commit());
// Append buffers and writes through; the first write error is remembered and returned by
// Prepare()/Commit(). Destroying the writer without a successful Commit() removes the temporary
// file. Several files that must appear together: Prepare() each (all bytes on disk), then
// Publish() each (only renames remain, which fail only if the directory changes under us).
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Classifies `path` and creates the temporary file next to its target (or opens the device).
  // REQUIRES: not already open.
  Status Open(const std::string& path);
  // Appends bytes. Errors are deferred to Prepare()/Commit(). No-op when not open.
  void Append(std::string_view data);
  // Writes out the buffer, fsyncs and closes the temporary file (or the device); on failure the
  // temporary file is removed and the writer is closed. REQUIRES: open.
  Status Prepare();
  // Renames the prepared temporary file over the target. REQUIRES: Prepare() returned OK.
  Status Publish();
  // Prepare() then Publish(). After Commit() (OK or not) the writer is closed.
  Status Commit();
  // Removes the temporary file without touching the target. Safe to call at any time.
  void Abort();

  bool is_open() const { return fd_ >= 0 || prepared_; }
  // The path given to Open().
  const std::string& path() const { return path_; }

 private:
  Status FlushBuffer();
  void ForgetTemp();

  std::string path_;
  OutputTarget target_;
  std::string tmp_path_;
  int tmp_slot_ = -1;  // the signal-cleanup registry slot of tmp_path_, or -1
  int fd_ = -1;
  bool prepared_ = false;
  std::string buffer_;
  Status error_;  // first deferred write error
};

// Installs the signal handlers described in the file comment. Signals the process inherited as
// ignored (nohup, a background job) stay ignored. Idempotent; call before any writer opens.
void InstallTempFileCleanup();

}  // namespace trainsim::sim

#endif  // TRAINSIM_SIM_ATOMIC_FILE_H_

#include "sim/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace trainsim::sim {
namespace {

// Flush the buffer once it holds this much; big enough that write(2) calls are few.
constexpr size_t kBufferBytes = 1 << 20;

std::string ErrnoText(int err) { return std::strerror(err); }

Status IoError(const std::string& what, const std::string& path, int err) {
  std::string msg = "cannot " + what + " \"" + path + "\": " + ErrnoText(err);
  if (err == ENOENT) return Status::NotFound(std::move(msg));
  return Status::InvalidArgument(std::move(msg));
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A temporary name unique within this process (counter) and across processes (pid).
std::string TempPathFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// fsync of the directory makes the rename durable; some file systems refuse fsync on a
// directory (EINVAL), which is not an error for our purpose.
void SyncDirectory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter w;
  TRAINSIM_RETURN_IF_ERROR(w.Open(path));
  w.Append(contents);
  return w.Commit();
}

AtomicFileWriter::~AtomicFileWriter() { Abort(); }

Status AtomicFileWriter::Open(const std::string& path) {
  if (is_open())
    return Status::Internal("AtomicFileWriter::Open called twice for \"" + path + "\"");
  if (path.empty()) return Status::InvalidArgument("cannot write a file with an empty path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("cannot write \"" + path + "\": it is a directory");
  }
  path_ = path;
  tmp_path_ = TempPathFor(path);
  error_ = Status::Ok();
  buffer_.clear();
  // 0666 & ~umask, like any file the user's tools create.
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    tmp_path_.clear();
    // Report the target: the temporary name is our business, the directory is the user's.
    return IoError("create a file in the directory of", path, err);
  }
  return Status::Ok();
}

void AtomicFileWriter::Append(std::string_view data) {
  if (!is_open() || !error_.ok()) return;
  buffer_.append(data);
  if (buffer_.size() >= kBufferBytes) error_ = FlushBuffer();
}

Status AtomicFileWriter::FlushBuffer() {
  Status s = WriteAll(fd_, buffer_, path_);
  buffer_.clear();
  return s;
}

Status AtomicFileWriter::Commit() {
  if (!is_open()) return Status::Internal("AtomicFileWriter::Commit without a successful Open");
  Status s = error_;
  if (s.ok()) s = FlushBuffer();
  if (s.ok() && ::fsync(fd_) != 0) s = IoError("flush (fsync)", path_, errno);
  if (::close(fd_) != 0 && s.ok()) s = IoError("close", path_, errno);
  fd_ = -1;
  if (s.ok() && std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    s = IoError("rename a temporary file onto", path_, errno);
  }
  if (!s.ok()) {
    ::unlink(tmp_path_.c_str());
  } else {
    SyncDirectory(DirName(path_));
  }
  tmp_path_.clear();
  buffer_.clear();
  return s;
}

void AtomicFileWriter::Abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!tmp_path_.empty()) {
    ::unlink(tmp_path_.c_str());
    tmp_path_.clear();
  }
  buffer_.clear();
}

}  // namespace trainsim::sim

#include "sim/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace trainsim::sim {
namespace {

// Flush the buffer once it holds this much; big enough that write(2) calls are few.
constexpr size_t kBufferBytes = 1 << 20;
// Symbolic links followed before giving up: Linux's own limit (MAXSYMLINKS, path_resolution(7)).
constexpr int kMaxSymlinkHops = 40;

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

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Names that stand for one of this process's open streams: written where they point, never
// replaced (replacing /dev/stdout's target would move the file our own stdout writes to).
bool IsStreamAlias(const std::string& path) {
  return path == "/dev/stdout" || path == "/dev/stderr" || StartsWith(path, "/dev/fd/") ||
         StartsWith(path, "/proc/");
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

// The directory that will hold the temporary file must exist and take a new file.
Status CheckDirectory(const std::string& user_path, const std::string& target) {
  const std::string dir = DirName(target);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return IoError("create a file in the directory of", user_path, errno);
  }
  if (!S_ISDIR(st.st_mode)) return IoError("create a file in the directory of", user_path, ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return IoError("create a file in the directory of", user_path, errno);
  }
  return Status::Ok();
}

std::string OctalMode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

// --- the registry of live temporary files, read by the signal handler ---
// Fixed storage, atomics and unlink(2) only: everything the handler touches is
// async-signal-safe (signal-safety(7)). A writer that finds no free slot still works; only its
// cleanup on a signal is lost.
constexpr int kTempSlots = 32;           // far more outputs than any command holds at once
constexpr size_t kTempPathBytes = 4096;  // PATH_MAX on Linux
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a live temporary path
  char path[kTempPathBytes];
};
TempSlot g_temp_slots[kTempSlots];

int RegisterTemp(const std::string& path) {
  if (path.size() >= kTempPathBytes) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temp_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
      g_temp_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void UnregisterTemp(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(0, std::memory_order_release);
}

extern "C" void RemoveTempsAndReraise(int sig) {
  const int saved = errno;
  for (TempSlot& s : g_temp_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  }
  // Die of the same signal, so the parent (shell, mpirun) sees what happened.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // pending until the handler returns (the signal is blocked while it runs)
  errno = saved;
}

}  // namespace

Result<OutputTarget> ClassifyOutput(const std::string& path) {
  if (path.empty()) {
    return Status::InvalidArgument("an empty file name was given; name the file to write");
  }
  OutputTarget t;
  struct stat st;
  if (IsStreamAlias(path)) {
    if (::stat(path.c_str(), &st) != 0) return IoError("write", path, errno);
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("cannot write \"" + path + "\": it is a directory");
    }
    t.kind = OutputTarget::Kind::kDirect;
    t.path = path;
    return t;
  }
  // Follow symbolic links to the file they finally name: that file is replaced, not the link.
  std::string cur = path;
  bool found = false;
  for (int hop = 0;; ++hop) {
    if (hop > kMaxSymlinkHops) return IoError("write", path, ELOOP);
    if (::lstat(cur.c_str(), &st) != 0) {
      if (errno != ENOENT) return IoError("write", path, errno);
      break;  // a new file (possibly the target of a dangling link)
    }
    if (!S_ISLNK(st.st_mode)) {
      found = true;
      break;
    }
    std::string link(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1, '\0');
    const ssize_t n = ::readlink(cur.c_str(), link.data(), link.size());
    if (n < 0) return IoError("follow the link", path, errno);
    link.resize(static_cast<size_t>(n));
    cur = (!link.empty() && link[0] == '/') ? link : DirName(cur) + "/" + link;
  }
  if (found) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("cannot write \"" + path + "\": it is a directory");
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      t.kind = OutputTarget::Kind::kDirect;
      t.path = path;
      return t;
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(
          "cannot write \"" + path + "\": it is a " +
          (S_ISBLK(st.st_mode) ? "block device" : "socket") +
          "; outputs go to regular files, character devices (/dev/null) or FIFOs");
    }
    // No write bit, or not ours to write: refuse rather than replace it with a writable file.
    if ((st.st_mode & 0222u) == 0 || ::access(cur.c_str(), W_OK) != 0) {
      return Status::InvalidArgument("cannot write \"" + path + "\": it is read-only (mode " +
                                     OctalMode(st.st_mode) +
                                     "); make it writable or choose another file");
    }
    t.exists = true;
    t.mode = st.st_mode & 07777u;
  }
  TRAINSIM_RETURN_IF_ERROR(CheckDirectory(path, cur));
  t.kind = OutputTarget::Kind::kReplace;
  t.path = cur;
  return t;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter w;
  TRAINSIM_RETURN_IF_ERROR(w.Open(path));
  w.Append(contents);
  return w.Commit();
}

AtomicFileWriter::~AtomicFileWriter() { Abort(); }

Status AtomicFileWriter::Open(const std::string& path) {
  if (is_open()) {
    return Status::Internal("AtomicFileWriter::Open called twice for \"" + path + "\"");
  }
  Result<OutputTarget> target = ClassifyOutput(path);
  if (!target.ok()) return target.status();
  path_ = path;
  target_ = *target;
  error_ = Status::Ok();
  buffer_.clear();
  if (target_.kind == OutputTarget::Kind::kDirect) {
    // O_APPEND: /dev/stdout redirected to a file continues after what was printed already.
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) return IoError("open", path, errno);
    return Status::Ok();
  }
  tmp_path_ = TempPathFor(target_.path);
  // Registered before it exists, so no moment passes in which a signal would leave it behind.
  tmp_slot_ = RegisterTemp(tmp_path_);
  // 0666 & ~umask, like any file the user's tools create; an existing file's bits are kept.
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    ForgetTemp();
    // Report the target: the temporary name is our business, the directory is the user's.
    return IoError("create a file in the directory of", path, err);
  }
  if (target_.exists && ::fchmod(fd_, target_.mode) != 0) {
    const int err = errno;
    Abort();
    return IoError("keep the permissions of", path, err);
  }
  return Status::Ok();
}

void AtomicFileWriter::Append(std::string_view data) {
  if (fd_ < 0 || !error_.ok()) return;
  buffer_.append(data);
  // A device is written once, at Prepare(), after this process's own stdout is flushed, so
  // --csv /dev/stdout lands after what was printed before it.
  if (target_.kind == OutputTarget::Kind::kReplace && buffer_.size() >= kBufferBytes) {
    error_ = FlushBuffer();
  }
}

Status AtomicFileWriter::FlushBuffer() {
  Status s = WriteAll(fd_, buffer_, path_);
  buffer_.clear();
  return s;
}

void AtomicFileWriter::ForgetTemp() {
  UnregisterTemp(tmp_slot_);
  tmp_slot_ = -1;
  tmp_path_.clear();
}

Status AtomicFileWriter::Prepare() {
  if (fd_ < 0) return Status::Internal("AtomicFileWriter::Prepare without a successful Open");
  const bool direct = target_.kind == OutputTarget::Kind::kDirect;
  if (direct) std::fflush(stdout);
  Status s = error_;
  if (s.ok()) s = FlushBuffer();
  // Devices and FIFOs have nothing to make durable (fsync on them fails with EINVAL).
  if (s.ok() && !direct && ::fsync(fd_) != 0) s = IoError("flush (fsync)", path_, errno);
  if (::close(fd_) != 0 && s.ok()) s = IoError("close", path_, errno);
  fd_ = -1;
  buffer_.clear();
  if (!s.ok()) {
    if (!tmp_path_.empty()) ::unlink(tmp_path_.c_str());
    ForgetTemp();
    return s;
  }
  prepared_ = !direct;
  return s;
}

Status AtomicFileWriter::Publish() {
  if (target_.kind == OutputTarget::Kind::kDirect && fd_ < 0) return Status::Ok();
  if (!prepared_) return Status::Internal("AtomicFileWriter::Publish without Prepare");
  prepared_ = false;
  Status s;
  if (std::rename(tmp_path_.c_str(), target_.path.c_str()) != 0) {
    s = IoError("rename a temporary file onto", path_, errno);
    ::unlink(tmp_path_.c_str());
  } else {
    SyncDirectory(DirName(target_.path));
  }
  ForgetTemp();
  return s;
}

Status AtomicFileWriter::Commit() {
  Status s = Prepare();
  if (!s.ok()) return s;
  return Publish();
}

void AtomicFileWriter::Abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!tmp_path_.empty()) ::unlink(tmp_path_.c_str());
  ForgetTemp();
  prepared_ = false;
  buffer_.clear();
}

void InstallTempFileCleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  // Over the file-size limit the write then fails with EFBIG and is reported like a full disk.
  std::signal(SIGXFSZ, SIG_IGN);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = RemoveTempsAndReraise;
    sigfillset(&sa.sa_mask);  // no other handled signal interrupts the cleanup
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace trainsim::sim

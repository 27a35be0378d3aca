#include "sim/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::sim {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trainsim_atomic_file_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& name : Entries()) ::unlink((dir_ + "/" + name).c_str());
    ::chmod(dir_.c_str(), 0700);
    ::rmdir(dir_.c_str());
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    return names;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

TEST_F(AtomicFileTest, WritesExactBytesAndLeavesNoTemporary) {
  const std::string path = dir_ + "/out.json";
  const std::string contents("{\"a\":1}\n\0binary\xff", 16);
  ASSERT_TRUE(WriteFileAtomically(path, contents).ok());
  EXPECT_EQ(Read(path), contents);
  EXPECT_EQ(Entries(), (std::vector<std::string>{"out.json"}));
}

TEST_F(AtomicFileTest, ReplacesExistingFile) {
  const std::string path = dir_ + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents that are longer").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(Read(path), "new");
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  EXPECT_EQ(Read(path), "");
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(AtomicFileTest, MissingDirectoryIsNotFoundNamingPathAndErrno) {
  const std::string path = dir_ + "/no/such/dir/out.txt";
  Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOENT)), std::string::npos) << s.message();
}

TEST_F(AtomicFileTest, DirectoryAtPathIsRejectedAndLeftAlone) {
  const std::string path = dir_ + "/sub";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  Status s = WriteFileAtomically(path, "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(Entries(), (std::vector<std::string>{"sub"}));
  ::rmdir(path.c_str());
}

TEST_F(AtomicFileTest, UnwritableDirectoryFailsWithoutTouchingTarget) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const std::string path = dir_ + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "kept").ok());
  ASSERT_EQ(::chmod(dir_.c_str(), 0500), 0);
  Status s = WriteFileAtomically(path, "lost");
  ::chmod(dir_.c_str(), 0700);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(EACCES)), std::string::npos) << s.message();
  EXPECT_EQ(Read(path), "kept");
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(AtomicFileTest, FileInPlaceOfDirectoryFailsNamingPathAndErrno) {
  // Works even as root, unlike a permission test: a path component is a regular file.
  const std::string file = dir_ + "/plain";
  ASSERT_TRUE(WriteFileAtomically(file, "x").ok());
  const std::string path = file + "/out.txt";
  Status s = WriteFileAtomically(path, "y");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOTDIR)), std::string::npos) << s.message();
  EXPECT_EQ(Entries(), (std::vector<std::string>{"plain"}));
}

TEST_F(AtomicFileTest, WriteFailureMidwayKeepsOldFileAndRemovesTemporary) {
  // A file-size limit makes write(2) fail with EFBIG part-way through, like a full disk, and
  // works without root or a special file system. SIGXFSZ would kill us; ignore it meanwhile.
  const std::string path = dir_ + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  Status s = WriteFileAtomically(path, std::string(3 << 20, 'z'));
  std::signal(SIGXFSZ, old_handler);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(EFBIG)), std::string::npos) << s.message();
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(Entries(), (std::vector<std::string>{"out.txt"}));
}

TEST_F(AtomicFileTest, WriterStreamsLargeOutputAndCommits) {
  const std::string path = dir_ + "/big.txt";
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  std::string expected;
  const std::string line(1000, 'x');
  for (int i = 0; i < 3000; ++i) {  // ~3 MB: crosses the internal buffer several times
    w.Append(line);
    w.Append("\n");
    expected += line + "\n";
  }
  // Before Commit the target does not exist: readers never see a partial file.
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  ASSERT_TRUE(w.Commit().ok());
  EXPECT_FALSE(w.is_open());
  EXPECT_EQ(Read(path), expected);
  EXPECT_EQ(Entries().size(), 1u);
}

TEST_F(AtomicFileTest, WriterDestroyedWithoutCommitLeavesOldFileAndNoTemporary) {
  const std::string path = dir_ + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  {
    AtomicFileWriter w;
    ASSERT_TRUE(w.Open(path).ok());
    w.Append(std::string(2 << 20, 'y'));  // flushed to the temporary file already
    EXPECT_EQ(Entries().size(), 2u);
  }
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(Entries(), (std::vector<std::string>{"out.txt"}));
}

TEST_F(AtomicFileTest, CommitWithoutOpenIsAnError) {
  AtomicFileWriter w;
  EXPECT_FALSE(w.Commit().ok());
  EXPECT_FALSE(AtomicFileWriter().Open("").ok());
}

// --- what the target is (issue 21) ---

// The host's /dev/null must stay what it is: every device case below writes to it, and a
// regression that replaced it would turn it into a regular file for the whole machine.
void ExpectCharacterDevice(const char* path) {
  struct stat st;
  ASSERT_EQ(::stat(path, &st), 0) << path;
  ASSERT_TRUE(S_ISCHR(st.st_mode)) << path << " is no longer a character device";
}

TEST_F(AtomicFileTest, DevNullIsWrittenDirectlyAndStaysACharacterDevice) {
  ExpectCharacterDevice("/dev/null");
  struct stat before, after;
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  Status s = WriteFileAtomically("/dev/null", "discarded\n");
  EXPECT_TRUE(s.ok()) << s.message();
  ExpectCharacterDevice("/dev/null");
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "/dev/null was replaced";
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  Result<OutputTarget> t = ClassifyOutput("/dev/null");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind, OutputTarget::Kind::kDirect);
}

TEST_F(AtomicFileTest, DevFullReportsNoSpaceAndStaysADevice) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  ExpectCharacterDevice("/dev/full");
  Status s = WriteFileAtomically("/dev/full", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.message();
  ExpectCharacterDevice("/dev/full");
  ExpectCharacterDevice("/dev/null");
}

TEST_F(AtomicFileTest, FifoIsWrittenDirectlyAndStaysAFifo) {
  const std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[256];
    ssize_t n;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, size_t(n));
    if (fd >= 0) ::close(fd);
  });
  Status s = WriteFileAtomically(fifo, "through the pipe\n");
  reader.join();
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, "through the pipe\n");
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Entries(), (std::vector<std::string>{"pipe"}));
}

TEST_F(AtomicFileTest, SymlinkIsFollowedAndTheLinkKept) {
  const std::string target = dir_ + "/real.csv", link = dir_ + "/link.csv";
  ASSERT_TRUE(WriteFileAtomically(target, "old").ok());
  ASSERT_EQ(::symlink("real.csv", link.c_str()), 0);  // relative, as ln -s makes it
  ASSERT_TRUE(WriteFileAtomically(link, "new").ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced by a file";
  EXPECT_EQ(Read(target), "new");
  std::vector<std::string> entries = Entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"link.csv", "real.csv"}));
}

TEST_F(AtomicFileTest, ChainOfLinksAndADanglingLinkWriteTheFinalTarget) {
  const std::string a = dir_ + "/a", b = dir_ + "/b", c = dir_ + "/c";
  ASSERT_EQ(::symlink(b.c_str(), a.c_str()), 0);  // absolute
  ASSERT_EQ(::symlink("c", b.c_str()), 0);        // relative; c does not exist yet
  ASSERT_TRUE(WriteFileAtomically(a, "end").ok());
  EXPECT_EQ(Read(c), "end");
  struct stat st;
  ASSERT_EQ(::lstat(a.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat(b.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(AtomicFileTest, LinkLoopIsAnErrorNotAHang) {
  const std::string a = dir_ + "/a", b = dir_ + "/b";
  ASSERT_EQ(::symlink("b", a.c_str()), 0);
  ASSERT_EQ(::symlink("a", b.c_str()), 0);
  Status s = WriteFileAtomically(a, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(std::strerror(ELOOP)), std::string::npos) << s.message();
}

TEST_F(AtomicFileTest, ReplacedFileKeepsItsMode) {
  const std::string path = dir_ + "/out.csv";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Read(path), "new");
}

TEST_F(AtomicFileTest, ReadOnlyFileIsRefusedAndLeftAlone) {
  const std::string path = dir_ + "/out.csv";
  ASSERT_TRUE(WriteFileAtomically(path, "keep").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  Status s = WriteFileAtomically(path, "new");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("read-only"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0444"), std::string::npos) << s.message();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  EXPECT_EQ(Read(path), "keep");
  EXPECT_EQ(Entries(), (std::vector<std::string>{"out.csv"}));
}

TEST_F(AtomicFileTest, EmptyPathIsRefused) {
  Result<OutputTarget> t = ClassifyOutput("");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Status::Code::kInvalidArgument);
}

TEST_F(AtomicFileTest, ClassifyingCreatesNothing) {
  ASSERT_TRUE(ClassifyOutput(dir_ + "/new.csv").ok());
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(ClassifyOutput(dir_ + "/no/such/dir/x.csv").status().code(), Status::Code::kNotFound);
}

// Two files that belong together (the step and run traces): the second fails while being
// written, so neither is published and the first keeps its old contents. Run in a child process
// because the file-size limit is process-wide.
TEST_F(AtomicFileTest, PreparedPairIsPublishedTogetherOrNotAtAll) {
  const std::string first = dir_ + "/step.json", second = dir_ + "/step.run.json";
  ASSERT_TRUE(WriteFileAtomically(first, "old step").ok());
  ASSERT_TRUE(WriteFileAtomically(second, "old run").ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &small);
    AtomicFileWriter a, b;
    if (!a.Open(first).ok() || !b.Open(second).ok()) ::_exit(10);
    a.Append("new step");                 // fits
    b.Append(std::string(2 << 20, 'r'));  // over the limit
    if (!a.Prepare().ok()) ::_exit(11);
    if (b.Prepare().ok()) ::_exit(12);
    ::_exit(0);  // neither published; the destructors do not run, Abort is what they would do
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Read(first), "old step");
  EXPECT_EQ(Read(second), "old run");
}

// A process killed in the write window (after Open, before Commit) leaves no temporary file:
// InstallTempFileCleanup's handler unlinks it, then the process dies of the same signal.
void ExpectSignalRemovesTemporary(const std::string& dir, int sig) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallTempFileCleanup();
    AtomicFileWriter w;
    if (!w.Open(dir + "/out.json").ok()) ::_exit(10);
    w.Append(std::string(2 << 20, 'x'));  // on disk in the temporary file
    ::raise(sig);
    ::_exit(11);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);
}

TEST_F(AtomicFileTest, SigtermAndSigintInTheWriteWindowRemoveTheTemporaryFile) {
  ExpectSignalRemovesTemporary(dir_, SIGTERM);
  EXPECT_TRUE(Entries().empty()) << "left after SIGTERM: " << Entries()[0];
  ExpectSignalRemovesTemporary(dir_, SIGINT);
  EXPECT_TRUE(Entries().empty()) << "left after SIGINT: " << Entries()[0];
}

TEST_F(AtomicFileTest, OverTheFileSizeLimitTheWriteFailsInsteadOfKillingTheProcess) {
  const std::string path = dir_ + "/big.json";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_DFL);  // as a shell leaves it
    InstallTempFileCleanup();
    struct rlimit small {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &small);
    Status s = WriteFileAtomically(path, std::string(2 << 20, 'x'));
    const bool efbig = s.message().find(std::strerror(EFBIG)) != std::string::npos;
    ::_exit(s.ok() ? 10 : efbig ? 0 : 11);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Entries().empty()) << "left: " << Entries()[0];
}

}  // namespace
}  // namespace trainsim::sim

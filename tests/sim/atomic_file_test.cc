#include "sim/atomic_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
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

}  // namespace
}  // namespace trainsim::sim

// OutputFile and the output-path checks (core/io/output_file.h): links are
// followed, anything but a regular file is refused before a byte is written,
// and a write that fails or is killed leaves the old target and no temporary.
#include "core/io/output_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_plain(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

Status write_through(const std::string& path, const std::string& text) {
  ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path, "test file"));
  RETURN_IF_ERROR(file.write(text));
  return file.commit();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tessera-output-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  // Every name in the directory but `keep`: a temporary left behind shows here.
  std::vector<std::string> leftovers(const std::vector<std::string>& keep) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) names.push_back(name);
    }
    return names;
  }
  fs::path dir_;
};

TEST_F(OutputFileTest, WritesANewFile) {
  const fs::path target = dir_ / "new.bin";
  ASSERT_TRUE(write_through(target.string(), "hello").ok());
  EXPECT_EQ(read_all(target), "hello");
  EXPECT_THAT(leftovers({"new.bin"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, ReplacesAFileAndKeepsItsPermissions) {
  const fs::path target = dir_ / "old.bin";
  write_plain(target, "old contents");
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  ASSERT_TRUE(write_through(target.string(), "new").ok());
  EXPECT_EQ(read_all(target), "new");
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(OutputFileTest, FollowsASymlinkChainToItsTarget) {
  const fs::path real = dir_ / "real.bin";
  write_plain(real, "before");
  fs::create_directory(dir_ / "sub");
  fs::create_symlink("../real.bin", dir_ / "sub" / "relative-link");
  fs::create_symlink(dir_ / "sub" / "relative-link", dir_ / "link");
  auto resolved = resolve_output_path((dir_ / "link").string(), "test file");
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ(fs::canonical(*resolved), fs::canonical(real));

  ASSERT_TRUE(write_through((dir_ / "link").string(), "after").ok());
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "sub" / "relative-link"));
  EXPECT_EQ(read_all(real), "after");
  EXPECT_THAT(leftovers({"real.bin", "sub", "link"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, RefusesADanglingSymlink) {
  fs::create_symlink(dir_ / "missing.bin", dir_ / "dangling");
  const Status status = write_through((dir_ / "dangling").string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("dangling symbolic link"));
  EXPECT_THAT(status.message(), HasSubstr("missing.bin"));
  EXPECT_FALSE(fs::exists(dir_ / "missing.bin"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling"));
}

TEST_F(OutputFileTest, RefusesASymlinkLoop) {
  fs::create_symlink(dir_ / "b", dir_ / "a");
  fs::create_symlink(dir_ / "a", dir_ / "b");
  const Status status = write_through((dir_ / "a").string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("symbolic links loop"));
  EXPECT_THAT(leftovers({"a", "b"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, RefusesAFifoWithoutTouchingIt) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const Status status = write_through(fifo.string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is a FIFO (named pipe), not a regular file"));
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_THAT(leftovers({"pipe"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, RefusesASymlinkToAFifo) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
  fs::create_symlink(dir_ / "pipe", dir_ / "link");
  const Status status = write_through((dir_ / "link").string(), "x");
  EXPECT_THAT(status.message(), HasSubstr("(through links, '"));
  EXPECT_THAT(status.message(), HasSubstr("a FIFO"));
  EXPECT_TRUE(fs::is_fifo(dir_ / "pipe"));
}

TEST_F(OutputFileTest, RefusesACharacterDevice) {
  // /dev/null's numbers, made here so nothing outside the test is at stake.
  const fs::path device = dir_ / "null";
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod is not permitted here (" << std::strerror(errno)
                 << "); the CLI test covers /dev paths that exist";
  const Status status = write_through(device.string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is a character device, not a regular file"));
  struct stat st {};
  ASSERT_EQ(::lstat(device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFileTest, RefusesADirectory) {
  fs::create_directory(dir_ / "sub");
  const Status status = write_through((dir_ / "sub").string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is a directory, not a regular file"));
  EXPECT_TRUE(fs::is_directory(dir_ / "sub"));
}

TEST_F(OutputFileTest, NamesAMissingDirectory) {
  const Status status = write_through((dir_ / "no" / "such" / "file").string(), "x");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("does not exist"));
}

TEST_F(OutputFileTest, AWriteBeyondTheFileSizeLimitLeavesTheOldFile) {
  const fs::path target = dir_ / "model.gguf";
  write_plain(target, "the old model");
  // Created first: it makes SIGXFSZ ignored, so the write fails with EFBIG.
  auto file = OutputFile::create(target.string(), "GGUF file");
  ASSERT_TRUE(file.ok());
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const Status status = file->write(std::string(64 * 1024, 'x'));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr(target.string()));
  EXPECT_THAT(status.message(), HasSubstr("File too large"));
  EXPECT_THAT(status.message(), HasSubstr("left as it was"));
  EXPECT_EQ(read_all(target), "the old model");
  EXPECT_THAT(leftovers({"model.gguf"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, AReadOnlyDirectoryIsNamed) {
  const fs::path target = dir_ / "ro" / "out.bin";
  fs::create_directory(dir_ / "ro");
  write_plain(target, "kept");
  ASSERT_EQ(::chmod((dir_ / "ro").c_str(), 0555), 0);
  // Root writes into a 0555 directory; the immutable attribute binds root too.
  bool immutable = false;
  if (::access((dir_ / "ro").c_str(), W_OK) == 0) {
    const int fd = ::open((dir_ / "ro").c_str(), O_RDONLY | O_DIRECTORY);
    int flags = 0;
    if (fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags |= FS_IMMUTABLE_FL;
      immutable = ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (fd >= 0) ::close(fd);
    if (!immutable)
      GTEST_SKIP() << "running as root on a file system without the immutable attribute: no "
                      "directory here is read-only to this process";
  }
  const Status status = write_through(target.string(), "new");
  if (immutable) {
    const int fd = ::open((dir_ / "ro").c_str(), O_RDONLY | O_DIRECTORY);
    int flags = 0;
    ASSERT_EQ(::ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
    flags &= ~FS_IMMUTABLE_FL;
    EXPECT_EQ(::ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
    ::close(fd);
  }
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(target.string()));
  EXPECT_THAT(status.message(), HasSubstr("creating a temporary file in"));
  EXPECT_EQ(read_all(target), "kept");
}

TEST_F(OutputFileTest, ASignalDuringTheWriteRemovesTheTemporary) {
  const fs::path target = dir_ / "model.gguf";
  write_plain(target, "the old model");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto file = OutputFile::create(target.string(), "GGUF file");
    if (!file.ok() || !file->write(std::string(1 << 20, 'x')).ok()) ::_exit(3);
    ::raise(SIGTERM);
    ::_exit(4);  // not reached: SIGTERM's default action ends the process
  }
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wait_status)) << "child exit code " << WEXITSTATUS(wait_status);
  EXPECT_EQ(WTERMSIG(wait_status), SIGTERM);
  EXPECT_EQ(read_all(target), "the old model");
  EXPECT_THAT(leftovers({"model.gguf"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesNothing) {
  const fs::path target = dir_ / "out.bin";
  write_plain(target, "old");
  {
    auto file = OutputFile::create(target.string(), "test file");
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->write("half").ok());
  }
  EXPECT_EQ(read_all(target), "old");
  EXPECT_THAT(leftovers({"out.bin"}), ::testing::IsEmpty());
}

TEST_F(OutputFileTest, OutputDirectoriesAreCreatedFollowedOrRefused) {
  auto made = prepare_output_directory((dir_ / "a" / "b").string(), "output directory");
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_TRUE(fs::is_directory(dir_ / "a" / "b"));

  fs::create_symlink(dir_ / "a", dir_ / "to-a");
  auto followed = prepare_output_directory((dir_ / "to-a").string(), "output directory");
  ASSERT_TRUE(followed.ok());
  EXPECT_EQ(fs::canonical(*followed), fs::canonical(dir_ / "a"));

  write_plain(dir_ / "file", "x");
  Status status = prepare_output_directory((dir_ / "file").string(), "output directory").status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is a regular file, not a directory"));

  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
  status = prepare_output_directory((dir_ / "pipe").string(), "output directory").status();
  EXPECT_THAT(status.message(), HasSubstr("a FIFO (named pipe), not a directory"));

  fs::create_symlink(dir_ / "gone", dir_ / "dangling");
  status = prepare_output_directory((dir_ / "dangling").string(), "output directory").status();
  EXPECT_THAT(status.message(), HasSubstr("dangling symbolic link"));
  EXPECT_FALSE(fs::exists(dir_ / "gone"));
}

}  // namespace
}  // namespace tessera

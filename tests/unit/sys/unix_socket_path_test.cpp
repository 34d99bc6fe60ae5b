// Unix socket paths: below the roots, never through a symlink, a live socket
// never replaced, bind and connect through /proc/self/fd.

#include "sys/unix_socket_path.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace xdpvhost::sys {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/xvhard-sys-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

UniqueFd plain_connect(const std::string& path) {
  sockaddr_un addr{};
  std::string error;
  if (!unix_socket_address(path, addr, error)) return {};
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

TEST(SocketDirectory, NormalPathsAndRoots) {
  EXPECT_EQ(check_normal_path("/run/x/a.sock"), "");
  EXPECT_NE(check_normal_path("run/a.sock"), "");
  EXPECT_NE(check_normal_path("/run/../a.sock"), "");
  EXPECT_NE(check_normal_path("/run//a.sock"), "");
  EXPECT_NE(check_normal_path("/run/./a.sock"), "");
  EXPECT_NE(check_normal_path("/run/"), "");
  EXPECT_TRUE(path_is_below("/a/b/c", "/a"));
  EXPECT_TRUE(path_is_below("/a/b/c", "/a/b"));
  EXPECT_FALSE(path_is_below("/a/bc", "/a/b"));
  EXPECT_FALSE(path_is_below("/a/b", "/a/b"));
  EXPECT_TRUE(path_is_below("/x", "/"));
  EXPECT_EQ(socket_root_of("/a/b/c", {}), "/");
  EXPECT_EQ(socket_root_of("/a/b/c", {"/a", "/a/b"}), "/a/b");
  EXPECT_EQ(socket_root_of("/z/c", {"/a"}), std::nullopt);
}

TEST(UnixSocketPath, ListensThroughTheDirectoryFdWithTheModeAndMakesDirectories) {
  TempDir dir;
  std::string error;
  UnixListenOptions options;
  options.mode = 0640;
  options.roots = {dir.path()};
  UnixListener l = listen_unix(dir / "a/b/s.sock", options, error);
  ASSERT_TRUE(l.valid()) << error;
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "a/b/s.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(plain_connect(dir / "a/b/s.sock").valid());
  remove_unix_socket(l);
  EXPECT_FALSE(fs::exists(dir / "a/b/s.sock"));
}

TEST(UnixSocketPath, RefusesALiveSocketAndLeavesItWorking) {
  TempDir dir;
  std::string error;
  UnixListener first = listen_unix(dir / "s.sock", {}, error);
  ASSERT_TRUE(first.valid()) << error;
  UnixListener second = listen_unix(dir / "s.sock", {}, error);
  EXPECT_FALSE(second.valid());
  EXPECT_NE(error.find("is in use: another process listens on it"), std::string::npos) << error;
  EXPECT_TRUE(plain_connect(dir / "s.sock").valid());
  // A stale socket (nobody listens) is replaced.
  first.fd.reset();
  UnixListener third = listen_unix(dir / "s.sock", {}, error);
  EXPECT_TRUE(third.valid()) << error;
}

// A bound socket of another type answers a stream connect with EPROTOTYPE:
// it is live, not stale, and is never unlinked (a mistyped port path onto
// udev's SEQPACKET or journald's DGRAM socket).
TEST(UnixSocketPath, RefusesALiveSocketOfAnotherType) {
  TempDir dir;
  for (const int type : {SOCK_SEQPACKET, SOCK_DGRAM}) {
    const std::string path = dir / ("other" + std::to_string(type) + ".sock");
    UniqueFd other(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    std::string error;
    ASSERT_TRUE(unix_socket_address(path, addr, error)) << error;
    ASSERT_EQ(::bind(other.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    if (type == SOCK_SEQPACKET) {
      ASSERT_EQ(::listen(other.get(), 4), 0);
    }
    struct stat before {};
    ASSERT_EQ(::lstat(path.c_str(), &before), 0);
    UnixListener l = listen_unix(path, {}, error);
    EXPECT_FALSE(l.valid()) << "type " << type;
    EXPECT_NE(error.find("is in use: another process listens on it"), std::string::npos) << error;
    struct stat after {};
    ASSERT_EQ(::lstat(path.c_str(), &after), 0) << "type " << type << ": unlinked";
    EXPECT_EQ(after.st_ino, before.st_ino) << "type " << type << ": replaced";
  }
}

// The socket is made under a temporary name and renamed into place once it
// listens (with its mode and group): nothing but the socket is left in the
// directory, after a success and after a refusal.
TEST(UnixSocketPath, LeavesNoTemporaryFileBehind) {
  TempDir dir;
  std::string error;
  UnixListenOptions options;
  options.mode = 0660;
  options.group = ::getgid();
  UnixListener l = listen_unix(dir / "s.sock", options, error);
  ASSERT_TRUE(l.valid()) << error;
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "s.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, ::getgid());
  EXPECT_FALSE(listen_unix(dir / "s.sock", options, error).valid());
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"s.sock"});
}

TEST(UnixSocketPath, RemovesOnlyTheFileItBound) {
  TempDir dir;
  std::string error;
  UnixListener l = listen_unix(dir / "s.sock", {}, error);
  ASSERT_TRUE(l.valid()) << error;
  // Someone replaced the file meanwhile: not ours to remove.
  fs::remove(dir / "s.sock");
  { std::ofstream(dir / "s.sock") << "x"; }
  remove_unix_socket(l);
  EXPECT_TRUE(fs::exists(dir / "s.sock"));
}

TEST(UnixSocketPath, NeverThroughASymlink) {
  TempDir dir;
  fs::create_directories(dir / "real");
  fs::create_directory_symlink(dir / "real", dir / "link");
  std::string error;
  UnixListenOptions options;
  options.roots = {dir.path()};
  UnixListener l = listen_unix(dir / "link/s.sock", options, error);
  EXPECT_FALSE(l.valid());
  EXPECT_NE(error.find(dir / "link is a symlink"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir / "real/s.sock"));
  // Without roots the whole path is checked.
  l = listen_unix(dir / "link/s.sock", {}, error);
  EXPECT_FALSE(l.valid());
  // Outside the roots.
  options.roots = {dir / "real"};
  l = listen_unix(dir / "s.sock", options, error);
  EXPECT_FALSE(l.valid());
  EXPECT_NE(error.find("is not below any of socket_dirs"), std::string::npos) << error;
  // A root may itself be reached through a symlink (/var/run): it is the administrator's.
  options.roots = {dir / "link"};
  l = listen_unix(dir / "link/s.sock", options, error);
  EXPECT_TRUE(l.valid()) << error;
}

TEST(UnixSocketPath, ConnectDoesNotFollowASymlinkedSocket) {
  TempDir dir;
  std::string error;
  UnixListener target = listen_unix(dir / "target.sock", {}, error);
  ASSERT_TRUE(target.valid()) << error;
  fs::create_symlink(dir / "target.sock", dir / "link.sock");
  UnixConnectResult r = connect_unix(dir / "link.sock", {});
  EXPECT_FALSE(r.fd.valid());
  EXPECT_TRUE(r.refused);
  EXPECT_NE(r.error.find("is a symlink"), std::string::npos) << r.error;
  // The real one connects, and the peer's credentials are ours.
  r = connect_unix(dir / "target.sock", {dir.path()});
  ASSERT_TRUE(r.fd.valid()) << r.error;
  auto cred = peer_credentials(r.fd.get());
  ASSERT_TRUE(cred);
  EXPECT_EQ(cred->pid, ::getpid());
  // Nothing there yet is not a refusal (client mode keeps trying).
  r = connect_unix(dir / "later/x.sock", {});
  EXPECT_FALSE(r.fd.valid());
  EXPECT_FALSE(r.refused) << r.error;
  { std::ofstream(dir / "file") << "x"; }
  r = connect_unix(dir / "file", {});
  EXPECT_TRUE(r.refused);
  EXPECT_NE(r.error.find("is not a socket"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace xdpvhost::sys

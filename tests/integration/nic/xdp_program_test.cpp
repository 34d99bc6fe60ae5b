// XdpProgram on a veth in a namespace: attach modes, what libxdp did (the
// dispatcher or a single program), detach, and recovery from a program left
// behind by a process killed with SIGKILL.
#include "nic/xdp_program.hpp"

#include <sched.h>
#include <signal.h>
#include <bpf/bpf.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>

#include "netns_fixture.hpp"
#include "xdp_steer_abi.h"

namespace xdpvhost::xsk::test {
namespace {

// This process's open fds by what they are: "anon_inode:bpf-prog",
// "anon_inode:bpf-map", "socket", ... (the target of /proc/self/fd/N, with
// the inode numbers of sockets and pipes left out), but for the one that
// reads the directory.
std::map<std::string, int> fds_by_kind() {
  std::map<std::string, int> kinds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return kinds;
  const std::string own = std::to_string(::dirfd(dir));
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.' || e->d_name == own) continue;
    char target[256] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string kind(target, static_cast<std::size_t>(n));
    if (const auto colon = kind.find(":["); colon != std::string::npos) kind.resize(colon);
    ++kinds[kind];
  }
  ::closedir(dir);
  return kinds;
}

// Whether the program of this id is freed within 2 s: once nothing holds it,
// the kernel frees it after an RCU grace period.
bool freed_soon(std::uint32_t id) {
  for (int wait = 0; wait < 200; ++wait) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) return true;
    ::close(fd);
    ::usleep(10'000);
  }
  return false;
}

class XdpProgramTest : public NetnsPair {
 protected:
  std::vector<AttachedXdpProgram> attached() {
    std::vector<AttachedXdpProgram> list;
    EXPECT_EQ(XdpProgram::list_attached(kIfA, list), 0);
    return list;
  }

  // Forks a child that attaches the program and is then killed with
  // SIGKILL, leaving the program on the interface.
  void leave_program_of_killed_process() {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(ready[0]);
      std::string error;
      auto prog = XdpProgram::attach(kIfA, {}, error);
      const char status = prog ? 'y' : 'n';
      (void)::write(ready[1], &status, 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char status = 0;
    ASSERT_EQ(::read(ready[0], &status, 1), 1);
    ::close(ready[0]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ASSERT_EQ(status, 'y') << "child could not attach";
  }
};

TEST_F(XdpProgramTest, AttachesAndReportsWhatLibxdpDid) {
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  // veth has native XDP.
  EXPECT_EQ(prog->mode(), XdpMode::kNative) << prog->attach_report();
  EXPECT_NE(prog->program_id(), 0u);
  const auto list = attached();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, XDP_STEER_PROG_NAME);
  EXPECT_EQ(list[0].id, prog->program_id());
  EXPECT_EQ(list[0].via_dispatcher, prog->via_dispatcher());
  if (!prog->via_dispatcher()) {
    // libxdp fell back; the report must say so and why.
    EXPECT_NE(prog->attach_report().find("single program (dispatcher: "), std::string::npos)
        << prog->attach_report();
  }
  std::printf("attach report: %s\n", prog->attach_report().c_str());
  EXPECT_TRUE(prog->still_attached());
  ASSERT_EQ(prog->detach(), 0);
  EXPECT_FALSE(prog->still_attached());
}

// The uplink asks every 5 s whether its program is still attached: months
// of that hold no fd (it leaked one bpf-prog fd per check).
TEST_F(XdpProgramTest, CheckingTheAttachmentThousandsOfTimesHoldsNoFd) {
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  const auto before = fds_by_kind();
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(prog->still_attached()) << i;
    ASSERT_EQ(attached().size(), 1u) << i;
  }
  EXPECT_EQ(fds_by_kind(), before);
  ASSERT_EQ(prog->detach(), 0);
  const auto detached = fds_by_kind();
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(prog->still_attached()) << i;
  EXPECT_EQ(fds_by_kind(), detached);
}

TEST_F(XdpProgramTest, DestructorDetaches) {
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  ASSERT_EQ(attached().size(), 1u);
  prog.reset();
  EXPECT_TRUE(attached().empty());
}

TEST_F(XdpProgramTest, SkbModeWhenAsked) {
  XdpProgramOptions options;
  options.mode = XdpModeRequest::kSkb;
  std::string error;
  auto prog = XdpProgram::attach(kIfA, options, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_EQ(prog->mode(), XdpMode::kSkb);
  std::string out;
  run_in_a(std::string("ip link show ") + kIfA, &out);
  EXPECT_NE(out.find("xdpgeneric"), std::string::npos) << out;
}

TEST_F(XdpProgramTest, MissingObjectIsAnError) {
  XdpProgramOptions options;
  options.object_path = "/nonexistent/xdp_steer.bpf.o";
  std::string error;
  EXPECT_FALSE(XdpProgram::attach(kIfA, options, error));
  EXPECT_NE(error.find("/nonexistent/xdp_steer.bpf.o"), std::string::npos) << error;
  EXPECT_TRUE(attached().empty());
}

// `ip netns exec` hides the host's bpffs; libxdp's dispatcher needs one.
// Mounting it privately must work too (libxdp then tries the dispatcher and,
// where it cannot load, falls back).
TEST_F(XdpProgramTest, AttachesWithBpffsMountedInAPrivateMountNamespace) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(out[0]);
    std::string text;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("bpf", "/sys/fs/bpf", "bpf", 0, nullptr) != 0) {
      text = std::string("E mount: ") + std::strerror(errno);
    } else {
      std::string error;
      auto prog = XdpProgram::attach(kIfA, {}, error);
      text = prog ? std::string(prog->via_dispatcher() ? "D " : "S ") + prog->attach_report()
                  : "E " + error;
      // The periodic check holds no fd through the dispatcher either.
      const auto before = fds_by_kind();
      for (int i = 0; prog && i < 1000; ++i)
        if (!prog->still_attached()) {
          text = "E not attached at check " + std::to_string(i);
          break;
        }
      if (prog && fds_by_kind() != before) text = "E the checks left fds open: " + text;
    }
    (void)::write(out[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(out[1]);
  char buf[1024];
  const ssize_t n = ::read(out[0], buf, sizeof buf);
  ::close(out[0]);
  ::waitpid(pid, nullptr, 0);
  ASSERT_GT(n, 0);
  const std::string text(buf, static_cast<std::size_t>(n));
  ASSERT_NE(text[0], 'E') << text;
  if (text[0] == 'S') {
    EXPECT_NE(text.find("(dispatcher: "), std::string::npos) << text;
  }
  std::printf("with bpffs: %s\n", text.c_str());
  EXPECT_TRUE(attached().empty());  // the child's program was detached on exit
}

TEST_F(XdpProgramTest, ProgramOfAKilledProcessBlocksUntilRemoved) {
  leave_program_of_killed_process();
  auto list = attached();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, XDP_STEER_PROG_NAME);

  XdpProgramOptions no_cleanup;
  no_cleanup.remove_stale = false;
  std::string error;
  EXPECT_FALSE(XdpProgram::attach(kIfA, no_cleanup, error));
  EXPECT_NE(error.find("another XDP program is attached"), std::string::npos) << error;

  std::string report;
  EXPECT_EQ(XdpProgram::remove_stale(kIfA, &report), 1) << report;
  EXPECT_NE(report.find("removed stale"), std::string::npos) << report;
  EXPECT_TRUE(attached().empty());
  EXPECT_EQ(XdpProgram::remove_stale(kIfA, &report), 0);

  auto prog = XdpProgram::attach(kIfA, no_cleanup, error);
  EXPECT_TRUE(prog) << error;
}

TEST_F(XdpProgramTest, AttachRemovesAStaleProgramByItself) {
  leave_program_of_killed_process();
  const std::uint32_t stale_id = attached().at(0).id;
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  EXPECT_NE(prog->program_id(), stale_id);
  EXPECT_NE(prog->attach_report().find("removed stale"), std::string::npos)
      << prog->attach_report();
  const auto list = attached();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id, prog->program_id());
}

// A daemon restarted after a crash removes the program its predecessor left
// and keeps nothing of it: no fd, so the kernel frees the program and its
// maps (libxdp's reading of the interface kept one bpf-prog fd, and with it
// the old program and its five maps, for the new daemon's whole life).
// An uplink added and removed over the control socket attaches and detaches
// its program each time: the detached program is freed, and nothing of it
// stays open (libxdp's detach read the interface back and left one bpf-prog
// fd per call, holding the program and its maps loaded: found by the soak).
TEST_F(XdpProgramTest, AttachingAndDetachingHundredsOfTimesHoldsNothing) {
  const auto before = fds_by_kind();
  for (int i = 0; i < 200; ++i) {
    std::string error;
    auto prog = XdpProgram::attach(kIfA, {}, error);
    ASSERT_TRUE(prog) << i << ": " << error;
    const std::uint32_t id = prog->program_id();
    if (i % 2 == 0) {
      ASSERT_EQ(prog->detach(), 0) << i;  // then the destructor, which detaches nothing
    }
    prog.reset();
    ASSERT_TRUE(attached().empty()) << i;
    ASSERT_TRUE(freed_soon(id)) << i << ": detached program " << id << " is still loaded";
  }
  EXPECT_EQ(fds_by_kind(), before);
}

TEST_F(XdpProgramTest, RemovingStaleProgramsHoldsNothingOfThem) {
  const auto before = fds_by_kind();
  for (int i = 0; i < 100; ++i) {
    ASSERT_NO_FATAL_FAILURE(leave_program_of_killed_process());
    const std::uint32_t stale_id = attached().at(0).id;
    std::string report;
    ASSERT_EQ(XdpProgram::remove_stale(kIfA, &report), 1) << i << ": " << report;
    ASSERT_TRUE(attached().empty()) << i;
    ASSERT_TRUE(freed_soon(stale_id)) << i << ": stale program " << stale_id << " is still loaded";
  }
  EXPECT_EQ(fds_by_kind(), before);
}

TEST_F(XdpProgramTest, ForeignProgramIsLeftInPlace) {
  std::string out;
  ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA +
                         " xdp obj /usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o sec xdp",
                     &out),
            0)
      << out;
  std::string report;
  EXPECT_EQ(XdpProgram::remove_stale(kIfA, &report), 0);
  EXPECT_NE(report.find("foreign XDP program 'xdpfilt_alw_all' left in place"), std::string::npos)
      << report;
  std::string error;
  EXPECT_FALSE(XdpProgram::attach(kIfA, {}, error));
  EXPECT_NE(error.find("another XDP program is attached"), std::string::npos) << error;
  const auto list = attached();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, "xdpfilt_alw_all");
}

TEST_F(XdpProgramTest, MapUpdates) {
  std::string error;
  auto prog = XdpProgram::attach(kIfA, {}, error);
  ASSERT_TRUE(prog) << error;
  const MacAddress guest = *net::MacAddress::parse("02:00:00:00:00:aa");
  EXPECT_EQ(prog->add_guest_mac(guest), 0);
  EXPECT_EQ(prog->add_guest_mac(guest), 0);  // idempotent
  EXPECT_EQ(prog->remove_guest_mac(guest), 0);
  EXPECT_EQ(prog->remove_guest_mac(guest), -ENOENT);
  EXPECT_EQ(prog->set_max_frame_len(1514), 0);
  EXPECT_EQ(prog->unregister_socket(0), 0);  // nothing registered: fine
  const sys::UniqueFd udp(::socket(AF_INET, SOCK_DGRAM, 0));
  EXPECT_NE(prog->register_socket(0, udp.get()), 0);  // not an AF_XDP socket
  XdpSteerStats stats;
  stats.redirected = 99;
  ASSERT_EQ(prog->read_stats(stats), 0);
  EXPECT_EQ(stats.redirected, 0u);
}

}  // namespace
}  // namespace xdpvhost::xsk::test

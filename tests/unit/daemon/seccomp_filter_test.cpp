// The daemon's seccomp allow-list (runtime/seccomp_filter): in a child
// process that installs it, allowed calls work and a forbidden one kills the
// process with SIGSYS after one log line naming the call.

#include "runtime/seccomp_filter.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace xdpvhost::daemon {
namespace {

struct Outcome {
  int status = 0;
  std::string stderr_text;
};

// Runs `body` in a child with the filter installed (and stderr captured).
template <class Body>
Outcome in_filtered_child(Body body) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    // A thread running before the filter goes on gets it too (TSYNC).
    std::thread early([] {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    });
    early.detach();
    if (!install_seccomp_filter().empty()) ::_exit(90);
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) ::_exit(91);
    body();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  Outcome out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) out.stderr_text.append(buf, n);
  ::close(pipe_fds[0]);
  ::waitpid(pid, &out.status, 0);
  return out;
}

TEST(SeccompFilter, AllowsWhatTheDaemonDoesAtRunTime) {
  auto out = in_filtered_child([] {
    // Threads, sockets, eventfd-like fds, files, memory.
    std::thread t([] {});
    t.join();
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) ::_exit(10);
    ::close(s);
    int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) ::_exit(11);
    char buf[64];
    if (::read(fd, buf, sizeof buf) <= 0) ::_exit(12);
    ::close(fd);
    void* p = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || ::madvise(p, 1 << 20, MADV_DONTNEED) != 0) ::_exit(13);
    ::munmap(p, 1 << 20);
  });
  EXPECT_TRUE(WIFEXITED(out.status)) << out.stderr_text;
  EXPECT_EQ(WEXITSTATUS(out.status), 0) << out.stderr_text;
}

TEST(SeccompFilter, AForbiddenCallKillsWithALogLine) {
  auto out = in_filtered_child([] {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::syscall(SYS_execve, "/bin/true", argv, nullptr);
    ::_exit(20);  // not reached
  });
  ASSERT_TRUE(WIFSIGNALED(out.status)) << out.status << " " << out.stderr_text;
  EXPECT_EQ(WTERMSIG(out.status), SIGSYS);
  EXPECT_NE(out.stderr_text.find("xdpvhostd: seccomp: forbidden system call " +
                                 std::to_string(SYS_execve) + " (execve): killed"),
            std::string::npos)
      << out.stderr_text;
}

TEST(SeccompFilter, ForbiddenInAnotherThreadToo) {
  auto out = in_filtered_child([] {
    std::thread t([] { ::syscall(SYS_ptrace, 0, 0, 0, 0); });
    t.join();
    ::_exit(21);
  });
  ASSERT_TRUE(WIFSIGNALED(out.status)) << out.status << " " << out.stderr_text;
  EXPECT_EQ(WTERMSIG(out.status), SIGSYS);
  EXPECT_NE(out.stderr_text.find("(ptrace): killed"), std::string::npos) << out.stderr_text;
}

TEST(SeccompFilter, NoProcessesOnlyThreads) {
  auto out = in_filtered_child([] {
    const pid_t child = ::fork();  // clone without CLONE_THREAD
    if (child == 0) ::_exit(0);
    ::_exit(22);
  });
  ASSERT_TRUE(WIFSIGNALED(out.status)) << out.status << " " << out.stderr_text;
  EXPECT_EQ(WTERMSIG(out.status), SIGSYS);
  EXPECT_NE(out.stderr_text.find("(clone): killed"), std::string::npos) << out.stderr_text;
}

TEST(SeccompFilter, TheListHasNoDangerousCalls) {
  const auto& names = seccomp_allowed_syscalls();
  for (const char* bad : {"execve",
                          "execveat",
                          "ptrace",
                          "mount",
                          "umount2",
                          "init_module",
                          "finit_module",
                          "unshare",
                          "setns",
                          "setuid",
                          "setresuid",
                          "kexec_load",
                          "reboot",
                          "keyctl",
                          "userfaultfd",
                          "io_uring_setup",
                          "fork",
                          "vfork",
                          "process_vm_writev",
                          "pivot_root",
                          "chroot",
                          "capset"})
    EXPECT_EQ(std::count(names.begin(), names.end(), bad), 0) << bad;
}

}  // namespace
}  // namespace xdpvhost::daemon

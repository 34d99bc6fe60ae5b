#include "runtime/seccomp_filter.hpp"

#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace xdpvhost::daemon {

namespace {

// Names for the SIGSYS line, resolved before the filter is loaded (the
// handler may only use async-signal-safe calls).
constexpr int kNamedSyscalls = 512;
std::array<std::array<char, 32>, kNamedSyscalls> g_names{};

void append(char* buf, std::size_t& len, std::size_t cap, const char* text) {
  while (*text != '\0' && len + 1 < cap) buf[len++] = *text++;
}

void append_number(char* buf, std::size_t& len, std::size_t cap, long n) {
  char digits[24];
  int i = 0;
  const bool negative = n < 0;
  unsigned long u = negative ? static_cast<unsigned long>(-n) : static_cast<unsigned long>(n);
  do {
    digits[i++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && i < 22);
  if (negative) digits[i++] = '-';
  while (i > 0 && len + 1 < cap) buf[len++] = digits[--i];
}

void on_sigsys(int, siginfo_t* info, void*) {
  char line[160];
  std::size_t len = 0;
  const int nr = info->si_syscall;
  append(line, len, sizeof line, "xdpvhostd: seccomp: forbidden system call ");
  append_number(line, len, sizeof line, nr);
  if (nr >= 0 && nr < kNamedSyscalls && g_names[nr][0] != '\0') {
    append(line, len, sizeof line, " (");
    append(line, len, sizeof line, g_names[nr].data());
    append(line, len, sizeof line, ")");
  }
  append(line, len, sizeof line, ": killed\n");
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line, len);
  // Die of SIGSYS: the default action, with the signal unblocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGSYS, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(SIGSYS);
  ::_exit(128 + SIGSYS);
}

struct CtxRelease {
  void operator()(scmp_filter_ctx ctx) const noexcept { seccomp_release(ctx); }
};

}  // namespace

const std::vector<std::string>& seccomp_allowed_syscalls() {
  static const std::vector<std::string> names = {
      // memory: malloc, guest memory regions, thread stacks
      "brk",
      "mmap",
      "munmap",
      "mremap",
      "mprotect",
      "madvise",
      "mlock",
      "mlock2",
      "munlock",
      "mincore",
      "msync",
      "membarrier",
      // files: config reload, state file, /proc, socket directories
      "read",
      "write",
      "readv",
      "writev",
      "pread64",
      "pwrite64",
      "preadv",
      "pwritev",
      "preadv2",
      "pwritev2",
      "lseek",
      "close",
      "close_range",
      "open",
      "openat",
      "openat2",
      "creat",
      "stat",
      "fstat",
      "lstat",
      "newfstatat",
      "statx",
      "fstatfs",
      "statfs",
      "access",
      "faccessat",
      "faccessat2",
      "readlink",
      "readlinkat",
      "getdents64",
      "unlink",
      "unlinkat",
      "rename",
      "renameat",
      "renameat2",
      "mkdir",
      "mkdirat",
      "rmdir",
      "fchmod",
      "fchmodat",
      "fchown",
      "fchownat",
      "fsync",
      // --follow-config watches its directory again once it is back
      "inotify_init1",
      "inotify_add_watch",
      "fdatasync",
      "fcntl",
      "dup",
      "dup2",
      "dup3",
      "pipe",
      "pipe2",
      "flock",
      "ftruncate",
      "getcwd",
      "umask",
      "ioctl",
      "memfd_create",
      "fadvise64",
      "sendfile",
      // sockets: unix (control, vhost-user, sd_notify), inet (metrics), netlink, AF_XDP, AF_PACKET
      "socket",
      "socketpair",
      "connect",
      "accept",
      "accept4",
      "bind",
      "listen",
      "getsockname",
      "getpeername",
      "setsockopt",
      "getsockopt",
      "sendto",
      "recvfrom",
      "sendmsg",
      "recvmsg",
      "sendmmsg",
      "recvmmsg",
      "shutdown",
      // waiting
      "epoll_create",
      "epoll_create1",
      "epoll_ctl",
      "epoll_wait",
      "epoll_pwait",
      "epoll_pwait2",
      "poll",
      "ppoll",
      "select",
      "pselect6",
      "eventfd",
      "eventfd2",
      "timerfd_create",
      "timerfd_settime",
      "timerfd_gettime",
      "signalfd",
      "signalfd4",
      // time
      "clock_gettime",
      "clock_getres",
      "gettimeofday",
      "time",
      "nanosleep",
      "clock_nanosleep",
      // threads
      "futex",
      "futex_waitv",
      "set_robust_list",
      "get_robust_list",
      "rseq",
      "set_tid_address",
      "sched_yield",
      "sched_getaffinity",
      "sched_setaffinity",
      "sched_getparam",
      "sched_getscheduler",
      "gettid",
      "getpid",
      "getppid",
      "tgkill",
      "tkill",
      "exit",
      "exit_group",
      "restart_syscall",
      // signals
      "rt_sigaction",
      "rt_sigprocmask",
      "rt_sigreturn",
      "rt_sigtimedwait",
      "rt_sigpending",
      "sigaltstack",
      // identity and limits
      "getuid",
      "geteuid",
      "getgid",
      "getegid",
      "getgroups",
      "getresuid",
      "getresgid",
      "capget",
      "prctl",
      "arch_prctl",
      "getrlimit",
      "setrlimit",
      "prlimit64",
      "getrusage",
      "sysinfo",
      "uname",
      "getrandom",
      "getpriority",
      // uplinks at run time
      "bpf",
  };
  return names;
}

std::string install_seccomp_filter() {
  for (int nr = 0; nr < kNamedSyscalls; ++nr) {
    std::unique_ptr<char, decltype(&std::free)> name(
        seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr), &std::free);
    if (name) std::strncpy(g_names[nr].data(), name.get(), g_names[nr].size() - 1);
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0)
    return std::string("cannot handle SIGSYS: ") + std::strerror(errno);

  std::unique_ptr<void, CtxRelease> ctx(seccomp_init(SCMP_ACT_TRAP));
  if (!ctx) return "seccomp_init failed";
  auto fail = [](const char* what, int rc) {
    return std::string("seccomp: ") + what + ": " + std::strerror(-rc);
  };
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1); rc != 0)
    return fail("TSYNC", rc);
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 1); rc != 0)
    return fail("no_new_privs", rc);
  for (const auto& name : seccomp_allowed_syscalls()) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0); rc != 0)
      return fail(name.c_str(), rc);
  }
  // Threads only; clone3 (whose flags a filter cannot read) says ENOSYS, and
  // glibc falls back to clone.
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
      rc != 0)
    return fail("clone", rc);
  if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc != 0)
    return fail("clone3", rc);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  if (int rc = seccomp_load(ctx.get()); rc != 0) return fail("load", rc);
  return "";
}

}  // namespace xdpvhost::daemon

#pragma once
// Runs a function in a forked child and returns what it wrote, so a test can
// change process-wide state (capabilities) without affecting the runner.

#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace xdpvhost::xsk::test {

// Removes `cap` from the calling process's effective and permitted sets.
inline bool drop_capability(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  data[cap / 32].effective &= ~(1u << (cap % 32));
  data[cap / 32].permitted &= ~(1u << (cap % 32));
  return ::syscall(SYS_capset, &header, data) == 0;
}

// fn runs in a child; its return value comes back as the result. An empty
// string with ok == false means the child crashed or could not report.
inline std::string run_in_child(const std::function<std::string()>& fn, bool* ok = nullptr) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = fn();
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string result;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) result.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (ok != nullptr) *ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

}  // namespace xdpvhost::xsk::test

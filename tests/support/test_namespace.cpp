#include "test_namespace.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <vector>

#include "shell_command.hpp"

namespace xdpvhost::test_support {

namespace {

bool pid_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// The pid in "<prefix><pid>-...", or 0 if `name` is not of that form.
pid_t owner_pid(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return 0;
  name.remove_prefix(prefix.size());
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || end == name.data() + name.size() || *end != '-') return 0;
  return pid;
}

}  // namespace

std::string namespace_name(std::string_view prefix, std::string_view role) {
  return std::string(prefix) + std::to_string(::getpid()) + "-" + std::string(role);
}

void remove_orphaned_namespaces(std::string_view prefix) {
  DIR* dir = ::opendir("/var/run/netns");
  if (dir == nullptr) return;
  std::vector<std::string> doomed;
  while (const dirent* e = ::readdir(dir)) {
    const pid_t pid = owner_pid(e->d_name, prefix);
    if (pid > 0 && !pid_alive(pid)) doomed.emplace_back(e->d_name);
  }
  ::closedir(dir);
  for (const std::string& ns : doomed) run_shell("ip netns del " + ns);
}

TestNamespace::~TestNamespace() {
  if (!created_) return;
  fd_.reset();
  run_shell("ip netns del " + name_);
}

bool TestNamespace::create(std::string& error) {
  run_shell("ip netns del " + name_);
  created_ = true;
  const std::string script = "set -e; ip netns add " + name_ + "; ip netns exec " + name_ +
                             " sysctl -qw net.ipv6.conf.all.disable_ipv6=1"
                             " net.ipv6.conf.default.disable_ipv6=1; ip -n " +
                             name_ + " link set lo up";
  if (run_shell(script, &error) != 0) return false;
  fd_.reset(::open(("/var/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd_) {
    error = "cannot open namespace " + name_;
    return false;
  }
  error.clear();
  return true;
}

int TestNamespace::exec(const std::string& command, std::string* output) const {
  return run_shell("ip netns exec " + name_ + " " + command, output);
}

NetnsScope::NetnsScope(int ns_fd) {
  original_.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  ok_ = original_ && ::setns(ns_fd, CLONE_NEWNET) == 0;
}

NetnsScope::~NetnsScope() {
  if (original_) (void)::setns(original_.get(), CLONE_NEWNET);
}

}  // namespace xdpvhost::test_support

#pragma once
// Network namespaces that tests create for themselves: named after the test
// process (<prefix><pid>-<role>) so that those a crashed run left behind can
// be recognised and removed, made quiet (IPv6 off: no DAD, MLD or router
// solicitations disturb exact counters) and deleted again afterwards.

#include <string>
#include <string_view>

#include "sys/unique_fd.hpp"

namespace xdpvhost::test_support {

// "<prefix><pid of this process>-<role>".
std::string namespace_name(std::string_view prefix, std::string_view role);

// Deletes the namespaces named <prefix><pid>-... whose process is gone.
void remove_orphaned_namespaces(std::string_view prefix);

// One namespace, created by create() and deleted when the object goes.
class TestNamespace {
 public:
  explicit TestNamespace(std::string name) : name_(std::move(name)) {}
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;

  // Removes a namespace of the same name first, then adds it with IPv6 off
  // and loopback up, and opens it. On failure `error` says why (what was
  // made is still deleted by the destructor).
  bool create(std::string& error);

  const std::string& name() const noexcept { return name_; }
  // /var/run/netns/<name>, open (for setns) once create() succeeded.
  int fd() const noexcept { return fd_.get(); }
  // "ip netns exec <name> " + command, through run_shell().
  int exec(const std::string& command, std::string* output = nullptr) const;

 private:
  std::string name_;
  sys::UniqueFd fd_;
  bool created_ = false;
};

// Moves the calling thread into a network namespace for its lifetime;
// sockets created meanwhile stay in that namespace.
class NetnsScope {
 public:
  explicit NetnsScope(int ns_fd);
  ~NetnsScope();
  NetnsScope(const NetnsScope&) = delete;
  NetnsScope& operator=(const NetnsScope&) = delete;
  bool ok() const noexcept { return ok_; }

 private:
  sys::UniqueFd original_;
  bool ok_ = false;
};

}  // namespace xdpvhost::test_support

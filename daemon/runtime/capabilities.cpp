#include "runtime/capabilities.hpp"

#include <sys/capability.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace xdpvhost::daemon {

namespace {

struct CapFree {
  void operator()(cap_t c) const noexcept { cap_free(c); }
};
using Caps = std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree>;

bool permitted(cap_value_t cap) {
  Caps caps(cap_get_proc());
  if (!caps) return false;
  cap_flag_value_t v = CAP_CLEAR;
  return cap_get_flag(caps.get(), cap, CAP_PERMITTED, &v) == 0 && v == CAP_SET;
}

cap_value_t value_of(const std::string& name) {
  cap_value_t v = -1;
  if (cap_from_name(name.c_str(), &v) != 0) return -1;
  return v;
}

}  // namespace

std::vector<std::string> capabilities_to_keep(const CapabilityNeeds& needs) {
  std::vector<std::string> wanted = {"cap_net_admin", "cap_net_raw", "cap_ipc_lock"};
  if (permitted(CAP_SYS_ADMIN)) {
    wanted.push_back("cap_sys_admin");
  } else {
    wanted.push_back("cap_bpf");
    wanted.push_back("cap_perfmon");
  }
  if (::geteuid() == 0) wanted.push_back("cap_dac_override");
  if (needs.control_group) wanted.push_back("cap_chown");
  if (needs.privileged_metrics) wanted.push_back("cap_net_bind_service");
  std::vector<std::string> keep;
  for (const auto& name : wanted) {
    const cap_value_t v = value_of(name);
    if (v >= 0 && permitted(v)) keep.push_back(name);
  }
  return keep;
}

std::string drop_capabilities(const std::vector<std::string>& keep) {
  std::vector<cap_value_t> values;
  for (const auto& name : keep)
    if (cap_value_t v = value_of(name); v >= 0) values.push_back(v);
  auto kept = [&](cap_value_t v) {
    for (auto k : values)
      if (k == v) return true;
    return false;
  };
  // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
  if (CAP_IS_SUPPORTED(CAP_SETPCAP) && permitted(CAP_SETPCAP)) {
    for (cap_value_t v = 0; v <= CAP_LAST_CAP; ++v)
      if (!kept(v) && CAP_IS_SUPPORTED(v) && cap_get_bound(v) == 1 && cap_drop_bound(v) != 0)
        return "cannot drop capability " + std::to_string(v) +
               " from the bounding set: " + std::strerror(errno);
  }
  if (cap_reset_ambient() != 0 && errno != EINVAL)
    return std::string("cannot clear the ambient capabilities: ") + std::strerror(errno);
  Caps caps(cap_init());
  if (!caps) return std::string("cap_init: ") + std::strerror(errno);
  if (!values.empty() && (cap_set_flag(caps.get(), CAP_EFFECTIVE, static_cast<int>(values.size()),
                                       values.data(), CAP_SET) != 0 ||
                          cap_set_flag(caps.get(), CAP_PERMITTED, static_cast<int>(values.size()),
                                       values.data(), CAP_SET) != 0))
    return std::string("cap_set_flag: ") + std::strerror(errno);
  if (cap_set_proc(caps.get()) != 0)
    return std::string("cannot drop capabilities: ") + std::strerror(errno);
  return "";
}

std::string effective_capabilities() {
  std::string out;
  Caps caps(cap_get_proc());
  if (!caps) return out;
  for (cap_value_t v = 0; v <= CAP_LAST_CAP; ++v) {
    cap_flag_value_t f = CAP_CLEAR;
    if (cap_get_flag(caps.get(), v, CAP_EFFECTIVE, &f) == 0 && f == CAP_SET) {
      char* name = cap_to_name(v);
      if (name == nullptr) continue;
      if (!out.empty()) out += ',';
      out += name;
      cap_free(name);
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace xdpvhost::daemon

#include "nic/kernel_version.hpp"

#include <sys/utsname.h>

#include <charconv>

namespace xdpvhost::nic {

std::string KernelVersion::to_string() const {
  if (!known()) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<KernelVersion> KernelVersion::parse(std::string_view release) noexcept {
  KernelVersion v;
  const char* p = release.data();
  const char* end = release.data() + release.size();
  auto r = std::from_chars(p, end, v.major);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '.' || v.major == 0) return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, v.minor);
  if (r.ec != std::errc{}) return std::nullopt;
  return v;
}

KernelVersion KernelVersion::running() noexcept {
  utsname u{};
  if (::uname(&u) != 0) return {};
  return parse(u.release).value_or(KernelVersion{});
}

}  // namespace xdpvhost::nic

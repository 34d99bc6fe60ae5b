#pragma once
// The running kernel's version, for the features that depend on it
// (multi-buffer AF_XDP: Linux 6.6).

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xdpvhost::nic {

struct KernelVersion {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;

  bool known() const noexcept { return major != 0; }
  // Spelled out rather than a defaulted <=>: clang-tidy 14's
  // modernize-use-nullptr misreads the defaulted three-way comparison.
  friend bool operator==(const KernelVersion& a, const KernelVersion& b) noexcept {
    return a.major == b.major && a.minor == b.minor;
  }
  friend bool operator<(const KernelVersion& a, const KernelVersion& b) noexcept {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
  friend bool operator>(const KernelVersion& a, const KernelVersion& b) noexcept { return b < a; }
  friend bool operator<=(const KernelVersion& a, const KernelVersion& b) noexcept {
    return !(b < a);
  }
  friend bool operator>=(const KernelVersion& a, const KernelVersion& b) noexcept {
    return !(a < b);
  }
  std::string to_string() const;  // "6.18"; "unknown"

  // "6.18.44-fc-v669" -> 6.18; nullopt if it does not start with N.M.
  static std::optional<KernelVersion> parse(std::string_view release) noexcept;
  // uname(2)'s release; {} (unknown) if it cannot be read or parsed.
  static KernelVersion running() noexcept;
};

// Multi-buffer AF_XDP (XDP_USE_SG, XDP_PKT_CONTD) arrived in Linux 6.6.
inline constexpr KernelVersion kMultiBufferKernel{6, 6};

}  // namespace xdpvhost::nic

#pragma once
// The metrics listener's "host:port" (config metrics.listen): an IPv4
// address or host name, or an IPv6 address in brackets ("[::1]:9477").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xdpvhost::daemon::metrics {

struct ListenAddress {
  std::string host;  // without brackets
  std::uint16_t port = 0;
};

// nullopt with `error` set if `text` is not host:port with a port 1-65535.
std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error);

}  // namespace xdpvhost::daemon::metrics

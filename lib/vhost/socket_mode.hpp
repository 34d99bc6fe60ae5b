#pragma once
// Which end of a vhost-user socket the backend is: server (it listens, the
// frontend connects) or client (the frontend listens, as KubeVirt runs QEMU;
// the backend connects and reconnects).

#include <cstdint>
#include <optional>
#include <string_view>

namespace xdpvhost::vhost {

enum class SocketMode : std::uint8_t { kServer, kClient };

// "server" / "client": the config file's and the control protocol's spelling.
constexpr const char* to_string(SocketMode mode) noexcept {
  return mode == SocketMode::kClient ? "client" : "server";
}
constexpr std::optional<SocketMode> parse_socket_mode(std::string_view text) noexcept {
  if (text == "server") return SocketMode::kServer;
  if (text == "client") return SocketMode::kClient;
  return std::nullopt;
}

}  // namespace xdpvhost::vhost

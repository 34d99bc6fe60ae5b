#pragma once
// Control-side owner of one guest port: the vhost-user socket and device
// state machine (control thread), and the GuestPort datapath they drive on
// the port's service thread. Implements the device's DeviceBackend by
// running each ring start/stop on that thread.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port.hpp"
#include "dataplane/mac_address.hpp"
#include "vhost/device.hpp"
#include "vhost/socket_endpoint.hpp"

namespace xdpvhost::dataplane {

struct GuestPortConfig {
  std::string name;
  std::string socket;
  vhost::SocketEndpoint::Mode mode = vhost::SocketEndpoint::Mode::kServer;
  MacAddress mac;
  std::uint32_t uplink = Port::kNoUplinkId;
  std::uint32_t queue_pairs = 1;
  std::uint32_t mtu = 1500;
  PortTunables tunables;
  std::optional<std::uint16_t> thread;  // default: least loaded
};

class GuestPortController final : private vhost::DeviceBackend {
 public:
  GuestPortController(Dataplane& dataplane, boost::asio::io_context& io, GuestPortConfig config);
  ~GuestPortController() override;
  GuestPortController(const GuestPortController&) = delete;
  GuestPortController& operator=(const GuestPortController&) = delete;

  // Attaches the port to its thread and opens the socket.
  bool start(std::string& error);

  const GuestPortConfig& config() const noexcept { return config_; }
  const GuestPort& port() const noexcept { return *port_; }
  const vhost::Device& device() const noexcept { return device_; }
  const vhost::SocketEndpoint& endpoint() const noexcept { return *endpoint_; }
  std::uint16_t thread() const noexcept { return thread_; }

  void set_tunables(const PortTunables& t);

 private:
  void start_queue(vhost::QueueStart start) override;
  std::uint16_t stop_queue(std::uint32_t vring) override;
  void set_mtu(std::uint32_t mtu) override;

  Dataplane& dataplane_;
  GuestPortConfig config_;
  std::uint16_t thread_;
  std::unique_ptr<GuestPort> port_;
  vhost::Device device_;
  std::unique_ptr<vhost::SocketEndpoint> endpoint_;
  bool attached_ = false;
};

}  // namespace xdpvhost::dataplane

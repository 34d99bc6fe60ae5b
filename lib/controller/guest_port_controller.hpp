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

#include "controller/port_config.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port.hpp"
#include "vhost/device.hpp"
#include "vhost/socket_endpoint.hpp"

namespace xdpvhost::controller {

using dataplane::Dataplane;
using dataplane::GuestPort;
using dataplane::PortTunables;

class GuestPortController final : private vhost::DeviceBackend {
 public:
  // `uplink_id` is the id of the uplink the config names (or
  // dataplane::Port::kNoUplinkId), `tunables` the global ones with the port's
  // overrides applied.
  GuestPortController(Dataplane& dataplane, boost::asio::io_context& io, PortConfig config,
                      std::uint32_t uplink_id, const PortTunables& tunables);
  ~GuestPortController() override;
  GuestPortController(const GuestPortController&) = delete;
  GuestPortController& operator=(const GuestPortController&) = delete;

  // Attaches the port to its thread and opens the socket.
  bool start(std::string& error);

  const PortConfig& config() const noexcept { return config_; }
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
  PortConfig config_;
  std::uint16_t thread_;
  std::unique_ptr<GuestPort> port_;
  vhost::Device device_;
  std::unique_ptr<vhost::SocketEndpoint> endpoint_;
  bool attached_ = false;
};

}  // namespace xdpvhost::controller

#pragma once
// The C++ test frontend (tests/frontend, QEMU + a Linux guest's virtio-net
// driver) as a minimal IPv4 host on a guest port: it answers ARP requests for
// its address and ICMP echo requests to it, and keeps every frame it received
// for the test to look at. Single-threaded: frames arrive only inside pump().

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontend/frame_builder.hpp"
#include "frontend/frontend.hpp"
#include "packet_view.hpp"

namespace xdpvhost::uplink_test {

class FrontendGuest {
 public:
  FrontendGuest(std::string socket_path, MacAddress mac, Ipv4Address ip,
                testing::Role role = testing::Role::kClient);

  // Server role: listen before the backend is started.
  void listen() { frontend_.listen(); }
  // Connects (client) or accepts (server), negotiates QEMU's way and posts
  // RX buffers.
  bool start(std::string& error, const testing::NegotiateOptions& options = {});
  // After the backend vanished: drop the connection, accept/connect again and
  // resume the rings where they were (QEMU reconnecting).
  bool reconnect(std::string& error);

  testing::Frontend& frontend() noexcept { return frontend_; }
  const MacAddress& mac() const noexcept { return mac_; }
  const Ipv4Address& ip() const noexcept { return ip_; }

  // Queues one frame, waiting up to `timeout` for TX room.
  bool send(std::span<const std::uint8_t> frame,
            const std::optional<virtio::NetHeader>& header = std::nullopt,
            std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Until every queued TX chain came back (or the timeout).
  bool wait_tx_done(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Receives (and answers ARP/ICMP) for up to `timeout`, returning early
  // once `done` holds; returns whether it held.
  bool pump(std::chrono::milliseconds timeout, const std::function<bool()>& done = nullptr);
  bool pump_until(const std::function<bool(const PacketView&)>& match, std::size_t count,
                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

  const std::vector<testing::ReceivedFrame>& received() const noexcept { return received_; }
  void clear_received() { received_.clear(); }
  std::size_t count(const std::function<bool(const PacketView&)>& match) const;

  void set_answer_arp(bool on) noexcept { answer_arp_ = on; }
  void set_answer_icmp(bool on) noexcept { answer_icmp_ = on; }
  std::uint64_t arp_replies_sent() const noexcept { return arp_replies_; }
  std::uint64_t echo_replies_sent() const noexcept { return echo_replies_; }

  // Frames from this guest.
  std::vector<std::uint8_t> udp_to(const MacAddress& dst_mac, const Ipv4Address& dst_ip,
                                   std::uint16_t src_port, std::uint16_t dst_port,
                                   std::vector<std::uint8_t> payload) const;
  std::vector<std::uint8_t> arp_request(const Ipv4Address& target) const;
  std::vector<std::uint8_t> echo_request(const MacAddress& dst_mac, const Ipv4Address& dst_ip,
                                         std::uint16_t id, std::uint16_t seq,
                                         std::vector<std::uint8_t> payload) const;

 private:
  void handle(const testing::ReceivedFrame& frame);
  // A frame spec (UdpFrameSpec, IcmpEchoSpec) addressed from this guest to
  // dst_mac / dst_ip.
  template <class Spec>
  Spec addressed_to(const MacAddress& dst_mac, const Ipv4Address& dst_ip) const;

  testing::Frontend frontend_;
  MacAddress mac_;
  Ipv4Address ip_;
  bool answer_arp_ = true;
  bool answer_icmp_ = true;
  std::uint64_t arp_replies_ = 0, echo_replies_ = 0;
  std::vector<testing::ReceivedFrame> received_;
};

}  // namespace xdpvhost::uplink_test

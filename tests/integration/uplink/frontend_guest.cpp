#include "frontend_guest.hpp"

#include <thread>

namespace xdpvhost::uplink_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kRxBuffers = 256;
constexpr std::uint32_t kRxBufferSize = 2048;

testing::FrontendOptions frontend_options(std::string path, testing::Role role) {
  testing::FrontendOptions o;
  o.socket_path = std::move(path);
  o.role = role;
  o.timeout = 15s;
  return o;
}

}  // namespace

FrontendGuest::FrontendGuest(std::string socket_path, MacAddress mac, Ipv4Address ip,
                             testing::Role role)
    : frontend_(frontend_options(std::move(socket_path), role)), mac_(mac), ip_(ip) {}

bool FrontendGuest::start(std::string& error, const testing::NegotiateOptions& options) {
  if (!frontend_.connect() || !frontend_.negotiate(options)) {
    error = frontend_.last_error();
    return false;
  }
  if (frontend_.post_rx_buffers(kRxBuffers, kRxBufferSize) == 0) {
    error = "no RX buffer could be posted: " + frontend_.net().last_error();
    return false;
  }
  return true;
}

bool FrontendGuest::reconnect(std::string& error) {
  frontend_.disconnect();
  if (!frontend_.connect() || !frontend_.negotiate(frontend_.options(), /*resume=*/true)) {
    error = frontend_.last_error();
    return false;
  }
  return true;
}

bool FrontendGuest::send(std::span<const std::uint8_t> frame,
                         const std::optional<virtio::NetHeader>& header,
                         std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (frontend_.send_frame(frame, header)) return true;
    if (Clock::now() >= deadline) return false;
    // The ring is full: the backend has not taken the earlier chains yet.
    frontend_.net().kick_tx();
    std::this_thread::sleep_for(200us);
    frontend_.reclaim_tx();
  }
}

template <class Spec>
Spec FrontendGuest::addressed_to(const MacAddress& dst_mac, const Ipv4Address& dst_ip) const {
  Spec s;
  s.dst_mac = dst_mac;
  s.src_mac = mac_;
  s.src_ip = ip_;
  s.dst_ip = dst_ip;
  return s;
}

bool FrontendGuest::wait_tx_done(std::chrono::milliseconds timeout) {
  return frontend_.net().wait_tx_complete(timeout);
}

void FrontendGuest::handle(const testing::ReceivedFrame& frame) {
  const PacketView v = PacketView::parse(frame.bytes);
  if (v.arp && v.arp_op == 1 && v.arp_target_ip == ip_ && answer_arp_) {
    testing::ArpSpec reply;
    reply.reply = true;
    reply.sender_mac = mac_;
    reply.sender_ip = ip_;
    reply.target_mac = v.arp_sender_mac;
    reply.target_ip = v.arp_sender_ip;
    reply.dst_mac = v.arp_sender_mac;
    if (send(testing::build_arp(reply))) ++arp_replies_;
  } else if (v.icmp && v.icmp_type == 8 && v.ip_dst == ip_ && v.dst == mac_ && answer_icmp_) {
    auto reply = addressed_to<testing::IcmpEchoSpec>(v.src, v.ip_src);
    reply.reply = true;
    reply.identifier = v.icmp_id;
    reply.sequence = v.icmp_seq;
    reply.payload.assign(v.payload.begin(), v.payload.end());
    if (send(testing::build_icmp_echo(reply))) ++echo_replies_;
  }
  received_.push_back(frame);
}

bool FrontendGuest::pump(std::chrono::milliseconds timeout, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done && done()) return true;
    if (Clock::now() >= deadline) return false;
    for (const auto& f : frontend_.receive_frames(5ms, 1)) handle(f);
    frontend_.reclaim_tx();
  }
}

bool FrontendGuest::pump_until(const std::function<bool(const PacketView&)>& match, std::size_t n,
                               std::chrono::milliseconds timeout) {
  return pump(timeout, [&] { return count(match) >= n; });
}

std::size_t FrontendGuest::count(const std::function<bool(const PacketView&)>& match) const {
  std::size_t n = 0;
  for (const auto& f : received_)
    if (match(PacketView::parse(f.bytes))) ++n;
  return n;
}

std::vector<std::uint8_t> FrontendGuest::udp_to(const MacAddress& dst_mac,
                                                const Ipv4Address& dst_ip, std::uint16_t src_port,
                                                std::uint16_t dst_port,
                                                std::vector<std::uint8_t> payload) const {
  auto s = addressed_to<testing::UdpFrameSpec>(dst_mac, dst_ip);
  s.src_port = src_port;
  s.dst_port = dst_port;
  s.payload = std::move(payload);
  return testing::build_udp(s);
}

std::vector<std::uint8_t> FrontendGuest::arp_request(const Ipv4Address& target) const {
  testing::ArpSpec s;
  s.sender_mac = mac_;
  s.sender_ip = ip_;
  s.target_ip = target;
  return testing::build_arp(s);
}

std::vector<std::uint8_t> FrontendGuest::echo_request(const MacAddress& dst_mac,
                                                      const Ipv4Address& dst_ip, std::uint16_t id,
                                                      std::uint16_t seq,
                                                      std::vector<std::uint8_t> payload) const {
  auto s = addressed_to<testing::IcmpEchoSpec>(dst_mac, dst_ip);
  s.identifier = id;
  s.sequence = seq;
  s.payload = std::move(payload);
  return testing::build_icmp_echo(s);
}

}  // namespace xdpvhost::uplink_test

#pragma once
// A virtio-net driver over two in-process split rings (one RX, one TX) for
// unit tests of the datapath: builds the QueueStart a vhost-user device would
// hand over, posts frames and buffers, reads back what the device wrote.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "vhost/device_backend.hpp"
#include "virtio/features.hpp"
#include "virtio/net_header.hpp"
#include "virtio/test_ring.hpp"

namespace xdpvhost::dataplane::test {

using virtio::Descriptor;
using virtio::NetHeader;

constexpr std::uint64_t default_features() {
  using virtio::bit;
  using virtio::Feature;
  return bit(Feature::kVersion1) | bit(Feature::kNetMrgRxbuf);
}

struct ReceivedFrame {
  NetHeader header{};
  std::vector<std::uint8_t> bytes;
  std::uint16_t buffers = 0;
};

class NetTestGuest {
 public:
  explicit NetTestGuest(std::uint64_t features = default_features(), std::uint32_t size = 256)
      : features(features),
        rx(size, virtio::has(features, virtio::Feature::kRingEventIdx)),
        tx(size, virtio::has(features, virtio::Feature::kRingEventIdx)),
        size_(size) {
    rx_kick = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    rx_call = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    tx_kick = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    tx_call = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    tx_err = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~NetTestGuest() {
    for (int fd : {rx_kick, rx_call, tx_kick, tx_call, tx_err}) ::close(fd);
  }

  std::uint32_t header_size() const {
    return static_cast<std::uint32_t>(virtio::net_header_size(features));
  }

  vhost::QueueStart start(std::uint32_t vring) {
    virtio::test::TestRing& r = (vring & 1) ? tx : rx;
    vhost::QueueStart s;
    s.vring = vring;
    s.ring = r.config();
    s.memory = r.memory;
    s.kick = sys::UniqueFd(::dup((vring & 1) ? tx_kick : rx_kick));
    s.call = sys::UniqueFd(::dup((vring & 1) ? tx_call : rx_call));
    if (vring & 1) s.err = sys::UniqueFd(::dup(tx_err));
    s.features = features;
    return s;
  }

  // Puts a frame on the TX ring, the header and frame split over `pieces`
  // descriptors (1: header and frame in one buffer).
  void send(const std::vector<std::uint8_t>& frame, NetHeader header = {}, int pieces = 1) {
    std::vector<std::uint8_t> all(header_size() + frame.size());
    std::memcpy(all.data(), &header, header_size());
    std::memcpy(all.data() + header_size(), frame.data(), frame.size());
    const std::uint16_t head = next_tx_;
    std::size_t off = 0;
    for (int i = 0; i < pieces; ++i) {
      const std::size_t len = i == pieces - 1 ? all.size() - off : all.size() / pieces;
      const auto gpa = tx.alloc(static_cast<std::uint32_t>(len));
      std::memcpy(tx.host(gpa), all.data() + off, len);
      const std::uint16_t idx = next_tx_++ % size_;
      tx.set_desc(idx, gpa, static_cast<std::uint32_t>(len),
                  i < pieces - 1 ? Descriptor::kFlagNext : 0,
                  static_cast<std::uint16_t>((idx + 1) % size_));
      off += len;
    }
    tx.publish(head % size_);
    kick(tx_kick);
  }

  // Posts `n` receive buffers of `len` bytes.
  void post_rx(int n, std::uint32_t len = 2048) {
    for (int i = 0; i < n; ++i) {
      const std::uint16_t idx = next_rx_++ % size_;
      rx_buffers_[idx] = rx.alloc(len);
      rx.set_desc(idx, rx_buffers_[idx], len, Descriptor::kFlagWrite);
      rx.publish(idx);
    }
  }

  // Posts one receive chain through an indirect table: `zeros` zero-length
  // writable descriptors, then one buffer of `len` bytes.
  void post_rx_spread(std::uint32_t zeros, std::uint32_t len) {
    const std::uint16_t idx = next_rx_++ % size_;
    const auto table = rx.alloc((zeros + 1) * 16);
    rx_buffers_[idx] = rx.alloc(len);
    auto* entries = reinterpret_cast<Descriptor*>(rx.host(table));
    for (std::uint32_t i = 0; i <= zeros; ++i) {
      entries[i].addr = i < zeros ? table : rx_buffers_[idx];
      entries[i].len = i < zeros ? 0 : len;
      entries[i].flags = static_cast<std::uint16_t>(Descriptor::kFlagWrite |
                                                    (i < zeros ? Descriptor::kFlagNext : 0));
      entries[i].next = static_cast<std::uint16_t>(i + 1);
    }
    rx.set_desc(idx, table, (zeros + 1) * 16, Descriptor::kFlagIndirect);
    rx.publish(idx);
  }

  // Gives the receive descriptor `idx`, already made available, a new buffer
  // of `len` bytes, as a driver breaking the rules would (the device owns it).
  void replace_rx_buffer(std::uint16_t idx, std::uint32_t len) {
    rx_buffers_[idx] = rx.alloc(len);
    rx.set_desc(idx, rx_buffers_[idx], len, Descriptor::kFlagWrite);
  }

  // Frames the device completed on the RX ring since the last call.
  std::vector<ReceivedFrame> received() {
    std::vector<ReceivedFrame> out;
    while (rx_used_ != rx.used_idx()) {
      ReceivedFrame f;
      auto e = rx.used(rx_used_++);
      std::vector<std::uint8_t> bytes(rx.host(rx_buffers_[e.id]),
                                      rx.host(rx_buffers_[e.id]) + e.len);
      std::memcpy(&f.header, bytes.data(), header_size());
      f.buffers = virtio::has(features, virtio::Feature::kNetMrgRxbuf) ? f.header.num_buffers : 1;
      f.bytes.assign(bytes.begin() + header_size(), bytes.end());
      for (int b = 1; b < f.buffers; ++b) {
        auto more = rx.used(rx_used_++);
        f.bytes.insert(f.bytes.end(), rx.host(rx_buffers_[more.id]),
                       rx.host(rx_buffers_[more.id]) + more.len);
      }
      out.push_back(std::move(f));
    }
    return out;
  }

  std::uint16_t tx_completed() { return tx.used_idx(); }

  static std::uint64_t read_eventfd(int fd) {
    std::uint64_t v = 0;
    return ::read(fd, &v, sizeof v) == sizeof v ? v : 0;
  }
  static void kick(int fd) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
  }

  std::uint64_t features;
  virtio::test::TestRing rx, tx;
  int rx_kick, rx_call, tx_kick, tx_call, tx_err;

 private:
  std::uint32_t size_;
  std::uint16_t next_tx_ = 0, next_rx_ = 0, rx_used_ = 0;
  std::uint64_t rx_buffers_[32768] = {};
};

// An Ethernet/IPv4/UDP frame with a correct checksum, or with only the
// pseudo-header sum in the checksum field (as a guest with NEEDS_CSUM sends).
std::vector<std::uint8_t> udp_frame(const std::uint8_t dst[6], const std::uint8_t src[6],
                                    std::size_t payload, bool partial_checksum = false);
// Verifies the UDP checksum of such a frame.
bool udp_checksum_ok(const std::vector<std::uint8_t>& frame);
// An Ethernet/IPv4/TCP frame (20-byte headers, DF, ports 40000 -> 5201) with
// `payload` patterned bytes and only the pseudo-header sum in the TCP
// checksum field, as a guest sends it with NEEDS_CSUM (and TSO).
std::vector<std::uint8_t> tcp_frame(const std::uint8_t dst[6], const std::uint8_t src[6],
                                    std::size_t payload, std::uint32_t seq = 1000,
                                    std::uint8_t flags = 0x18 /* ACK|PSH */);
// The virtio-net header of such a frame sent with TSO (IPv4, NEEDS_CSUM).
inline NetHeader tso4_header(std::uint16_t gso_size) {
  NetHeader h{};
  h.flags = NetHeader::kFlagNeedsCsum;
  h.gso_type = NetHeader::kGsoTcpv4;
  h.gso_size = gso_size;
  h.hdr_len = 14 + 20 + 20;
  h.csum_start = 14 + 20;
  h.csum_offset = 16;
  return h;
}
// IPv4 header checksum, IPv4 total length and TCP checksum all correct.
bool tcp_checksums_ok(const std::vector<std::uint8_t>& frame);
std::uint32_t tcp_seq(const std::vector<std::uint8_t>& frame);

}  // namespace xdpvhost::dataplane::test

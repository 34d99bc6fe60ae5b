#pragma once
// Test helper: the XDP program, a UMEM and an AF_XDP socket on one queue,
// wired together the way an uplink port will be, plus a simple receive loop.

#include <gtest/gtest.h>
#include <poll.h>

#include <memory>
#include <string>
#include <vector>

#include "xsk/umem.hpp"
#include "nic/xdp_program.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::xsk::test {

using namespace xdpvhost::nic;  // NOLINT(google-build-using-namespace)

struct XskPath {
  std::unique_ptr<XdpProgram> program;
  std::unique_ptr<Umem> umem;
  std::unique_ptr<XskSocket> socket;  // destroyed first
  std::string error;

  XskPath() = default;
  XskPath(const XskPath&) = delete;
  XskPath& operator=(const XskPath&) = delete;
  ~XskPath() { close(); }

  // Socket before UMEM before program.
  void close() {
    socket.reset();
    umem.reset();
    program.reset();
  }

  // Attaches the program, binds a socket on queue 0 (copy/zero-copy per
  // `mode`), registers it and fills the fill ring. False + error on failure.
  bool open(const std::string& ifname, XdpProgramOptions program_options = {},
            BindMode mode = BindMode::kAuto, UmemConfig umem_config = {},
            bool multi_buffer = false) {
    program = XdpProgram::attach(ifname, program_options, error);
    if (!program) return false;
    umem = Umem::create(umem_config, error);
    if (!umem) return false;
    XskSocketConfig config;
    config.ifname = ifname;
    config.queue_id = 0;
    config.bind_mode = mode;
    config.multi_buffer = multi_buffer;
    socket = XskSocket::create(*umem, config, error);
    if (!socket) return false;
    if (const int err = program->register_socket(0, socket->fd()); err != 0) {
      error = "register_socket: " + std::to_string(err);
      return false;
    }
    umem->refill(umem_config.fill_size);
    return true;
  }

  // Takes frames off the RX ring (copying them out and returning their
  // UMEM frames to the fill ring) until `count` arrived or about
  // `timeout_ms` passed without reaching it.
  std::vector<std::vector<std::uint8_t>> receive(std::size_t count, int timeout_ms) {
    std::vector<std::vector<std::uint8_t>> frames;
    int waited = 0;
    while (frames.size() < count && waited <= timeout_ms) {
      std::uint32_t idx = 0;
      const std::uint32_t n = socket->rx_peek(64, idx);
      for (std::uint32_t i = 0; i < n; ++i) {
        const xdp_desc& d = socket->rx_desc(idx + i);
        const std::uint8_t* p = umem->data(d.addr);
        frames.emplace_back(p, p + d.len);
        umem->frames().free(d.addr);
      }
      if (n != 0) {
        socket->rx_release(n);
        umem->refill(n);
        continue;
      }
      pollfd p{socket->fd(), POLLIN, 0};
      ::poll(&p, 1, 10);
      waited += 10;
    }
    return frames;
  }

  // One received packet: its bytes and the descriptors it came in.
  struct Packet {
    std::vector<std::uint8_t> bytes;
    std::vector<xdp_desc> descs;
  };

  // Like receive(), through rx_peek_packets(): whole packets only, each
  // reassembled from its descriptors, `peek` descriptors asked per call.
  std::vector<Packet> receive_packets(std::size_t count, int timeout_ms, std::uint32_t peek = 64) {
    std::vector<Packet> packets;
    int waited = 0;
    while (packets.size() < count && waited <= timeout_ms) {
      std::uint32_t idx = 0;
      const std::uint32_t n = socket->rx_peek_packets(peek, idx);
      for (std::uint32_t i = 0; i < n;) {
        const PacketExtent extent = socket->rx_packet(idx + i, n - i);
        if (!extent.complete()) {
          ADD_FAILURE() << "rx_peek_packets handed out a partial packet";
          return packets;
        }
        Packet packet;
        for (std::uint32_t k = 0; k < extent.descriptors; ++k) {
          const xdp_desc& d = socket->rx_desc(idx + i + k);
          const std::uint8_t* p = umem->data(d.addr);
          packet.bytes.insert(packet.bytes.end(), p, p + d.len);
          packet.descs.push_back(d);
          umem->frames().free(d.addr);
        }
        packets.push_back(std::move(packet));
        i += extent.descriptors;
      }
      if (n != 0) {
        socket->rx_release(n);
        umem->refill(n);
        continue;
      }
      pollfd p{socket->fd(), POLLIN, 0};
      ::poll(&p, 1, 10);
      waited += 10;
    }
    return packets;
  }
};

}  // namespace xdpvhost::xsk::test

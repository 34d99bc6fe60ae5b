#include "dataplane/uplink_rx.hpp"

#include <algorithm>

#include "net/byte_order.hpp"
#include "net/ethernet.hpp"

namespace xdpvhost::dataplane {

namespace {

constexpr unsigned kFloodBatch = 32;
constexpr unsigned kFloodPollRounds = 64;
constexpr std::uint32_t kFloodFrameBytes = 2048;

}  // namespace

UplinkRx::UplinkRx(UplinkQueue& queue) : q_(queue) {
  flood_buffers_.resize(kFloodBatch * kFloodFrameBytes);
  flood_frames_.resize(kFloodBatch);
  // GRO holds at most the descriptors of a burst: poll never allocates.
  reserve_burst(q_.options.tunables.rx_burst);
}

void UplinkRx::reserve_burst(std::uint32_t rx_burst) {
  held_.reserve(std::max(rx_burst, UplinkQueue::kMaxChain));
}

unsigned UplinkRx::poll(Forwarder& forwarder) {
  return poll_ring(forwarder) + poll_flood(forwarder);
}

unsigned UplinkRx::poll_ring(Forwarder& forwarder) {
  std::uint32_t idx = 0;
  // With multi-buffer a frame longer than one UMEM frame is a chain of
  // descriptors; only whole chains are peeked.
  const bool chains = q_.socket->multi_buffer();
  const std::uint32_t burst = q_.options.tunables.rx_burst;
  const std::uint32_t got =
      chains ? q_.socket->rx_peek_packets(burst, idx) : q_.socket->rx_peek(burst, idx);
  std::uint32_t done = 0;
  // Frames GRO holds stay in their UMEM frames until the flush at the end of
  // this burst delivers them; nothing waits for a later burst.
  held_.clear();
  GroDeliver deliver{*this, forwarder};
  for (; done < got; ++done) {
    const xdp_desc& d = q_.socket->rx_desc(idx + done);
    if (chains && xsk::continues(d.options)) {
      const xsk::PacketExtent packet = q_.socket->rx_packet(idx + done, got - done);
      if (!forward_chain(forwarder, deliver, idx + done, packet)) break;  // destination full
      done += packet.descriptors - 1;
      continue;
    }
    const std::uint8_t* data = q_.umem->data(d.addr);
    const Span span{data, d.len};
    Frame frame(span);
    if (!frame.has_ethernet_header()) {
      q_.port.counters().drop(DropReason::kMalformed);
      q_.umem->frames().free(d.addr);
      continue;
    }
    const Forwarder::Route route = forwarder.route(q_.port, frame);
    if (coalescable(frame, route, forwarder)) {
      const net::GroResult r = gro_.offer(data, d.len, /*checksum_verified=*/false, deliver);
      q_.port.counters().rx_packets.add();
      q_.port.counters().rx_bytes.add(d.len);
      if (r.verdict != net::GroVerdict::deliver) {
        held_.push_back(d.addr);  // held: freed after the flush
        continue;
      }
      frame.data_valid = r.data_valid;
      forwarder.forward(q_.port, frame, route);  // a guest on this thread: taken
    } else {
      if (!forwarder.forward(q_.port, frame, route)) break;  // destination full: keep the rest
      q_.port.counters().rx_packets.add();
      q_.port.counters().rx_bytes.add(d.len);
    }
    q_.umem->frames().free(d.addr);
  }
  gro_.flush(deliver);
  for (const std::uint64_t addr : held_) q_.umem->frames().free(addr);
  // A full destination stopped the burst: the descriptors peeked but not
  // taken go back to the ring, to be peeked again next round.
  if (done < got) q_.socket->rx_cancel(got - done);
  if (done != 0) q_.socket->rx_release(done);
  return done;
}

bool UplinkRx::forward_chain(Forwarder& forwarder, GroDeliver& deliver, std::uint32_t first,
                             const xsk::PacketExtent& packet) {
  // rx_peek_packets() hands out whole chains only: packet.complete().
  const auto release = [&] {
    for (std::uint32_t i = 0; i < packet.descriptors; ++i)
      q_.umem->frames().free(q_.socket->rx_desc(first + i).addr);
  };
  if (packet.descriptors > chain_spans_.size()) {  // longer than any MTU allows
    q_.port.counters().drop(DropReason::kOversize);
    release();
    return true;
  }
  for (std::uint32_t i = 0; i < packet.descriptors; ++i) {
    const xdp_desc& d = q_.socket->rx_desc(first + i);
    chain_spans_[i] = Span{q_.umem->data(d.addr), d.len};
  }
  Frame frame;
  frame.spans = chain_spans_.data();
  frame.span_count = packet.descriptors;
  frame.len = packet.len;
  if (!load_ethernet_header(frame)) {
    q_.port.counters().drop(DropReason::kMalformed);
    release();
    return true;
  }
  const Forwarder::Route route = forwarder.route(q_.port, frame);
  if (coalescable(frame, route, forwarder)) {
    // GRO copies the ranges it keeps: chain_spans_ is free again afterwards.
    const net::GroResult r = gro_.offer(frame.bytes(), /*checksum_verified=*/false, deliver);
    q_.port.counters().rx_packets.add();
    q_.port.counters().rx_bytes.add(packet.len);
    if (r.verdict != net::GroVerdict::deliver) {
      for (std::uint32_t i = 0; i < packet.descriptors; ++i)  // held: freed after the flush
        held_.push_back(q_.socket->rx_desc(first + i).addr);
      return true;
    }
    frame.data_valid = r.data_valid;
    forwarder.forward(q_.port, frame, route);  // a guest on this thread: taken
  } else {
    if (!forwarder.forward(q_.port, frame, route)) return false;  // kept on the ring
    q_.port.counters().rx_packets.add();
    q_.port.counters().rx_bytes.add(packet.len);
  }
  release();
  return true;
}

bool UplinkRx::coalescable(const Frame& frame, const Forwarder::Route& route,
                           const Forwarder& forwarder) const noexcept {
  // The queue group that takes the frame's flow is a guest on this thread
  // that takes TSO for the frame's IP version; untagged IPv4/IPv6 only. A
  // frame out of GRO cannot wait (its UMEM frames are freed after the
  // flush), and only there is its destination never full: a guest port
  // takes every frame, into its ring or its backlog, while a mailbox toward
  // another thread may be full.
  const SwitchEntry* to = route.to;
  if (to == nullptr || to->kind != PortKind::kGuest || to->thread != forwarder.thread() ||
      to->moving)
    return false;
  const std::uint16_t ethertype = net::load_be16(frame.eth + 12);
  if (ethertype != net::kEtherTypeIpv4 && ethertype != net::kEtherTypeIpv6) return false;
  return to->port->takes_tso(ethertype == net::kEtherTypeIpv6);
}

void UplinkRx::forward_gro(Forwarder& forwarder, const net::GroFrame& f) {
  gro_spans_[0] = Span{f.header, f.header_len};
  for (std::uint32_t i = 0; i < f.payload_count; ++i) gro_spans_[i + 1] = f.payload[i];
  Frame frame;
  frame.spans = gro_spans_.data();
  frame.span_count = f.payload_count + 1;
  frame.len = f.len;
  frame.data_valid = f.data_valid;
  if (!load_ethernet_header(frame)) return;
  if (f.segments > 1) {
    frame.offload.request = f.offload;
    frame.offload.segments = f.segments;
    frame.offload.layout = f.layout;
    q_.counters.gro_frames.add();
    q_.counters.gro_segments.add(f.segments);
  }
  forwarder.forward(q_.port, frame);  // a guest on this thread (coalescable): taken
}

unsigned UplinkRx::poll_flood(Forwarder& forwarder) {
  // A port moves between threads: floods wait, here in the socket's queue.
  if (!q_.flood || forwarder.floods_wait()) return 0;
  // Broadcast and multicast are rare; a recvmmsg() on every busy-poll round
  // would be a syscall per round. Look every kFloodPollRounds rounds, and at
  // once after a wakeup (the packet socket's fd is in the epoll set).
  if (flood_countdown_ > 0) {
    --flood_countdown_;
    return 0;
  }
  flood_countdown_ = kFloodPollRounds;
  for (unsigned i = 0; i < kFloodBatch; ++i)
    flood_frames_[i] =
        nic::FloodFrame{flood_buffers_.data() + i * kFloodFrameBytes, kFloodFrameBytes, 0, false};
  const int got = q_.flood->recv_batch(flood_frames_.data(), kFloodBatch);
  if (got <= 0) return 0;
  if (got == static_cast<int>(kFloodBatch)) flood_countdown_ = 0;  // more may be waiting
  for (int i = 0; i < got; ++i) {
    const nic::FloodFrame& f = flood_frames_[static_cast<std::size_t>(i)];
    if (f.truncated) {
      q_.port.counters().drop(DropReason::kOversize);
      continue;
    }
    const Span span{f.data, f.len};
    const Frame frame(span);
    if (!frame.has_ethernet_header()) {
      q_.port.counters().drop(DropReason::kMalformed);
      continue;
    }
    forwarder.forward(q_.port, frame);  // multicast: flooded, never held back
    q_.port.counters().rx_packets.add();
    q_.port.counters().rx_bytes.add(f.len);
    q_.counters.flood_rx.add();
  }
  return static_cast<unsigned>(got);
}

}  // namespace xdpvhost::dataplane

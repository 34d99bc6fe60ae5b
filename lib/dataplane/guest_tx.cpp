#include "dataplane/guest_tx.hpp"

#include <cstring>

#include "dataplane/forwarder.hpp"
#include "net/ethernet.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::dataplane {

using virtio::DescriptorChain;
using virtio::NetHeader;
using Direction = virtio::SplitQueue::Direction;

GuestTx::GuestTx(GuestRings& rings, Port& port, const PortTunables& tunables,
                 const Security& security, MacLearner* learner)
    : rings_(rings),
      port_(port),
      tunables_(tunables),
      source_(security.mac_policy, security.mac, security.holds_mac, learner) {
  flood_.set_rate(tunables.flood_rate, flood_bucket(tunables.flood_rate));
  spans_.reserve(64);
}

void GuestTx::mac_learned(const net::MacAddress& mac) noexcept {
  source_.learned(mac);
  if (counts_for_device())
    port_.counters().mac_learned.add();  // once per port, not per queue group
}

void GuestTx::count_refused(Admission admission) noexcept {
  port_.counters().drop(DropReason::kSpoofedSource);
  if (admission == Admission::kRefuseOwned) port_.counters().refused(MacRefusal::kAnotherPort);
  if (admission == Admission::kRefuseRateLimited)
    port_.counters().refused(MacRefusal::kRateLimited);
}

void GuestTx::mac_refused(const net::MacAddress& mac, MacRefusal why) noexcept {
  source_.refused(mac);
  if (counts_for_device()) port_.counters().refused(why);  // once per port, not per queue group
}

unsigned GuestTx::poll(Forwarder& forwarder) {
  if (announce_pending_) [[unlikely]]
    send_announce(forwarder);
  unsigned total = 0;
  for (const std::uint32_t v : rings_.tx_vrings()) {
    GuestQueue& q = rings_.queue(v);
    if (q.ring.usable()) total += poll_queue(q, forwarder);
  }
  return total;
}

unsigned GuestTx::poll_queue(GuestQueue& q, Forwarder& forwarder) {
  // Bounded cost per round: tx_burst packets (a GSO frame counts its
  // segments: the packets it becomes on the wire or for a guest without
  // GSO), and at most kDescriptorsPerRound descriptors walked, so a guest of
  // long chains or many-segment frames cannot hold up the others on this
  // thread. The first frame of a round always goes, whatever its segments.
  const GuestLink& link = rings_.link();
  const std::uint32_t vring = rings_.vring_of(q);
  // A chain longer than the longest frame the guest may send is not walked
  // further: 64 KiB + headers with segmentation offload, else its MTU.
  const std::uint32_t longest = link.longest_sent();
  unsigned n = 0;
  std::uint32_t walked = 0;
  while (n < tunables_.tx_burst && walked < kDescriptorsPerRound) {
    if (!q.ring.pop(chain_, Direction::kDeviceReads, link.header_size + longest)) {
      if (q.ring.broken()) rings_.report_broken(q);
      break;
    }
    walked += chain_.descriptors;
    if (chain_.truncated && longest == net::kMaxGsoFrame) [[unlikely]] {
      // Longer than a 64 KiB IP packet with its headers: no frame at all, and
      // no guest driver builds such chains; one that does would be walked up
      // to the limit every round while it refills its ring. Its queue breaks.
      // (A chain just over the MTU of a port without segmentation offload is
      // only dropped, below: a guest whose MTU is set higher than the port's.)
      port_.counters().drop(DropReason::kOversize);
      q.ring.refuse(virtio::QueueError::kBeyondAnyFrame);
      rings_.report_broken(q);
      break;
    }
    Frame frame;
    net::OffloadError refused = net::OffloadError::none;
    // A truncated chain is longer than any frame the guest may send.
    const bool parsed = !chain_.truncated && frame_from_chain(chain_, frame, refused);
    if (!parsed && !chain_.truncated) {
      if (refused != net::OffloadError::none) {
        port_.counters().drop(DropReason::kBadOffload);
        port_.counters().refused(refused);
      } else {
        port_.counters().drop(DropReason::kMalformed);
      }
    } else if (chain_.truncated || (!frame.offload.is_gso() && frame.len > link.max_frame)) {
      port_.counters().drop(DropReason::kOversize);
    } else if (const Admission admission = source_.admit(frame.src(), forwarder.table(), &port_);
               admission != Admission::kAdmit) {
      if (admission == Admission::kHold) {
        // The control side decides on its source: the chain waits on the
        // ring, this queue until the answer (a command, which wakes us).
        q.ring.unpop(1);
        break;
      }
      count_refused(admission);
    } else if (frame.is_multicast() && forwarder.floods_wait()) {
      // A port moves between threads: the flood waits on the ring, before
      // it is charged to the flood limit.
      port_.counters().waits.add();
      q.ring.unpop(1);
      break;
    } else if (frame.is_multicast() && !flood_.allow(frame.offload.segments)) {
      port_.counters().drop(DropReason::kFloodLimited);
    } else {
      if (!forwarder.forward(port_, frame)) {
        // Destination full: the chain stays on the ring (back-pressure to
        // the guest) and is taken again next round.
        q.ring.unpop(1);
        break;
      }
      port_.counters().rx_packets.add();
      port_.counters().rx_bytes.add(frame.len);
      rings_.pair(vring).rx_packets.add();
      if (frame.offload.is_gso()) port_.counters().gso_rx.add();
      n += frame.offload.segments - 1;  // the chain's 1 is added below
    }
    q.ring.add_used(chain_.head, 0);
    if (q.ring.staged_used() >= tunables_.signal_batch) rings_.flush(q);
    ++n;
  }
  return n;
}

void GuestTx::send_announce(Forwarder& forwarder) {
  if (forwarder.floods_wait()) return;  // sent once the moving port has arrived
  announce_pending_ = false;
  // RARP "request reverse" from the guest's MAC, as QEMU announces a guest
  // itself (net/announce.c): broadcast, sender and target hardware address
  // the MAC, no protocol addresses, padded to the 60-byte minimum.
  std::uint8_t rarp[60] = {};
  std::memset(rarp, 0xff, 6);
  std::memcpy(rarp + 6, announce_mac_.data(), 6);
  const std::uint8_t fixed[] = {0x80, 0x35,               // ethertype RARP
                                0x00, 0x01, 0x08, 0x00,   // hardware Ethernet, protocol IPv4
                                6,    4,    0x00, 0x03};  // lengths, op 3 (reverse request)
  std::memcpy(rarp + 12, fixed, sizeof fixed);
  std::memcpy(rarp + 22, announce_mac_.data(), 6);
  std::memcpy(rarp + 32, announce_mac_.data(), 6);
  const Span span{rarp, sizeof rarp};  // outlives the frame, which points to it
  const Frame frame(span);
  if (const Admission admission = source_.admit(frame.src(), forwarder.table(), &port_);
      admission != Admission::kAdmit) {
    if (admission == Admission::kHold) {
      announce_pending_ = true;  // sent once its source is decided on
      return;
    }
    count_refused(admission);
    return;
  }
  if (!flood_.allow()) {  // a broadcast like any the guest sends
    port_.counters().drop(DropReason::kFloodLimited);
    return;
  }
  forwarder.forward(port_, frame);
  port_.counters().rx_packets.add();
  port_.counters().rx_bytes.add(frame.len);
}

bool GuestTx::frame_from_chain(const DescriptorChain& chain, Frame& frame,
                               net::OffloadError& refused) {
  const GuestLink& link = rings_.link();
  if (chain.readable_bytes < link.header_size + net::kEthernetHeader) return false;
  // The header may be split over descriptors (ANY_LAYOUT): gather it.
  spans_.clear();
  for (const virtio::HostSpan& s : chain.readable) spans_.push_back(Span{s.data, s.len});
  Frame whole;
  whole.spans = spans_.data();
  whole.span_count = static_cast<std::uint32_t>(spans_.size());
  whole.len = chain.readable_bytes;
  NetHeader header{};
  gather(whole, 0, reinterpret_cast<std::uint8_t*>(&header), link.header_size);

  // The frame: the spans past the header.
  std::uint32_t skip = link.header_size;
  std::size_t out = 0;
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    const Span& s = spans_[i];
    if (skip >= s.len) {
      skip -= s.len;
      continue;
    }
    spans_[out++] = Span{s.data + skip, s.len - skip};
    skip = 0;
  }
  spans_.resize(out);
  frame.spans = spans_.data();
  frame.span_count = static_cast<std::uint32_t>(spans_.size());
  frame.len = chain.readable_bytes - link.header_size;
  if (!load_ethernet_header(frame)) return false;

  // What the header asks for, checked against the frame before anything
  // trusts it (gso_size, hdr_len, csum_start/offset, the real headers).
  net::OffloadRequest request;
  const net::VirtioNetOffload fields{header.flags,    header.gso_type,   header.hdr_len,
                                     header.gso_size, header.csum_start, header.csum_offset};
  if (const auto e = net::decode_virtio_offload(fields, request); e != net::OffloadError::none) {
    refused = e;
    return false;
  }
  const net::GsoType gso = request.gso.type;
  if ((gso == net::GsoType::tcpv4 && !link.host_tso4) ||
      (gso == net::GsoType::tcpv6 && !link.host_tso6) ||
      (gso == net::GsoType::udp_l4 && !link.host_uso)) {
    refused = net::OffloadError::gso_bad_type;  // a GSO type the guest did not negotiate
    return false;
  }
  if (!request.any()) return true;
  policy_.mtu = link.max_frame - net::kL2Overhead;
  policy_.ecn = link.host_ecn;
  const net::OffloadCheck check = net::validate_offload(frame.bytes(), request, policy_);
  if (!check.ok()) {
    refused = check.error;
    return false;
  }
  frame.offload = check.offload;
  return true;
}

}  // namespace xdpvhost::dataplane

#include "dataplane/uplink_queue_port.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <utility>
#include <cstring>

#include <spdlog/spdlog.h>

#include "dataplane/forwarder.hpp"
#include "net/byte_order.hpp"
#include "net/ethernet.hpp"
#include "net/gso_segmenter.hpp"
#include "xsk/tx_metadata.hpp"

namespace xdpvhost::dataplane {

namespace {

constexpr unsigned kFloodBatch = 32;
constexpr unsigned kFloodPollRounds = 64;
constexpr std::uint32_t kFloodFrameBytes = 2048;
// Descriptors one copy-mode sendto() may send (XDP_MAX_TX_SKB_BUDGET, Linux
// 6.17+; the kernel default is 32). Fewer syscalls per frame is what counts
// on this path: the kernel work of each frame happens inside sendto().
constexpr std::uint32_t kTxBudget = 256;

}  // namespace

UplinkQueuePort::UplinkQueuePort(std::uint32_t id, std::string name, std::uint32_t uplink,
                                 Options options)
    : Port(id, std::move(name), PortKind::kUplink, uplink), options_(options) {
  flood_buffers_.resize(kFloodBatch * kFloodFrameBytes);
  flood_frames_.resize(kFloodBatch);
  // GRO holds at most the descriptors of a burst: poll_rx never allocates.
  rx_addrs_.reserve(std::max(options_.tunables.rx_burst, kMaxChain));
  status_.napi_busy_poll_requested.store(options_.tunables.napi_busy_poll);
}

UplinkQueuePort::~UplinkQueuePort() {
  unbind().close();  // detached from its thread by now: this is the control thread
}

std::string UplinkQueuePort::napi_busy_poll_reason() const {
  std::lock_guard lock(reason_mutex_);
  return reason_;
}

void UplinkQueuePort::set_reason(std::string reason) {
  std::lock_guard lock(reason_mutex_);
  reason_ = std::move(reason);
}

// ---- commands -------------------------------------------------------------------

UplinkQueuePort::Released UplinkQueuePort::bind(std::unique_ptr<xsk::Umem> umem,
                                                std::unique_ptr<xsk::XskSocket> socket) {
  Released previous = unbind();
  umem_ = std::move(umem);
  socket_ = std::move(socket);
  tx_reserved_ = 0;
  // Jumbo segments are made here before they are cut into UMEM frames.
  tx_scratch_.resize(socket_->multi_buffer() ? kMaxJumboFrame : 0);
  const std::uint32_t budget = std::min(kTxBudget, socket_->config().tx_size);
  if (int rc = socket_->set_tx_budget(budget); rc != 0)
    spdlog::info(
        "uplink {}: XDP_MAX_TX_SKB_BUDGET not available ({}); the kernel sends 32 "
        "frames per sendto",
        name(), -rc);
  umem_->refill(umem_->fill_free(umem_->config().fill_size));
  status_.bound.store(true);
  status_.zero_copy.store(socket_->zero_copy());
  status_.multi_buffer.store(socket_->multi_buffer());
  tx_checksum_offload_ = umem_->tx_metadata() && !socket_->zero_copy();
  status_.tx_checksum_offload.store(tx_checksum_offload_);
  std::uint32_t napi = 0;
  xsk::read_napi_id(socket_->fd(), napi);
  status_.napi_id.store(napi);
  starvation_.reset();
  apply_napi_busy_poll(/*prefer=*/true);
  wait_fds_changed();
  return previous;
}

UplinkQueuePort::Released UplinkQueuePort::unbind() {
  if (socket_) {
    refresh_statistics();
    stats_base_ += stats_last_;
    stats_last_ = {};
  }
  Released released;
  released.socket = std::move(socket_);
  released.umem = std::move(umem_);
  napi_active_ = false;
  status_.bound.store(false);
  status_.napi_busy_poll_active.store(false);
  status_.napi_id.store(0);
  wait_fds_changed();
  return released;
}

UplinkQueuePort::Released UplinkQueuePort::set_flood_socket(
    std::unique_ptr<nic::FloodSocket> flood) {
  Released released;
  released.flood = std::exchange(flood_, std::move(flood));
  wait_fds_changed();
  return released;
}

void UplinkQueuePort::set_link_up(bool up) noexcept {
  link_up_ = up;
  status_.link_up.store(up);
}

void UplinkQueuePort::set_tunables(const Tunables& t) {
  const bool napi_changed = t.napi_busy_poll != options_.tunables.napi_busy_poll ||
                            t.busy_poll_budget != options_.tunables.busy_poll_budget ||
                            t.busy_poll_us != options_.tunables.busy_poll_us;
  options_.tunables = t;
  rx_addrs_.reserve(std::max(t.rx_burst, kMaxChain));
  status_.napi_busy_poll_requested.store(t.napi_busy_poll);
  if (napi_changed && socket_) {
    starvation_.reset();
    apply_napi_busy_poll(/*prefer=*/true);
  }
}

void UplinkQueuePort::apply_napi_busy_poll(bool prefer) {
  napi_active_ = false;
  status_.napi_busy_poll_active.store(false);
  if (!socket_) return;
  const auto& t = options_.tunables;
  if (!t.napi_busy_poll) {
    xsk::apply_busy_poll(socket_->fd(), xsk::BusyPollConfig{0, 0, false});
    set_reason("not requested");
    return;
  }
  // The socket busy-polls NAPI for up to busy_poll_us per syscall (at least
  // a little, so that a request actually polls).
  xsk::BusyPollConfig config;
  config.usecs = std::max<std::uint32_t>(t.busy_poll_us, 1);
  config.budget = static_cast<std::uint16_t>(std::min<std::uint32_t>(t.busy_poll_budget, 65535));
  config.prefer = prefer;
  const xsk::BusyPollOutcome outcome = xsk::apply_busy_poll(socket_->fd(), config);
  status_.napi_id.store(outcome.napi_id);
  napi_prefer_ = prefer && outcome.applied;
  if (!outcome.applied) {
    set_reason(outcome.reason);
  } else if (outcome.napi_id == 0) {
    // The kernel busy-polls the NAPI context the socket's napi id names; with
    // id 0 (a device without NAPI such as veth, or no frame seen yet) a
    // recvfrom() would be a wasted syscall. Housekeeping looks again.
    set_reason("no napi id on the socket yet (veth and other devices without NAPI never get one)");
  } else {
    napi_active_ = true;
    set_reason(prefer ? "ok (preferred busy polling)" : "ok");
  }
  status_.napi_busy_poll_active.store(napi_active_);
}

// ---- NIC -> guests ---------------------------------------------------------------

unsigned UplinkQueuePort::poll(Forwarder& forwarder) {
  if (!socket_) return 0;
  umem_->reclaim_completions(umem_->config().comp_size);
  unsigned n = poll_rx(forwarder);
  n += poll_flood(forwarder);
  // Frames go back to the fill ring at once. A zero-copy driver that ran
  // out of them stopped and asked to be woken (need_wakeup): without the
  // syscall RX stays stopped for as long as this thread is kept busy. (Only
  // zero-copy drivers set the flag; in copy mode this is no syscall.)
  umem_->refill(umem_->config().fill_size);
  if (socket_->zero_copy() && !napi_active_ && umem_->fill_needs_wakeup()) socket_->wakeup_rx();
  if (napi_active_) {
    if (n == 0 && socket_->rx_pending() == 0) {
      // NAPI busy polling (docs/techniques.md): nothing on the rings -- drive the NIC's NAPI
      // ourselves.
      socket_->wakeup_rx();
      queue_counters_.napi_polls.add();
    }
    if (napi_prefer_ && starvation_.round(n)) {
      xsk::StarvationSample sample;
      sample.offered = offered_.load(std::memory_order_relaxed);
      socket_->read_statistics(sample.xsk);
      sample.fill_level = umem_->fill_level();
      const xsk::StarvationVerdict verdict = starvation_.evaluate(sample);
      if (verdict.starving) {
        spdlog::warn(
            "uplink {}: preferred busy polling starves RX ({}); falling back to "
            "non-preferred busy polling",
            name(), verdict.reason);
        apply_napi_busy_poll(/*prefer=*/false);
        set_reason("fell back from preferred busy polling: " + verdict.reason);
        starvation_.reset();
      }
    }
  }
  return n;
}

unsigned UplinkQueuePort::poll_rx(Forwarder& forwarder) {
  std::uint32_t idx = 0;
  // With multi-buffer a frame longer than one UMEM frame is a chain of
  // descriptors; only whole chains are peeked.
  const bool chains = socket_->multi_buffer();
  const std::uint32_t burst = options_.tunables.rx_burst;
  const std::uint32_t got =
      chains ? socket_->rx_peek_packets(burst, idx) : socket_->rx_peek(burst, idx);
  std::uint32_t done = 0;
  // Frames GRO holds stay in their UMEM frames until the flush at the end of
  // this burst delivers them; nothing waits for a later burst.
  rx_addrs_.clear();
  GroDeliver deliver{*this, forwarder};
  for (; done < got; ++done) {
    const xdp_desc& d = socket_->rx_desc(idx + done);
    if (chains && xsk::continues(d.options)) {
      const xsk::PacketExtent packet = socket_->rx_packet(idx + done, got - done);
      if (!forward_chain(forwarder, deliver, idx + done, packet)) break;  // destination full
      done += packet.descriptors - 1;
      continue;
    }
    const std::uint8_t* data = umem_->data(d.addr);
    const Span span{data, d.len};
    Frame frame(span);
    if (!frame.has_ethernet_header()) {
      counters().drop(DropReason::kMalformed);
      umem_->frames().free(d.addr);
      continue;
    }
    const Forwarder::Route route = forwarder.route(*this, frame);
    if (coalescable(frame, route, forwarder)) {
      const net::GroResult r = gro_.offer(data, d.len, /*checksum_verified=*/false, deliver);
      counters().rx_packets.add();
      counters().rx_bytes.add(d.len);
      if (r.verdict != net::GroVerdict::deliver) {
        rx_addrs_.push_back(d.addr);  // held: freed after the flush
        continue;
      }
      frame.data_valid = r.data_valid;
      forwarder.forward(*this, frame, route);  // a guest on this thread: taken
    } else {
      if (!forwarder.forward(*this, frame, route)) break;  // destination full: keep the rest
      counters().rx_packets.add();
      counters().rx_bytes.add(d.len);
    }
    umem_->frames().free(d.addr);
  }
  gro_.flush(deliver);
  for (const std::uint64_t addr : rx_addrs_) umem_->frames().free(addr);
  // A full destination stopped the burst: the descriptors peeked but not
  // taken go back to the ring, to be peeked again next round.
  if (done < got) socket_->rx_cancel(got - done);
  if (done != 0) socket_->rx_release(done);
  return done;
}

bool UplinkQueuePort::forward_chain(Forwarder& forwarder, GroDeliver& deliver, std::uint32_t first,
                                    const xsk::PacketExtent& packet) {
  // rx_peek_packets() hands out whole chains only: packet.complete().
  const auto release = [&] {
    for (std::uint32_t i = 0; i < packet.descriptors; ++i)
      umem_->frames().free(socket_->rx_desc(first + i).addr);
  };
  if (packet.descriptors > chain_spans_.size()) {  // longer than any MTU allows
    counters().drop(DropReason::kOversize);
    release();
    return true;
  }
  for (std::uint32_t i = 0; i < packet.descriptors; ++i) {
    const xdp_desc& d = socket_->rx_desc(first + i);
    chain_spans_[i] = Span{umem_->data(d.addr), d.len};
  }
  Frame frame;
  frame.spans = chain_spans_.data();
  frame.span_count = packet.descriptors;
  frame.len = packet.len;
  if (!load_ethernet_header(frame)) {
    counters().drop(DropReason::kMalformed);
    release();
    return true;
  }
  const Forwarder::Route route = forwarder.route(*this, frame);
  if (coalescable(frame, route, forwarder)) {
    // GRO copies the ranges it keeps: chain_spans_ is free again afterwards.
    const net::GroResult r = gro_.offer(frame.bytes(), /*checksum_verified=*/false, deliver);
    counters().rx_packets.add();
    counters().rx_bytes.add(packet.len);
    if (r.verdict != net::GroVerdict::deliver) {
      for (std::uint32_t i = 0; i < packet.descriptors; ++i)  // held: freed after the flush
        rx_addrs_.push_back(socket_->rx_desc(first + i).addr);
      return true;
    }
    frame.data_valid = r.data_valid;
    forwarder.forward(*this, frame, route);  // a guest on this thread: taken
  } else {
    if (!forwarder.forward(*this, frame, route)) return false;  // kept on the ring
    counters().rx_packets.add();
    counters().rx_bytes.add(packet.len);
  }
  release();
  return true;
}

bool UplinkQueuePort::coalescable(const Frame& frame, const Forwarder::Route& route,
                                  const Forwarder& forwarder) const noexcept {
  // The queue group that takes the frame's flow is a guest on this thread
  // that takes TSO for the frame's IP version; untagged IPv4/IPv6 only. A
  // frame out of GRO cannot wait (its UMEM frames are freed after the
  // flush), and only there is its destination never full: a guest port
  // takes every frame, into its ring or its backlog, while a mailbox toward
  // another thread may be full.
  const SwitchEntry* to = route.to;
  if (to == nullptr || to->kind != PortKind::kGuest || to->thread != forwarder.thread())
    return false;
  const std::uint16_t ethertype = net::load_be16(frame.eth + 12);
  if (ethertype != net::kEtherTypeIpv4 && ethertype != net::kEtherTypeIpv6) return false;
  return to->port->takes_tso(ethertype == net::kEtherTypeIpv6);
}

void UplinkQueuePort::forward_gro(Forwarder& forwarder, const net::GroFrame& f) {
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
    queue_counters_.gro_frames.add();
    queue_counters_.gro_segments.add(f.segments);
  }
  forwarder.forward(*this, frame);  // a guest on this thread (coalescable): taken
}

unsigned UplinkQueuePort::poll_flood(Forwarder& forwarder) {
  if (!flood_) return 0;
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
  const int got = flood_->recv_batch(flood_frames_.data(), kFloodBatch);
  if (got <= 0) return 0;
  if (got == static_cast<int>(kFloodBatch)) flood_countdown_ = 0;  // more may be waiting
  for (int i = 0; i < got; ++i) {
    const nic::FloodFrame& f = flood_frames_[static_cast<std::size_t>(i)];
    if (f.truncated) {
      counters().drop(DropReason::kOversize);
      continue;
    }
    const Span span{f.data, f.len};
    const Frame frame(span);
    if (!frame.has_ethernet_header()) {
      counters().drop(DropReason::kMalformed);
      continue;
    }
    forwarder.forward(*this, frame);  // multicast: flooded, never held back
    counters().rx_packets.add();
    counters().rx_bytes.add(f.len);
    queue_counters_.flood_rx.add();
  }
  return static_cast<unsigned>(got);
}

// ---- guests -> NIC ---------------------------------------------------------------

bool UplinkQueuePort::has_tx_room(std::uint32_t descriptors) const noexcept {
  // A bound on frames in flight (docs/techniques.md) between TX and completion.
  if (umem_->tx_in_flight() + tx_reserved_ + descriptors > options_.tunables.tx_inflight_max)
    return false;
  return umem_->frames().available() >= descriptors && socket_->tx_free(descriptors) >= descriptors;
}

std::uint32_t UplinkQueuePort::tx_descriptors(std::uint32_t len) const noexcept {
  return xsk::descriptors_for(len, umem_->tx_room());
}

std::uint32_t UplinkQueuePort::frame_descriptors(const Frame& frame) const noexcept {
  if (!frame.needs_offload()) return tx_descriptors(frame.len);
  return frame.offload.segments *
         tx_descriptors(std::min(frame.longest_segment(), options_.max_frame));
}

bool UplinkQueuePort::segment_fits(std::uint32_t len) const noexcept {
  if (len > options_.max_frame) return false;
  if (len <= umem_->tx_room()) return true;
  // Longer than one UMEM frame: made in the scratch buffer (multi-buffer
  // only) and sent as a chain the socket takes.
  const std::uint32_t n = tx_descriptors(len);
  return len <= tx_scratch_.size() && n <= socket_->tx_max_packet_descriptors() && n <= kMaxChain;
}

std::uint32_t UplinkQueuePort::tx_capacity() const noexcept {
  return std::min(options_.tunables.tx_inflight_max, socket_->config().tx_size);
}

bool UplinkQueuePort::admit_tx(std::uint32_t descriptors) noexcept {
  if (descriptors > tx_capacity()) {
    counters().drop(DropReason::kOversize);  // more than the TX ring or tx_inflight_max, ever
    return false;
  }
  if (!has_tx_room(descriptors)) {
    counters().drop(DropReason::kUplinkTxFull);
    return false;
  }
  return true;
}

bool UplinkQueuePort::can_accept(const Frame& frame) const noexcept {
  if (!socket_ || !link_up_) return true;  // deliver() counts the drop
  const std::uint32_t n = frame_descriptors(frame);
  // One that never fits is taken (and dropped, counted): waiting for room
  // would hold its guest's transmit queue for good.
  return n > tx_capacity() || has_tx_room(n);
}

void UplinkQueuePort::put_on_tx(const std::uint64_t* addrs, const std::uint32_t* lens,
                                std::uint32_t descriptors, std::uint32_t len,
                                std::uint32_t first_options) {
  std::uint32_t idx = 0;
  socket_->tx_reserve_packet(descriptors, idx);  // has_tx_room() said there is room
  for (std::uint32_t i = 0; i < descriptors; ++i)
    socket_->tx_packet_desc(idx, i, descriptors, addrs[i], lens[i], first_options);
  tx_reserved_ += descriptors;
  counters().tx_packets.add();
  counters().tx_bytes.add(len);
  // Keep the kernel busy within a long burst, too; always at a packet's end,
  // so that the kernel sees a chain whole.
  if (tx_reserved_ >= options_.tunables.tx_burst) {
    socket_->tx_submit(tx_reserved_);
    tx_reserved_ = 0;
    kick_tx();
  }
}

bool UplinkQueuePort::put_copy_on_tx(const net::ByteSpans& bytes) {
  // TX data starts tx_offset() into each frame (after the metadata room).
  const std::uint32_t room = umem_->tx_room();
  const std::uint32_t n = tx_descriptors(bytes.len);
  if (n == 0 || n > socket_->tx_max_packet_descriptors() || n > kMaxChain) return false;
  // Only [0, n) is written and read: not value-initialized, which would zero
  // 768 bytes per frame (`rep stos`, two thirds of this function's time on
  // 64-byte frames).
  std::array<std::uint64_t, kMaxChain> addrs;
  std::array<std::uint32_t, kMaxChain> lens;
  for (std::uint32_t i = 0; i < n; ++i) {
    addrs[i] = umem_->frames().alloc() + umem_->tx_offset();
    lens[i] = std::min(room, bytes.len - i * room);
    net::gather(bytes, i * room, umem_->data(addrs[i]), lens[i]);
  }
  put_on_tx(addrs.data(), lens.data(), n, bytes.len);
  return true;
}

void UplinkQueuePort::deliver(const Frame& frame) {
  if (!socket_ || !link_up_) {
    counters().drop(DropReason::kUplinkDown);
    return;
  }
  if (frame.needs_offload()) {
    deliver_offloaded(frame);
    return;
  }
  if (frame.len > options_.max_frame) {
    counters().drop(DropReason::kOversize);
    return;
  }
  if (!admit_tx(tx_descriptors(frame.len))) return;
  // One UMEM frame, or (multi-buffer) a chain of them.
  if (!put_copy_on_tx(frame.bytes())) counters().drop(DropReason::kOversize);
}

// A guest's GSO frame, or one with a checksum left to the "NIC": segmented
// (or copied whole) straight into UMEM frames, headers fixed on the way.
// Checksums: left to the kernel through TX metadata (ChecksumMode::partial)
// where the socket takes it and every segment fits one UMEM frame,
// finished in software otherwise. A segment longer than one UMEM frame
// (jumbo MTU) is made in a scratch buffer and copied out as a chain.
void UplinkQueuePort::deliver_offloaded(const Frame& frame) {
  // All of the frame or none of it: the first segment is the longest, and
  // one this queue cannot send drops the frame before any segment leaves.
  if (!segment_fits(frame.longest_segment())) {
    counters().drop(DropReason::kOversize);
    return;
  }
  const std::uint32_t descriptors = frame_descriptors(frame);
  if (!admit_tx(descriptors)) return;
  const bool offload = tx_checksum_offload_ && descriptors == frame.offload.segments;
  struct UmemSink {
    UplinkQueuePort& port;
    std::uint32_t room;
    std::uint32_t max_frame;
    std::uint64_t addr = 0;  // the UMEM frame handed out, while `held`
    bool held = false;
    bool failed = false;
    std::uint32_t offloaded = 0;  // segments whose checksum the kernel finishes
    net::SegmentBuffer next_buffer(std::uint32_t len) noexcept {
      if (len > max_frame) return {};
      if (len > room) return {port.tx_scratch_.data(), max_frame};
      addr = port.umem_->frames().alloc() + port.umem_->tx_offset();
      held = true;
      return {port.umem_->data(addr), room};
    }
    void commit(const net::SegmentBuffer& b, const net::SegmentMeta& meta) noexcept {
      if (b.data != port.tx_scratch_.data()) {
        std::uint32_t options = 0;
        if (meta.csum_partial) {
          // Read by the kernel before the descriptor's data; plain stores,
          // published with the descriptor by tx_submit's store-release.
          xsk::TxMetadata md;
          md.flags = xsk::kTxMetadataChecksum;
          md.csum_start = meta.csum_start;
          md.csum_offset = meta.csum_offset;
          std::memcpy(b.data - xsk::kTxMetadataLen, &md, sizeof md);
          options = xsk::kTxMetadataOption;
          ++offloaded;
        }
        port.put_on_tx(&addr, &meta.len, 1, meta.len, options);
        held = false;
        return;
      }
      const Span whole{b.data, meta.len};
      net::ByteSpans bytes;
      bytes.spans = &whole;
      bytes.count = 1;
      bytes.len = meta.len;
      if (!port.put_copy_on_tx(bytes)) failed = true;
    }
  };
  // Segments longer than one UMEM frame are made in the scratch buffer and
  // sent as a chain; without multi-buffer there is none, and a segment must
  // fit one frame.
  const std::uint32_t room = umem_->tx_room();
  const std::uint32_t longest =
      std::min(options_.max_frame,
               tx_scratch_.empty() ? room : static_cast<std::uint32_t>(tx_scratch_.size()));
  UmemSink sink{*this, room, longest};
  const net::SegmentResult r =
      net::segment(frame.bytes(), frame.offload,
                   offload ? net::ChecksumMode::partial : net::ChecksumMode::software, sink);
  if (r.status != net::SegmentStatus::done || sink.failed) [[unlikely]] {
    // Not after segment_fits(): a segmenter that made a segment longer than
    // the first. Those before it are sent; the rest is dropped, counted.
    if (sink.held) umem_->frames().free(sink.addr);  // handed out, not committed
    counters().drop(DropReason::kOversize);
    return;
  }
  if (frame.offload.is_gso()) counters().gso_segments.add(r.segments);
  if (frame.offload.request.csum.needed || frame.offload.is_gso()) {
    counters().csum_offloaded.add(sink.offloaded);
    counters().csum_software.add(r.segments - sink.offloaded);
  }
}

void UplinkQueuePort::kick_tx() noexcept {
  // Kicking TX only when needed (docs/techniques.md): when the kernel needs it (need_wakeup, or
  // copy mode with descriptors pending: the kernel only sends inside sendto).
  if (!socket_->tx_kick_needed()) return;
  queue_counters_.tx_kicks.add();
  switch (socket_->kick_tx()) {
    case xsk::WakeupResult::kOk:
      break;
    case xsk::WakeupResult::kBusy:
      // Copy mode: the device dropped the frame it was given (the kernel
      // completed it unsent) and stopped there; the rest go next round.
      if (!socket_->zero_copy()) counters().drop(DropReason::kUplinkRefused);
      break;
    case xsk::WakeupResult::kAgain:
    case xsk::WakeupResult::kNoBuffers:
      queue_counters_.tx_kicks_again
          .add();  // descriptors stay on the ring: kicked again next round
      break;
    case xsk::WakeupResult::kNetDown:
      link_up_ = false;  // the link monitor reports it; frames now count as uplink_down
      status_.link_up.store(false);
      break;
    case xsk::WakeupResult::kError:
      break;
  }
  umem_->reclaim_completions(umem_->config().comp_size);
}

void UplinkQueuePort::end_burst() {
  if (!socket_) return;
  if (tx_reserved_ != 0) {
    socket_->tx_submit(tx_reserved_);
    tx_reserved_ = 0;
  }
  kick_tx();
}

bool UplinkQueuePort::prepare_sleep() {
  if (!socket_) return false;
  // In copy mode descriptors left on the TX ring are sent only by another
  // sendto(): don't sleep on them. Frames on the RX ring are work too.
  return (link_up_ && socket_->tx_pending() != 0) || socket_->rx_pending() != 0;
}

void UplinkQueuePort::wait_fds(std::vector<WaitFd>& out, bool&) {
  if (socket_) out.push_back(WaitFd{socket_->fd(), EPOLLIN, false, this, true});
  // Read only by poll(), which needs a bound socket: a level-triggered fd
  // nobody reads would wake the thread without end.
  if (flood_ && socket_) out.push_back(WaitFd{flood_->fd(), EPOLLIN, false, this});
}

void UplinkQueuePort::refresh_statistics() noexcept {
  xsk::XskStatistics s;
  if (socket_->read_statistics(s) != 0) return;
  stats_last_ = s;
  // Kernel counters are per socket: a rebound socket starts from zero, so
  // ours count every socket the queue had and never go backwards.
  const xsk::XskStatistics total = stats_base_ + s;
  UplinkQueueCounters& c = queue_counters_;
  c.rx_dropped.raise_to(total.rx_dropped);
  c.rx_invalid_descs.raise_to(total.rx_invalid_descs);
  c.tx_invalid_descs.raise_to(total.tx_invalid_descs);
  c.rx_ring_full.raise_to(total.rx_ring_full);
  c.rx_fill_ring_empty_descs.raise_to(total.rx_fill_ring_empty_descs);
  c.tx_ring_empty_descs.raise_to(total.tx_ring_empty_descs);
}

void UplinkQueuePort::housekeeping() {
  if (!socket_) return;
  refresh_statistics();
  if (flood_) {
    nic::FloodSocket::Stats s;
    if (flood_->read_and_reset_stats(s) == 0 && s.dropped != 0)
      queue_counters_.flood_dropped.add(s.dropped);
  }
  if (options_.tunables.napi_busy_poll && !napi_active_ && status_.napi_id.load() == 0) {
    std::uint32_t napi = 0;
    if (xsk::read_napi_id(socket_->fd(), napi) == 0 && napi != 0)
      apply_napi_busy_poll(/*prefer=*/true);
  }
}

}  // namespace xdpvhost::dataplane

#pragma once
// Datapath counters, and the one table per counter set that describes them.
//
// Each counter is written by one service thread only (plain relaxed load +
// store, no locked instruction) and read by the control thread and the
// metrics exporter at any time without locks.
//
// The tables (kPortCounters, kUplinkQueueCounters, kThreadCounters) name
// every counter once: its member, its JSON name in stats.get, its Prometheus
// family and constant label, its HELP text and its xdpvhostctl column. The
// daemon builds the stats snapshots, the stats.get JSON, the metric families
// and the CLI's columns from them, and a unit test checks them against
// proto/types.schema.json. A new counter is one member and one table row.

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "dataplane/drop_reason.hpp"
#include "dataplane/mac_refusal.hpp"
#include "net/offload_error.hpp"

namespace xdpvhost::dataplane {

class Counter {
 public:
  void add(std::uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Raises the counter to `total` (never lowers it): for counts kept
  // elsewhere, such as the kernel's per-socket statistics.
  void raise_to(std::uint64_t total) noexcept {
    if (total > get()) value_.store(total, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Which ports a port counter applies to.
enum class PortScope : std::uint8_t { kAll, kGuest };

// How one counter is shown. Entries of one Prometheus family are adjacent;
// the first carries the family's HELP, the others leave it empty.
struct CounterInfo {
  std::string_view name;    // JSON key in stats.get: "interrupts_suppressed"
  std::string_view family;  // family after the set's prefix: "interrupts_suppressed_total"
  std::string_view help;    // the family's HELP (first entry of a family only)
  std::string_view label = {}, value = {};  // one constant label, e.g. direction="rx"
  std::string_view column = {};             // xdpvhostctl column; "" when not shown
  // What one count is in the family's unit: 1, or 1e-9 for a count of
  // nanoseconds shown in a *_seconds_total family.
  double scale = 1.0;
};

template <class Set>
struct CounterField {
  Counter Set::*member;
  CounterInfo info;
  PortScope scope = PortScope::kAll;
};

// ---- ports ----------------------------------------------------------------------
// Directions are the switch's, as in OVS and DPDK's vhost PMD: rx = frames
// the switch received from the port (a guest's transmit queues, a NIC's RX
// ring), tx = frames it sent into the port (a guest's receive queues, a
// NIC's TX ring). Families are xdpvhost_port_* for guest ports (label port)
// and xdpvhost_uplink_* for uplink queues (labels uplink, queue).
struct PortCounters {
  Counter rx_packets, rx_bytes;
  Counter tx_packets, tx_bytes;
  Counter kicks;                  // guest notifications read from kick eventfds
  Counter interrupts;             // call eventfd writes
  Counter interrupts_suppressed;  // used updates the guest asked not to be told about
  Counter queue_errors;           // queues broken by a malformed ring
  Counter mac_learned;            // source MACs learned (mac_policy learn, learn-move)
  Counter gso_rx;                 // GSO frames taken from the guest
  Counter gso_tx;                 // GSO frames delivered to the guest whole
  Counter gso_segments;           // segments made here in software from GSO frames
  Counter csum_software;          // partial checksums finished here in software
  Counter csum_offloaded;         // partial checksums handed to the NIC (AF_XDP TX metadata)
  Counter waits;                  // times a frame from it waited for a full destination
  Counter busy_ns;                // its thread's time polling it, in rounds that took frames
  std::array<Counter, kDropReasons> drops;
  std::array<Counter, net::kOffloadErrorCount> offload_refused;  // by OffloadError
  std::array<Counter, kMacRefusals> mac_refused;                 // by MacRefusal

  void drop(DropReason r, std::uint64_t n = 1) noexcept {
    drops[static_cast<std::size_t>(r)].add(n);
  }
  void refused(net::OffloadError e) noexcept { offload_refused[static_cast<std::size_t>(e)].add(); }
  void refused(MacRefusal r) noexcept { mac_refused[static_cast<std::size_t>(r)].add(); }
};

inline constexpr std::array<CounterField<PortCounters>, 16> kPortCounters{{
    {&PortCounters::rx_packets,
     {"rx_packets", "packets_total",
      "Frames per port, seen from the switch: rx taken from the port (a guest's transmit "
      "queues, a NIC queue's RX ring), tx put into it (a guest's receive queues, the NIC "
      "queue's TX ring).",
      "direction", "rx", "RX PKTS"}},
    {&PortCounters::tx_packets, {"tx_packets", "packets_total", "", "direction", "tx", "TX PKTS"}},
    {&PortCounters::rx_bytes,
     {"rx_bytes", "bytes_total",
      "Bytes per port (frames without the virtio-net header), directions as the packets "
      "family.",
      "direction", "rx", "RX BYTES"}},
    {&PortCounters::tx_bytes, {"tx_bytes", "bytes_total", "", "direction", "tx", "TX BYTES"}},
    {&PortCounters::kicks,
     {"kicks",
      "kicks_total",
      "Guest notifications (kick eventfd) the daemon received.",
      {},
      {},
      "KICKS"},
     PortScope::kGuest},
    {&PortCounters::interrupts,
     {"interrupts", "interrupts_total", "Guest interrupts (call eventfd) sent.", {}, {}, "IRQS"},
     PortScope::kGuest},
    {&PortCounters::interrupts_suppressed,
     {"interrupts_suppressed",
      "interrupts_suppressed_total",
      "Interrupts not sent: coalesced by signal_batch or suppressed by the guest (EVENT_IDX, "
      "NO_INTERRUPT).",
      {},
      {},
      "IRQS SUPPRESSED"},
     PortScope::kGuest},
    {&PortCounters::queue_errors,
     {"queue_errors", "queue_errors_total",
      "Virtqueues found malformed and stopped (see port.get for the error)."},
     PortScope::kGuest},
    {&PortCounters::mac_learned,
     {"mac_learned", "mac_learned_total",
      "Source MACs a guest port learned (mac_policy learn or learn-move); port.get shows the "
      "current one."},
     PortScope::kGuest},
    {&PortCounters::gso_rx,
     {"gso_rx", "gso_frames_total",
      "GSO (TSO/USO) frames of a guest port: rx taken from the guest, tx delivered to it whole.",
      "direction", "rx"},
     PortScope::kGuest},
    {&PortCounters::gso_tx,
     {"gso_tx", "gso_frames_total", "", "direction", "tx"},
     PortScope::kGuest},
    {&PortCounters::gso_segments,
     {"gso_segments", "gso_segments_total",
      "Segments made in software from GSO frames, at the port they were delivered to (the "
      "uplink, or a guest that does not take the GSO type)."}},
    {&PortCounters::csum_software,
     {"csum_software", "checksums_total",
      "Partial checksums (NEEDS_CSUM) finished for frames delivered to the port: in software, "
      "or handed to the NIC (AF_XDP TX checksum offload).",
      "path", "software"}},
    {&PortCounters::csum_offloaded, {"csum_offloaded", "checksums_total", "", "path", "offloaded"}},
    {&PortCounters::waits,
     {"waits", "waits_total",
      "Times a unicast frame from the port waited because its destination was full (an "
      "uplink's TX ring, the mailbox toward another service thread): it stayed on the port's "
      "ring and was taken again in a later round, nothing dropped (lib/dataplane/README.md)."}},
    {&PortCounters::busy_ns,
     {"busy_ns",
      "busy_seconds_total",
      "Time the port's service thread spent polling it in rounds that took frames from it "
      "(forwarding them included; a guest port sums its queue groups): what the port costs its "
      "thread. rate() of it is the share of a core.",
      {},
      {},
      {},
      1e-9}},
}};

// A guest's refused offload requests, by reason (net::OffloadError): JSON
// object "offload_refused", family offload_refused_total with label reason.
inline constexpr CounterInfo kOffloadRefused{
    "offload_refused", "offload_refused_total",
    "Frames a guest sent with a virtio-net GSO/checksum request the frame contradicts, by "
    "reason (dropped as bad_offload).",
    "reason"};

// A guest port's refused source MACs (MAC learning), by reason (MacRefusal):
// JSON object "mac_refused", family mac_refused_total with label reason.
inline constexpr CounterInfo kMacRefused{
    "mac_refused", "mac_refused_total",
    "Source MACs a guest sent from that its port may not learn, by reason (its frames are "
    "dropped as spoofed_source).",
    "reason"};
// Every port's drops, by reason: JSON object "drops" (every reason, zero or
// not), family drops_total with label reason.
inline constexpr CounterInfo kPortDrops{
    "drops", "drops_total", "Frames dropped at a port, by reason.", "reason", {}, "DROPS"};

// ---- queue pairs of a guest port --------------------------------------------------
// Frames per queue pair, directions as the port's: rx taken from the pair's
// transmit queue, tx put into its receive queue. Written by the thread that
// polls the pair. JSON array "queue_pairs" of a port's stats (one object per
// configured pair: "pair", "thread" and these), family
// xdpvhost_port_queue_packets_total with labels queue and direction.
struct QueuePairCounters {
  Counter rx_packets, tx_packets;
};

inline constexpr std::array<CounterField<QueuePairCounters>, 2> kQueuePairCounters{{
    {&QueuePairCounters::rx_packets,
     {"rx_packets", "queue_packets_total",
      "Frames per queue pair of a guest port, directions as xdpvhost_port_packets_total: rx "
      "taken from the pair's transmit queue, tx put into its receive queue.",
      "direction", "rx"}},
    {&QueuePairCounters::tx_packets, {"tx_packets", "queue_packets_total", "", "direction", "tx"}},
}};

// The per-pair objects in a port's stats, and the label naming the pair.
inline constexpr CounterInfo kQueuePairs{"queue_pairs", "queue_packets_total", "", "queue"};

// ---- uplink queues (beyond their port counters) -----------------------------------
struct UplinkQueueCounters {
  // XDP_STATISTICS of the queue's sockets (every socket it had), refreshed by
  // housekeeping (~10 Hz) and at unbind.
  Counter rx_dropped, rx_invalid_descs, tx_invalid_descs, rx_ring_full, rx_fill_ring_empty_descs,
      tx_ring_empty_descs;
  Counter tx_kicks;        // sendto() calls
  Counter tx_kicks_again;  // sendto() answered EAGAIN (copy-mode batch budget used up)
  Counter napi_polls;      // recvfrom() driving NAPI while the rings were empty
  Counter flood_rx;        // broadcast/multicast copies from the packet socket
  Counter flood_dropped;   // lost in the packet socket's buffer
  Counter gro_frames;      // super-frames GRO made for guests
  Counter gro_segments;    // segments coalesced into them
};

inline constexpr std::array<CounterField<UplinkQueueCounters>, 13> kUplinkQueueCounters{{
    {&UplinkQueueCounters::rx_dropped,
     {"rx_dropped",
      "xsk_rx_dropped_total",
      "XDP_STATISTICS rx_dropped: frames the kernel dropped for the AF_XDP socket (no room, "
      "too large).",
      {},
      {},
      "RX DROPPED"}},
    {&UplinkQueueCounters::rx_invalid_descs,
     {"rx_invalid_descs", "xsk_rx_invalid_descs_total",
      "XDP_STATISTICS rx_invalid_descs: invalid descriptors on the fill ring."}},
    {&UplinkQueueCounters::tx_invalid_descs,
     {"tx_invalid_descs", "xsk_tx_invalid_descs_total",
      "XDP_STATISTICS tx_invalid_descs: invalid descriptors on the TX ring."}},
    {&UplinkQueueCounters::rx_ring_full,
     {"rx_ring_full",
      "xsk_rx_ring_full_total",
      "XDP_STATISTICS rx_ring_full: frames dropped because the RX ring was full.",
      {},
      {},
      "RX RING FULL"}},
    {&UplinkQueueCounters::rx_fill_ring_empty_descs,
     {"rx_fill_ring_empty_descs",
      "xsk_rx_fill_ring_empty_descs_total",
      "XDP_STATISTICS rx_fill_ring_empty_descs: times the fill ring was empty.",
      {},
      {},
      "FILL EMPTY"}},
    {&UplinkQueueCounters::tx_ring_empty_descs,
     {"tx_ring_empty_descs",
      "xsk_tx_ring_empty_descs_total",
      "XDP_STATISTICS tx_ring_empty_descs: times the kernel found the TX ring empty.",
      {},
      {},
      "TX RING EMPTY"}},
    {&UplinkQueueCounters::tx_kicks,
     {"tx_kicks", "tx_kicks_total",
      "sendto() calls that kicked the AF_XDP TX ring, by result (again: EAGAIN, the kernel's "
      "batch budget was used up and descriptors stayed on the ring).",
      "result", "sent", "TX KICKS"}},
    {&UplinkQueueCounters::tx_kicks_again,
     {"tx_kicks_again", "tx_kicks_total", "", "result", "again"}},
    {&UplinkQueueCounters::napi_polls,
     {"napi_polls", "napi_polls_total",
      "recvfrom() calls driving the NIC's NAPI context while the rings were empty (NAPI busy "
      "polling)."}},
    {&UplinkQueueCounters::flood_rx,
     {"flood_rx", "flood_frames_total",
      "Broadcast and multicast frames the uplink's flood (packet) socket received."}},
    {&UplinkQueueCounters::flood_dropped,
     {"flood_dropped", "flood_drops_total",
      "Broadcast and multicast frames the uplink's flood path dropped (packet socket full)."}},
    {&UplinkQueueCounters::gro_frames,
     {"gro_frames", "gro_frames_total",
      "GSO super-frames software GRO made from the queue's TCP segments for guests with "
      "GUEST_TSO."}},
    {&UplinkQueueCounters::gro_segments,
     {"gro_segments", "gro_segments_total", "TCP segments GRO coalesced into super-frames."}},
}};

// ---- service threads --------------------------------------------------------------

// Burst sizes (frames moved per poll round) in power-of-two buckets:
// 1, 2, 4, ... 256, and more.
struct BurstHistogram {
  static constexpr std::size_t kBuckets = 10;
  static constexpr std::uint32_t upper_bound(std::size_t i) { return 1u << i; }  // last is +Inf
  std::array<Counter, kBuckets> buckets;
  Counter sum;
  Counter count;

  void record(std::uint32_t frames) noexcept {
    std::size_t i = 0;
    while (i + 1 < kBuckets && frames > upper_bound(i)) ++i;
    buckets[i].add();
    sum.add(frames);
    count.add();
  }
};

struct ThreadCounters {
  Counter busy_ns;            // the length of its poll rounds that moved frames
  Counter busy_iterations;    // poll rounds that moved frames
  Counter empty_iterations;   // poll rounds that found nothing (busy polling)
  Counter sleeps;             // times the thread blocked in epoll
  Counter wakeups;            // times it woke from epoll
  Counter commands;           // control commands executed
  Counter dropped_port_gone;  // mailbox frames for a port removed meanwhile
  BurstHistogram bursts;
};

// Families are xdpvhost_thread_* (label thread).
inline constexpr std::array<CounterField<ThreadCounters>, 7> kThreadCounters{{
    {&ThreadCounters::busy_ns,
     {"busy_ns",
      "busy_seconds_total",
      "Time a service thread spent in poll rounds that moved frames (its ports' busy time, "
      "frames from other threads and the end of each round): rate() of it is the share of a "
      "core it needs; the rest of its time it busy-polls empty rings or sleeps.",
      {},
      {},
      {},
      1e-9}},
    {&ThreadCounters::busy_iterations,
     {"busy_iterations", "iterations_total",
      "Poll rounds of a service thread: result work (moved frames) or empty (busy polling found "
      "nothing).",
      "result", "work", "BUSY ITERATIONS"}},
    {&ThreadCounters::empty_iterations,
     {"empty_iterations", "iterations_total", "", "result", "empty", "EMPTY ITERATIONS"}},
    {&ThreadCounters::sleeps,
     {"sleeps", "sleeps_total", "Times a service thread blocked in epoll.", {}, {}, "SLEEPS"}},
    {&ThreadCounters::wakeups,
     {"wakeups", "wakeups_total", "Times a service thread woke from epoll.", {}, {}, "WAKEUPS"}},
    {&ThreadCounters::commands,
     {"commands", "commands_total",
      "Control commands a service thread executed (ring starts and stops, port moves, "
      "tunables)."}},
    {&ThreadCounters::dropped_port_gone,
     {"dropped_port_gone", "drops_total",
      "Frames a service thread dropped outside any port, by reason (port_gone: queued for a "
      "port removed meanwhile).",
      "reason", "port_gone"}},
}};

// The values of every counter of a table at one moment.
template <std::size_t N>
using CounterValues = std::array<std::uint64_t, N>;

template <class Set, std::size_t N>
CounterValues<N> read_counters(const Set& set,
                               const std::array<CounterField<Set>, N>& table) noexcept {
  CounterValues<N> v{};
  for (std::size_t i = 0; i < N; ++i) v[i] = (set.*(table[i].member)).get();
  return v;
}

// The row of `member` in `table`, for the few places that single one out.
template <class Set, std::size_t N>
constexpr std::size_t counter_index(const std::array<CounterField<Set>, N>& table,
                                    Counter Set::*member) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (table[i].member == member) return i;
  return N;
}

}  // namespace xdpvhost::dataplane

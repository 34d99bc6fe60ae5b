#pragma once
// Software GRO toward a guest that negotiated GUEST_TSO4/6: in-order TCP
// segments of one flow that arrive within one burst are described as one
// GSO super-frame, without copying their payload.
//
// Per burst: offer() every received frame in arrival order, then flush()
// once at the end of the burst. Both hand finished frames to `deliver`
// (any callable taking `const GroFrame&`), so frames of one flow leave in
// their arrival order:
//   merged  - appended to a held super-frame;
//   held    - started a new one (a held flow that this segment could not
//             continue, e.g. after a gap, went out through `deliver` first);
//   deliver - not coalescable: deliver this frame yourself, now. Held
//             segments of its flow have already gone out through `deliver`.
// `deliver` must not call back into the table. A frame that was held stays valid (the caller keeps
// its receive buffer) until the flush that delivers it; a lone held segment is delivered as itself
// at the end of the burst, so nothing waits for a later burst.
//
// A frame is one contiguous buffer (a UMEM frame), or, with AF_XDP
// multi-buffer, scattered over spans (the UMEM frames of a descriptor chain,
// e.g. a 9014-byte frame in 3 or 6 of them). A scattered segment coalesces
// only when its headers all lie in the first span (an AF_XDP chain's first
// UMEM frame is full and longer than kGroMaxHeader); otherwise it is
// delivered, after its held flow. Its payload is the rest of the first span
// and the spans after it: a super-frame's payload is a list of ranges, at
// most kGroMaxPayloadSpans of them (a segment that would pass that closes the
// held super-frame and starts a new one). The caller's span array need not
// outlive offer(); the bytes do, as for a contiguous frame.
//
// What coalesces (Linux's inet_gro_receive / ipv6_gro_receive /
// tcp_gro_receive, with the differences marked *):
//  - Ethernet (one VLAN tag at most) with identical L2 header bytes; IPv4
//    without options, DF set, not a fragment, header checksum valid; or
//    IPv6 without extension headers; then TCP with payload > 0.
//  - A flow: IP version, addresses, ports. Segments of a held flow merge
//    when: TOS and TTL (IPv4) / traffic class, flow label and hop limit
//    (IPv6) are equal, ECN bits included (a CE mark ends the super-frame);
//    the IPv4 id is the previous one + 1, or the same for every segment;
//    ack number, window, data offset equal; option bytes equal except the
//    timestamp option's TSval/TSecr, which may stay or advance (*Linux
//    wants every option byte equal; the super-frame carries the last
//    segment's values, as inet_lro did); seq continues the previous one;
//    payload <= the first segment's (the MSS); a shorter segment or PSH is
//    merged and ends the super-frame.
//  - Flags: ACK, optionally PSH. CWR (only with GroConfig::ecn, i.e.
//    GUEST_ECN) may start a super-frame but not join one; the super-frame
//    then has the ECN GSO bit. *FIN, SYN, RST, URG and ECE segments are
//    delivered alone (Linux merges FIN and flushes at once).
//  - Checksums: the TCP checksum of every segment (over all its spans) is
//    verified in software unless the caller says the device verified it; a
//    bad one is delivered alone (the guest drops it).
//  - Bounds: GroConfig::max_segments per super-frame, the IP packet at most
//    65535 bytes, the Ethernet frame at most max_frame_len, and
//    kGroMaxPayloadSpans payload ranges.
// A super-frame goes to the guest with gso_type TCPV4/TCPV6, gso_size = the
// MSS, hdr_len = its headers, and NEEDS_CSUM (csum_start = TCP header,
// csum_offset 16, the field holding the pseudo-header sum, as Linux's
// tcp_gro_complete leaves it and virtio 1.2 requires for GSO). A lone
// segment goes unchanged, DATA_VALID if its checksum was verified.

#include <cstdint>

#include "net/byte_spans.hpp"
#include "net/ethernet.hpp"
#include "net/offload_request.hpp"
#include "net/packet_headers.hpp"

namespace xdpvhost::net {

inline constexpr std::uint32_t kGroMaxFlows = 16;
inline constexpr std::uint32_t kGroMaxSegments = 64;
// VLAN-tagged Ethernet + IPv6 + TCP with 40 option bytes.
inline constexpr std::uint32_t kGroMaxHeader = 128;
// Payload ranges of one super-frame: one per contiguous segment; a scattered
// segment takes one per span its payload touches. A segment that needs an
// AF_XDP chain is longer than a UMEM frame's room (at least 1792 bytes), so it
// carries more than 1664 bytes of payload: a 64 KiB super-frame holds at most
// 40 of them, in fewer than (65535 + 40 * 128) / 1792 + 40 < 80 ranges. The
// bound never cuts a super-frame short on an uplink; only unusually small
// spans reach it.
inline constexpr std::uint32_t kGroMaxPayloadSpans = 2 * kGroMaxSegments;

struct GroConfig {
  bool ipv4 = true;                              // GUEST_TSO4
  bool ipv6 = true;                              // GUEST_TSO6
  bool ecn = false;                              // GUEST_ECN
  std::uint32_t max_segments = kGroMaxSegments;  // 1..kGroMaxSegments
  std::uint32_t max_frame_len = kMaxGsoFrame;    // the longest frame the guest takes
};

// One frame for the guest: header bytes, then the payload ranges in order.
struct GroFrame {
  const std::uint8_t* header = nullptr;  // valid during the callback only
  std::uint32_t header_len = 0;
  const ByteSpan* payload = nullptr;  // into the caller's receive buffers
  std::uint32_t payload_count = 0;
  std::uint32_t len = 0;       // header_len + all payload bytes
  std::uint32_t segments = 0;  // 1: a lone segment, bytes unchanged
  OffloadRequest offload;      // GSO + NEEDS_CSUM when segments > 1
  FrameLayout layout;          // when segments > 1: the merged frame's headers
  bool data_valid = false;     // a lone segment whose checksum was verified
};

enum class GroVerdict : std::uint8_t { merged, held, deliver };

struct GroResult {
  GroVerdict verdict = GroVerdict::deliver;
  // deliver: the frame's TCP checksum was verified (software or device):
  // the guest may get DATA_VALID.
  bool data_valid = false;
};

class GroTable {
 public:
  explicit GroTable(const GroConfig& config = {}) noexcept;
  GroTable(const GroTable&) = delete;
  GroTable& operator=(const GroTable&) = delete;

  // Between bursts only (after flush()).
  void configure(const GroConfig& config) noexcept;
  const GroConfig& config() const noexcept { return config_; }

  // `frame` is one contiguous received frame (a UMEM frame).
  // `checksum_verified`: the device verified its TCP checksum.
  template <class Deliver>
  GroResult offer(const std::uint8_t* frame, std::uint32_t len, bool checksum_verified,
                  Deliver& deliver) noexcept {
    return offer(frame, len, checksum_verified, Sink{&trampoline<Deliver>, &deliver});
  }
  // `frame` is one received frame scattered over frame.count spans (an AF_XDP
  // descriptor chain); it coalesces only if its headers lie in spans[0].
  template <class Deliver>
  GroResult offer(const ByteSpans& frame, bool checksum_verified, Deliver& deliver) noexcept {
    return offer(frame, checksum_verified, Sink{&trampoline<Deliver>, &deliver});
  }
  // Delivers every held flow in the order they started; the table is empty
  // afterwards. Call at the end of every burst.
  template <class Deliver>
  void flush(Deliver& deliver) noexcept {
    flush(Sink{&trampoline<Deliver>, &deliver});
  }

  std::uint32_t held_flows() const noexcept { return active_; }

 private:
  struct Sink {
    void (*fn)(void*, const GroFrame&) noexcept;
    void* ctx;
    void operator()(const GroFrame& f) const noexcept { fn(ctx, f); }
  };
  template <class Deliver>
  static void trampoline(void* ctx, const GroFrame& f) noexcept {
    (*static_cast<Deliver*>(ctx))(f);
  }

  struct Flow {
    std::uint32_t hash = 0;
    FrameLayout layout;           // of the first segment
    std::uint16_t ts_offset = 0;  // TSval's offset in header, 0 without timestamps
    std::uint16_t mss = 0;
    std::uint16_t first_id = 0;
    std::uint16_t last_id = 0;
    std::uint8_t id_step = 0;  // IPv4 id per segment: 0 or 1, fixed by the second segment
    bool closed = false;       // a shorter or PSH segment ended it
    bool psh = false;
    bool verified = false;
    std::uint32_t next_seq = 0;
    std::uint32_t last_tsval = 0;
    std::uint32_t last_tsecr = 0;
    std::uint32_t payload_bytes = 0;
    std::uint32_t count = 0;          // segments
    std::uint32_t payload_count = 0;  // ranges in payload: count, more with scattered segments
    std::uint8_t header[kGroMaxHeader];
    ByteSpan payload[kGroMaxPayloadSpans];
  };
  struct Candidate;

  GroResult offer(const std::uint8_t* frame, std::uint32_t len, bool checksum_verified,
                  Sink deliver) noexcept;
  GroResult offer(const ByteSpans& frame, bool checksum_verified, Sink deliver) noexcept;
  void flush(Sink deliver) noexcept;

  // After parsing: merges, holds or hands back the candidate (`ok`: it may
  // coalesce). kScattered: its payload is in c.spans.
  template <bool kScattered>
  GroResult place(const Candidate& c, bool ok, Sink deliver) noexcept;
  // A scattered frame whose headers pass its first span: its held flow, if
  // any, goes out before the caller delivers it.
  void flush_flow_of(const ByteSpans& frame, Sink deliver) noexcept;

  Flow* find(const std::uint8_t* frame, const FrameLayout& l, std::uint32_t hash) noexcept;
  bool can_merge(const Flow& f, const Candidate& c) const noexcept;
  void merge(Flow& f, const Candidate& c) noexcept;
  Flow& start(const Candidate& c, Sink deliver) noexcept;
  void emit(Flow& f, Sink deliver) noexcept;
  void remove(const Flow& f, Sink deliver) noexcept;

  GroConfig config_;
  std::uint32_t active_ = 0;
  std::uint32_t used_ = 0;                 // bit per slot of flows_
  std::uint8_t order_[kGroMaxFlows] = {};  // active flows (slot numbers) by start
  Flow flows_[kGroMaxFlows];
};

}  // namespace xdpvhost::net

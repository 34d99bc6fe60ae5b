#include "net/gro_table.hpp"

#include <cstring>

#include "net/byte_order.hpp"
#include "net/internet_checksum.hpp"

namespace xdpvhost::net {
namespace {

constexpr std::uint8_t kTcpOptionEnd = 0;
constexpr std::uint8_t kTcpOptionNop = 1;
constexpr std::uint8_t kTcpOptionTimestamp = 8;
constexpr std::uint8_t kTcpTimestampLen = 10;

// Where the addresses of the IP header are and how long they are.
const std::uint8_t* addresses(const std::uint8_t* frame, const FrameLayout& l) noexcept {
  return frame + l.l3_offset + (l.l3 == L3Kind::ipv4 ? 12 : 8);
}
std::uint32_t addresses_len(const FrameLayout& l) noexcept {
  return l.l3 == L3Kind::ipv4 ? 8 : 32;
}

std::uint32_t flow_hash(const std::uint8_t* frame, const FrameLayout& l) noexcept {
  std::uint32_t h = static_cast<std::uint32_t>(l.l3);
  const std::uint8_t* a = addresses(frame, l);
  for (std::uint32_t i = 0; i < addresses_len(l); i += 4) {
    std::uint32_t w;
    std::memcpy(&w, a + i, 4);
    h = (h ^ w) * 0x9e3779b1u;
  }
  std::uint32_t ports;
  std::memcpy(&ports, frame + l.l4_offset, 4);
  return (h ^ ports) * 0x9e3779b1u;
}

// The offset (in the frame) of the timestamp option's TSval, 0 if there is
// none or the option list is malformed (then all option bytes are compared).
std::uint16_t find_timestamp(const std::uint8_t* frame, const FrameLayout& l) noexcept {
  std::uint32_t i = l.l4_offset + kTcpMinHeader;
  const std::uint32_t end = l.header_len();
  while (i < end) {
    const std::uint8_t kind = frame[i];
    if (kind == kTcpOptionEnd) return 0;
    if (kind == kTcpOptionNop) {
      ++i;
      continue;
    }
    if (i + 1 >= end) return 0;
    const std::uint8_t len = frame[i + 1];
    if (len < 2 || i + len > end) return 0;
    if (kind == kTcpOptionTimestamp && len == kTcpTimestampLen) {
      return static_cast<std::uint16_t>(i + 2);
    }
    i += len;
  }
  return 0;
}

bool serial_not_before(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) >= 0;
}

std::uint32_t pseudo_sum(const std::uint8_t* header, const FrameLayout& l,
                         std::uint32_t l4_len) noexcept {
  const std::uint8_t* a = addresses(header, l);
  return l.l3 == L3Kind::ipv4 ? pseudo_header_sum_ipv4(a, kIpProtoTcp, l4_len)
                              : pseudo_header_sum_ipv6(a, kIpProtoTcp, l4_len);
}

}  // namespace

// A received TCP segment that may join or start a super-frame.
struct GroTable::Candidate {
  const std::uint8_t* frame = nullptr;  // its headers: the frame, or its first span
  const ByteSpans* spans = nullptr;     // a scattered frame: all of it
  std::uint32_t payload_spans = 1;      // payload ranges (scattered: counted)
  FrameLayout layout;
  std::uint32_t hash = 0;
  std::uint32_t payload = 0;
  std::uint32_t seq = 0;
  std::uint32_t tsval = 0;
  std::uint32_t tsecr = 0;
  std::uint16_t ts_offset = 0;
  std::uint16_t ip_id = 0;
  std::uint8_t flags = 0;
  bool verified = false;
};

namespace {

// Everything about a single segment's headers that decides whether it may
// be coalesced at all; fills the candidate's fields as it goes. The TCP
// checksum is left to verify_checksum().
template <class C>
bool coalescable(const GroConfig& config, C& c) noexcept {
  const FrameLayout& l = c.layout;
  const std::uint8_t* ip = c.frame + l.l3_offset;
  if (l.l3 == L3Kind::ipv4) {
    if (!config.ipv4 || l.l3_header_len() != kIpv4MinHeader) return false;
    if ((load_be16(ip + 6) & 0x4000) == 0) return false;  // DF
    if (checksum_finish(checksum_bytes(ip, kIpv4MinHeader)) != 0) return false;
    c.ip_id = load_be16(ip + 4);
  } else {
    if (!config.ipv6 || l.l3_header_len() != kIpv6Header) return false;
  }
  if (l.header_len() > kGroMaxHeader) return false;
  c.payload = l.payload_len();
  if (c.payload == 0) return false;
  const std::uint8_t* th = c.frame + l.l4_offset;
  c.flags = th[13];
  if ((c.flags & kTcpAck) == 0) return false;
  if (c.flags & (kTcpFin | kTcpSyn | kTcpRst | kTcpUrg | kTcpEce)) return false;
  if ((c.flags & kTcpCwr) && !config.ecn) return false;
  c.seq = load_be32(th + 4);
  c.ts_offset = find_timestamp(c.frame, l);
  if (c.ts_offset != 0) {
    c.tsval = load_be32(c.frame + c.ts_offset);
    c.tsecr = load_be32(c.frame + c.ts_offset + 4);
  }
  return true;
}

// The TCP checksum of a candidate, over its one buffer or all its spans
// (skipped when the device already verified it).
template <class C>
bool verify_checksum(C& c) noexcept {
  if (c.verified) return true;
  const FrameLayout& l = c.layout;
  const std::uint32_t sum = pseudo_sum(c.frame, l, l.l4_len());
  const std::uint32_t folded = c.spans == nullptr
                                   ? checksum_bytes(c.frame + l.l4_offset, l.l4_len(), sum)
                                   : checksum_spans(*c.spans, l.l4_offset, l.l4_len(), sum);
  if (checksum_finish(folded) != 0) return false;
  c.verified = true;
  return true;
}

// Calls fn(ByteSpan) for every non-empty piece of [begin, end) of a
// scattered frame, in order.
template <class Fn>
void for_each_range(const ByteSpans& frame, std::uint32_t begin, std::uint32_t end,
                    Fn&& fn) noexcept {
  std::uint32_t at = 0;  // the frame offset of span i
  for (std::uint32_t i = 0; i < frame.count && at < end; ++i) {
    const ByteSpan& s = frame.spans[i];
    const std::uint32_t from = begin > at ? begin - at : 0;
    const std::uint32_t to = end - at < s.len ? end - at : s.len;
    if (from < to) fn(ByteSpan{s.data + from, to - from});
    at += s.len;
  }
}

}  // namespace

GroTable::GroTable(const GroConfig& config) noexcept {
  configure(config);
}

void GroTable::configure(const GroConfig& config) noexcept {
  config_ = config;
  if (config_.max_segments == 0) config_.max_segments = 1;
  if (config_.max_segments > kGroMaxSegments) config_.max_segments = kGroMaxSegments;
}

GroTable::Flow* GroTable::find(const std::uint8_t* frame, const FrameLayout& l,
                               std::uint32_t hash) noexcept {
  for (std::uint32_t i = 0; i < active_; ++i) {
    Flow& f = flows_[order_[i]];
    const FrameLayout& fl = f.layout;
    if (f.hash != hash || fl.l3 != l.l3 || fl.l3_offset != l.l3_offset) continue;
    if (std::memcmp(f.header, frame, l.l3_offset) != 0) continue;  // MACs, VLAN tag
    if (std::memcmp(addresses(f.header, fl), addresses(frame, l), addresses_len(l)) != 0) continue;
    if (std::memcmp(f.header + fl.l4_offset, frame + l.l4_offset, 4) != 0) continue;  // ports
    return &f;
  }
  return nullptr;
}

bool GroTable::can_merge(const Flow& f, const Candidate& c) const noexcept {
  const FrameLayout& l = f.layout;
  if (f.closed || f.count >= config_.max_segments) return false;
  if (c.flags & kTcpCwr) return false;  // CWR only on a super-frame's first segment
  if (c.layout.header_len() != l.header_len()) return false;
  const std::uint8_t* h = f.header;
  const std::uint8_t* p = c.frame;
  const std::uint32_t l3 = l.l3_offset;
  if (l.l3 == L3Kind::ipv4) {
    if (h[l3 + 1] != p[l3 + 1] || h[l3 + 8] != p[l3 + 8]) return false;  // TOS, TTL
    if (std::memcmp(h + l3 + 6, p + l3 + 6, 2) != 0) return false;       // DF
    const std::uint16_t step = static_cast<std::uint16_t>(c.ip_id - f.last_id);
    if (f.count == 1 ? step > 1 : step != f.id_step) return false;
  } else {
    if (std::memcmp(h + l3, p + l3, 4) != 0 || h[l3 + 7] != p[l3 + 7]) return false;
  }
  const std::uint32_t l4 = l.l4_offset;
  if (std::memcmp(h + l4 + 8, p + l4 + 8, 5) != 0) return false;  // ack, data offset
  if ((c.flags & ~kTcpPsh) != kTcpAck) return false;
  if (std::memcmp(h + l4 + 14, p + l4 + 14, 2) != 0) return false;  // window
  // Option bytes: all equal, or all but the timestamp option's values.
  const std::uint32_t options = l4 + kTcpMinHeader;
  const std::uint32_t end = l.header_len();
  if (f.ts_offset == 0) {
    if (std::memcmp(h + options, p + options, end - options) != 0) return false;
  } else {
    const std::uint32_t ts = f.ts_offset;
    if (std::memcmp(h + options, p + options, ts - options) != 0 ||
        std::memcmp(h + ts + 8, p + ts + 8, end - ts - 8) != 0) {
      return false;
    }
    if (!serial_not_before(c.tsval, f.last_tsval) || !serial_not_before(c.tsecr, f.last_tsecr)) {
      return false;
    }
  }
  if (c.seq != f.next_seq || c.payload > f.mss) return false;
  const std::uint64_t more = std::uint64_t{f.payload_bytes} + c.payload;
  if (end - l3 + more > 0xffff || end + more > config_.max_frame_len) return false;
  return true;
}

void GroTable::merge(Flow& f, const Candidate& c) noexcept {
  ++f.count;
  if (f.count == 2) f.id_step = static_cast<std::uint8_t>(c.ip_id - f.first_id);
  f.last_id = c.ip_id;
  f.payload_bytes += c.payload;
  f.next_seq = c.seq + c.payload;
  f.last_tsval = c.tsval;
  f.last_tsecr = c.tsecr;
  if (c.payload < f.mss) f.closed = true;
  if (c.flags & kTcpPsh) f.psh = f.closed = true;
}

GroTable::Flow& GroTable::start(const Candidate& c, Sink deliver) noexcept {
  if (active_ == kGroMaxFlows) remove(flows_[order_[0]], deliver);  // the oldest
  std::uint32_t slot = 0;
  while (used_ & (1u << slot)) ++slot;
  used_ |= 1u << slot;
  order_[active_++] = static_cast<std::uint8_t>(slot);
  Flow& f = flows_[slot];
  f.hash = c.hash;
  f.layout = c.layout;
  f.ts_offset = c.ts_offset;
  f.mss = static_cast<std::uint16_t>(c.payload);
  f.first_id = f.last_id = c.ip_id;
  f.id_step = 0;
  f.closed = false;
  f.psh = false;
  f.verified = c.verified;
  f.next_seq = c.seq + c.payload;
  f.last_tsval = c.tsval;
  f.last_tsecr = c.tsecr;
  f.payload_bytes = c.payload;
  f.count = 1;
  f.payload_count = 0;
  std::memcpy(f.header, c.frame, c.layout.header_len());
  return f;
}

void GroTable::emit(Flow& f, Sink deliver) noexcept {
  const FrameLayout& l = f.layout;
  const std::uint32_t header_len = l.header_len();
  GroFrame out;
  out.header = f.header;
  out.header_len = header_len;
  out.payload = f.payload;
  out.payload_count = f.payload_count;
  out.len = header_len + f.payload_bytes;
  out.segments = f.count;
  if (f.count == 1) {
    out.data_valid = f.verified;
    deliver(out);
    return;
  }
  std::uint8_t* ip = f.header + l.l3_offset;
  const std::uint32_t l4_len = l.l4_header_len + f.payload_bytes;
  if (l.l3 == L3Kind::ipv4) {
    store_be16(ip + 2, static_cast<std::uint16_t>(kIpv4MinHeader + l4_len));
    store_be16(ip + 10, ipv4_header_checksum(ip, kIpv4MinHeader));
  } else {
    store_be16(ip + 4, static_cast<std::uint16_t>(l4_len));
  }
  std::uint8_t* th = f.header + l.l4_offset;
  if (f.psh) th[13] |= kTcpPsh;
  if (f.ts_offset != 0) {
    store_be32(f.header + f.ts_offset, f.last_tsval);
    store_be32(f.header + f.ts_offset + 4, f.last_tsecr);
  }
  store_be16(th + kTcpChecksumOffset, static_cast<std::uint16_t>(pseudo_sum(f.header, l, l4_len)));
  out.offload.gso.type = l.l3 == L3Kind::ipv4 ? GsoType::tcpv4 : GsoType::tcpv6;
  out.offload.gso.ecn = (th[13] & kTcpCwr) != 0;
  out.offload.gso.gso_size = f.mss;
  out.offload.gso.hdr_len = static_cast<std::uint16_t>(header_len);
  out.offload.csum = ChecksumRequest{true, l.l4_offset, kTcpChecksumOffset};
  // The first segment's headers with the lengths just written: no padding
  // and no IPv6 extension header is ever merged, so the packet ends with
  // the frame.
  out.layout = l;
  out.layout.frame_len = out.len;
  out.layout.packet_end = out.len;
  deliver(out);
}

void GroTable::remove(const Flow& f, Sink deliver) noexcept {
  const auto slot = static_cast<std::uint32_t>(&f - flows_);
  emit(flows_[slot], deliver);
  used_ &= ~(1u << slot);
  std::uint32_t i = 0;
  while (order_[i] != slot) ++i;
  for (; i + 1 < active_; ++i) order_[i] = order_[i + 1];
  --active_;
}

void GroTable::flush(Sink deliver) noexcept {
  for (std::uint32_t i = 0; i < active_; ++i) emit(flows_[order_[i]], deliver);
  active_ = 0;
  used_ = 0;
}

template <bool kScattered>
GroResult GroTable::place(const Candidate& c, bool ok, Sink deliver) noexcept {
  Flow* held = find(c.frame, c.layout, c.hash);
  if (!ok) {
    if (held) remove(*held, deliver);
    return {GroVerdict::deliver, c.verified};
  }
  // The payload ranges go into the flow: one for a contiguous frame, every
  // piece of [header end, packet end) for a scattered one.
  const auto add_payload = [&c](Flow& f) noexcept {
    if constexpr (kScattered) {
      for_each_range(*c.spans, c.layout.header_len(), c.layout.packet_end,
                     [&f](const ByteSpan& r) noexcept { f.payload[f.payload_count++] = r; });
    } else {
      f.payload[f.payload_count++] = ByteSpan{c.frame + c.layout.header_len(), c.payload};
    }
  };
  if (held) {
    // Every range must fit, a contiguous segment's one too: a flow started
    // by scattered segments may already hold kGroMaxPayloadSpans.
    const bool room = held->payload_count + c.payload_spans <= kGroMaxPayloadSpans;
    if (room && can_merge(*held, c)) {
      merge(*held, c);
      add_payload(*held);
      return {GroVerdict::merged, true};
    }
    remove(*held, deliver);
  }
  if (c.flags & kTcpPsh) return {GroVerdict::deliver, true};  // it would end at once
  add_payload(start(c, deliver));
  return {GroVerdict::held, true};
}

GroResult GroTable::offer(const std::uint8_t* frame, std::uint32_t len, bool checksum_verified,
                          Sink deliver) noexcept {
  Candidate c;
  c.frame = frame;
  c.verified = checksum_verified;
  if (parse_headers(frame, len, len, c.layout) != ParseError::none || c.layout.l3 == L3Kind::none ||
      c.layout.l4 != L4Kind::tcp) {
    return {GroVerdict::deliver, checksum_verified};
  }
  c.hash = flow_hash(frame, c.layout);
  const bool ok = coalescable(config_, c) && verify_checksum(c);
  return place<false>(c, ok, deliver);
}

GroResult GroTable::offer(const ByteSpans& frame, bool checksum_verified, Sink deliver) noexcept {
  if (frame.count == 0) return {GroVerdict::deliver, checksum_verified};
  const ByteSpan& head = frame.spans[0];
  if (frame.count == 1) return offer(head.data, head.len, checksum_verified, deliver);
  Candidate c;
  c.frame = head.data;
  c.spans = &frame;
  c.verified = checksum_verified;
  const ParseError e = parse_headers(head.data, head.len, frame.len, c.layout);
  if (e == ParseError::headers_too_long) {
    flush_flow_of(frame, deliver);
    return {GroVerdict::deliver, checksum_verified};
  }
  if (e != ParseError::none || c.layout.l3 == L3Kind::none || c.layout.l4 != L4Kind::tcp) {
    return {GroVerdict::deliver, checksum_verified};
  }
  c.hash = flow_hash(c.frame, c.layout);
  bool ok = coalescable(config_, c);
  if (ok) {
    c.payload_spans = 0;
    for_each_range(frame, c.layout.header_len(), c.layout.packet_end,
                   [&c](const ByteSpan&) noexcept { ++c.payload_spans; });
    ok = c.payload_spans <= kGroMaxPayloadSpans && verify_checksum(c);
  }
  return place<true>(c, ok, deliver);
}

void GroTable::flush_flow_of(const ByteSpans& frame, Sink deliver) noexcept {
  const HeaderBytes head(frame);
  FrameLayout l;
  if (parse_headers(head, frame.len, l) != ParseError::none || l.l3 == L3Kind::none ||
      l.l4 != L4Kind::tcp) {
    return;
  }
  if (Flow* held = find(head.data(), l, flow_hash(head.data(), l))) remove(*held, deliver);
}

}  // namespace xdpvhost::net

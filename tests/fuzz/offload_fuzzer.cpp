// Fuzz target: hostile virtio-net offload headers and frames through the
// whole lib/net offload path -- decode_virtio_offload, validate_offload,
// segment() into output buffers, then every segment back through a
// GroTable -- and the raw frame offered to GRO as if it came off the wire.
//
// Input:
//   byte  0      mode bits: 0 partial checksums, 1 HOST_ECN, 2 exact hdr_len,
//                3 GUEST_ECN, 4 "device verified" for the raw frame's GRO,
//                5-7 the receiving guest's GUEST_CSUM, GUEST_TSO4/6, GUEST_USO
//   bytes 1-2    MTU (little endian; 0 means 1500)
//   byte  3      max segments (0 means 128)
//   bytes 4-5    output buffer size (0 means 2048; at most 9216)
//   bytes 6-7    span sizes the frame is cut into (0 0: one span)
//   bytes 8-17   virtio-net header: flags, gso_type, hdr_len, gso_size,
//                csum_start, csum_offset (u16 little endian)
//   the rest     the frame (at most 65600 bytes), in its own heap block
//
// Checked, beyond the sanitizers: a refusal has a counter name; a valid
// request's layout lies inside the frame; every segment fits its buffer,
// parses to the same headers, carries at most gso_size payload and (with
// software checksums) valid IPv4 and L4 checksums against an independent
// byte-wise sum; the segments' payloads add up to the frame's; a guest ->
// guest plan stays inside the frame and its header decodes; GRO over the
// segments -- each contiguous, and each cut into spans of the same sizes as
// an AF_XDP descriptor chain -- delivers that payload again, in order;
// every GRO frame's payload
// ranges lie inside the frames offered and add up to its length, and a
// super-frame's NEEDS_CSUM checksum completes to a valid one.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_bytes.hpp"
#include "net/byte_spans.hpp"
#include "net/gro_table.hpp"
#include "net/gso_segmenter.hpp"
#include "net/guest_forward.hpp"
#include "net/offload_validation.hpp"
#include "net/packet_headers.hpp"
#include "net/virtio_net_offload.hpp"

namespace {

namespace net = xdpvhost::net;
using xdpvhost::fuzz::FuzzBytes;

constexpr std::uint32_t kMaxFrame = 65600;
constexpr std::uint32_t kMaxBuffer = 9216;
constexpr std::uint32_t kMaxBuffers = 256;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "offload_fuzzer: invariant violated: %s\n", what);
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) violated(what);
}

// XDPVHOST_FUZZ_REPORT=1: one line per input (to check that seeds reach
// what they are meant to).
void report(const char* stage, const char* detail, std::uint32_t n = 0) {
  static const bool on = std::getenv("XDPVHOST_FUZZ_REPORT") != nullptr;
  if (on) std::fprintf(stderr, "  offload: %s %s %u\n", stage, detail, n);
}

// The reference: a byte-at-a-time ones-complement sum, nothing from lib/net.
XDPVHOST_FUZZ_HELPER std::uint32_t ref_sum(const std::uint8_t* p, std::size_t n,
                                           std::uint64_t s = 0) {
  for (std::size_t i = 0; i < n; ++i) s += (i & 1) ? p[i] : std::uint32_t{p[i]} << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint32_t>(s);
}

// The L4 checksum of a parsed contiguous frame sums to 0xffff.
XDPVHOST_FUZZ_HELPER bool l4_checksum_ok(const std::uint8_t* f, const net::FrameLayout& l) {
  const std::size_t n = l.l4_len();
  std::uint64_t s = l.l3 == net::L3Kind::ipv4 ? ref_sum(f + l.l3_offset + 12, 8)
                                              : ref_sum(f + l.l3_offset + 8, 32);
  s += l.ip_protocol + (n >> 16) + (n & 0xffff);
  return ref_sum(f + l.l4_offset, n, s) == 0xffff;
}
XDPVHOST_FUZZ_HELPER bool ipv4_header_ok(const std::uint8_t* f, const net::FrameLayout& l) {
  return l.l3 != net::L3Kind::ipv4 || ref_sum(f + l.l3_offset, l.l3_header_len()) == 0xffff;
}

struct Sink {
  std::uint32_t capacity;
  std::vector<std::unique_ptr<std::uint8_t[]>>& pool;
  std::uint32_t handed = 0;
  std::vector<net::SegmentMeta> metas;

  net::SegmentBuffer next_buffer(std::uint32_t /*len*/) noexcept {
    if (handed >= pool.size()) return {};
    return {pool[handed++].get(), capacity};
  }
  void commit(const net::SegmentBuffer& b, const net::SegmentMeta& meta) noexcept {
    check(b.data == pool[metas.size()].get(), "commit of a buffer not handed out last");
    check(meta.len <= capacity, "segment longer than its buffer");
    check(meta.index == metas.size(), "segment index");
    metas.push_back(meta);
  }
};

// Collects what GRO delivers: the payload stream and per-frame checks.
struct GroCheck {
  const std::vector<std::pair<const std::uint8_t*, std::uint32_t>>* offered;
  std::vector<std::uint8_t> stream;
  std::uint32_t frames = 0;
  bool scattered = false;  // segments offered as spans: payload ranges >= segments

  XDPVHOST_FUZZ_HELPER bool inside_offered(const net::ByteSpan& s) const {
    for (const auto& [p, n] : *offered) {
      if (s.data >= p && s.data + s.len <= p + n) return true;
    }
    return false;
  }

  void operator()(const net::GroFrame& f) noexcept {
    check(f.segments >= 1 &&
              (scattered ? f.payload_count >= f.segments : f.payload_count == f.segments),
          "GRO segment count");
    check(f.header_len <= net::kGroMaxHeader, "GRO header too long");
    std::vector<std::uint8_t> whole(f.header, f.header + f.header_len);
    for (std::uint32_t i = 0; i < f.payload_count; ++i) {
      check(inside_offered(f.payload[i]), "GRO payload outside the offered frames");
      whole.insert(whole.end(), f.payload[i].data, f.payload[i].data + f.payload[i].len);
    }
    check(whole.size() == f.len, "GRO frame length");
    stream.insert(stream.end(), whole.begin() + f.header_len, whole.end());
    ++frames;
    net::FrameLayout l;
    check(net::parse_headers(whole.data(), f.len, f.len, l) == net::ParseError::none,
          "GRO frame does not parse");
    check(l.header_len() == f.header_len && l.packet_end == f.len, "GRO frame layout");
    if (f.segments > 1) {
      check(f.offload.csum.needed && f.offload.csum.start == l.l4_offset, "GRO NEEDS_CSUM");
      check(f.offload.gso.hdr_len == f.header_len, "GRO hdr_len");
      check(ipv4_header_ok(whole.data(), l), "GRO IPv4 header checksum");
      // The guest finishes the checksum from csum_start: it must verify.
      const std::uint32_t start = f.offload.csum.start;
      const std::uint16_t c =
          static_cast<std::uint16_t>(~ref_sum(whole.data() + start, whole.size() - start));
      whole[start + 16] = static_cast<std::uint8_t>(c >> 8);
      whole[start + 17] = static_cast<std::uint8_t>(c);
      check(l4_checksum_ok(whole.data(), l), "GRO super-frame checksum");
    }
  }

  // A frame the caller delivers itself (verdict deliver).
  void alone(const std::uint8_t* f, std::uint32_t len) {
    net::FrameLayout l;
    ++frames;
    if (net::parse_headers(f, len, len, l) == net::ParseError::none && l.l3 != net::L3Kind::none) {
      stream.insert(stream.end(), f + l.header_len(), f + l.packet_end);
    }
  }
};

// The frame cut into spans of cut_a and cut_b bytes in turns (both 0: one
// span; one of them 0: empty spans between the others), written to `out`
// (room for 2 * len + 1); returns how many.
XDPVHOST_FUZZ_HELPER std::uint32_t cut_into_spans(const std::uint8_t* frame, std::uint32_t len,
                                                  std::uint8_t cut_a, std::uint8_t cut_b,
                                                  net::ByteSpan* out) {
  std::uint32_t count = 0;
  for (std::uint32_t at = 0, i = 0; at < len; ++i) {
    std::uint32_t n = (i & 1) ? cut_b : cut_a;
    if (cut_a == 0 && cut_b == 0) n = len;
    if (n > len - at) n = len - at;
    out[count++] = {frame + at, n};
    at += n;
  }
  return count;
}

// GRO over `frames` in order; with `spans` (room for 2 * kMaxFrame + 1),
// each frame is offered cut into spans of cut_a and cut_b bytes, as an
// AF_XDP descriptor chain is.
void gro_over(const std::vector<std::pair<const std::uint8_t*, std::uint32_t>>& frames,
              const net::GroConfig& config, bool verified, GroCheck& out,
              net::ByteSpan* spans = nullptr, std::uint8_t cut_a = 0, std::uint8_t cut_b = 0) {
  net::GroTable table(config);
  out.scattered = spans != nullptr;
  for (const auto& [p, n] : frames) {
    net::GroResult r;
    if (spans != nullptr) {
      const net::ByteSpans cut(spans, cut_into_spans(p, n, cut_a, cut_b, spans));
      r = table.offer(cut, verified, out);
    } else {
      r = table.offer(p, n, verified, out);
    }
    if (r.verdict == net::GroVerdict::deliver) out.alone(p, n);
  }
  table.flush(out);
  check(table.held_flows() == 0, "GRO table not empty after flush");
}

void check_segments(const std::uint8_t* frame, std::uint32_t frame_len,
                    const net::ValidatedOffload& v, const Sink& sink, bool software) {
  const net::FrameLayout& fl = v.layout;
  if (!v.is_gso()) {
    check(sink.metas.size() == 1, "non-GSO frame made more than one segment");
    const std::uint8_t* out = sink.pool[0].get();
    const std::uint32_t len = sink.metas[0].len;
    check(len == (v.request.any() ? fl.packet_end : frame_len), "non-GSO length");
    const net::ChecksumRequest& c = v.request.csum;
    if (c.needed && software) {
      // The field held a partial sum the device adds in; with the result in
      // its place, the range plus that partial sum must sum to 0xffff.
      const std::uint8_t* field = frame + c.start + c.offset;
      const std::uint32_t partial = std::uint32_t{field[0]} << 8 | field[1];
      check(ref_sum(out + c.start, len - c.start, partial) == 0xffff,
            "non-GSO checksum not finished");
    } else {
      check(std::memcmp(out, frame, len) == 0, "non-GSO frame changed");
    }
    return;
  }
  check(sink.metas.size() == v.segments, "segment count");
  std::uint32_t payload = 0;
  for (std::size_t i = 0; i < sink.metas.size(); ++i) {
    const net::SegmentMeta& m = sink.metas[i];
    const std::uint8_t* out = sink.pool[i].get();
    check(m.last == (i + 1 == sink.metas.size()), "last flag");
    net::FrameLayout l;
    check(net::parse_headers(out, m.len, m.len, l) == net::ParseError::none,
          "segment does not parse");
    check(l.l3 == fl.l3 && l.l4 == fl.l4 && l.header_len() == fl.header_len(), "segment headers");
    check(l.packet_end == m.len, "segment IP length");
    const std::uint32_t n = l.payload_len();
    check(n <= v.request.gso.gso_size, "segment payload above gso_size");
    check(std::memcmp(out + l.header_len(), frame + fl.header_len() + payload, n) == 0,
          "segment payload");
    payload += n;
    check(ipv4_header_ok(out, l), "segment IPv4 header checksum");
    if (software) {
      check(!m.csum_partial, "software mode left a partial checksum");
      check(l4_checksum_ok(out, l), "segment L4 checksum");
    } else {
      check(m.csum_partial && m.csum_start == l.l4_offset &&
                m.csum_start + m.csum_offset + 2u <= m.len,
            "partial checksum offsets");
    }
  }
  check(payload == fl.payload_len(), "segments' payload does not add up");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::vector<std::unique_ptr<std::uint8_t[]>> pool;
  if (pool.empty()) {
    for (std::uint32_t i = 0; i < kMaxBuffers; ++i) {
      pool.push_back(std::make_unique<std::uint8_t[]>(kMaxBuffer));
    }
  }
  FuzzBytes in(data, size);
  const std::uint8_t mode = in.u8();
  net::OffloadPolicy policy;
  policy.mtu = in.u16();
  if (policy.mtu == 0) policy.mtu = 1500;
  policy.max_segments = in.u8();
  if (policy.max_segments == 0) policy.max_segments = net::OffloadPolicy{}.max_segments;
  policy.ecn = (mode & 2) != 0;
  policy.exact_hdr_len = (mode & 4) != 0;
  std::uint32_t capacity = in.u16();
  if (capacity == 0) capacity = 2048;
  if (capacity > kMaxBuffer) capacity = kMaxBuffer;
  const std::uint8_t cut_a = in.u8();
  const std::uint8_t cut_b = in.u8();
  net::VirtioNetOffload hdr;
  hdr.flags = in.u8();
  hdr.gso_type = in.u8();
  hdr.hdr_len = in.u16();
  hdr.gso_size = in.u16();
  hdr.csum_start = in.u16();
  hdr.csum_offset = in.u16();
  const auto rest = in.take(kMaxFrame);
  const auto len = static_cast<std::uint32_t>(rest.size());
  auto frame = std::make_unique<std::uint8_t[]>(len ? len : 1);
  if (len) std::memcpy(frame.get(), rest.data(), len);

  net::GroConfig gro;
  gro.ecn = (mode & 8) != 0;
  const bool software = (mode & 1) == 0;

  // The raw frame as if received from the wire.
  {
    const std::vector<std::pair<const std::uint8_t*, std::uint32_t>> one{{frame.get(), len}};
    GroCheck raw{&one, {}};
    gro_over(one, gro, (mode & 16) != 0, raw);
    report("raw frame gro", raw.stream.empty() ? "no payload" : "payload", raw.frames);
  }

  // Room for the most spans a frame can be cut into, made once: with 1-byte
  // cuts a frame is ~130 K spans, and growing a fresh vector to that (large
  // blocks, mapped and faulted in anew under ASan) took half of the
  // target's time.
  static std::vector<net::ByteSpan> spans(2 * kMaxFrame + 1);
  const std::uint32_t nspans = cut_into_spans(frame.get(), len, cut_a, cut_b, spans.data());
  const net::ByteSpans frame_spans(spans.data(), nspans);

  net::OffloadRequest req;
  const net::OffloadError decoded = net::decode_virtio_offload(hdr, req);
  if (decoded != net::OffloadError::none) {
    check(std::strcmp(net::counter_name(decoded), "unknown") != 0, "unnamed decode error");
    report("decode refused", net::counter_name(decoded));
    return 0;
  }
  const net::OffloadCheck c = net::validate_offload(frame_spans, req, policy);
  if (!c.ok()) {
    check(std::strcmp(net::counter_name(c.error), "unknown") != 0, "unnamed refusal");
    report("refused", net::counter_name(c.error));
    return 0;
  }
  const net::ValidatedOffload& v = c.offload;
  if (req.any()) {
    check(v.layout.packet_end <= len && v.layout.header_len() <= v.layout.packet_end,
          "validated layout outside the frame");
  }
  check(v.segments >= 1 && v.segments <= policy.max_segments, "segment count out of bounds");

  net::GuestOffloads guest;
  guest.csum = (mode & 32) != 0;
  guest.tso4 = guest.tso6 = (mode & 64) != 0;
  guest.uso = (mode & 128) != 0;
  guest.ecn = gro.ecn;
  const net::GuestForward fw = net::plan_guest_forward(frame_spans, v, guest);
  if (!fw.segment) {
    check(fw.frame_len <= len, "guest forward past the frame");
    check(!fw.patch || fw.patch_offset + 2u <= fw.frame_len, "guest forward patch past the frame");
    net::OffloadRequest back;
    check(net::decode_virtio_offload(fw.header, back) == net::OffloadError::none,
          "guest forward header does not decode");
    check(!back.csum.needed || back.csum.start + back.csum.offset + 2u <= fw.frame_len,
          "guest forward checksum past the frame");
  }

  Sink sink{capacity, pool};
  const net::SegmentResult r = net::segment(
      frame_spans, v, software ? net::ChecksumMode::software : net::ChecksumMode::partial, sink);
  if (r.status != net::SegmentStatus::done) {
    check(r.segments == sink.metas.size(), "segment result count");
    report("segmentation stopped", "after", r.segments);
    return 0;  // buffers too small or too few: a configuration the caller avoids
  }
  check_segments(frame.get(), len, v, sink, software);
  report("segmented", v.is_gso() ? "gso" : "single", r.segments);

  if (v.is_gso() && software) {
    std::vector<std::pair<const std::uint8_t*, std::uint32_t>> segs;
    for (std::size_t i = 0; i < sink.metas.size(); ++i) {
      segs.emplace_back(pool[i].get(), sink.metas[i].len);
    }
    const std::uint8_t* payload = frame.get() + v.layout.header_len();
    // Each segment contiguous, then each cut into spans as a descriptor
    // chain (the spans are reused per segment: GRO keeps the bytes, not
    // the span array).
    for (const bool scattered : {false, true}) {
      GroCheck back{&segs, {}};
      gro_over(segs, gro, false, back, scattered ? spans.data() : nullptr, cut_a, cut_b);
      report(scattered ? "gro of scattered segments" : "gro", "frames delivered", back.frames);
      check(back.stream.size() == v.layout.payload_len() &&
                (back.stream.empty() ||
                 std::memcmp(back.stream.data(), payload, back.stream.size()) == 0),
            "GRO did not give the segmented payload back in order");
    }
  }
  return 0;
}

#pragma once
// Software GSO: a validated GSO frame (up to 64 KiB, scattered over
// read-only spans) cut into segments of gso_size payload, each written into
// a caller-provided buffer with its headers copied and fixed:
//  - IPv4: total length, id + segment index (mod 2^16), header checksum;
//    IPv6: payload length;
//  - TCP: sequence number + index * gso_size, FIN and PSH only on the last
//    segment, CWR only on the first (as Linux's tcp_gso_segment);
//  - UDP (USO): length; every segment is a whole datagram;
//  - the L4 checksum, either computed (ChecksumMode::software) or left as
//    the pseudo-header sum with csum_start/csum_offset in SegmentMeta for
//    the NIC to finish (ChecksumMode::partial: AF_XDP TX metadata
//    XDP_TXMD_FLAGS_CHECKSUM takes exactly these two offsets).
// A frame without GSO is one "segment": copied up to the IP packet's end
// (Ethernet padding dropped) with its NEEDS_CSUM checksum finished or
// passed on the same way.
//
// No allocation, no exceptions; the segmenter is a small object on the
// caller's stack. The frame's spans must stay valid while it is used.

#include <cstdint>

#include "net/byte_spans.hpp"
#include "net/offload_validation.hpp"
#include "net/packet_headers.hpp"

namespace xdpvhost::net {

enum class ChecksumMode : std::uint8_t {
  software,  // every segment leaves with a complete L4 checksum
  partial,   // the L4 checksum field holds the pseudo-header sum; see SegmentMeta
};

struct SegmentMeta {
  std::uint32_t index = 0;  // 0-based
  std::uint32_t len = 0;    // bytes written
  bool last = false;
  // ChecksumMode::partial and a checksum to finish: sum [csum_start, len)
  // and store the complement at csum_start + csum_offset.
  bool csum_partial = false;
  std::uint16_t csum_start = 0;
  std::uint16_t csum_offset = 0;
};

class GsoSegmenter {
 public:
  GsoSegmenter(const ByteSpans& frame, const ValidatedOffload& offload, ChecksumMode mode) noexcept;
  GsoSegmenter(const GsoSegmenter&) = delete;
  GsoSegmenter& operator=(const GsoSegmenter&) = delete;

  std::uint32_t total() const noexcept { return total_; }
  std::uint32_t remaining() const noexcept { return total_ - index_; }
  // Bytes the next segment needs (0 when none is left).
  std::uint32_t next_len() const noexcept;
  // Writes the next segment into out[0, capacity). False, with nothing
  // consumed, when none is left or it does not fit.
  bool write_next(std::uint8_t* out, std::uint32_t capacity, SegmentMeta& meta) noexcept;

 private:
  bool write_whole_frame(std::uint8_t* out, std::uint32_t capacity, SegmentMeta& meta) noexcept;
  void fix_headers(std::uint8_t* out, std::uint32_t payload, bool first, bool last) const noexcept;
  void fix_l4_checksum(std::uint8_t* out, std::uint32_t payload, SegmentMeta& meta) const noexcept;

  ByteSpans frame_;
  FrameLayout layout_;
  ChecksumRequest csum_;
  ChecksumMode mode_;
  bool gso_;
  SpanCursor cursor_;
  std::uint32_t total_ = 1;
  std::uint32_t index_ = 0;
  std::uint32_t mss_ = 0;
  std::uint32_t payload_left_ = 0;
  std::uint32_t end_ = 0;          // non-GSO: bytes copied
  std::uint32_t pseudo_base_ = 0;  // pseudo-header sum without the length
  std::uint16_t ip_id_ = 0;
  std::uint32_t seq_ = 0;
  std::uint8_t header_[kMaxHeaderBytes];
};

struct SegmentBuffer {
  std::uint8_t* data = nullptr;  // nullptr: no buffer left
  std::uint32_t capacity = 0;
};

enum class SegmentStatus : std::uint8_t {
  done,
  out_of_buffers,    // the sink had no buffer: later segments are not made
  buffer_too_small,  // the last buffer handed out was too small (not committed, still the sink's)
};

struct SegmentResult {
  SegmentStatus status = SegmentStatus::done;
  std::uint32_t segments = 0;  // committed
};

// Drives a GsoSegmenter into a sink:
//   SegmentBuffer sink.next_buffer(std::uint32_t len) noexcept;  // >= len bytes, or {}
//   void sink.commit(const SegmentBuffer&, const SegmentMeta&) noexcept;
// Ask for offload.segments buffers up front (e.g. UMEM frames and TX ring
// slots) and the sink never runs dry half way through a frame.
template <class Sink>
SegmentResult segment(const ByteSpans& frame, const ValidatedOffload& offload, ChecksumMode mode,
                      Sink& sink) noexcept {
  GsoSegmenter segmenter(frame, offload, mode);
  SegmentResult result;
  SegmentMeta meta;
  while (segmenter.remaining() > 0) {
    const SegmentBuffer buffer = sink.next_buffer(segmenter.next_len());
    if (buffer.data == nullptr) {
      result.status = SegmentStatus::out_of_buffers;
      return result;
    }
    if (!segmenter.write_next(buffer.data, buffer.capacity, meta)) {
      result.status = SegmentStatus::buffer_too_small;
      return result;
    }
    sink.commit(buffer, meta);
    ++result.segments;
  }
  return result;
}

}  // namespace xdpvhost::net

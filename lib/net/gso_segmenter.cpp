#include "net/gso_segmenter.hpp"

#include <cstring>

#include "net/byte_order.hpp"
#include "net/internet_checksum.hpp"

namespace xdpvhost::net {
namespace {

std::uint32_t pseudo_base(const std::uint8_t* header, const FrameLayout& l) noexcept {
  if (l.l3 == L3Kind::ipv4) {
    return pseudo_header_sum_ipv4(header + l.l3_offset + 12, l.ip_protocol, 0);
  }
  return pseudo_header_sum_ipv6(header + l.l3_offset + 8, l.ip_protocol, 0);
}

}  // namespace

GsoSegmenter::GsoSegmenter(const ByteSpans& frame, const ValidatedOffload& offload,
                           ChecksumMode mode) noexcept
    : frame_(frame),
      layout_(offload.layout),
      csum_(offload.request.csum),
      mode_(mode),
      gso_(offload.is_gso()),
      cursor_(frame_, 0) {
  if (!offload.request.any()) {
    end_ = frame.len;  // nothing parsed: the frame as it is
    return;
  }
  end_ = layout_.packet_end;
  if (!gso_) return;
  const std::uint32_t header_len = layout_.header_len();
  if (cursor_.copy(header_, header_len) != header_len) {
    total_ = 0;  // cannot happen for a validated frame; make nothing
    return;
  }
  total_ = offload.segments;
  mss_ = offload.request.gso.gso_size;
  payload_left_ = layout_.payload_len();
  if (layout_.l3 == L3Kind::ipv4) ip_id_ = load_be16(header_ + layout_.l3_offset + 4);
  if (layout_.l4 == L4Kind::tcp) seq_ = load_be32(header_ + layout_.l4_offset + 4);
  pseudo_base_ = pseudo_base(header_, layout_);
}

std::uint32_t GsoSegmenter::next_len() const noexcept {
  if (remaining() == 0) return 0;
  if (!gso_) return end_;
  const std::uint32_t payload = payload_left_ < mss_ ? payload_left_ : mss_;
  return layout_.header_len() + payload;
}

bool GsoSegmenter::write_whole_frame(std::uint8_t* out, std::uint32_t capacity,
                                     SegmentMeta& meta) noexcept {
  if (end_ > capacity || cursor_.copy(out, end_) != end_) return false;
  meta = SegmentMeta{0, end_, true};
  if (csum_.needed) {
    if (mode_ == ChecksumMode::software) {
      // The field holds the pseudo-header sum and is summed with the rest.
      std::uint16_t c = checksum_finish(checksum_bytes(out + csum_.start, end_ - csum_.start));
      if (c == 0) c = 0xffff;  // RFC 768; for TCP the two are the same number
      store_be16(out + csum_.start + csum_.offset, c);
    } else {
      meta.csum_partial = true;
      meta.csum_start = csum_.start;
      meta.csum_offset = csum_.offset;
    }
  }
  index_ = 1;
  return true;
}

void GsoSegmenter::fix_headers(std::uint8_t* out, std::uint32_t payload, bool first,
                               bool last) const noexcept {
  const FrameLayout& l = layout_;
  std::uint8_t* ip = out + l.l3_offset;
  const std::uint32_t l4_len = std::uint32_t{l.l4_header_len} + payload;
  if (l.l3 == L3Kind::ipv4) {
    const std::uint32_t ihl = l.l3_header_len();
    store_be16(ip + 2, static_cast<std::uint16_t>(ihl + l4_len));
    store_be16(ip + 4, static_cast<std::uint16_t>(ip_id_ + index_));
    store_be16(ip + 10, ipv4_header_checksum(ip, ihl));
  } else {
    store_be16(ip + 4, static_cast<std::uint16_t>(l.l3_header_len() - kIpv6Header + l4_len));
  }
  std::uint8_t* l4 = out + l.l4_offset;
  if (l.l4 == L4Kind::tcp) {
    store_be32(l4 + 4, seq_ + index_ * mss_);
    std::uint8_t flags = l4[13];
    if (!last) flags &= static_cast<std::uint8_t>(~(kTcpFin | kTcpPsh));
    if (!first) flags &= static_cast<std::uint8_t>(~kTcpCwr);
    l4[13] = flags;
  } else {
    store_be16(l4 + 4, static_cast<std::uint16_t>(l4_len));
  }
}

void GsoSegmenter::fix_l4_checksum(std::uint8_t* out, std::uint32_t payload,
                                   SegmentMeta& meta) const noexcept {
  const FrameLayout& l = layout_;
  const std::uint32_t l4_len = std::uint32_t{l.l4_header_len} + payload;
  const std::uint16_t field = l.l4 == L4Kind::tcp ? kTcpChecksumOffset : kUdpChecksumOffset;
  std::uint8_t* l4 = out + l.l4_offset;
  const std::uint32_t pseudo = checksum_add(pseudo_base_, l4_len);
  if (mode_ == ChecksumMode::partial) {
    store_be16(l4 + field, static_cast<std::uint16_t>(pseudo));
    meta.csum_partial = true;
    meta.csum_start = l.l4_offset;
    meta.csum_offset = field;
    return;
  }
  store_be16(l4 + field, 0);
  std::uint16_t c = checksum_finish(checksum_bytes(l4, l4_len, pseudo));
  if (c == 0 && l.l4 == L4Kind::udp) c = 0xffff;  // RFC 768: 0 means "no checksum"
  store_be16(l4 + field, c);
}

bool GsoSegmenter::write_next(std::uint8_t* out, std::uint32_t capacity,
                              SegmentMeta& meta) noexcept {
  if (remaining() == 0 || out == nullptr) return false;
  if (!gso_) return write_whole_frame(out, capacity, meta);
  const std::uint32_t payload = payload_left_ < mss_ ? payload_left_ : mss_;
  const std::uint32_t header_len = layout_.header_len();
  if (header_len + payload > capacity) return false;
  const bool first = index_ == 0;
  const bool last = index_ + 1 == total_;
  std::memcpy(out, header_, header_len);
  if (cursor_.copy(out + header_len, payload) != payload) return false;
  fix_headers(out, payload, first, last);
  meta = SegmentMeta{index_, header_len + payload, last};
  fix_l4_checksum(out, payload, meta);
  payload_left_ -= payload;
  ++index_;
  return true;
}

}  // namespace xdpvhost::net

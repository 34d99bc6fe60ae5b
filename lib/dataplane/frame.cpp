#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

std::uint32_t gather(const Frame& frame, std::uint32_t offset, std::uint8_t* out,
                     std::uint32_t len) noexcept {
  std::uint32_t copied = 0;
  for (std::uint32_t i = 0; i < frame.span_count && copied < len; ++i) {
    const Span& s = frame.spans[i];
    if (offset >= s.len) {
      offset -= s.len;
      continue;
    }
    std::uint32_t take = s.len - offset;
    if (take > len - copied) take = len - copied;
    std::memcpy(out + copied, s.data + offset, take);
    copied += take;
    offset = 0;
  }
  return copied;
}

Frame::Frame(const Span& span, Offload o) noexcept
    : spans(&span), span_count(1), len(span.len), offload(o) {
  if (has_ethernet_header()) std::memcpy(eth, span.data, net::kEthernetHeader);
}

bool load_ethernet_header(Frame& frame) noexcept {
  if (frame.len < net::kEthernetHeader) return false;
  return gather(frame, 0, frame.eth, net::kEthernetHeader) == net::kEthernetHeader;
}

}  // namespace xdpvhost::dataplane

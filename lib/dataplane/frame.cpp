#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

Frame::Frame(const Span& span, const net::ValidatedOffload& o) noexcept
    : spans(&span), span_count(1), len(span.len), offload(o) {
  if (has_ethernet_header()) std::memcpy(eth, span.data, net::kEthernetHeader);
}

bool load_ethernet_header(Frame& frame) noexcept {
  if (frame.len < net::kEthernetHeader) return false;
  return gather(frame, 0, frame.eth, net::kEthernetHeader) == net::kEthernetHeader;
}

}  // namespace xdpvhost::dataplane

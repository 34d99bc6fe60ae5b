#include "net/byte_spans.hpp"

#include <cstring>

namespace xdpvhost::net {

ByteSpans::ByteSpans(const ByteSpan* s, std::uint32_t n) noexcept : spans(s), count(n) {
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < n; ++i) total += s[i].len;
  // A frame longer than 4 GiB cannot exist; clamp rather than wrap.
  len = total > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(total);
}

std::uint32_t gather(const ByteSpans& frame, std::uint32_t offset, std::uint8_t* out,
                     std::uint32_t n) noexcept {
  // One span holding the range (a 64-byte frame from one descriptor): no cursor.
  if (n != 0 && frame.count != 0 && offset <= frame.spans[0].len &&
      n <= frame.spans[0].len - offset) {
    std::memcpy(out, frame.spans[0].data + offset, n);
    return n;
  }
  SpanCursor cursor(frame, offset);
  if (cursor.position() != offset) return 0;
  return cursor.copy(out, n);
}

SpanCursor::SpanCursor(const ByteSpans& frame, std::uint32_t offset) noexcept : frame_(frame) {
  while (span_ < frame_.count && offset >= frame_.spans[span_].len) {
    offset -= frame_.spans[span_].len;
    pos_ += frame_.spans[span_].len;
    ++span_;
  }
  if (span_ < frame_.count) {
    in_span_ = offset;
    pos_ += offset;
  }
}

ByteSpan SpanCursor::next(std::uint32_t n) noexcept {
  while (span_ < frame_.count && in_span_ >= frame_.spans[span_].len) {
    ++span_;
    in_span_ = 0;
  }
  if (span_ >= frame_.count || n == 0) return {};
  const ByteSpan& s = frame_.spans[span_];
  std::uint32_t take = s.len - in_span_;
  if (take > n) take = n;
  ByteSpan piece{s.data + in_span_, take};
  in_span_ += take;
  pos_ += take;
  return piece;
}

std::uint32_t SpanCursor::copy(std::uint8_t* out, std::uint32_t n) noexcept {
  std::uint32_t copied = 0;
  while (copied < n) {
    const ByteSpan piece = next(n - copied);
    if (piece.len == 0) break;
    std::memcpy(out + copied, piece.data, piece.len);
    copied += piece.len;
  }
  return copied;
}

}  // namespace xdpvhost::net

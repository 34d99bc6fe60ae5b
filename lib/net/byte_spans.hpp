#pragma once
// A frame's bytes scattered over read-only spans (guest buffers, UMEM
// frames), and sequential reading from them.

#include <cstdint>

namespace xdpvhost::net {

struct ByteSpan {
  const std::uint8_t* data = nullptr;
  std::uint32_t len = 0;
};

// `count` spans whose lengths add up to `len` (the frame length). The spans
// are not owned; they must stay valid while the view is used.
struct ByteSpans {
  const ByteSpan* spans = nullptr;
  std::uint32_t count = 0;
  std::uint32_t len = 0;

  ByteSpans() = default;
  ByteSpans(const ByteSpan* s, std::uint32_t n) noexcept;
  // One contiguous span (its own storage must outlive the view).
  explicit ByteSpans(const ByteSpan& one) noexcept : spans(&one), count(1), len(one.len) {}
};

// Copies [offset, offset + n) of the frame into `out`; returns the bytes
// copied (fewer when the frame ends first).
std::uint32_t gather(const ByteSpans& frame, std::uint32_t offset, std::uint8_t* out,
                     std::uint32_t n) noexcept;

// Reads a frame front to back in pieces without re-walking the spans.
class SpanCursor {
 public:
  // Positioned at `offset` (clamped to the frame's end).
  SpanCursor(const ByteSpans& frame, std::uint32_t offset) noexcept;

  std::uint32_t position() const noexcept { return pos_; }
  // Copies the next `n` bytes into `out` and advances; returns the bytes
  // copied (fewer at the end of the frame).
  std::uint32_t copy(std::uint8_t* out, std::uint32_t n) noexcept;
  // The next contiguous piece of at most `n` bytes without copying (len 0 at
  // the end of the frame); advances past it.
  ByteSpan next(std::uint32_t n) noexcept;

 private:
  ByteSpans frame_;
  std::uint32_t span_ = 0;     // index of the span holding pos_
  std::uint32_t in_span_ = 0;  // offset of pos_ inside that span
  std::uint32_t pos_ = 0;
};

}  // namespace xdpvhost::net

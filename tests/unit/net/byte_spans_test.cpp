#include "net/byte_spans.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace xdpvhost::net {
namespace {

// gather() against the frame's bytes laid end to end, for every offset and
// length, with the frame in one span (the fast path) and cut into spans of
// different sizes (the cursor).
void expect_gather_matches(const std::vector<ByteSpan>& spans,
                           const std::vector<std::uint8_t>& all) {
  const ByteSpans frame(spans.data(), static_cast<std::uint32_t>(spans.size()));
  ASSERT_EQ(frame.len, all.size());
  std::vector<std::uint8_t> out(all.size() + 8);
  for (std::uint32_t offset = 0; offset <= all.size() + 2; ++offset) {
    for (std::uint32_t n = 0; n <= all.size() + 2 - std::min<std::uint32_t>(offset, all.size());
         ++n) {
      std::fill(out.begin(), out.end(), 0xee);
      const std::uint32_t got = gather(frame, offset, out.data(), n);
      const std::uint32_t want =
          offset >= all.size() ? 0 : std::min<std::uint32_t>(n, all.size() - offset);
      ASSERT_EQ(got, want) << "offset " << offset << " n " << n;
      for (std::uint32_t i = 0; i < got; ++i) ASSERT_EQ(out[i], all[offset + i]) << "byte " << i;
      ASSERT_EQ(out[got], 0xee) << "wrote past what it copied; offset " << offset << " n " << n;
    }
  }
}

TEST(Gather, OneSpanCopiesTheRangeAndStopsAtTheEnd) {
  std::vector<std::uint8_t> bytes(40);
  std::iota(bytes.begin(), bytes.end(), std::uint8_t{1});
  expect_gather_matches({ByteSpan{bytes.data(), 40}}, bytes);
}

TEST(Gather, ManySpansCopyAcrossTheirBorders) {
  std::vector<std::uint8_t> bytes(40);
  std::iota(bytes.begin(), bytes.end(), std::uint8_t{1});
  expect_gather_matches({ByteSpan{bytes.data(), 1}, ByteSpan{bytes.data() + 1, 12},
                         ByteSpan{bytes.data() + 13, 0}, ByteSpan{bytes.data() + 13, 27}},
                        bytes);
}

TEST(Gather, AnEmptyFrameCopiesNothing) {
  std::uint8_t out[4] = {0xee, 0xee, 0xee, 0xee};
  const ByteSpans none(nullptr, 0);
  EXPECT_EQ(gather(none, 0, out, 4), 0u);
  const ByteSpan empty{nullptr, 0};
  const ByteSpans one_empty(&empty, 1);
  EXPECT_EQ(gather(one_empty, 0, out, 4), 0u);
  EXPECT_EQ(out[0], 0xee);
}

}  // namespace
}  // namespace xdpvhost::net

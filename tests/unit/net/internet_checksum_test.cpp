#include "net/internet_checksum.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "net/byte_order.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

using testing::ref_fold;
using testing::ref_sum;

TEST(InternetChecksum, Rfc1071Example) {
  const std::uint8_t bytes[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(checksum_bytes(bytes, sizeof bytes), 0xddf2u);
  EXPECT_EQ(checksum_finish(checksum_bytes(bytes, sizeof bytes)), 0x220d);
}

TEST(InternetChecksum, MatchesReferenceForEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<std::uint8_t> buf(600);
  for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
  for (std::uint32_t start = 0; start < 9; ++start) {
    for (std::uint32_t len = 0; len < 300; ++len) {
      ASSERT_EQ(checksum_bytes(&buf[start], len), ref_fold(ref_sum(&buf[start], len)))
          << "start " << start << " len " << len;
    }
  }
}

TEST(InternetChecksum, ChainsWithAnInitialSum) {
  std::vector<std::uint8_t> buf(64, 0xff);
  EXPECT_EQ(checksum_bytes(buf.data(), 64, 0x1234), ref_fold(ref_sum(buf.data(), 64, 0x1234)));
}

TEST(InternetChecksum, ScatteredSpansEqualContiguous) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::uint8_t> buf(1 + rng() % 3000);
    for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
    std::vector<ByteSpan> spans;
    std::uint32_t at = 0;
    while (at < buf.size()) {
      std::uint32_t n = rng() % 40;  // empty and odd spans included
      if (n > buf.size() - at) n = static_cast<std::uint32_t>(buf.size() - at);
      spans.push_back({buf.data() + at, n});
      at += n;
    }
    const ByteSpans frame(spans.data(), static_cast<std::uint32_t>(spans.size()));
    ASSERT_EQ(frame.len, buf.size());
    const std::uint32_t off = rng() % buf.size();
    const std::uint32_t len = rng() % (buf.size() - off + 1);
    ASSERT_EQ(checksum_spans(frame, off, len), ref_fold(ref_sum(&buf[off], len)))
        << "round " << round;
  }
}

TEST(InternetChecksum, SpansStopAtTheFramesEnd) {
  const std::uint8_t bytes[] = {1, 2, 3, 4};
  const ByteSpan one{bytes, 4};
  EXPECT_EQ(checksum_spans(ByteSpans(one), 2, 100), ref_fold(ref_sum(bytes + 2, 2)));
  EXPECT_EQ(checksum_spans(ByteSpans(one), 9, 4, 0x55), 0x55u);
}

TEST(InternetChecksum, Ipv4HeaderChecksumIgnoresTheField) {
  // A well-known header: 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7
  std::uint8_t h[] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                      0xaa, 0xbb, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(ipv4_header_checksum(h, sizeof h), 0xb861);
}

TEST(InternetChecksum, PseudoHeaders) {
  const std::uint8_t v4[8] = {10, 0, 0, 1, 10, 0, 0, 2};
  std::vector<std::uint8_t> p(v4, v4 + 8);
  p.insert(p.end(), {0, 6, 0x05, 0xdc});
  EXPECT_EQ(pseudo_header_sum_ipv4(v4, 6, 1500), ref_fold(ref_sum(p.data(), p.size())));

  std::uint8_t v6[32];
  for (int i = 0; i < 32; ++i) v6[i] = static_cast<std::uint8_t>(i * 7 + 1);
  std::vector<std::uint8_t> q(v6, v6 + 32);
  q.insert(q.end(), {0, 1, 0x00, 0x10, 0, 0, 0, 17});  // 65552 bytes, UDP
  EXPECT_EQ(pseudo_header_sum_ipv6(v6, 17, 65552), ref_fold(ref_sum(q.data(), q.size())));
}

TEST(InternetChecksum, FinishedValueVerifies) {
  std::vector<std::uint8_t> buf = testing::pattern(101);
  buf[4] = buf[5] = 0;
  store_be16(&buf[4], checksum_finish(checksum_bytes(buf.data(), 101)));
  EXPECT_EQ(ref_fold(ref_sum(buf.data(), 101)), 0xffff);
}

}  // namespace
}  // namespace xdpvhost::net

#include "dataplane/checksum.hpp"

#include <gtest/gtest.h>

#include <random>

#include "net_test_guest.hpp"

namespace xdpvhost::dataplane {
namespace {

// Byte-wise RFC 1071 over a contiguous buffer, as a reference.
std::uint16_t reference(const std::vector<std::uint8_t>& b, std::size_t from) {
  std::uint32_t sum = 0;
  for (std::size_t i = from; i < b.size(); i += 2)
    sum += static_cast<std::uint32_t>(b[i] << 8 | (i + 1 < b.size() ? b[i + 1] : 0));
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

TEST(Checksum, ScatteredSumMatchesByteWiseReferenceForEverySplit) {
  std::mt19937 rng(7);
  for (int len : {1, 2, 3, 17, 64, 101, 1500}) {
    std::vector<std::uint8_t> b(static_cast<std::size_t>(len));
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    for (int cut1 = 0; cut1 <= len; cut1 += (len > 20 ? 7 : 1)) {
      for (int cut2 = cut1; cut2 <= len; cut2 += (len > 20 ? 11 : 1)) {
        Span spans[3] = {{b.data(), static_cast<std::uint32_t>(cut1)},
                         {b.data() + cut1, static_cast<std::uint32_t>(cut2 - cut1)},
                         {b.data() + cut2, static_cast<std::uint32_t>(len - cut2)}};
        Frame f;
        f.spans = spans;
        f.span_count = 3;
        f.len = static_cast<std::uint32_t>(len);
        const std::uint16_t got = checksum_fold(checksum_add(f, 0, f.len));
        // Our sum is in host (little-endian) order: swap to compare.
        const std::uint16_t swapped = static_cast<std::uint16_t>(got >> 8 | got << 8);
        ASSERT_EQ(swapped, reference(b, 0)) << "len " << len << " cuts " << cut1 << "," << cut2;
      }
    }
  }
}

TEST(Checksum, CompletesAPartialUdpChecksumLikeANic) {
  const std::uint8_t a[6] = {0x52, 0x54, 0, 0, 0, 1}, b[6] = {0x52, 0x54, 0, 0, 0, 2};
  for (std::size_t payload : {0, 1, 18, 1000, 1471}) {
    auto frame = test::udp_frame(a, b, payload, /*partial_checksum=*/true);
    ASSERT_FALSE(test::udp_checksum_ok(frame));
    Span span{frame.data(), static_cast<std::uint32_t>(frame.size())};
    const Frame f(span, Offload{ChecksumRequest{true, 34, 6}});
    std::uint16_t value;
    ASSERT_TRUE(complete_checksum(f, value));
    std::memcpy(frame.data() + 40, &value, 2);
    EXPECT_TRUE(test::udp_checksum_ok(frame)) << payload;
    EXPECT_EQ(frame, test::udp_frame(a, b, payload, false)) << "same bytes as a full checksum";
  }
}

TEST(Checksum, RefusesOffsetsOutsideTheFrame) {
  std::vector<std::uint8_t> frame(60);
  Span span{frame.data(), 60};
  std::uint16_t value;
  EXPECT_FALSE(complete_checksum(Frame(span, Offload{ChecksumRequest{true, 50, 9}}), value));
  EXPECT_FALSE(complete_checksum(Frame(span, Offload{ChecksumRequest{true, 60, 0}}), value));
}

}  // namespace
}  // namespace xdpvhost::dataplane

#pragma once
// A segmentation sink for the tests: hands out buffers of a fixed capacity
// (at most `limit` of them) and keeps every committed segment.

#include <cstdint>
#include <vector>

#include "net/gso_segmenter.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net::testing {

struct VectorSink {
  explicit VectorSink(std::uint32_t capacity = 2048, std::uint32_t limit = 1000)
      : capacity(capacity), limit(limit) {}

  SegmentBuffer next_buffer(std::uint32_t /*len*/) noexcept {
    if (buffers.size() >= limit) return {};
    buffers.emplace_back(capacity, 0xcc);
    return {buffers.back().data(), capacity};
  }
  void commit(const SegmentBuffer& b, const SegmentMeta& meta) noexcept {
    segments.emplace_back(b.data, b.data + meta.len);
    metas.push_back(meta);
  }

  std::uint32_t capacity;
  std::uint32_t limit;
  std::vector<Bytes> buffers;
  std::vector<Bytes> segments;
  std::vector<SegmentMeta> metas;
};

}  // namespace xdpvhost::net::testing

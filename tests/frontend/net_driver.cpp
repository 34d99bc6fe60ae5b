#include "frontend/net_driver.hpp"

#include <algorithm>
#include <cstring>

namespace xdpvhost::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kGap = 64;  // bytes left unused between pieces of one chain

std::uint64_t align64(std::uint64_t v) {
  return (v + 63) / 64 * 64;
}

}  // namespace

NetDriver::NetDriver(GuestMemoryArena& memory, DriverQueue& rx, DriverQueue& tx,
                     std::uint64_t features, std::uint32_t slot_size)
    : memory_(&memory), rx_(&rx), tx_(&tx), slot_size_(slot_size) {
  reset(features);
}

void NetDriver::reset(std::uint64_t features) {
  features_ = features;
  header_size_ = virtio::net_header_size(features);
  mergeable_ = virtio::has(features, virtio::Feature::kNetMrgRxbuf);
  // Slot memory stays allocated across resets; only the bookkeeping restarts.
  init_pool(rx_pool_, rx_->size());
  init_pool(tx_pool_, tx_->size());
  partial_.reset();
  partial_missing_ = 0;
  stats_ = {};
  last_error_.clear();
}

void NetDriver::init_pool(SlotPool& pool, std::uint16_t queue_size) {
  pool.gpa.resize(queue_size, 0);
  pool.free.clear();
  for (std::uint32_t i = queue_size; i > 0; --i)
    pool.free.push_back(static_cast<std::uint16_t>(i - 1));
  pool.by_head.assign(queue_size, -1);
}

std::optional<std::uint16_t> NetDriver::take_slot(SlotPool& pool) {
  if (pool.free.empty()) return std::nullopt;
  const std::uint16_t slot = pool.free.back();
  pool.free.pop_back();
  if (pool.gpa[slot] == 0) pool.gpa[slot] = memory_->allocate(slot_size_, 64);
  return slot;
}

void NetDriver::release_head(SlotPool& pool, std::uint16_t head) {
  if (head >= pool.by_head.size() || pool.by_head[head] < 0) return;
  pool.free.push_back(static_cast<std::uint16_t>(pool.by_head[head]));
  pool.by_head[head] = -1;
}

std::vector<BufferSegment> NetDriver::layout_segments(std::uint64_t base, std::size_t header,
                                                      std::size_t total, ChainLayout layout,
                                                      std::uint32_t chunk, bool writable) const {
  std::vector<BufferSegment> segs;
  std::uint64_t off = 0;
  auto add = [&](std::size_t len) {
    segs.push_back({base + off, static_cast<std::uint32_t>(len), writable});
    off = align64(off + len) + kGap;
  };
  switch (layout) {
    case ChainLayout::kSingle:
      add(total);
      break;
    case ChainLayout::kHeaderSeparate:
      add(header);
      if (total > header) add(total - header);
      break;
    case ChainLayout::kScattered: {
      add(header);
      const std::size_t piece = std::max<std::uint32_t>(chunk, 1);
      for (std::size_t left = total - header; left > 0;) {
        const std::size_t n = std::min(piece, left);
        add(n);
        left -= n;
      }
      break;
    }
    case ChainLayout::kHeaderSplit: {
      const std::size_t first = header / 2;
      add(first);
      add(total - first);
      break;
    }
  }
  const BufferSegment& last = segs.back();
  if (last.gpa - base + last.len > slot_size_) return {};
  return segs;
}

bool NetDriver::send_frame(std::span<const std::uint8_t> frame,
                           const std::optional<virtio::NetHeader>& header,
                           const TxOptions& options) {
  virtio::NetHeader h = header.value_or(virtio::NetHeader{});
  h.num_buffers = 0;
  std::vector<std::uint8_t> stream(header_size_ + frame.size());
  std::memcpy(stream.data(), &h, header_size_);
  if (!frame.empty()) std::memcpy(stream.data() + header_size_, frame.data(), frame.size());

  auto slot = take_slot(tx_pool_);
  if (!slot) {
    reclaim_tx();
    slot = take_slot(tx_pool_);
  }
  if (!slot) {
    ++stats_.tx_no_room;
    last_error_ = "no TX slot free";
    return false;
  }
  const std::uint64_t base = tx_pool_.gpa[*slot];
  auto segs =
      layout_segments(base, header_size_, stream.size(), options.layout, options.chunk, false);
  if (segs.empty()) {
    tx_pool_.free.push_back(*slot);
    ++stats_.tx_no_room;
    last_error_ = "frame does not fit a " + std::to_string(slot_size_) + "-byte slot";
    return false;
  }
  std::size_t pos = 0;
  for (const BufferSegment& s : segs) {
    std::memcpy(memory_->host(s.gpa, s.len), stream.data() + pos, s.len);
    pos += s.len;
  }
  auto head = tx_->add_chain(segs, options.indirect);
  if (!head) {
    reclaim_tx();
    head = tx_->add_chain(segs, options.indirect);
  }
  if (!head) {
    tx_pool_.free.push_back(*slot);
    ++stats_.tx_no_room;
    last_error_ = "no TX descriptors free";
    return false;
  }
  tx_pool_.by_head[*head] = *slot;
  ++stats_.tx_frames;
  if (options.kick) tx_->kick();
  return true;
}

std::size_t NetDriver::reclaim_tx() {
  std::size_t n = 0;
  while (auto used = tx_->get_used()) {
    release_head(tx_pool_, used->id);
    ++n;
  }
  stats_.tx_completed += n;
  return n;
}

bool NetDriver::wait_tx_complete(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    reclaim_tx();
    if (tx_->in_flight() == 0) return true;
    if (Clock::now() >= deadline) return false;
    if (tx_->enable_interrupts()) continue;
    tx_->wait_for_interrupt(std::chrono::milliseconds(10));
  }
}

std::size_t NetDriver::post_rx_buffers(std::size_t count, std::uint32_t size,
                                       const RxOptions& options) {
  repost_size_ = size;
  repost_options_ = options;
  std::size_t posted = 0;
  for (; posted < count; ++posted) {
    auto slot = take_slot(rx_pool_);
    if (!slot) break;
    auto segs = layout_segments(rx_pool_.gpa[*slot], header_size_,
                                std::max<std::size_t>(size, header_size_), options.layout,
                                options.chunk, true);
    if (segs.empty()) {
      rx_pool_.free.push_back(*slot);
      last_error_ = "RX buffer does not fit a " + std::to_string(slot_size_) + "-byte slot";
      break;
    }
    auto head = rx_->add_chain(segs, options.indirect);
    if (!head) {
      rx_pool_.free.push_back(*slot);
      break;
    }
    rx_pool_.by_head[*head] = *slot;
  }
  stats_.rx_posted += posted;
  if (posted > 0 && options.kick) rx_->kick();
  return posted;
}

void NetDriver::rx_error(std::string message) {
  ++stats_.rx_errors;
  last_error_ = std::move(message);
}

void NetDriver::consume_used(std::vector<ReceivedFrame>& out, std::size_t& consumed) {
  while (auto used = rx_->get_used()) {
    ++consumed;
    ++stats_.rx_buffers;
    // Gather what the device wrote, in chain order.
    std::size_t capacity = 0;
    for (const BufferSegment& s : used->segments) capacity += s.len;
    std::size_t len = used->len;
    if (len > capacity) {
      rx_error("device wrote " + std::to_string(len) + " bytes into a " + std::to_string(capacity) +
               "-byte chain");
      len = capacity;
    }
    std::vector<std::uint8_t> bytes(len);
    std::size_t pos = 0;
    for (const BufferSegment& s : used->segments) {
      if (pos == len) break;
      const std::size_t n = std::min<std::size_t>(s.len, len - pos);
      std::memcpy(bytes.data() + pos, memory_->host(s.gpa, n), n);
      pos += n;
    }
    release_head(rx_pool_, used->id);

    if (partial_) {  // continuation buffer of a mergeable frame: no header
      partial_->bytes.insert(partial_->bytes.end(), bytes.begin(), bytes.end());
      ++partial_->buffers;
      if (--partial_missing_ == 0) {
        out.push_back(std::move(*partial_));
        partial_.reset();
        ++stats_.rx_frames;
      }
      continue;
    }
    if (len < header_size_) {
      rx_error("used length " + std::to_string(len) + " shorter than the virtio-net header");
      continue;
    }
    ReceivedFrame frame;
    std::memcpy(&frame.header, bytes.data(), header_size_);
    frame.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header_size_), bytes.end());
    frame.buffers = 1;
    if (mergeable_) {
      const std::uint16_t num = frame.header.num_buffers;
      if (num == 0) {
        rx_error("mergeable frame with num_buffers 0");
        continue;
      }
      if (num > rx_->size()) {
        rx_error("num_buffers " + std::to_string(num) + " larger than the ring");
        continue;
      }
      if (num > 1) {
        partial_ = std::move(frame);
        partial_missing_ = static_cast<std::uint16_t>(num - 1);
        continue;
      }
    }
    out.push_back(std::move(frame));
    ++stats_.rx_frames;
  }
}

std::vector<ReceivedFrame> NetDriver::poll_frames() {
  std::vector<ReceivedFrame> out;
  std::size_t consumed = 0;
  consume_used(out, consumed);
  if (auto_repost_ && consumed > 0 && repost_size_ > 0) {
    post_rx_buffers(consumed, repost_size_, repost_options_);
  }
  return out;
}

std::vector<ReceivedFrame> NetDriver::receive_frames(std::chrono::milliseconds timeout,
                                                     std::size_t min_frames) {
  const auto deadline = Clock::now() + timeout;
  std::vector<ReceivedFrame> out;
  std::size_t consumed = 0;
  for (;;) {
    consume_used(out, consumed);
    if (auto_repost_ && consumed > 0 && repost_size_ > 0) {
      post_rx_buffers(consumed, repost_size_, repost_options_);
      consumed = 0;
    }
    if (out.size() >= min_frames) break;
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (rx_->enable_interrupts()) continue;  // more arrived while re-arming
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    // Short sleeps: a device may legitimately not signal (suppression), and
    // a test must not hang on that.
    rx_->wait_for_interrupt(std::min(left, std::chrono::milliseconds(10)) +
                            std::chrono::milliseconds(1));
  }
  return out;
}

}  // namespace xdpvhost::testing

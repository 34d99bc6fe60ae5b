#pragma once
// Moving frames through the daemon with test frontends: numbered UDP frames,
// sending with back-pressure, receiving a known number of frames, comparing
// what arrived with what was sent.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "frontend/frame_builder.hpp"
#include "frontend/frontend.hpp"

namespace xdpvhost::integration {

namespace fe = xdpvhost::testing;
using Bytes = std::vector<std::uint8_t>;

// A UDP frame src -> dst whose payload (`payload` bytes) and source port
// depend on `seq`, so every frame is distinct and flows differ.
Bytes numbered_frame(const fe::MacAddress& dst, const fe::MacAddress& src, std::uint32_t seq,
                     std::size_t payload = 100);

// Posts a full ring of `size`-byte RX buffers on every queue pair; returns
// how many buffers pair 0 got (fewer than the ring size when a buffer takes
// several descriptors).
std::size_t post_rx(fe::Frontend& g, std::uint32_t size = 2048, const fe::RxOptions& options = {});

// Sends every frame on `pair`, waiting for TX room while the ring is full.
::testing::AssertionResult send_frames(
    fe::Frontend& g, const std::vector<Bytes>& frames, std::uint16_t pair = 0,
    const fe::TxOptions& options = {},
    const std::optional<virtio::NetHeader>& header = std::nullopt,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Receives on every queue pair until `count` frames arrived or `timeout`
// passed; returns what arrived (pair 0 first within one poll round).
std::vector<fe::ReceivedFrame> receive(
    fe::Frontend& g, std::size_t count,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Whatever has arrived on any pair by now, without waiting.
std::vector<fe::ReceivedFrame> poll_received(fe::Frontend& g);

// `got` holds exactly the frames of `sent`, in the same order.
::testing::AssertionResult same_frames(const std::vector<Bytes>& sent,
                                       const std::vector<fe::ReceivedFrame>& got);
// Same, in any order (several queues).
::testing::AssertionResult same_frames_any_order(const std::vector<Bytes>& sent,
                                                 const std::vector<fe::ReceivedFrame>& got);

// Sends `frames` from `from` and receives them all at `to`, intact and in
// order, in rounds that fit the receive ring.
::testing::AssertionResult stream(fe::Frontend& from, fe::Frontend& to,
                                  const std::vector<Bytes>& frames);

// `n` frames from a to b and `n` from b to a (RX buffers must be posted);
// every frame arrives intact and in order. `seq` distinguishes rounds.
::testing::AssertionResult exchange(fe::Frontend& a, const fe::MacAddress& a_mac, fe::Frontend& b,
                                    const fe::MacAddress& b_mac, std::size_t n, std::uint32_t seq,
                                    std::size_t payload = 100);

// The TX chains the daemon finished, reclaimed by the driver until none is
// in flight.
::testing::AssertionResult tx_drained(fe::Frontend& g, std::uint16_t pair = 0,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace xdpvhost::integration

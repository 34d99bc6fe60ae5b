#pragma once
// Who is where: every port of the switch, its MAC, its uplink and the service
// thread that owns it. Built by the control side, shared read-only by all
// service threads; a change publishes a new table to each thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "net/mac_address.hpp"
#include "dataplane/port.hpp"

namespace xdpvhost::dataplane {

struct SwitchEntry {
  Port* port = nullptr;  // owned by the service thread `thread`
  std::uint32_t port_id = 0;
  std::uint16_t thread = 0;
  PortKind kind = PortKind::kGuest;
  std::uint32_t uplink = Port::kNoUplinkId;  // guests: uplink they use; uplink queues: their uplink
  std::optional<net::MacAddress> mac;        // a guest's MAC, once it has one
};

class SwitchTable {
 public:
  void add(const SwitchEntry& e) {
    entries_.push_back(e);
    if (e.kind == PortKind::kGuest && e.mac) by_mac_[e.mac->key()] = entries_.size() - 1;
    uplink_queues_.clear();  // recomputed by finish()
  }
  // Precomputes, for every uplink and thread, the queue to send through
  // (the per-frame lookup is then one hash probe). Call after the last add().
  void finish(std::uint16_t threads) {
    uplink_queues_.clear();
    for (const auto& e : entries_) {
      if (e.kind != PortKind::kUplink) continue;
      for (std::uint16_t t = 0; t < threads; ++t) {
        const std::uint64_t key = std::uint64_t{e.uplink} << 16 | t;
        auto it = uplink_queues_.find(key);
        // Prefer a queue on the sending thread, else the first one.
        if (it == uplink_queues_.end() || (e.thread == t && entries_[it->second].thread != t))
          uplink_queues_[key] = static_cast<std::size_t>(&e - entries_.data());
      }
    }
  }
  const std::vector<SwitchEntry>& entries() const noexcept { return entries_; }
  // Guest port owning `mac`, or nullptr.
  const SwitchEntry* find_guest(const net::MacAddress& mac) const noexcept {
    auto it = by_mac_.find(mac.key());
    return it == by_mac_.end() ? nullptr : &entries_[it->second];
  }
  const SwitchEntry* find(std::uint32_t port_id) const noexcept {
    for (const auto& e : entries_)
      if (e.port_id == port_id) return &e;
    return nullptr;
  }
  // The queue of `uplink` to send through from `thread`: one on that thread
  // if there is one, else the first.
  const SwitchEntry* uplink_queue(std::uint32_t uplink, std::uint16_t thread) const noexcept {
    auto it = uplink_queues_.find(std::uint64_t{uplink} << 16 | thread);
    return it == uplink_queues_.end() ? nullptr : &entries_[it->second];
  }

 private:
  std::vector<SwitchEntry> entries_;
  std::unordered_map<std::uint64_t, std::size_t> by_mac_;
  std::unordered_map<std::uint64_t, std::size_t>
      uplink_queues_;  // (uplink << 16 | thread) -> entry
};

}  // namespace xdpvhost::dataplane

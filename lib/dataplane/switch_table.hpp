#pragma once
// Who is where: every port of the switch, its MAC, its uplink, its L2 domain
// and the service thread that owns it. Built by the control side, shared
// read-only by all service threads; a change publishes a new table to each
// thread.
//
// L2 domains: the guests of one uplink are one domain, and the guests with
// no uplink another, unless the operator joins uplinks into one domain
// (L2Domains). A guest's frames reach only guests of its domain; frames from
// an uplink only the guests of that uplink.

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dataplane/flow_hash.hpp"
#include "dataplane/port.hpp"
#include "net/mac_address.hpp"

namespace xdpvhost::dataplane {

// Uplinks whose guests join another uplink's L2 domain: (uplink id, the id
// of the domain's first uplink). Every uplink not listed is a domain of its
// own, named by its id.
using L2Domains = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

struct SwitchEntry {
  Port* port = nullptr;  // owned by the service thread `thread`
  std::uint32_t port_id = 0;
  std::uint16_t thread = 0;
  PortKind kind = PortKind::kGuest;
  std::uint32_t uplink = Port::kNoUplinkId;  // guests: uplink they use; uplink queues: their uplink
  std::optional<net::MacAddress> mac;        // a guest's MAC, once it has one
  std::uint32_t domain = Port::kNoUplinkId;  // its uplink's L2 domain (set by SwitchTable::finish)
  // A guest port whose queue pairs are spread over several service threads
  // has one entry per queue group (lib/dataplane/README.md). The first
  // group's entry holds the MAC and lists the groups that have an enabled
  // receive queue now (port ids); the others are `secondary`: reached only
  // through that list, never flooded to.
  bool secondary = false;
  std::vector<std::uint32_t> rx_groups;
  // Between two service threads (Dataplane::move): unicast frames for it
  // wait at their senders, and every flood waits while any port moves.
  bool moving = false;
};

class SwitchTable {
 public:
  void add(const SwitchEntry& e) {
    entries_.push_back(e);
    any_moving_ = any_moving_ || e.moving;
    if (e.kind == PortKind::kGuest && e.mac && !e.secondary)
      by_mac_[e.mac->key()] = entries_.size() - 1;
    uplink_queues_.clear();  // recomputed by finish()
  }
  // Precomputes each entry's L2 domain and, for every uplink and thread, the
  // queue to send through (the per-frame lookup is then one hash probe).
  // Call after the last add().
  void finish(std::uint16_t threads, L2Domains joined = {}) {
    joined_ = std::move(joined);
    for (auto& e : entries_) e.domain = domain_of(e.uplink);
    // Each guest's receiving groups as entry indices (the control side names
    // them by port id).
    rx_groups_.clear();
    rx_group_range_.assign(entries_.size(), {0, 0});
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      rx_group_range_[e].first = rx_groups_.size();
      for (const std::uint32_t id : entries_[e].rx_groups)
        for (std::size_t i = 0; i < entries_.size(); ++i)
          if (entries_[i].port_id == id) rx_groups_.push_back(i);
      rx_group_range_[e].second = rx_groups_.size() - rx_group_range_[e].first;
    }
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
  // A port is moving between threads: floods wait until it has arrived.
  bool any_moving() const noexcept { return any_moving_; }
  // The L2 domain of the guests of `uplink` (kNoUplinkId: those with none).
  std::uint32_t domain_of(std::uint32_t uplink) const noexcept {
    for (const auto& [member, domain] : joined_)  // a handful at most, usually none
      if (member == uplink) return domain;
    return uplink;
  }
  // Whether frames from `from` may reach the guest `to`: an uplink's reach
  // the guests of that uplink, a guest's those of its L2 domain.
  bool reaches(const Port& from, const SwitchEntry& to) const noexcept {
    if (from.kind() == PortKind::kUplink) return to.uplink == from.uplink();
    return to.domain == domain_of(from.uplink());
  }
  // Guest port owning `mac`, or nullptr.
  const SwitchEntry* find_guest(const net::MacAddress& mac) const noexcept {
    auto it = by_mac_.find(mac.key());
    return it == by_mac_.end() ? nullptr : &entries_[it->second];
  }
  // Whether frames to `guest` (an entry of this table) are spread over
  // several queue groups: then rx_group() picks one by the flow's hash.
  bool spreads(const SwitchEntry& guest) const noexcept {
    const std::size_t i = index_of(guest);
    return i < rx_group_range_.size() && rx_group_range_[i].second > 1;  // false before finish()
  }
  // The queue group of `guest` that takes a frame of flow `hash` (one with
  // an enabled receive queue, flow_hash.hpp); `guest` itself when it has no
  // other group.
  const SwitchEntry& rx_group(const SwitchEntry& guest, std::uint32_t hash) const noexcept {
    if (!spreads(guest)) return guest;
    const auto [first, count] = rx_group_range_[index_of(guest)];
    return entries_[rx_groups_[first + group_for_flow(hash, count)]];
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
  std::size_t index_of(const SwitchEntry& e) const noexcept {
    return static_cast<std::size_t>(&e - entries_.data());
  }

  std::vector<SwitchEntry> entries_;
  bool any_moving_ = false;
  L2Domains joined_;
  std::vector<std::size_t> rx_groups_;  // entry indices; each guest's run is its range below
  std::vector<std::pair<std::size_t, std::size_t>> rx_group_range_;  // (first, count) per entry
  std::unordered_map<std::uint64_t, std::size_t> by_mac_;
  std::unordered_map<std::uint64_t, std::size_t>
      uplink_queues_;  // (uplink << 16 | thread) -> entry
};

}  // namespace xdpvhost::dataplane

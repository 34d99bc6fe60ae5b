#pragma once
// The switching decision for one service thread: where a frame goes, and how
// it gets there (directly into a port this thread owns, or through the
// mailbox of the thread that owns the destination).
//
//   multicast/broadcast  -> flood: from a guest to every other guest of its
//                           L2 domain and to its uplink; from an uplink to
//                           the guests on it
//   unicast, a guest's MAC -> that guest port, if the sender reaches it (a
//                           guest of the same L2 domain; for an uplink, one
//                           of its guests)
//   unicast, otherwise   -> the sending guest's uplink, else dropped
//                           (unknown_destination)

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/frame.hpp"
#include "dataplane/mailbox.hpp"
#include "dataplane/port.hpp"
#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {

class Forwarder {
 public:
  explicit Forwarder(std::uint16_t thread) : thread_(thread) {}

  // Outbox toward each thread (nullptr for this one).
  void set_outboxes(std::vector<Mailbox*> outboxes) {
    outboxes_ = std::move(outboxes);
    pushed_.assign(outboxes_.size(), false);
  }
  void set_table(std::shared_ptr<const SwitchTable> table) { table_ = std::move(table); }
  const SwitchTable* table() const noexcept { return table_.get(); }
  std::uint16_t thread() const noexcept { return thread_; }

  // Where a frame from `from` goes: flooded, one port (a guest's queue group
  // for the frame's flow, or the sending guest's uplink queue), or nowhere
  // (dropped, and why). Computed once per frame: a port that looks at the
  // destination before forwarding (the uplink's GRO) passes it on.
  struct Route {
    bool flood = false;
    const SwitchEntry* to = nullptr;
    DropReason drop = DropReason::kUnknownDestination;  // when neither
  };
  Route route(const Port& from, const Frame& frame) const noexcept;

  // Forwards a frame taken from `from`. Returns false if it cannot be taken
  // now: a unicast frame whose destination is full or moving between
  // threads, a flood while any port moves (floods_wait). The caller keeps it
  // and stops taking frames from that source for this round (back-pressure).
  bool forward(Port& from, const Frame& frame) noexcept {
    return forward(from, frame, route(from, frame));
  }
  bool forward(Port& from, const Frame& frame, const Route& route) noexcept;
  // A port is moving between threads (Dataplane::move): a flood waits where
  // it is until the port has arrived. A sender that cannot put a flood back
  // (a packet socket's batch, an announcement) does not take it meanwhile.
  bool floods_wait() const noexcept { return table_ != nullptr && table_->any_moving(); }

  // Threads this one pushed frames to since the last call; clears the set.
  template <class Fn>
  void for_each_pushed(Fn&& fn) {
    for (std::size_t t = 0; t < pushed_.size(); ++t)
      if (pushed_[t]) {
        pushed_[t] = false;
        fn(static_cast<std::uint16_t>(t));
      }
  }

 private:
  bool send(Port& from, const SwitchEntry& to, const Frame& frame, bool unicast) noexcept;
  // A unicast frame whose destination is full or moving now (or a flood
  // while a port moves): the sender keeps it
  // (counted as a wait); returns false for forward() to say so.
  static bool wait(Port& from) noexcept {
    from.counters().waits.add();
    return false;
  }
  void flood(Port& from, const Frame& frame) noexcept;

  std::uint16_t thread_;
  std::shared_ptr<const SwitchTable> table_;
  std::vector<Mailbox*> outboxes_;
  std::vector<bool> pushed_;
};

}  // namespace xdpvhost::dataplane

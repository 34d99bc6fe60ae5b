#include "dataplane/forwarder.hpp"

#include "dataplane/flow_hash.hpp"

namespace xdpvhost::dataplane {

Forwarder::Route Forwarder::route(const Port& from, const Frame& frame) const noexcept {
  if (table_ == nullptr) return {};
  if (frame.is_multicast()) return {.flood = true};
  if (const SwitchEntry* to = table_->find_guest(frame.dst()); to && table_->reaches(from, *to)) {
    if (to->port->group() == from.group()) return {.drop = DropReason::kHairpin};
    // A guest with receive queues on several threads: the flow's group.
    if (table_->spreads(*to)) to = &table_->rx_group(*to, flow_hash(frame));
    return {.to = to};
  }
  if (from.kind() == PortKind::kGuest && from.uplink() != Port::kNoUplinkId) {
    if (const SwitchEntry* up = table_->uplink_queue(from.uplink(), thread_)) return {.to = up};
    return {.drop = DropReason::kUplinkDown};
  }
  return {};
}

bool Forwarder::forward(Port& from, const Frame& frame, const Route& route) noexcept {
  if (route.flood) {
    if (floods_wait()) return wait(from);
    flood(from, frame);
    return true;
  }
  if (route.to == nullptr) {
    from.counters().drop(route.drop);
    return true;
  }
  return send(from, *route.to, frame, /*unicast=*/true);
}

void Forwarder::flood(Port& from, const Frame& frame) noexcept {
  for (const SwitchEntry& e : table_->entries()) {
    if (e.kind != PortKind::kGuest || e.secondary || e.port->group() == from.group()) continue;
    if (!table_->reaches(from, e)) continue;
    send(from, e, frame, /*unicast=*/false);
  }
  if (from.kind() == PortKind::kGuest && from.uplink() != Port::kNoUplinkId) {
    if (const SwitchEntry* up = table_->uplink_queue(from.uplink(), thread_))
      send(from, *up, frame, /*unicast=*/false);
  }
}

bool Forwarder::send(Port& from, const SwitchEntry& to, const Frame& frame, bool unicast) noexcept {
  if (to.moving) return wait(from);  // unicast only: floods wait before (floods_wait)
  if (to.thread == thread_) {
    if (unicast && !to.port->can_accept(frame)) return wait(from);
    to.port->deliver(frame);
    return true;
  }
  Mailbox* box = to.thread < outboxes_.size() ? outboxes_[to.thread] : nullptr;
  if (frame.len > Mailbox::kMaxFrame) {  // longer than any port takes
    from.counters().drop(DropReason::kOversize);
    return true;
  }
  if (box == nullptr || !box->push(to.port_id, frame, from.id())) {
    if (unicast && box != nullptr) return wait(from);
    from.counters().drop(DropReason::kMailboxFull);
    return true;
  }
  pushed_[to.thread] = true;
  return true;
}

}  // namespace xdpvhost::dataplane

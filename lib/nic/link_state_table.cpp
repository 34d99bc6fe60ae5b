#include "nic/link_state_table.hpp"

#include <linux/if.h>

#include "sys/enum_names.hpp"

namespace xdpvhost::nic {

namespace {

constexpr sys::EnumNames<LinkEvent::Kind, 5> kKindNames{{
    {LinkEvent::Kind::kAdded, "added"},
    {LinkEvent::Kind::kUp, "up"},
    {LinkEvent::Kind::kDown, "down"},
    {LinkEvent::Kind::kRenamed, "renamed"},
    {LinkEvent::Kind::kDeleted, "deleted"},
}};
static_assert(sys::in_enum_order(kKindNames, 5));

}  // namespace

const char* to_string(LinkEvent::Kind kind) {
  return sys::name_of(kKindNames, kind);
}

namespace {

bool oper_up(unsigned flags) {
  return (flags & IFF_UP) != 0 && (flags & IFF_RUNNING) != 0;
}

LinkEvent make_event(LinkEvent::Kind kind, int ifindex, const std::string& ifname, unsigned flags) {
  LinkEvent e;
  e.kind = kind;
  e.ifindex = ifindex;
  e.ifname = ifname;
  e.flags = flags;
  e.up = kind != LinkEvent::Kind::kDeleted && oper_up(flags);
  return e;
}

}  // namespace

void LinkStateTable::apply(const LinkMessage& msg, std::vector<LinkEvent>& out) {
  const auto it = links_.find(msg.ifindex);
  if (msg.deleted) {
    if (it == links_.end()) return;
    out.push_back(make_event(LinkEvent::Kind::kDeleted, msg.ifindex,
                             msg.ifname.empty() ? it->second.ifname : msg.ifname, msg.flags));
    links_.erase(it);
    return;
  }
  if (it == links_.end()) {
    links_[msg.ifindex] = State{msg.ifname, msg.flags, msg.address};
    out.push_back(make_event(LinkEvent::Kind::kAdded, msg.ifindex, msg.ifname, msg.flags));
    return;
  }
  State& state = it->second;
  if (msg.address) state.address = msg.address;  // `ip link set X address ...`
  if (!msg.ifname.empty() && msg.ifname != state.ifname) {
    state.ifname = msg.ifname;
    out.push_back(make_event(LinkEvent::Kind::kRenamed, msg.ifindex, state.ifname, msg.flags));
  }
  const bool was_up = oper_up(state.flags);
  state.flags = msg.flags;
  if (oper_up(msg.flags) != was_up) {
    out.push_back(make_event(oper_up(msg.flags) ? LinkEvent::Kind::kUp : LinkEvent::Kind::kDown,
                             msg.ifindex, state.ifname, msg.flags));
  }
}

void LinkStateTable::forget_missing(const std::unordered_set<int>& present,
                                    std::vector<LinkEvent>& out) {
  for (auto it = links_.begin(); it != links_.end();) {
    if (present.count(it->first) != 0) {
      ++it;
      continue;
    }
    out.push_back(make_event(LinkEvent::Kind::kDeleted, it->first, it->second.ifname, 0));
    it = links_.erase(it);
  }
}

bool LinkStateTable::lookup(const std::string& ifname, LinkEvent& out) const {
  for (const auto& [ifindex, state] : links_) {
    if (state.ifname == ifname) {
      out = make_event(LinkEvent::Kind::kAdded, ifindex, state.ifname, state.flags);
      return true;
    }
  }
  return false;
}

std::optional<std::string> LinkStateTable::interface_with(const net::MacAddress& mac) const {
  for (const auto& [ifindex, state] : links_)
    if (state.address == mac) return state.ifname;
  return std::nullopt;
}

}  // namespace xdpvhost::nic

#include "nic/link_monitor.hpp"

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "nic/rtnl_socket.hpp"

namespace xdpvhost::nic {

namespace {

int link_attr_cb(const nlattr* attr, void* data) {
  auto& out = *static_cast<LinkMessage*>(data);
  const auto type = mnl_attr_get_type(attr);
  if (type == IFLA_IFNAME && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0) {
    out.ifname = mnl_attr_get_str(attr);
  } else if (type == IFLA_ADDRESS && mnl_attr_get_payload_len(attr) == 6) {
    out.address =
        net::MacAddress::from(static_cast<const std::uint8_t*>(mnl_attr_get_payload(attr)));
  }
  return MNL_CB_OK;
}

}  // namespace

bool parse_link_message(const nlmsghdr* nlh, LinkMessage& out) {
  if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK) return false;
  if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(ifinfomsg))) return false;
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  out = LinkMessage{};
  out.deleted = nlh->nlmsg_type == RTM_DELLINK;
  out.ifindex = ifi->ifi_index;
  out.flags = ifi->ifi_flags;
  if (mnl_attr_parse(nlh, sizeof(ifinfomsg), link_attr_cb, &out) < 0) return false;
  return out.ifindex > 0;
}

std::unique_ptr<LinkMonitor> LinkMonitor::open(std::string& error) {
  std::unique_ptr<LinkMonitor> self(new LinkMonitor());
  // Subscribe before dumping so no change between the two is missed.
  self->events_ = RtnlSocket::open(RTMGRP_LINK, true, error);
  if (!self->events_) return nullptr;
  self->requests_ = RtnlSocket::open(0, false, error);
  if (!self->requests_) return nullptr;
  if (const int err = self->resync(self->pending_); err != 0) {
    error = std::string("link monitor: dump: ") + std::strerror(-err);
    return nullptr;
  }
  return self;
}

LinkMonitor::~LinkMonitor() = default;

int LinkMonitor::fd() const noexcept {
  return events_->fd();
}

int LinkMonitor::resync(std::vector<LinkEvent>& out) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  std::unordered_set<int> present;
  const int err = requests_->dump(nlh, [&](const nlmsghdr* msg) {
    LinkMessage link;
    if (!parse_link_message(msg, link)) return;
    present.insert(link.ifindex);
    table_.apply(link, out);
  });
  if (err != 0) return err;
  table_.forget_missing(present, out);
  return 0;
}

int LinkMonitor::read_events(std::vector<LinkEvent>& out) {
  const std::size_t before = out.size();
  for (LinkEvent& e : pending_) out.push_back(std::move(e));
  pending_.clear();
  for (;;) {
    const int n = events_->read_notifications([&](const nlmsghdr* nlh) {
      LinkMessage link;
      if (parse_link_message(nlh, link)) table_.apply(link, out);
    });
    if (n == 0) break;
    if (n == -ENOBUFS) {
      if (const int err = resync(out); err != 0) return err;
      continue;
    }
    if (n < 0) return n;
  }
  return static_cast<int>(out.size() - before);
}

}  // namespace xdpvhost::nic

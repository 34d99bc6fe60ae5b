#include "nic/unicast_filter.hpp"

#include <libmnl/libmnl.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "nic/rtnl_socket.hpp"

namespace xdpvhost::nic {

const char* to_string(UnicastFilter::Method method) {
  return method == UnicastFilter::Method::kUnicastList ? "unicast_list" : "promiscuous";
}

std::unique_ptr<UnicastFilter> UnicastFilter::open(const std::string& ifname, std::string& error) {
  const unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    error = "unicast filter: interface " + ifname + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<UnicastFilter> self(new UnicastFilter());
  self->rtnl_ = RtnlSocket::open(0, false, error);
  if (!self->rtnl_) return nullptr;
  self->ifname_ = ifname;
  self->ifindex_ = static_cast<int>(ifindex);
  return self;
}

UnicastFilter::~UnicastFilter() {
  for (const Entry& e : entries_) {
    if (e.method == Method::kUnicastList) (void)netlink_delete(e.mac);
  }
  // promisc_fd_ closes here; the kernel drops the promiscuity reference.
}

namespace {

nlmsghdr* build_neigh(char* buf, std::uint16_t type, std::uint16_t flags, int ifindex,
                      const net::MacAddress& mac) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  auto* ndm = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  ndm->ndm_family = AF_BRIDGE;
  ndm->ndm_ifindex = ifindex;
  ndm->ndm_state = NUD_PERMANENT;
  ndm->ndm_flags = NTF_SELF;
  mnl_attr_put(nlh, NDA_LLADDR, mac.bytes.size(), mac.data());
  return nlh;
}

}  // namespace

int UnicastFilter::netlink_add(const net::MacAddress& mac) noexcept {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = build_neigh(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL, ifindex_, mac);
  return rtnl_->request(nlh);
}

int UnicastFilter::netlink_delete(const net::MacAddress& mac) noexcept {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  nlmsghdr* nlh = build_neigh(buf, RTM_DELNEIGH, 0, ifindex_, mac);
  return rtnl_->request(nlh);
}

int UnicastFilter::promisc_acquire() noexcept {
  if (promisc_fd_.valid()) return 0;
  // Protocol 0: the socket receives nothing; it only holds the membership.
  sys::UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!fd) return -errno;
  packet_mreq mreq{};
  mreq.mr_ifindex = ifindex_;
  mreq.mr_type = PACKET_MR_PROMISC;
  if (::setsockopt(fd.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) {
    return -errno;
  }
  promisc_fd_ = std::move(fd);
  return 0;
}

void UnicastFilter::promisc_release() noexcept {
  promisc_fd_.reset();
}

int UnicastFilter::add(const net::MacAddress& mac, Method* method, std::string* reason) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.mac == mac; });
  if (it != entries_.end()) {
    if (method != nullptr) *method = it->method;
    return 0;
  }
  int err = netlink_add(mac);
  // EEXIST: the address is already on the list (e.g. left by a daemon that
  // was killed); a guest MAC is ours, so adopt it and remove it later.
  if (err == 0 || err == -EEXIST) {
    entries_.push_back({mac, Method::kUnicastList});
    if (method != nullptr) *method = Method::kUnicastList;
    return 0;
  }
  if (err == -ENODEV) return err;
  if (reason != nullptr) {
    *reason = ifname_ + " refused unicast address " + mac.to_string() + ": " + std::strerror(-err);
  }
  err = promisc_acquire();
  if (err != 0) {
    if (reason != nullptr) *reason += std::string("; promiscuous mode: ") + std::strerror(-err);
    return err;
  }
  entries_.push_back({mac, Method::kPromiscuous});
  if (method != nullptr) *method = Method::kPromiscuous;
  return 0;
}

int UnicastFilter::remove(const net::MacAddress& mac) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.mac == mac; });
  if (it == entries_.end()) return -ENOENT;
  const Method method = it->method;
  entries_.erase(it);
  if (method == Method::kUnicastList) {
    const int err = netlink_delete(mac);
    return err == -ENOENT ? 0 : err;
  }
  if (promiscuous_users() == 0) promisc_release();
  return 0;
}

std::size_t UnicastFilter::unicast_entries() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(),
                    [](const Entry& e) { return e.method == Method::kUnicastList; }));
}

std::size_t UnicastFilter::promiscuous_users() const noexcept {
  return entries_.size() - unicast_entries();
}

}  // namespace xdpvhost::nic

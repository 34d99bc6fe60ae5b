#include "nic/xdp_features.hpp"

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace xdpvhost::nic {

namespace {

// include/uapi/linux/netdev.h
constexpr char kNetdevFamily[] = "netdev";
constexpr std::uint8_t kNetdevCmdDevGet = 1;
constexpr std::uint16_t kNetdevAttrIfindex = 1;
constexpr std::uint16_t kNetdevAttrXdpFeatures = 3;
constexpr std::uint16_t kNetdevAttrXdpZcMaxSegs = 4;

struct MnlClose {
  void operator()(mnl_socket* nl) const noexcept { mnl_socket_close(nl); }
};
using MnlSocket = std::unique_ptr<mnl_socket, MnlClose>;

// Sends one request and runs `cb` over the answer until the kernel's ack.
// 0 or -errno.
int transact(mnl_socket* nl, nlmsghdr* nlh, mnl_cb_t cb, void* data) {
  const std::uint32_t portid = mnl_socket_get_portid(nl);
  const std::uint32_t seq = nlh->nlmsg_seq;
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl, buf.data(), buf.size());
    if (n < 0) return -errno;
    const int ret = mnl_cb_run(buf.data(), static_cast<std::size_t>(n), seq, portid, cb, data);
    if (ret < 0) return -errno;
    if (ret == MNL_CB_STOP) return 0;
  }
}

nlmsghdr* put_genl_header(char* buf, std::uint16_t type, std::uint8_t cmd, std::uint32_t seq) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq;
  auto* genl = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
  genl->cmd = cmd;
  genl->version = 1;
  return nlh;
}

int family_id_cb(const nlmsghdr* nlh, void* data) {
  const auto attr_cb = [](const nlattr* attr, void* id) -> int {
    if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID &&
        mnl_attr_validate(attr, MNL_TYPE_U16) == 0)
      *static_cast<std::uint16_t*>(id) = mnl_attr_get_u16(attr);
    return MNL_CB_OK;
  };
  return mnl_attr_parse(nlh, sizeof(genlmsghdr), attr_cb, data);
}

int dev_cb(const nlmsghdr* nlh, void* data) {
  const auto attr_cb = [](const nlattr* attr, void* features) -> int {
    auto* out = static_cast<XdpFeatures*>(features);
    switch (mnl_attr_get_type(attr)) {
      case kNetdevAttrXdpFeatures:
        if (mnl_attr_validate(attr, MNL_TYPE_U64) == 0) out->act = mnl_attr_get_u64(attr);
        break;
      case kNetdevAttrXdpZcMaxSegs:
        if (mnl_attr_validate(attr, MNL_TYPE_U32) == 0) out->zc_max_segs = mnl_attr_get_u32(attr);
        break;
      default:
        break;
    }
    return MNL_CB_OK;
  };
  return mnl_attr_parse(nlh, sizeof(genlmsghdr), attr_cb, data);
}

}  // namespace

std::string to_string(const XdpFeatures& features) {
  static constexpr struct {
    std::uint64_t bit;
    const char* name;
  } kNames[] = {{kXdpActBasic, "basic"},          {kXdpActRedirect, "redirect"},
                {kXdpActNdoXmit, "ndo-xmit"},     {kXdpActXskZeroCopy, "xsk-zerocopy"},
                {kXdpActHwOffload, "hw-offload"}, {kXdpActRxSg, "rx-sg"},
                {kXdpActNdoXmitSg, "ndo-xmit-sg"}};
  std::string text;
  for (const auto& n : kNames) {
    if ((features.act & n.bit) == 0) continue;
    if (!text.empty()) text += ' ';
    text += n.name;
  }
  if (features.zc_max_segs != 0) text += " zc-max-segs=" + std::to_string(features.zc_max_segs);
  return text.empty() ? "none" : text;
}

int read_xdp_features(int ifindex, XdpFeatures& out) noexcept {
  out = XdpFeatures{};
  MnlSocket nl(mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC));
  if (!nl) return -errno;
  if (mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);

  nlmsghdr* nlh = put_genl_header(buf.data(), GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
  mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, kNetdevFamily);
  std::uint16_t family = 0;
  if (const int err = transact(nl.get(), nlh, family_id_cb, &family); err != 0) return err;
  if (family == 0) return -ENOENT;

  nlh = put_genl_header(buf.data(), family, kNetdevCmdDevGet, 2);
  mnl_attr_put_u32(nlh, kNetdevAttrIfindex, static_cast<std::uint32_t>(ifindex));
  return transact(nl.get(), nlh, dev_cb, &out);
}

}  // namespace xdpvhost::nic

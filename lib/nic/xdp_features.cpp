#include "nic/xdp_features.hpp"

#include "nic/genl.hpp"

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
  genl::MnlSocket nl = genl::open(false);
  if (!nl) return -errno;
  genl::Family family;
  if (const int err = genl::resolve(nl.get(), kNetdevFamily, family); err != 0) return err;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = genl::put_header(buf.data(), family.id, kNetdevCmdDevGet, 2);
  mnl_attr_put_u32(nlh, kNetdevAttrIfindex, static_cast<std::uint32_t>(ifindex));
  return genl::transact(nl.get(), nlh, dev_cb, &out);
}

}  // namespace xdpvhost::nic

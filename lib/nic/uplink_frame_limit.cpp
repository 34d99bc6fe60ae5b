#include "nic/uplink_frame_limit.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/ethernet.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::nic {

namespace {

// The largest MTU an interface can have (ETH_MAX_MTU).
constexpr std::uint32_t kMaxMtu = 65535;
// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86-64: what a page
// keeps free after the frame when XDP runs on one page.
constexpr std::uint32_t kSkbSharedInfo = 320;

std::string subject(const UplinkFrameFacts& f) {
  std::string who = f.ifname.empty() ? (f.driver.empty() ? "uplink" : f.driver) : f.ifname;
  if (!f.ifname.empty() && !f.driver.empty()) who += " (" + f.driver + ")";
  if (f.zero_copy) who += *f.zero_copy ? " in zero-copy mode" : " in copy mode";
  return who;
}

}  // namespace

UplinkFrameLimit uplink_frame_limit(const UplinkFrameFacts& f) {
  UplinkFrameLimit out;
  const std::uint32_t room = f.frame_size > kXdpHeadroom ? f.frame_size - kXdpHeadroom : 0;
  const std::string fs = std::to_string(f.frame_size);
  out.single_buffer = room;
  const std::string who = subject(f);
  const auto single = [&](const std::string& why) {
    out.max_frame = room;
    out.multi_buffer = false;
    out.reason = who + ": " + why + "; one " + fs + "-byte UMEM frame holds " +
                 std::to_string(room) + " bytes after " + std::to_string(kXdpHeadroom) +
                 " of XDP headroom";
    return out;
  };

  if (f.kernel.known() && f.kernel < kMultiBufferKernel) {
    return single("multi-buffer AF_XDP needs kernel >= " + kMultiBufferKernel.to_string() +
                  " (running " + f.kernel.to_string() + ")");
  }
  if (f.socket_multi_buffer == false) {
    return single("the AF_XDP socket is bound without multi-buffer (XDP_USE_SG)");
  }

  // Multi-buffer: the smallest of these bounds holds.
  std::uint32_t max = net::max_frame_for_mtu(kMaxMtu);
  std::string why = "the largest MTU an interface can have (" + std::to_string(kMaxMtu) + ")";
  const auto bound = [&](std::uint32_t value, std::string reason) {
    if (value < max) {
      max = value;
      why = std::move(reason);
    }
  };
  if (f.zero_copy.value_or(false)) {
    const std::uint32_t segs = f.xdp_features ? f.xdp_features->zc_max_segs : 0;
    if (segs <= 1) {
      return single("zero-copy multi-buffer needs driver support (NETDEV_A_DEV_XDP_ZC_MAX_SEGS " +
                    (segs == 0 ? std::string("not reported") : "= 1") +
                    "); bind in copy mode for longer frames");
    }
    bound(segs * f.frame_size, "zero-copy: the driver takes at most " + std::to_string(segs) +
                                   " buffers of " + fs +
                                   " bytes per packet (NETDEV_A_DEV_XDP_ZC_MAX_SEGS)");
  } else {
    const std::uint32_t descs = f.max_skb_frags + 1;
    bound(descs * f.frame_size,
          "copy-mode TX takes at most MAX_SKB_FRAGS + 1 = " + std::to_string(descs) +
              " descriptors of " + fs + " bytes per packet");
  }
  const bool native = f.xdp_mode.value_or(XdpMode::kNative) == XdpMode::kNative;
  const std::uint32_t one_page = f.page_size - kXdpHeadroom - kSkbSharedInfo;
  const std::string page_text =
      " (" + std::to_string(f.page_size) + " - " + std::to_string(kXdpHeadroom) + " headroom - " +
      std::to_string(kSkbSharedInfo) + " skb_shared_info = " + std::to_string(one_page) + " bytes)";
  if (native && f.program_frags == false) {
    bound(one_page,
          "native XDP without a frags-aware program sees frames of one page only" + page_text +
              (f.driver == "veth" ? "; veth caps its peer's MTU at " + std::to_string(one_page - 14)
                                  : std::string()));
  } else if (native && f.xdp_features && !f.xdp_features->rx_sg()) {
    bound(one_page, "the driver has no multi-buffer native XDP (no rx-sg among its XDP features: " +
                        to_string(*f.xdp_features) + "), so frames of one page only" + page_text +
                        "; skb mode carries longer ones");
  }
  if (f.interface_mtu != 0) {
    bound(net::max_frame_for_mtu(f.interface_mtu),
          "interface MTU " + std::to_string(f.interface_mtu) + " admits frames up to " +
              std::to_string(net::max_frame_for_mtu(f.interface_mtu)) + " bytes");
  }
  if (max <= room) {
    // Multi-buffer adds nothing here; what bounds the frame is still `why`.
    out.max_frame = max;
    out.multi_buffer = false;
    out.reason = who + ": " + why;
    return out;
  }
  out.max_frame = max;
  out.multi_buffer = true;
  out.reason = who + ": " + why;
  return out;
}

UplinkFrameFacts probe_uplink_frame_facts(const std::string& ifname, std::uint32_t frame_size,
                                          std::string* note) {
  UplinkFrameFacts f;
  f.frame_size = frame_size;
  f.ifname = ifname;
  f.kernel = KernelVersion::running();
  if (const long page = ::sysconf(_SC_PAGESIZE); page > 0)
    f.page_size = static_cast<std::uint32_t>(page);
  std::string notes;
  const auto add_note = [&](const std::string& text) {
    notes += (notes.empty() ? "" : "; ") + text;
  };

  const unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    add_note(ifname + ": " + std::strerror(errno));
  } else {
    const sys::UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (!sock) {
      add_note(std::string("socket: ") + std::strerror(errno));
    } else {
      if (::ioctl(sock.get(), SIOCGIFMTU, &ifr) == 0) {
        f.interface_mtu = static_cast<std::uint32_t>(ifr.ifr_mtu);
      } else {
        add_note(std::string("SIOCGIFMTU: ") + std::strerror(errno));
      }
      ethtool_drvinfo info{};
      info.cmd = ETHTOOL_GDRVINFO;
      ifr.ifr_data = reinterpret_cast<char*>(&info);
      if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) == 0) {
        f.driver.assign(info.driver, ::strnlen(info.driver, sizeof info.driver));
      } else {
        add_note(std::string("ETHTOOL_GDRVINFO: ") + std::strerror(errno));
      }
    }
    XdpFeatures features;
    if (const int err = read_xdp_features(static_cast<int>(ifindex), features); err == 0) {
      f.xdp_features = features;
    } else {
      add_note(std::string("XDP features: ") + std::strerror(-err));
    }
  }
  if (note != nullptr) *note = notes;
  return f;
}

}  // namespace xdpvhost::nic

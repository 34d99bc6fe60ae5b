#pragma once
// The XDP steering program (bpf/xdp_steer.bpf.c) attached to one interface,
// and its maps. Loaded through libxdp so it can share the interface with
// other XDP programs through libxdp's dispatcher; where the dispatcher
// cannot load (no bpffs, or EPERM from RLIMIT_MEMLOCK without
// CAP_SYS_RESOURCE) libxdp attaches the program alone, and this class
// reports which of the two happened and in which mode (native or skb).
//
// Multi-buffer: the program reads only the Ethernet header and measures
// frames with bpf_xdp_get_buff_len() (Linux 5.18+), so it is correct for
// frames spread over several buffers. attach() loads it frags-aware
// (BPF_F_XDP_HAS_FRAGS, libxdp's xdp_program__set_xdp_frags_support)
// first and falls back to the plain program where that attach is refused;
// frags() and attach_report() say which. A frags-aware program is what lets
// a driver hand XDP frames longer than one page -- veth refuses a plain
// native program while its peer's MTU exceeds 3506 (ERANGE, "Peer MTU is
// too large to set XDP"), and caps the peer's MTU there while one is
// attached (measured on 6.18; see README.md).
//
// The destructor detaches the program. A process killed with SIGKILL
// cannot: the program stays on the interface. attach() therefore first
// removes any earlier xdpvhost program from the interface (remove_stale()).
//
// Threading: map updates are syscalls and safe from any thread (the XDP
// program sees each update atomically per entry); attach/detach belong to
// the control thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/mac_address.hpp"

struct xdp_program;

namespace xdpvhost::nic {

enum class XdpModeRequest : std::uint8_t { kAuto, kNative, kSkb };  // kAuto: native, else skb
enum class XdpMode : std::uint8_t { kNative, kSkb };

std::optional<XdpModeRequest> parse_xdp_mode(std::string_view text);  // "auto|native|skb"
const char* to_string(XdpModeRequest mode);
const char* to_string(XdpMode mode);

// Where the program object is looked for when XdpProgramOptions::object_path
// is empty: $XDPVHOST_BPF_OBJECT; else, for an installed daemon, the object
// installed with it (found relative to the executable, so a relocated
// installation works); else the build tree's object if it exists; else the
// configured install path.
std::string default_bpf_object_path();

struct XdpProgramOptions {
  std::string object_path;  // empty: default_bpf_object_path()
  XdpModeRequest mode = XdpModeRequest::kAuto;
  bool remove_stale = true;         // detach earlier xdpvhost programs first
  std::uint32_t max_frame_len = 0;  // oversize limit for guest frames; 0 = none
  // Try the frags-aware program first (native, then skb), the plain one
  // where it is refused. false: the plain program only.
  bool frags = true;
};

// The program's counters, summed over all CPUs.
struct XdpSteerStats {
  std::uint64_t redirected = 0;        // guest unicast handed to the queue's socket
  std::uint64_t redirect_failed = 0;   // guest unicast, no socket on the queue: passed
  std::uint64_t passed_host = 0;       // unicast for the node itself
  std::uint64_t passed_flood = 0;      // broadcast/multicast passed (flood socket copies)
  std::uint64_t oversize_dropped = 0;  // guest unicast above max_frame_len
  std::uint64_t malformed = 0;         // shorter than an Ethernet header
  std::uint64_t bypassed = 0;          // passed while bypass was set

  XdpSteerStats& operator+=(const XdpSteerStats& s) noexcept {
    redirected += s.redirected;
    redirect_failed += s.redirect_failed;
    passed_host += s.passed_host;
    passed_flood += s.passed_flood;
    oversize_dropped += s.oversize_dropped;
    malformed += s.malformed;
    bypassed += s.bypassed;
    return *this;
  }
};

// An XDP program found on an interface.
struct AttachedXdpProgram {
  std::string name;
  std::uint32_t id = 0;
  bool via_dispatcher = false;  // a component of libxdp's dispatcher
};

class XdpProgram {
 public:
  // Opens the object, removes stale xdpvhost programs (if asked), attaches.
  // Returns nullptr and sets `error` on failure.
  static std::unique_ptr<XdpProgram> attach(const std::string& ifname,
                                            const XdpProgramOptions& options, std::string& error);
  ~XdpProgram();  // detach()
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;

  const std::string& ifname() const noexcept { return ifname_; }
  int ifindex() const noexcept { return ifindex_; }
  std::uint32_t program_id() const noexcept { return program_id_; }
  XdpMode mode() const noexcept { return mode_; }
  // True if attached as a component of libxdp's multiprog dispatcher, false
  // if attached alone (libxdp's fallback).
  bool via_dispatcher() const noexcept { return via_dispatcher_; }
  // Loaded frags-aware (BPF_F_XDP_HAS_FRAGS): the driver may hand it frames
  // in several buffers, and AF_XDP sockets bound with multi-buffer receive
  // them as descriptor chains.
  bool frags() const noexcept { return frags_; }
  // One line for logs/control socket, e.g. "native, frags, single program
  // (dispatcher: Compatibility check for dispatcher program failed: ...)",
  // or "... (frags refused: <why>)" when the plain program was attached.
  const std::string& attach_report() const noexcept { return attach_report_; }
  // The object file the program was loaded from.
  const std::string& object_path() const noexcept { return object_path_; }
  // libxdp/libbpf messages printed while attaching.
  const std::string& attach_log() const noexcept { return attach_log_; }

  // Map updates: 0 or -errno.
  int add_guest_mac(const net::MacAddress& mac) noexcept;
  int remove_guest_mac(const net::MacAddress& mac) noexcept;
  int set_max_frame_len(std::uint32_t bytes) noexcept;
  int set_bypass(bool bypass) noexcept;  // pass everything to the kernel
  int register_socket(std::uint32_t queue_id, int xsk_fd) noexcept;
  int unregister_socket(std::uint32_t queue_id) noexcept;
  int read_stats(XdpSteerStats& out) const noexcept;
  // How long ago a frame from `mac` last arrived on the interface, as the
  // program remembers sources (bpf/README.md: to within a second; sources
  // of frames steered to guests are sampled). 0, or -ENOENT when it is not
  // remembered (never seen, or evicted by newer ones), or -errno.
  int wire_source_age(const net::MacAddress& mac, std::chrono::nanoseconds& age) const noexcept;

  // Whether the program is still on its interface: someone else may have
  // detached it (ip link set dev X xdp off). True when it cannot be told.
  bool still_attached() const;

  // Detaches now (idempotent). 0 or -errno (-ENODEV etc. if the interface
  // went away, in which case the kernel dropped the program with it).
  int detach() noexcept;

  // Detaches every program named like ours from ifname, whoever attached
  // it. Returns how many were removed, or -errno. `report` says what was
  // found (including foreign programs left in place).
  static int remove_stale(const std::string& ifname, std::string* report = nullptr);
  // Lists the XDP programs on ifname (empty if none). 0 or -errno.
  static int list_attached(const std::string& ifname, std::vector<AttachedXdpProgram>& out);

 private:
  XdpProgram() = default;
  int update_config() noexcept;

  std::string ifname_;
  int ifindex_ = 0;
  xdp_program* prog_ = nullptr;
  bool attached_ = false;
  XdpMode mode_ = XdpMode::kNative;
  bool via_dispatcher_ = false;
  bool frags_ = false;
  std::uint32_t program_id_ = 0;
  // The libxdp dispatcher the program was attached through, as last seen
  // (still_attached() follows a dispatcher that libxdp replaced).
  mutable std::uint32_t dispatcher_id_ = 0;
  std::string attach_report_;
  std::string object_path_;
  std::string attach_log_;
  int guest_macs_fd_ = -1;  // owned by the bpf_object inside prog_
  int xsks_fd_ = -1;
  int config_fd_ = -1;
  int stats_fd_ = -1;
  int wire_sources_fd_ = -1;
  std::uint32_t max_frame_len_ = 0;
  std::uint32_t config_flags_ = 0;
};

}  // namespace xdpvhost::nic

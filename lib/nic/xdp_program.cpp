#include "nic/xdp_program.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <ctime>
#include <vector>

#include "sys/enum_names.hpp"
#include "sys/unique_fd.hpp"
#include "xdp_steer_abi.h"

namespace xdpvhost::nic {

namespace {

constexpr sys::EnumNames<XdpModeRequest, 3> kModeNames{{
    {XdpModeRequest::kAuto, "auto"},
    {XdpModeRequest::kNative, "native"},
    {XdpModeRequest::kSkb, "skb"},
}};
static_assert(sys::in_enum_order(kModeNames, 3));
// iproute2's words for the same modes.
constexpr sys::EnumNames<XdpModeRequest, 2> kModeAliases{{
    {XdpModeRequest::kNative, "drv"},
    {XdpModeRequest::kSkb, "generic"},
}};

}  // namespace

std::optional<XdpModeRequest> parse_xdp_mode(std::string_view text) {
  return sys::value_named(kModeNames, text, kModeAliases);
}

const char* to_string(XdpModeRequest mode) {
  return sys::name_of(kModeNames, mode);
}

const char* to_string(XdpMode mode) {
  return mode == XdpMode::kNative ? "native" : "skb";
}

std::string default_bpf_object_path() {
  if (const char* env = std::getenv("XDPVHOST_BPF_OBJECT"); env != nullptr && *env != '\0') {
    return env;
  }
  // An installed daemon: the object installed beside it.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = (exe.parent_path() / XDPVHOST_BPF_OBJECT_FROM_SBIN).lexically_normal();
    if (::access(beside.c_str(), R_OK) == 0) return beside.string();
  }
  // A daemon run from its build tree.
  if (::access(XDPVHOST_BPF_OBJECT, R_OK) == 0) return XDPVHOST_BPF_OBJECT;
  return XDPVHOST_BPF_INSTALLED_OBJECT;
}

namespace {

// Collects libxdp's and libbpf's messages while attach() runs (control
// thread only; the print hooks are process-wide and restored afterwards).
thread_local std::string* g_log = nullptr;

int capture_print(const char* format, va_list ap) {
  if (g_log == nullptr) return 0;
  char line[512];
  const int n = std::vsnprintf(line, sizeof line, format, ap);
  if (n > 0) g_log->append(line);
  return n;
}
int libxdp_capture(enum libxdp_print_level level, const char* format, va_list ap) {
  if (level == LIBXDP_DEBUG) return 0;
  return capture_print(format, ap);
}
int libbpf_capture(enum libbpf_print_level level, const char* format, va_list ap) {
  if (level == LIBBPF_DEBUG) return 0;
  return capture_print(format, ap);
}

class LogCapture {
 public:
  explicit LogCapture(std::string& log)
      : old_xdp_(libxdp_set_print(libxdp_capture)), old_bpf_(libbpf_set_print(libbpf_capture)) {
    g_log = &log;
  }
  ~LogCapture() {
    g_log = nullptr;
    libxdp_set_print(old_xdp_);
    libbpf_set_print(old_bpf_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

 private:
  libxdp_print_fn_t old_xdp_;
  libbpf_print_fn_t old_bpf_;
};

bool is_ours(const xdp_program* prog) {
  const char* name = xdp_program__name(prog);
  return name != nullptr && std::strcmp(name, XDP_STEER_PROG_NAME) == 0;
}

// Why libxdp fell back to a single program: the line before its
// "Falling back to loading single prog" message.
std::string dispatcher_fallback_reason(const std::string& log) {
  const std::size_t fall = log.find("Falling back to loading single prog");
  if (fall == std::string::npos) return {};
  std::size_t end = log.rfind('\n', fall);
  if (end == std::string::npos || end == 0) return {};
  std::size_t begin = log.rfind('\n', end - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = log.substr(begin, end - begin);
  if (line.rfind("libxdp: ", 0) == 0) line.erase(0, 8);
  return line;
}

// libxdp's dispatcher program: its components are listed through libxdp.
constexpr const char* kDispatcherName = "xdp_dispatcher";

// The XDP programs on an interface by id (native or generic, and offloaded),
// as the kernel reports them: no fd is opened. 0 or -errno.
int attached_program_ids(int ifindex, std::vector<std::uint32_t>& ids) {
  ids.clear();
  LIBBPF_OPTS(bpf_xdp_query_opts, opts);
  if (const int err = bpf_xdp_query(ifindex, 0, &opts); err != 0) return err;
  for (const std::uint32_t id : {opts.drv_prog_id, opts.skb_prog_id, opts.hw_prog_id})
    if (id != 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return 0;
}

// A loaded program's name ("" if it cannot be read); the fd it takes to ask
// is closed again.
std::string program_name(std::uint32_t id) {
  const sys::UniqueFd fd(bpf_prog_get_fd_by_id(id));
  if (!fd) return {};
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0) return {};
  return std::string(info.name, strnlen(info.name, sizeof(info.name)));
}

int ifindex_of(const std::string& ifname) {
  const unsigned index = ::if_nametoindex(ifname.c_str());
  return index == 0 ? -errno : static_cast<int>(index);
}

}  // namespace

std::unique_ptr<XdpProgram> XdpProgram::attach(const std::string& ifname,
                                               const XdpProgramOptions& options,
                                               std::string& error) {
  const int ifindex = ifindex_of(ifname);
  if (ifindex < 0) {
    error = "xdp: interface " + ifname + ": " + std::strerror(-ifindex);
    return nullptr;
  }
  std::unique_ptr<XdpProgram> self(new XdpProgram());
  self->ifname_ = ifname;
  self->ifindex_ = ifindex;
  self->max_frame_len_ = options.max_frame_len;

  std::string stale_report;
  if (options.remove_stale) {
    const int removed = remove_stale(ifname, &stale_report);
    if (removed < 0) {
      error = "xdp: " + ifname + ": cannot check for stale programs: " + stale_report;
      return nullptr;
    }
  }

  const std::string path =
      options.object_path.empty() ? default_bpf_object_path() : options.object_path;
  LogCapture capture(self->attach_log_);

  // Attempts in order: native before skb, and in each the frags-aware
  // program before the plain one. The flag is set before the program is
  // loaded, so a change of it needs a freshly opened program.
  struct Attempt {
    xdp_attach_mode mode;
    bool frags;
  };
  Attempt attempts[4];
  std::uint32_t count = 0;
  for (const xdp_attach_mode mode : {XDP_MODE_NATIVE, XDP_MODE_SKB}) {
    if (mode == XDP_MODE_NATIVE && options.mode == XdpModeRequest::kSkb) continue;
    if (mode == XDP_MODE_SKB && options.mode == XdpModeRequest::kNative) continue;
    if (options.frags) attempts[count++] = {mode, true};
    attempts[count++] = {mode, false};
  }
  std::string native_refusal;  // the first native attempt's error
  std::string frags_refusal;   // the last frags attempt's error
  int err = -EINVAL;
  for (std::uint32_t i = 0; i < count; ++i) {
    const Attempt& a = attempts[i];
    if (self->prog_ == nullptr || xdp_program__xdp_frags_support(self->prog_) != a.frags) {
      if (self->prog_ != nullptr) xdp_program__close(self->prog_);
      self->prog_ = xdp_program__open_file(path.c_str(), "xdp", nullptr);
      if (const long open_err = libxdp_get_error(self->prog_); open_err != 0) {
        self->prog_ = nullptr;
        error = "xdp: open " + path + ": " + std::strerror(static_cast<int>(-open_err));
        return nullptr;
      }
      if (a.frags) {
        if (const int ferr = xdp_program__set_xdp_frags_support(self->prog_, true); ferr != 0) {
          frags_refusal = std::strerror(-ferr);
          continue;
        }
      }
    }
    err = xdp_program__attach(self->prog_, ifindex, a.mode, 0);
    if (err == 0) {
      self->mode_ = a.mode == XDP_MODE_NATIVE ? XdpMode::kNative : XdpMode::kSkb;
      break;
    }
    const std::string why = std::strerror(-err);
    if (a.mode == XDP_MODE_NATIVE && native_refusal.empty()) native_refusal = why;
    if (a.frags) frags_refusal = why;
  }
  self->object_path_ = path;
  if (err != 0) {
    error = "xdp: attach to " + ifname + " failed: " + std::strerror(-err);
    if (!native_refusal.empty()) error += " (native: " + native_refusal + ")";
    if (const std::string why = dispatcher_fallback_reason(self->attach_log_); !why.empty()) {
      error += " [dispatcher: " + why + "]";
    }
    if (err == -EBUSY || err == -EEXIST) error += "; another XDP program is attached";
    return nullptr;
  }
  if (self->mode_ == XdpMode::kNative) native_refusal.clear();
  self->frags_ = xdp_program__xdp_frags_support(self->prog_);
  self->attached_ = true;
  self->program_id_ = xdp_program__id(self->prog_);

  std::vector<std::uint32_t> ids;
  if (attached_program_ids(ifindex, ids) == 0)
    for (const std::uint32_t id : ids)
      if (id != self->program_id_ && program_name(id) == kDispatcherName) {
        self->via_dispatcher_ = true;
        self->dispatcher_id_ = id;
      }

  bpf_object* obj = xdp_program__bpf_obj(self->prog_);
  self->guest_macs_fd_ = bpf_object__find_map_fd_by_name(obj, XDP_STEER_MAP_GUEST_MACS);
  self->xsks_fd_ = bpf_object__find_map_fd_by_name(obj, XDP_STEER_MAP_XSKS);
  self->config_fd_ = bpf_object__find_map_fd_by_name(obj, XDP_STEER_MAP_CONFIG);
  self->stats_fd_ = bpf_object__find_map_fd_by_name(obj, XDP_STEER_MAP_STATS);
  self->wire_sources_fd_ = bpf_object__find_map_fd_by_name(obj, XDP_STEER_MAP_WIRE_SOURCES);
  if (self->guest_macs_fd_ < 0 || self->xsks_fd_ < 0 || self->config_fd_ < 0 ||
      self->stats_fd_ < 0 || self->wire_sources_fd_ < 0) {
    error = "xdp: " + path +
            " lacks one of the maps " XDP_STEER_MAP_GUEST_MACS ", " XDP_STEER_MAP_XSKS
            ", " XDP_STEER_MAP_CONFIG ", " XDP_STEER_MAP_STATS ", " XDP_STEER_MAP_WIRE_SOURCES;
    return nullptr;  // destructor detaches
  }
  if (const int cerr = self->update_config(); cerr != 0) {
    error = std::string("xdp: writing config map: ") + std::strerror(-cerr);
    return nullptr;
  }

  self->attach_report_ = std::string(to_string(self->mode_)) + (self->frags_ ? ", frags" : "") +
                         (self->via_dispatcher_ ? ", libxdp dispatcher" : ", single program");
  if (!self->via_dispatcher_) {
    if (const std::string why = dispatcher_fallback_reason(self->attach_log_); !why.empty()) {
      self->attach_report_ += " (dispatcher: " + why + ")";
    }
  }
  if (options.frags && !self->frags_)
    self->attach_report_ += " (frags refused: " + frags_refusal + ")";
  if (!native_refusal.empty()) self->attach_report_ += " (native refused: " + native_refusal + ")";
  if (!stale_report.empty()) self->attach_report_ += "; " + stale_report;
  return self;
}

XdpProgram::~XdpProgram() {
  detach();
  if (prog_ != nullptr) xdp_program__close(prog_);
}

// A program attached on its own is detached with the kernel's call, and only
// while it is still the one attached (XDP_FLAGS_REPLACE with its own fd): a
// program someone else put there meanwhile stays. libxdp's detach is kept
// for a dispatcher's component, whose layout it alone knows; for a single
// program it read the interface back and left one bpf-prog fd open per call
// (libxdp 1.3.1), which held the detached program and its maps loaded.
int XdpProgram::detach() noexcept {
  if (!attached_) return 0;
  attached_ = false;
  if (!via_dispatcher_) {
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_program__fd(prog_));
    const std::uint32_t mode = mode_ == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
    const int err = bpf_xdp_detach(ifindex_, mode | XDP_FLAGS_REPLACE, &opts);
    // EEXIST: another program is attached now; ours is not there to detach.
    return err == -EEXIST ? 0 : err;
  }
  const xdp_attach_mode mode = mode_ == XdpMode::kNative ? XDP_MODE_NATIVE : XDP_MODE_SKB;
  std::string log;
  LogCapture capture(log);
  return xdp_program__detach(prog_, ifindex_, mode, 0);
}

int XdpProgram::update_config() noexcept {
  const std::uint32_t key = 0;
  xdp_steer_config cfg{};
  cfg.max_frame_len = max_frame_len_;
  cfg.flags = config_flags_;
  return bpf_map_update_elem(config_fd_, &key, &cfg, BPF_ANY);
}

int XdpProgram::add_guest_mac(const net::MacAddress& mac) noexcept {
  xdp_steer_mac_key key{};
  std::memcpy(key.addr, mac.data(), mac.bytes.size());
  const xdp_steer_mac_value value{};
  return bpf_map_update_elem(guest_macs_fd_, &key, &value, BPF_ANY);
}

int XdpProgram::remove_guest_mac(const net::MacAddress& mac) noexcept {
  xdp_steer_mac_key key{};
  std::memcpy(key.addr, mac.data(), mac.bytes.size());
  return bpf_map_delete_elem(guest_macs_fd_, &key);
}

int XdpProgram::set_max_frame_len(std::uint32_t bytes) noexcept {
  max_frame_len_ = bytes;
  return update_config();
}

int XdpProgram::set_bypass(bool bypass) noexcept {
  config_flags_ = bypass ? (config_flags_ | XDP_STEER_CFG_BYPASS)
                         : (config_flags_ & ~std::uint32_t{XDP_STEER_CFG_BYPASS});
  return update_config();
}

int XdpProgram::register_socket(std::uint32_t queue_id, int xsk_fd) noexcept {
  return bpf_map_update_elem(xsks_fd_, &queue_id, &xsk_fd, BPF_ANY);
}

int XdpProgram::unregister_socket(std::uint32_t queue_id) noexcept {
  const int err = bpf_map_delete_elem(xsks_fd_, &queue_id);
  return err == -ENOENT ? 0 : err;
}

int XdpProgram::read_stats(XdpSteerStats& out) const noexcept {
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return cpus < 0 ? cpus : -EINVAL;
  std::vector<std::uint64_t> values(static_cast<std::size_t>(cpus));
  std::uint64_t sums[XDP_STEER_STAT_COUNT] = {};
  for (std::uint32_t key = 0; key < XDP_STEER_STAT_COUNT; ++key) {
    if (const int err = bpf_map_lookup_elem(stats_fd_, &key, values.data()); err != 0) return err;
    for (const std::uint64_t v : values) sums[key] += v;
  }
  out.redirected = sums[XDP_STEER_STAT_REDIRECTED];
  out.redirect_failed = sums[XDP_STEER_STAT_REDIRECT_FAILED];
  out.passed_host = sums[XDP_STEER_STAT_PASSED_HOST];
  out.passed_flood = sums[XDP_STEER_STAT_PASSED_FLOOD];
  out.oversize_dropped = sums[XDP_STEER_STAT_OVERSIZE_DROPPED];
  out.malformed = sums[XDP_STEER_STAT_MALFORMED];
  out.bypassed = sums[XDP_STEER_STAT_BYPASSED];
  return 0;
}

int XdpProgram::wire_source_age(const net::MacAddress& mac,
                                std::chrono::nanoseconds& age) const noexcept {
  xdp_steer_mac_key key{};
  std::memcpy(key.addr, mac.data(), mac.bytes.size());
  std::uint64_t seen = 0;
  if (const int err = bpf_map_lookup_elem(wire_sources_fd_, &key, &seen); err != 0) return err;
  // The program's clock: bpf_ktime_get_coarse_ns(), CLOCK_MONOTONIC_COARSE.
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  const std::uint64_t now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u +
                               static_cast<std::uint64_t>(now.tv_nsec);
  age = std::chrono::nanoseconds(now_ns > seen ? now_ns - seen : 0);
  return 0;
}

// Asked every few seconds: the kernel's ids only, no fd. Only when the
// dispatcher we were attached through was replaced (another program added
// or removed through libxdp) are its components listed again.
bool XdpProgram::still_attached() const {
  const int ifindex = ifindex_of(ifname_);
  std::vector<std::uint32_t> ids;
  if (ifindex < 0 || attached_program_ids(ifindex, ids) != 0) return true;
  const auto on = [&ids](std::uint32_t id) {
    return id != 0 && std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  if (!via_dispatcher_) return on(program_id_);
  if (on(dispatcher_id_)) return true;
  std::vector<AttachedXdpProgram> listed;
  if (list_attached(ifname_, listed) != 0) return true;
  // In libxdp's dispatcher a component is also known by its name: should
  // its id read back otherwise, it is not taken for detached.
  const bool attached = std::any_of(listed.begin(), listed.end(), [this](const auto& p) {
    return p.id == program_id_ || (p.via_dispatcher && p.name == XDP_STEER_PROG_NAME);
  });
  if (attached)
    for (const std::uint32_t id : ids)
      if (program_name(id) == kDispatcherName) dispatcher_id_ = id;
  return attached;
}

// The kernel's ids and names; libxdp only to list a dispatcher's components
// (libxdp 1.3.1's xdp_multiprog__get_from_ifindex leaves one bpf-prog fd
// open per call, so it is not used otherwise).
int XdpProgram::list_attached(const std::string& ifname, std::vector<AttachedXdpProgram>& out) {
  out.clear();
  const int ifindex = ifindex_of(ifname);
  if (ifindex < 0) return ifindex;
  std::vector<std::uint32_t> ids;
  if (const int err = attached_program_ids(ifindex, ids); err != 0) return err;
  bool dispatcher = false;
  for (const std::uint32_t id : ids) {
    std::string name = program_name(id);
    if (name == kDispatcherName) {
      dispatcher = true;
      continue;
    }
    out.push_back({std::move(name), id, false});
  }
  if (!dispatcher) return 0;
  out.clear();  // libxdp lists them all, the dispatcher's components too
  std::string log;
  LogCapture capture(log);
  xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (const long err = libxdp_get_error(mp); err != 0) {
    return err == -ENOENT ? 0 : static_cast<int>(err);
  }
  if (xdp_multiprog__is_legacy(mp)) {
    if (const xdp_program* main = xdp_multiprog__main_prog(mp); main != nullptr) {
      out.push_back({xdp_program__name(main), xdp_program__id(main), false});
    }
  } else {
    for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr;
         p = xdp_multiprog__next_prog(p, mp)) {
      out.push_back({xdp_program__name(p), xdp_program__id(p), true});
    }
  }
  if (const xdp_program* hw = xdp_multiprog__hw_prog(mp); hw != nullptr) {
    out.push_back({xdp_program__name(hw), xdp_program__id(hw), false});
  }
  xdp_multiprog__close(mp);
  return 0;
}

namespace {

// Our programs among a dispatcher's components, detached through libxdp: it
// alone knows the dispatcher's layout. (libxdp 1.3.1 leaves a bpf-prog fd
// open per xdp_multiprog__get_from_ifindex, so this is the only other call.)
int remove_stale_from_dispatcher(int ifindex, std::string& text) {
  std::string log;
  LogCapture capture(log);
  xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (const long err = libxdp_get_error(mp); err != 0) {
    if (err == -ENOENT) return 0;  // detached meanwhile
    text = std::string("reading XDP state: ") + std::strerror(static_cast<int>(-err));
    return static_cast<int>(err);
  }
  std::vector<xdp_program*> stale;
  for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr;
       p = xdp_multiprog__next_prog(p, mp)) {
    if (is_ours(p)) stale.push_back(p);
  }
  int result = 0;
  if (!stale.empty()) {
    const int err = xdp_program__detach_multi(stale.data(), stale.size(), ifindex,
                                              xdp_multiprog__attach_mode(mp), 0);
    if (err == 0) {
      result = static_cast<int>(stale.size());
      text = "removed " + std::to_string(result) +
             " stale " XDP_STEER_PROG_NAME " from the dispatcher";
    } else {
      result = err;
      text = std::string("detaching stale programs from the dispatcher: ") + std::strerror(-err);
    }
  }
  xdp_multiprog__close(mp);
  return result;
}

}  // namespace

// A program attached on its own (no dispatcher) is found and detached with
// the kernel's calls, opening only the fd that names it in the detach, so a
// restarted daemon holds nothing of the one it replaced (libxdp's reading of
// the interface kept the old program and its maps alive in the new daemon).
int XdpProgram::remove_stale(const std::string& ifname, std::string* report) {
  std::string local;
  std::string& text = report != nullptr ? *report : local;
  text.clear();
  const int ifindex = ifindex_of(ifname);
  if (ifindex < 0) {
    text = ifname + ": " + std::strerror(-ifindex);
    return ifindex;
  }
  LIBBPF_OPTS(bpf_xdp_query_opts, query);
  if (const int err = bpf_xdp_query(ifindex, 0, &query); err != 0) {
    text = std::string("reading XDP state: ") + std::strerror(-err);
    return err;
  }
  struct Slot {
    std::uint32_t id;
    std::uint32_t mode_flag;
  };
  const Slot slots[] = {{query.drv_prog_id, XDP_FLAGS_DRV_MODE},
                        {query.skb_prog_id, XDP_FLAGS_SKB_MODE},
                        {query.hw_prog_id, XDP_FLAGS_HW_MODE}};
  for (const Slot& slot : slots)
    if (slot.id != 0 && program_name(slot.id) == kDispatcherName)
      return remove_stale_from_dispatcher(ifindex, text);
  int removed = 0;
  for (const Slot& slot : slots) {
    if (slot.id == 0) continue;
    const std::string name = program_name(slot.id);
    if (name != XDP_STEER_PROG_NAME) {
      text = "foreign XDP program '" + name + "' left in place";
      continue;
    }
    // Detached only if it is still that program (XDP_FLAGS_REPLACE).
    const sys::UniqueFd old(bpf_prog_get_fd_by_id(slot.id));
    if (!old) continue;  // gone meanwhile
    LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = old.get());
    if (const int err = bpf_xdp_detach(ifindex, slot.mode_flag | XDP_FLAGS_REPLACE, &opts);
        err != 0) {
      text = std::string("detaching stale program: ") + std::strerror(-err);
      return err;
    }
    ++removed;
    text = "removed stale " XDP_STEER_PROG_NAME " id " + std::to_string(slot.id);
  }
  return removed;
}

}  // namespace xdpvhost::nic

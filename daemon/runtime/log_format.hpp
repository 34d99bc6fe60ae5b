#pragma once
// How the daemon's log lines look: text (the default) or JSON lines, one
// event per line, as the DRA plugin and the binding sidecar write them
// (kubevirt/dra_plugin/xdpvhost_dra/log_setup.py): time (UTC, milliseconds),
// level, logger, message, and for a line about a port ("port <name>: ...")
// the port's name with its owner's namespace, vm and claim; for one about an
// uplink ("uplink <name>: ..."), the uplink's name. Under systemd, when
// stderr is the journal's stream (JOURNAL_STREAM), every line starts with
// its syslog priority (<3> error, <4> warning, <6> info, <7> debug), which
// journald takes as the entry's.

#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

#include "config/config.hpp"

namespace xdpvhost::daemon {

// Whose port a name is, for the log lines that name it. Written by the
// control thread as ports come and go; read by any thread that logs.
class PortLogContext {
 public:
  void set(const std::string& port, const std::optional<controller::PortOwner>& owner);
  void forget(const std::string& port);
  std::optional<controller::PortOwner> owner_of(std::string_view port) const;

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, controller::PortOwner, std::less<>> owners_;
};

// The process's: the one the installed formatter reads.
PortLogContext& port_log_context();

class LogLineFormatter final : public spdlog::formatter {
 public:
  LogLineFormatter(LogFormat format, bool journal_priorities,
                   const PortLogContext& context = port_log_context());
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  void format_json(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) const;

  LogFormat format_;
  bool journal_priorities_;
  const PortLogContext& context_;
  std::unique_ptr<spdlog::formatter> text_;
};

// Whether stderr is the journal's stream (systemd.exec(5): JOURNAL_STREAM
// is its "device:inode").
bool stderr_is_journal();

// The syslog priority of a level (sd-daemon.h's SD_ERR ...).
int syslog_priority(spdlog::level::level_enum level) noexcept;

// Sets the default logger's formatter.
void install_log_format(LogFormat format);

}  // namespace xdpvhost::daemon

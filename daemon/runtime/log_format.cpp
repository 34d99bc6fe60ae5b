#include "runtime/log_format.hpp"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

namespace xdpvhost::daemon {
namespace {

constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v";

// "port vm1: ..." → ("port", "vm1"); names have no ':' or space (schema).
struct Subject {
  std::string_view kind;
  std::string_view name;
};

std::optional<Subject> subject_of(std::string_view message) {
  for (std::string_view kind : {"port", "uplink"}) {
    if (message.size() <= kind.size() + 1 || message.substr(0, kind.size()) != kind ||
        message[kind.size()] != ' ')
      continue;
    const std::string_view rest = message.substr(kind.size() + 1);
    const auto colon = rest.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
    const std::string_view name = rest.substr(0, colon);
    if (name.find(' ') != std::string_view::npos) return std::nullopt;
    return Subject{kind, name};
  }
  return std::nullopt;
}

std::string utc_millis(spdlog::log_clock::time_point when) {
  const auto since = when.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  const std::time_t t = secs.count();
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return text;
}

// Each level's name in JSON lines (the plugin's, Python's in lower case:
// "warning", not spdlog's "warn") and its syslog priority (sd-daemon.h).
struct LevelFacts {
  spdlog::level::level_enum level;
  std::string_view name;
  int priority;
};
constexpr std::array<LevelFacts, 6> kLevels{{
    {spdlog::level::trace, "trace", 7},
    {spdlog::level::debug, "debug", 7},
    {spdlog::level::info, "info", 6},
    {spdlog::level::warn, "warning", 4},
    {spdlog::level::err, "error", 3},
    {spdlog::level::critical, "critical", 2},
}};

const LevelFacts& facts_of(spdlog::level::level_enum level) noexcept {
  for (const auto& f : kLevels)
    if (f.level == level) return f;
  return kLevels[2];  // info
}

void append(spdlog::memory_buf_t& dest, std::string_view text) {
  dest.append(text.data(), text.data() + text.size());
}

}  // namespace

void PortLogContext::set(const std::string& port,
                         const std::optional<controller::PortOwner>& owner) {
  std::unique_lock lock(mutex_);
  if (owner)
    owners_.insert_or_assign(port, *owner);
  else
    owners_.erase(port);
}

void PortLogContext::forget(const std::string& port) {
  std::unique_lock lock(mutex_);
  owners_.erase(port);
}

std::optional<controller::PortOwner> PortLogContext::owner_of(std::string_view port) const {
  std::shared_lock lock(mutex_);
  if (auto it = owners_.find(port); it != owners_.end()) return it->second;
  return std::nullopt;
}

PortLogContext& port_log_context() {
  static PortLogContext context;
  return context;
}

LogLineFormatter::LogLineFormatter(LogFormat format, bool journal_priorities,
                                   const PortLogContext& context)
    : format_(format),
      journal_priorities_(journal_priorities),
      context_(context),
      text_(std::make_unique<spdlog::pattern_formatter>(kTextPattern)) {}

std::unique_ptr<spdlog::formatter> LogLineFormatter::clone() const {
  return std::make_unique<LogLineFormatter>(format_, journal_priorities_, context_);
}

void LogLineFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  spdlog::memory_buf_t line;
  if (format_ == LogFormat::kJson)
    format_json(msg, line);
  else
    text_->format(msg, line);
  if (!journal_priorities_) {
    dest.append(line.data(), line.data() + line.size());
    return;
  }
  // Every line of a multi-line event carries the priority: journald reads
  // the stream line by line.
  const char prefix_text[] = {'<', static_cast<char>('0' + syslog_priority(msg.level)), '>'};
  const std::string_view prefix(prefix_text, sizeof prefix_text);
  std::string_view rest(line.data(), line.size());
  while (!rest.empty()) {
    const auto eol = rest.find('\n');
    const std::string_view one =
        rest.substr(0, eol == std::string_view::npos ? rest.size() : eol + 1);
    append(dest, prefix);
    append(dest, one);
    rest.remove_prefix(one.size());
  }
}

void LogLineFormatter::format_json(const spdlog::details::log_msg& msg,
                                   spdlog::memory_buf_t& dest) const {
  const std::string_view message(msg.payload.data(), msg.payload.size());
  nlohmann::json event = {
      {"time", utc_millis(msg.time)},
      {"level", facts_of(msg.level).name},
      {"logger", std::string_view(msg.logger_name.data(), msg.logger_name.size())},
      {"message", message}};
  if (auto subject = subject_of(message)) {
    event[std::string(subject->kind)] = subject->name;
    if (subject->kind == "port") {
      if (auto owner = context_.owner_of(subject->name)) {
        if (!owner->ns.empty()) event["namespace"] = owner->ns;
        if (!owner->vm.empty()) event["vm"] = owner->vm;
        if (!owner->claim.empty()) event["claim"] = owner->claim;
      }
    }
  }
  // A peer-supplied name in a message may be any bytes: replaced, never thrown.
  append(dest, event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  append(dest, "\n");
}

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  // "<device>:<inode>", both decimal.
  char* end = nullptr;
  errno = 0;
  const unsigned long long dev = std::strtoull(stream, &end, 10);
  if (errno != 0 || end == stream || *end != ':') return false;
  const char* inode = end + 1;
  const unsigned long long ino = std::strtoull(inode, &end, 10);
  if (errno != 0 || end == inode || *end != '\0') return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

int syslog_priority(spdlog::level::level_enum level) noexcept {
  return facts_of(level).priority;
}

void install_log_format(LogFormat format) {
  spdlog::set_formatter(std::make_unique<LogLineFormatter>(format, stderr_is_journal()));
}

}  // namespace xdpvhost::daemon

#pragma once
// The outcome of loading or changing configuration: a value, or an error of
// a kind (the control server maps each onto a JSON-RPC error code:
// control/control_api.hpp's rpc_code). Nothing in the config API throws; a
// ConfigResult says what went wrong instead.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace xdpvhost::daemon {

enum class ConfigErrorKind {
  kIo,               // the file could not be read or written
  kSyntax,           // not JSON
  kSchema,           // the JSON does not match the schema (details: every violation)
  kInvalid,          // matches the schema but breaks a rule (multicast MAC, thread index, ...)
  kSocketPath,       // a socket path does not fit sun_path or holds a NUL byte
  kNameInUse,        // a port or uplink name is taken
  kMacInUse,         // a MAC is taken by another port
  kSocketInUse,      // a socket path is taken by another port or the control socket
  kNotFound,         // a named port or uplink does not exist
  kInUse,            // still referenced (uplink named by ports, interface queue bound)
  kOperationFailed,  // valid, but the daemon could not do it (socket not bindable, ...)
};

struct ConfigError {
  ConfigErrorKind kind = ConfigErrorKind::kInvalid;
  // One line naming the field: `ports[0].mac: "01:00:5e:00:00:01" is a
  // multicast address`. For kSchema the first violations joined by "; ".
  std::string message;
  // kSchema: every violation, one per entry (for error.data.errors).
  std::vector<std::string> details;
};

template <class T>
class [[nodiscard]] ConfigResult {
 public:
  ConfigResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  ConfigResult(ConfigError error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Only when ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Only when !ok().
  const ConfigError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ConfigError> v_;
};

}  // namespace xdpvhost::daemon

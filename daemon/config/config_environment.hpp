#pragma once
// "${NAME}" in the config file's strings is the environment's NAME: a
// DaemonSet passes the node's IP (the downward API's status.hostIP) as
// NODE_IP and writes `"listen": "${NODE_IP}:9477"`, so the file mounted
// from the ConfigMap is the daemon's config as it is, and an edit of it can
// be followed (no init container renders it). Only this form is expanded:
// no default values, no `$NAME`, nothing run. An unset variable is an
// error that names the field; "$${" is a literal "${". An IPv6 address in
// a host:port string gets brackets ("[fd00::1]:9477"). Keys, and the state
// file and control requests, are never expanded.

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace xdpvhost::daemon {

using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's environment.
EnvironmentLookup process_environment();

// Expands every string value of `document` in place; "" or the error
// ("metrics.listen: ${NODE_IP} is not set").
std::string expand_environment(nlohmann::json& document, const EnvironmentLookup& lookup);

}  // namespace xdpvhost::daemon

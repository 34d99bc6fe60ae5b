#pragma once
// Human renderings of the control methods' results (the default output of
// xdpvhostctl; --json prints the results as they came). Each takes a result
// in the shape proto/methods/*.json documents and tolerates missing members.

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace xdpvhost::ctl {

// A member as display text: strings bare, numbers as written, null or absent "-".
std::string cell(const nlohmann::json& object, const char* key);

void print_status(const nlohmann::json& status, std::ostream& out);
void print_port_list(const nlohmann::json& ports, std::ostream& out);
void print_port_detail(const nlohmann::json& port, std::ostream& out);
void print_uplink_list(const nlohmann::json& uplinks, std::ostream& out);
void print_tunables(const nlohmann::json& scope, std::ostream& out);
void print_version(const std::string& client_version, const nlohmann::json& version,
                   std::ostream& out);

}  // namespace xdpvhost::ctl

#include "config/config_environment.hpp"

#include <arpa/inet.h>

#include <cstdlib>

namespace xdpvhost::daemon {
namespace {

bool name_start(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool name_char(char c) noexcept {
  return name_start(c) || (c >= '0' && c <= '9');
}

bool is_ipv6(const std::string& text) {
  in6_addr addr{};
  return ::inet_pton(AF_INET6, text.c_str(), &addr) == 1;
}

// One string: "" or the error (without the field's path).
std::string expand(std::string& text, const EnvironmentLookup& lookup) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "${") != 0) {
      out += text[i++];
      continue;
    }
    std::size_t end = i + 2;
    while (end < text.size() && name_char(text[end])) ++end;
    if (end == i + 2 || !name_start(text[i + 2]) || end >= text.size() || text[end] != '}')
      return "\"" + text +
             "\": \"${\" not followed by a NAME and \"}\" (\"$${\" is a literal \"${\")";
    const std::string name = text.substr(i + 2, end - i - 2);
    auto value = lookup(name);
    if (!value) return "${" + name + "} is not set";
    // host:port with an IPv6 host: "[addr]:port", as the listeners read it.
    const bool host_of_port = end + 1 < text.size() && text[end + 1] == ':' &&
                              (i == 0 || text[i - 1] != '[') && is_ipv6(*value);
    out += host_of_port ? "[" + *value + "]" : *value;
    i = end + 1;
  }
  text = std::move(out);
  return "";
}

std::string walk(nlohmann::json& node, const std::string& path, const EnvironmentLookup& lookup) {
  if (node.is_string()) {
    std::string& text = node.get_ref<std::string&>();
    if (text.find('$') == std::string::npos) return "";
    if (std::string error = expand(text, lookup); !error.empty())
      return (path.empty() ? "" : path + ": ") + error;
    return "";
  }
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      std::string child = path;
      if (!child.empty()) child += '.';
      child += key;
      if (std::string e = walk(value, child, lookup); !e.empty()) return e;
    }
  } else if (node.is_array()) {
    for (std::size_t k = 0; k < node.size(); ++k) {
      std::string child = path;
      child += '[';
      child += std::to_string(k);
      child += ']';
      if (std::string e = walk(node[k], child, lookup); !e.empty()) return e;
    }
  }
  return "";
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string expand_environment(nlohmann::json& document, const EnvironmentLookup& lookup) {
  return walk(document, "", lookup);
}

}  // namespace xdpvhost::daemon

#include "json_schema/schema_uri.hpp"

#include <cstddef>
#include <utility>
#include <vector>

namespace xdpvhost::daemon::json_schema {

namespace {

// Splits an absolute URI into "scheme://authority" and the path.
std::pair<std::string, std::string> split_authority(const std::string& uri) {
  auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    auto colon = uri.find(':');
    return {uri.substr(0, colon + 1), uri.substr(colon + 1)};
  }
  auto path_start = uri.find('/', scheme_end + 3);
  if (path_start == std::string::npos) return {uri, "/"};
  return {uri.substr(0, path_start), uri.substr(path_start)};
}

std::string remove_dot_segments(const std::string& path) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  bool absolute = !path.empty() && path[0] == '/';
  if (absolute) pos = 1;
  bool trailing_slash = false;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    std::string seg = path.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    trailing_slash = false;
    if (seg == ".") {
      trailing_slash = true;
    } else if (seg == "..") {
      if (!out.empty()) out.pop_back();
      trailing_slash = true;
    } else {
      out.push_back(seg);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::string result = absolute ? "/" : "";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0) result += '/';
    result += out[i];
  }
  if (trailing_slash && !result.empty() && result.back() != '/') result += '/';
  return result;
}

}  // namespace

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool has_scheme(std::string_view uri) {
  auto colon = uri.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (std::size_t i = 0; i < colon; ++i) {
    char c = uri[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

std::string resolve_reference(const std::string& base, std::string_view ref) {
  auto hash = ref.find('#');
  std::string_view ref_uri = ref.substr(0, hash);
  std::string fragment = hash == std::string_view::npos ? "" : std::string(ref.substr(hash + 1));
  std::string target;
  if (ref_uri.empty()) {
    target = base;
  } else if (has_scheme(ref_uri)) {
    auto [authority, path] = split_authority(std::string(ref_uri));
    target = authority + remove_dot_segments(path);
  } else {
    auto [authority, base_path] = split_authority(base);
    if (ref_uri.substr(0, 2) == "//") {
      target = authority.substr(0, authority.find(':') + 1) + std::string(ref_uri);
    } else if (ref_uri[0] == '/') {
      target = authority + remove_dot_segments(std::string(ref_uri));
    } else {
      std::string dir = base_path.substr(0, base_path.rfind('/') + 1);
      target = authority + remove_dot_segments(dir + std::string(ref_uri));
    }
  }
  return target + "#" + fragment;
}

std::string normalize_location(std::string_view uri) {
  std::string out(uri);
  if (out.find('#') == std::string::npos) out += '#';
  return out;
}

}  // namespace xdpvhost::daemon::json_schema

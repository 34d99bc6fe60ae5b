#include "http_request.hpp"

#include <algorithm>
#include <cctype>

namespace xdpvhost::daemon::metrics {

namespace {

bool is_tchar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

HttpParse bad(int status, std::string why) {
  HttpParse p;
  p.status = HttpParse::Status::kBad;
  p.error_status = status;
  p.error = std::move(why);
  return p;
}

bool parse_request_line(std::string_view line, HttpRequest& r, HttpParse& error) {
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    error = bad(400, "malformed request line");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    error = bad(400, "malformed method");
    return false;
  }
  if (target.empty() ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    error = bad(400, "malformed request target");
    return false;
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      !std::isdigit(static_cast<unsigned char>(version[5])) ||
      !std::isdigit(static_cast<unsigned char>(version[7]))) {
    error = bad(400, "malformed HTTP version");
    return false;
  }
  if (version[5] != '1') {
    error = bad(505, "only HTTP/1.x is supported");
    return false;
  }
  r.method = std::string(method);
  r.target = std::string(target);
  r.minor_version = version[7] - '0';
  std::string_view path = target;
  if (const std::size_t scheme = path.find("://");
      path.front() != '/' && scheme != std::string_view::npos) {
    const std::size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  path = path.substr(0, std::min(path.find('?'), path.find('#')));
  r.path = std::string(path);
  return true;
}

}  // namespace

HttpParse parse_http_request(std::string_view buffer, std::size_t max_head_bytes,
                             HttpRequest& request) {
  request = HttpRequest{};
  std::size_t pos = 0;
  // Empty lines before a request line are ignored (RFC 9112, 2.2).
  while (pos < buffer.size() && (buffer[pos] == '\r' || buffer[pos] == '\n')) ++pos;
  bool first = true;
  bool host = false;
  std::string content_length;
  for (;;) {
    const std::size_t nl = buffer.find('\n', pos);
    if (nl == std::string_view::npos || nl + 1 > max_head_bytes) {
      if (buffer.size() > max_head_bytes) return bad(431, "request head too large");
      return HttpParse{};
    }
    std::string_view line = buffer.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return bad(400, "bare CR in request head");
    pos = nl + 1;
    if (first) {
      HttpParse error;
      if (!parse_request_line(line, request, error)) return error;
      first = false;
      continue;
    }
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return bad(400, "obsolete line folding");
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return bad(400, "malformed header field");
    const std::string_view value = trim(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) {
          return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
        }))
      return bad(400, "control character in a header field");
    std::string name = lower(line.substr(0, colon));
    if (name == "host") {
      if (host) return bad(400, "more than one Host header");
      host = true;
    } else if (name == "content-length") {
      if (value.empty() ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad(400, "malformed Content-Length");
      if (!content_length.empty() && content_length != value)
        return bad(400, "conflicting Content-Length headers");
      content_length = std::string(value);
    } else if (name == "transfer-encoding") {
      return bad(501, "request bodies are not accepted");
    }
    request.headers.emplace_back(std::move(name), std::string(value));
  }
  if (request.minor_version >= 1 && !host) return bad(400, "HTTP/1.1 request without Host");
  if (!content_length.empty() && content_length.find_first_not_of('0') != std::string::npos)
    return bad(413, "request bodies are not accepted");
  bool close = false, keep_alive = false;
  for (const auto& [name, value] : request.headers) {
    if (name != "connection") continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string token = lower(trim(rest.substr(0, comma)));
      close = close || token == "close";
      keep_alive = keep_alive || token == "keep-alive";
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  request.keep_alive = !close && (request.minor_version >= 1 || keep_alive);
  HttpParse done;
  done.status = HttpParse::Status::kComplete;
  done.consumed = pos;
  return done;
}

}  // namespace xdpvhost::daemon::metrics

#pragma once
// How deeply a JSON text nests arrays and objects, measured before it is
// parsed: copying, validating or printing a parsed document recurses once
// per level, so untrusted text nested too deeply is refused up front.

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace xdpvhost::daemon {

// Requests and config files of this daemon nest a few levels deep.
inline constexpr std::size_t kMaxJsonNesting = 64;

// Deepest nesting of arrays and objects in `text` (JSON or not), counting
// only brackets outside strings; stops counting past `limit`.
inline std::size_t json_nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace xdpvhost::daemon

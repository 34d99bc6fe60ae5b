#pragma once
// The URIs of schema documents and of the schemas in them: a document's
// absolute "$id", a "$ref" resolved against it, and JSON pointer fragments
// ("uri#/$defs/port"). Every Schema is addressed as "uri#pointer".

#include <string>
#include <string_view>

namespace xdpvhost::daemon::json_schema {

// A JSON pointer reference token for `token` ("a/b" -> "a~1b", "~" -> "~0").
std::string escape_pointer_token(std::string_view token);

// True if `uri` starts with a scheme ("https:"): letters, digits, + - .
// before the first ':' (a letter first).
bool has_scheme(std::string_view uri);

// Resolves `ref` against the absolute document URI `base` (RFC 3986 style,
// enough for "#/ptr", "other.json#/ptr", "../x.json", "/abs.json" and
// absolute URIs). Returns "uri#fragment" with an empty fragment for a root.
std::string resolve_reference(const std::string& base, std::string_view ref);

// `uri` with a '#' appended if it has none: how locations are keyed.
std::string normalize_location(std::string_view uri);

}  // namespace xdpvhost::daemon::json_schema

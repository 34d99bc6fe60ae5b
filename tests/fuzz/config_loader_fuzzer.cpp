// Fuzz target: the config loader. Arbitrary text as a config file
// (parse_config_text: nesting limit, JSON, the embedded config schema,
// defaults, every rule), or as one port or uplink object (parse_port /
// parse_uplink: the params of port.add / uplink.add, after the same nesting
// check the control server makes).
//
// Input: mode:u8, then the text.
//   mode % 3: 0 config file, 1 port object, 2 uplink object
//
// Beyond the sanitizers, the target checks:
//   - nothing throws, and no error is an exception caught on the way out
//     ("unexpected error: ..."): what the schema accepts converts cleanly;
//   - every error has a message, a schema error its details;
//   - round trip: what parses serializes (to_json) to a document that
//     validates and parses to an equal value, through the text too (as the
//     state file is written and read back), and serializes to the same
//     document again.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "fuzz_bytes.hpp"
#include "json_schema/json_nesting.hpp"

namespace {

using namespace xdpvhost::daemon;
using nlohmann::json;
using xdpvhost::fuzz::FuzzBytes;

[[noreturn]] void violated(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "config_loader_fuzzer: invariant violated: %s%s%s\n", what,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

template <class T>
void check_error(const ConfigResult<T>& result) {
  if (result.ok()) return;
  const ConfigError& e = result.error();
  if (e.message.empty()) violated("an error without a message");
  if (e.message.rfind("unexpected error:", 0) == 0)
    violated("an exception escaped the conversion", e.message);
  if (e.kind == ConfigErrorKind::kSchema && e.details.empty())
    violated("a schema error without details", e.message);
}

void config_round_trip(const Config& config) {
  const json document = to_json(config);
  auto again = parse_config(document);
  if (!again) violated("to_json(config) does not parse", again.error().message);
  if (!(again.value() == config)) violated("to_json(config) parses to another config");
  auto from_text = parse_config_text(document.dump(2));
  if (!from_text) violated("to_json(config) as text does not parse", from_text.error().message);
  if (!(from_text.value() == config)) violated("to_json(config) as text parses to another config");
  if (to_json(again.value()) != document) violated("to_json is not stable");
}

template <class T, class Parse>
void object_round_trip(const T& value, Parse parse) {
  const json document = to_json(value);
  auto again = parse(document, "params");
  if (!again) violated("to_json(object) does not parse", again.error().message);
  if (!(again.value() == value)) violated("to_json(object) parses to another value");
  if (to_json(again.value()) != document) violated("to_json(object) is not stable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in(data, size);
  const std::uint8_t mode = in.u8();
  const auto rest = in.take(size);
  const std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());

  if (mode % 3 == 0) {
    auto config = parse_config_text(text);
    check_error(config);
    if (config) config_round_trip(config.value());
    return 0;
  }
  // A port.add / uplink.add request's params: the control server refuses
  // deeper nesting before it parses (RpcDispatcher::handle).
  if (json_nesting_depth(text, kMaxJsonNesting) > kMaxJsonNesting) return 0;
  const json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  if (mode % 3 == 1) {
    auto port = parse_port(object, "params");
    check_error(port);
    if (port)
      object_round_trip(port.value(),
                        [](const json& j, std::string_view path) { return parse_port(j, path); });
  } else {
    auto uplink = parse_uplink(object, "params");
    check_error(uplink);
    if (uplink)
      object_round_trip(uplink.value(),
                        [](const json& j, std::string_view path) { return parse_uplink(j, path); });
  }
  return 0;
}

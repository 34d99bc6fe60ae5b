#include "control/rpc_dispatcher.hpp"

#include "json_schema/json_nesting.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

json reply_error(const json& id, const RpcError& error) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", error_object(error)}};
}

std::string dump(const json& j) {
  // Replace invalid UTF-8 (from a client's own strings echoed back) rather
  // than throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

json error_object(const RpcError& error) {
  json e{{"code", static_cast<int>(error.code)}, {"message", error.message}};
  if (!error.data.is_null()) e["data"] = error.data;
  return e;
}

void RpcDispatcher::add(const std::string& name, Method method) {
  methods_[name] = std::move(method);
}

std::vector<std::string> RpcDispatcher::missing_methods() const {
  std::vector<std::string> missing;
  for (const auto& m : registry_.methods())
    if (!methods_.count(m)) missing.push_back(m);
  return missing;
}

std::string RpcDispatcher::too_large(std::size_t limit) const {
  return dump(reply_error(nullptr, RpcError{RpcErrorCode::kRequestTooLarge,
                                            "request exceeds " + std::to_string(limit) +
                                                " bytes (the limit for one request line)",
                                            nullptr}));
}

std::string RpcDispatcher::handle(std::string_view line) {
  if (json_nesting_depth(line, kMaxJsonNesting) > kMaxJsonNesting)
    return dump(reply_error(
        nullptr,
        {RpcErrorCode::kInvalidRequest,
         "request nested deeper than " + std::to_string(kMaxJsonNesting) + " levels", nullptr}));
  json request = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded())
    return dump(reply_error(nullptr, {RpcErrorCode::kParseError, "not valid JSON", nullptr}));
  bool notification = false;
  json reply = dispatch(request, notification);
  return notification ? std::string{} : dump(reply);
}

json RpcDispatcher::dispatch(const json& request, bool& notification) {
  json id = nullptr;
  if (request.is_object() && request.contains("id")) {
    const json& i = request["id"];
    if (i.is_string() || i.is_number_integer() || i.is_null()) id = i;
  }
  auto invalid = [&](std::string why) {
    return reply_error(id, {RpcErrorCode::kInvalidRequest, std::move(why), nullptr});
  };
  if (request.is_array()) return invalid("batches are not supported: send one request per line");
  if (!request.is_object()) return invalid("a request is a JSON object");
  if (!request.contains("jsonrpc") || request["jsonrpc"] != "2.0")
    return invalid("\"jsonrpc\" must be \"2.0\"");
  if (request.contains("id") &&
      !(request["id"].is_string() || request["id"].is_number_integer() || request["id"].is_null()))
    return invalid("\"id\" must be a string, an integer or null");
  if (!request.contains("method") || !request["method"].is_string())
    return invalid("\"method\" must be a string");
  for (const auto& [key, value] : request.items())
    if (key != "jsonrpc" && key != "id" && key != "method" && key != "params")
      return invalid("unknown member \"" + key + "\"");
  notification = !request.contains("id");
  const std::string method = request["method"].get<std::string>();
  json params = request.contains("params") ? request["params"] : json::object();
  if (!params.is_object()) return invalid("\"params\" must be an object");

  auto it = methods_.find(method);
  const Schema* schema = registry_.params(method);
  if (it == methods_.end() || schema == nullptr)
    return reply_error(
        id, {RpcErrorCode::kMethodNotFound,
             "no method \"" + method + "\" (see the version method for the list)", nullptr});
  auto errors = validate(*schema, params, "params");
  if (!errors.empty()) {
    json details = json::array();
    for (const auto& e : errors) details.push_back(e.to_string());
    return reply_error(
        id, {RpcErrorCode::kInvalidParams, join_errors(errors), json{{"errors", details}}});
  }
  RpcResult result = [&]() -> RpcResult {
    try {
      return it->second(params);
    } catch (const std::exception& e) {
      spdlog::error("control: {} failed: {}", method, e.what());
      return RpcError{RpcErrorCode::kInternalError, std::string(method) + ": " + e.what(), nullptr};
    }
  }();
  if (!result.ok()) return reply_error(id, result.error());
  if (check_results_) {
    if (const Schema* rs = registry_.result(method)) {
      auto bad = validate(*rs, result.result(), "result");
      if (!bad.empty())
        return reply_error(
            id, {RpcErrorCode::kInternalError,
                 method + " result does not match its schema: " + join_errors(bad), nullptr});
    }
  }
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result.result()}};
}

}  // namespace xdpvhost::daemon

// The codec of what a role reports (ipcheck/messages.hpp): checks, observations, native
// errors, skips, audits, the adapter's info, data, harness errors and done.
#include "ipcheck/messages.hpp"

#include <exception>
#include <string>

#include "ipcheck/reports/files.hpp"
#include "messages_codec.hpp"

namespace ipcheck::msg {

using namespace codec;

// ---------------------------------------------------------------- what a role reports

Message encode(const Check& m) { return make(MsgType::check, {reports::dump_json(m.report.to_json())}); }

template <>
Check decode<Check>(Message& m) {
  const Fields f(m, MsgType::check, {"report"});
  const json j = f.document(0);
  try {
    return {verdict::CheckReport::from_json(j)};
  } catch (const std::exception& e) {
    f.fail(0, e.what());
  }
}

Message encode(const Observe& m) { return make(MsgType::observe, {m.name, m.value, m.clause}); }

template <>
Observe decode<Observe>(Message& m) {
  const Fields f(m, MsgType::observe, {"name", "value", "clause"});
  return {f.text(0), f.text(1), f.text(2)};
}

Message encode(const NativeError& m) {
  const json j = {{"verb", m.verb}, {"errc", m.errc}, {"native", m.native}, {"native_name", m.native_name},
                  {"message", m.message}};
  return make(MsgType::native_error, {reports::dump_json(j)});
}

template <>
NativeError decode<NativeError>(Message& m) {
  const Fields f(m, MsgType::native_error, {"error"});
  const DocReader r = f.reader(0);
  return {r.text("verb"), r.text("errc"), r.integer("native"), r.text("native_name"), r.text("message")};
}

Message encode(const Skip& m) { return make(MsgType::skip, {m.reason, m.by}); }

template <>
Skip decode<Skip>(Message& m) {
  const Fields f(m, MsgType::skip, {"reason", "by"});
  Skip s{f.text(0), f.text(1)};
  if (!s.by.empty() && s.by != "runtime" && s.by != "runtime_init")
    throw ChannelError("message skip: field by is '" + s.by + "'; it is runtime, runtime_init or empty");
  return s;
}

Message encode(const Audit& m) { return make(MsgType::audit, {reports::dump_json(m.doc)}); }

template <>
Audit decode<Audit>(Message& m) {
  const Fields f(m, MsgType::audit, {"audit"});
  return {f.document(0)};
}

Message encode(const Info& m) { return make(MsgType::info, {reports::dump_json(m.doc)}); }

template <>
Info decode<Info>(Message& m) {
  const Fields f(m, MsgType::info, {"info"});
  return {f.document(0)};
}

json info_doc(const AdapterInfo& i) {
  json devices = json::array();
  for (const auto& d : i.devices) {
    json dj = {{"name", d.name}, {"uuid", d.uuid}, {"aspects", d.aspects}};
    if (!d.aspect_errors.empty()) dj["aspect_errors"] = d.aspect_errors;
    devices.push_back(std::move(dj));
  }
  return {{"driver_name", i.driver_name},     {"driver_version", i.driver_version},
          {"api_version", i.api_version},     {"devices", devices},
          {"handle_layout", i.handle_layout}, {"kind_layouts", i.kind_layouts},
          {"transport", i.transport},         {"extra", i.extra},
          {"unsupported_verbs", i.unsupported_verbs}};
}

AdapterInfo info_from_doc(const json& doc) {
  if (!doc.is_object()) throw ChannelError("channel: an adapter's info is " + std::string(doc.type_name()) + ", not an object");
  AdapterInfo i;
  // `read(field, target)`: the field converted into target when present.
  auto read = [&doc](const char* field, auto& target) {
    const auto it = doc.find(field);
    if (it == doc.end()) return;
    try {
      it->get_to(target);
    } catch (const json::exception& e) {
      throw ChannelError(std::string("channel: adapter info field '") + field + "' is malformed: " + e.what());
    }
  };
  read("driver_name", i.driver_name);
  read("driver_version", i.driver_version);
  read("api_version", i.api_version);
  read("handle_layout", i.handle_layout);
  read("kind_layouts", i.kind_layouts);
  read("transport", i.transport);
  read("extra", i.extra);
  read("unsupported_verbs", i.unsupported_verbs);
  json devices = json::array();
  read("devices", devices);
  if (!devices.is_array()) throw ChannelError("channel: adapter info field 'devices' is not an array");
  for (const json& d : devices) {
    DeviceInfo di;
    try {
      di.name = d.value("name", "");
      di.uuid = d.value("uuid", "");
      if (d.contains("aspects")) d.at("aspects").get_to(di.aspects);
      if (d.contains("aspect_errors")) d.at("aspect_errors").get_to(di.aspect_errors);
    } catch (const json::exception& e) {
      throw ChannelError(std::string("channel: adapter info field 'devices' is malformed: ") + e.what());
    }
    i.devices.push_back(std::move(di));
  }
  return i;
}

Message encode(const Data& m) { return make(MsgType::data, {m.key, m.doc}, m.fd); }

template <>
Data decode<Data>(Message& m) {
  const Fields f(m, MsgType::data, {"key", "document"});
  return {f.text(0), f.text(1), std::move(m.fd)};
}

Message encode(const HarnessError& m) { return make(MsgType::harness_error, {m.cause}); }

template <>
HarnessError decode<HarnessError>(Message& m) {
  const Fields f(m, MsgType::harness_error, {"cause"});
  return {f.text(0)};
}

Message encode(const Done& m) { return make(MsgType::done, {m.aborted ? "aborted" : "ok", m.message}); }

template <>
Done decode<Done>(Message& m) {
  const Fields f(m, MsgType::done, {"how", "message"});
  if (f.text(0) != "ok" && f.text(0) != "aborted") f.fail(0, "neither \"ok\" nor \"aborted\"");
  return {f.text(0) == "aborted", f.text(1)};
}

}  // namespace ipcheck::msg

// The campaign's messages (campaign_messages.hpp): each one's members written and read here.
#include "campaign_messages.hpp"

#include "ipcheck/reports/files.hpp"
#include "protocol.hpp"

namespace ipcheck::fuzz::wire {

using nlohmann::json;

namespace {

Message as_data(const char* key, const json& doc, const CarriedFd& fd = {}) {
  return msg::encode(msg::Data{key, reports::dump_json(doc), CarriedFd::lend(fd.get())});
}

Verdict verdict_of(const msg::DocReader& r, const char* member) {
  const std::string name = r.text(member);
  if (const auto v = parse_verdict(name)) return *v;
  r.fail(member, name, "no verdict of this ipcheck");
}

const MutatorContext& need_context(const msg::Data& d, const MutatorContext* ctx) {
  if (!ctx) throw ChannelError("campaign: data message '" + d.key + "' carries an input, but its sender's context is not known yet");
  return *ctx;
}

json schedule_to_json(const std::vector<Demotion>& classes) {
  json j = json::array();
  for (const auto& c : classes) j.push_back({{"class", c.cls}, {"keep_one_in", c.keep_one_in}});
  return j;
}

std::vector<Demotion> schedule_of(const msg::DocReader& r, const char* member) {
  return r.with(member, [](const json& j) {
    std::vector<Demotion> out;
    for (const auto& c : j.at("classes")) {
      const auto keep = c.at("keep_one_in").get<std::uint64_t>();
      if (keep == 0) throw std::invalid_argument("keep_one_in is 0");
      out.push_back({c.at("class").get<std::string>(), keep});
    }
    return out;
  });
}

Input input_of(const msg::DocReader& r, const MutatorContext& ctx) {
  return r.with("input", [&](const json& j) { return detail::input_from_json(ctx, j); });
}

Ready decode_ready(const msg::DocReader& r) {
  return {r.with("context", [](const json& j) { return detail::context_from_json(j); }),
          static_cast<int>(r.integer("pid")), r.texts("calibration")};
}

Go decode_go(const msg::DocReader& r, msg::Data& d) {
  const std::string mode = r.text("mode");
  if (mode != "campaign" && mode != "replay") r.fail("mode", mode, "neither \"campaign\" nor \"replay\"");
  if (!d.fd) throw ChannelError("campaign: data message 'go' came without its descriptor (the worker page)");
  return {mode == "replay", r.count("seed"), r.count("first_exec"), r.count("quota"), schedule_of(r, "schedule"),
          std::move(d.fd)};
}

Final decode_final(const msg::DocReader& r) {
  Final f;
  f.executions = r.count("executions");
  f.leaks = r.with("leaks", [](const json& j) {
    std::vector<LeakItem> out;
    for (const auto& l : j) out.push_back({l.at("kind").get<std::string>(), l.at("item").get<std::string>()});
    return out;
  });
  f.fds = r.count("fds");
  f.mappings = r.count("mappings");
  return f;
}

}  // namespace

Message encode(const Setup& m) { return as_data(Setup::key, m.record); }

Message encode(const Ready& m) {
  return as_data(Ready::key, {{"context", detail::context_to_json(m.context)}, {"pid", m.pid}, {"calibration", m.calibration}});
}

Message encode(const Go& m) {
  const json doc = {{"mode", m.replay ? "replay" : "campaign"}, {"seed", m.seed}, {"first_exec", m.first_exec},
                    {"quota", m.quota}, {"schedule", {{"classes", schedule_to_json(m.schedule)}}}};
  return as_data(Go::key, doc, m.page);
}

Message encode(const Finding& m, const MutatorContext& ctx) {
  return as_data(Finding::key, {{"exec", m.exec}, {"verdict", verdict_name(m.verdict)}, {"detail", m.detail},
                             {"input", detail::input_to_json(ctx, m.input)}, {"outcome", m.outcome}});
}

Message encode(const Corpus& m, const MutatorContext& ctx) {
  return as_data(Corpus::key, {{"input", detail::input_to_json(ctx, m.input)}, {"verdict", verdict_name(m.verdict)},
                            {"outcome", m.outcome}});
}

Message encode(const ExecVerdict& m) {
  return as_data(ExecVerdict::key, {{"id", m.id}, {"verdict", verdict_name(m.verdict)}, {"detail", m.detail},
                                 {"outcome", m.outcome}});
}

Message encode(const Final& m) {
  json leaks = json::array();
  std::uint64_t fds = 0, mappings = 0;
  for (const auto& l : m.leaks) {
    const std::uint64_t n = ++(l.kind == "fd" ? fds : mappings);
    if (n <= Final::kFinalItemsPerKind) leaks.push_back({{"kind", l.kind}, {"item", l.item}});
  }
  return as_data(Final::key, {{"leaks", leaks}, {"executions", m.executions}, {"fds", fds}, {"mappings", mappings}});
}

Message encode(const Error& m) { return as_data(Error::key, {{"stage", m.stage}, {"what", m.what}, {"errc", m.errc}}); }

Message encode(const Retire& m) { return as_data(Retire::key, {{"next_exec", m.next_exec}}); }

Message encode(const Schedule& m) { return as_data(Schedule::key, {{"classes", schedule_to_json(m.classes)}}); }

Message encode(const Exec& m, const MutatorContext& ctx) {
  return as_data(Exec::key, {{"id", m.id}, {"input", detail::input_to_json(ctx, m.input)}});
}

Any decode(Message& m, const MutatorContext* ctx) {
  msg::Data d = msg::decode<msg::Data>(m);
  const msg::DocReader r(d);
  if (d.key == Setup::key) return Setup{r.doc()};
  if (d.key == Ready::key) return decode_ready(r);
  if (d.key == Go::key) return decode_go(r, d);
  if (d.key == Finding::key)
    return Finding{r.count("exec"), verdict_of(r, "verdict"), r.text("detail"), input_of(r, need_context(d, ctx)),
                   r.at("outcome")};
  if (d.key == Corpus::key) return Corpus{input_of(r, need_context(d, ctx)), verdict_of(r, "verdict"), r.at("outcome")};
  if (d.key == ExecVerdict::key)
    return ExecVerdict{static_cast<int>(r.integer("id")), verdict_of(r, "verdict"), r.text("detail"), r.at("outcome")};
  if (d.key == Final::key) return decode_final(r);
  if (d.key == Error::key) return Error{r.text("stage"), r.text("what"), r.text("errc")};
  if (d.key == Retire::key) return Retire{r.count("next_exec")};
  if (d.key == Schedule::key) return Schedule{schedule_of(r, nullptr)};
  if (d.key == Exec::key) return Exec{static_cast<int>(r.integer("id")), input_of(r, need_context(d, ctx))};
  throw ChannelError("campaign: data message '" + d.key + "' is none of the campaign's messages");
}

}  // namespace ipcheck::fuzz::wire

// `ipcheck info`: what an adapter sees (asked of a role process; the runner loads nothing).
#include <cstdio>
#include <iostream>

#include "ipcheck/cli.hpp"
#include "ipcheck/runner.hpp"

namespace ipcheck::cli {
namespace {

int info(const std::vector<std::string>& args) {
  Options o("info", "--adapter NAME [--format text|json]",
            "Shows the adapter's driver name and version, its devices and their IPC aspects,\n"
            "and the spec profiles it is judged on.");
  add_adapter_options(o, "adapter to ask");
  o.value("--format", "FORMAT", "text or json", "text");
  return run_command("info", [&] {
    if (!o.parse(args)) return kOk;
    RunOptions r;
    const AdapterChoice adapter = adapter_choice(o);
    r.adapter = adapter.adapter;
    r.adapter_options = adapter.options;
    r.transport = adapter.transport;
    const std::string format = o.get("--format");
    if (format != "text" && format != "json") throw UsageError("--format is '" + format + "'; use text or json");
    const AdapterProbe p = probe_adapter(r);
    nlohmann::json j = {{"adapter", r.adapter},
                        {"available", p.available},
                        {"profiles", find_adapter(r.adapter)->profiles},
                        {"driver", {{"name", p.info.driver_name}, {"version", p.info.driver_version}}},
                        {"devices", p.info.devices},
                        {"transport", p.info.transport}};
    if (!p.available) j["reason"] = p.reason;
    if (format == "json") {
      std::cout << j.dump(2) << "\n";
      return p.available ? kOk : kFailed;
    }
    std::printf("adapter    %s\n", r.adapter.c_str());
    std::string prof;
    for (const auto& x : find_adapter(r.adapter)->profiles) prof += (prof.empty() ? "" : ", ") + x;
    std::printf("profiles   %s\n", prof.c_str());
    if (!p.available) {
      std::printf("available  no: %s\n", p.reason.c_str());
      return kFailed;
    }
    std::printf("driver     %s %s\n", p.info.driver_name.c_str(), p.info.driver_version.c_str());
    std::printf("transport  %s\n", p.info.transport.c_str());
    for (const auto& d : p.info.devices) {
      std::string aspects;
      for (const auto& [k, v] : d["aspects"].items()) aspects += "  " + k + (v.get<bool>() ? "=yes" : "=no");
      std::printf("device     %s%s\n", d.value("name", std::string("?")).c_str(), aspects.c_str());
    }
    return kOk;
  });
}

const CommandRegistration reg{{"info", "show an adapter's driver, devices and aspects", info}};

}  // namespace
}  // namespace ipcheck::cli

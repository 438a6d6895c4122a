// `ipcheck info`: what an adapter sees (asked of a role process; the runner loads nothing).
#include <cstdio>
#include <iostream>

#include "ipcheck/cli.hpp"
#include "ipcheck/resources.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/reports/render.hpp"

namespace ipcheck::cli {
namespace {

int info(const std::vector<std::string>& args) {
  Options o("info", "--adapter NAME [--format text|json] | --resource-spec [--adapter NAME] [--slots N]",
            "Shows the adapter's driver name and version, its devices and their IPC aspects,\n"
            "and the spec profiles it is judged on.\n"
            "With --resource-spec, prints a CTest resource specification (version 1.0) with one\n"
            "'gpus' entry per device the adapter finds (ids 0, 1, ... in the runtime's order), for\n"
            "'ctest --resource-spec-file': the cuda and ze case tests then run side by side, each\n"
            "on its own GPU (docs/gpus.md).");
  add_adapter_options(o, "adapter to ask (default: ref; cuda with --resource-spec)");
  o.flag("--resource-spec", "print a CTest resource spec of the machine's GPUs")
      .value("--slots", "N", "with --resource-spec: tests that may share one GPU", "1")
      .value("--format", "FORMAT", "text or json", "text");
  return run_command("info", [&] {
    if (!o.parse(args)) return kOk;
    RunOptions r;
    const AdapterChoice adapter = adapter_choice(o);
    r.adapter = o.has("--adapter") || !o.has("--resource-spec") ? adapter.adapter : "cuda";
    r.adapter_options = adapter.options;
    r.transport = adapter.transport;
    const std::string format = o.get("--format");
    if (format != "text" && format != "json") throw UsageError("--format is '" + format + "'; use text or json");
    if (o.has("--slots") && !o.has("--resource-spec")) throw UsageError("--slots goes with --resource-spec");
    const AdapterProbe p = probe_adapter(r);
    if (o.has("--resource-spec")) {
      const int slots = o.get_int("--slots", 1, 1024);
      const nlohmann::json devices = p.available ? p.info.devices : nlohmann::json::array();
      std::cout << resource_spec(devices, slots).dump(2) << "\n";
      if (devices.empty())
        std::fprintf(stderr, "ipcheck info: no GPU found by the %s adapter (%s): the spec lists none, so ctest runs no "
                     "test that asks for one\n",
                     r.adapter.c_str(), p.available ? "no device" : p.reason.c_str());
      else if (device_mask_variable(r.adapter).empty())
        std::fprintf(stderr, "ipcheck info: note: the %s adapter has no variable that limits its devices; only cuda "
                     "and ze case tests ask CTest for a GPU\n",
                     r.adapter.c_str());
      return kOk;
    }
    nlohmann::json j = {{"adapter", r.adapter},
                        {"available", p.available},
                        {"profiles", find_adapter(r.adapter)->profiles},
                        {"driver", {{"name", p.info.driver_name}, {"version", p.info.driver_version}}},
                        {"devices", p.info.devices},
                        {"transport", p.info.transport}};
    if (!p.available) j["reason"] = p.reason;
    // What the adapter records beside its driver (the release and library a runtime came from).
    if (p.adapter_info && !p.adapter_info->extra.empty()) j["extra"] = p.adapter_info->extra;
    if (format == "json") {
      std::cout << j.dump(2) << "\n";
      return p.available ? kOk : kFailed;
    }
    std::printf("adapter    %s\n", r.adapter.c_str());
    std::string prof;
    for (const auto& x : find_adapter(r.adapter)->profiles) prof += (prof.empty() ? "" : ", ") + x;
    std::printf("profiles   %s\n", prof.c_str());
    if (!p.available) {
      std::printf("available  no: %s\n", reports::terminal_text(p.reason).c_str());
      return kFailed;
    }
    std::printf("driver     %s %s\n", reports::terminal_text(p.info.driver_name).c_str(),
                reports::terminal_text(p.info.driver_version).c_str());
    std::printf("transport  %s\n", p.info.transport.c_str());
    if (p.adapter_info)
      for (const auto& [k, v] : p.adapter_info->extra)
        std::printf("detail     %s: %s\n", reports::terminal_text(k).c_str(), reports::terminal_text(v).c_str());
    for (const auto& d : p.info.devices) {
      std::string aspects;
      for (const auto& [k, v] : d["aspects"].items()) aspects += "  " + k + (v.get<bool>() ? "=yes" : "=no");
      std::printf("device     %s%s\n", reports::terminal_text(d.value("name", std::string("?"))).c_str(),
                  reports::terminal_text(aspects).c_str());
    }
    return kOk;
  });
}

const CommandRegistration registered_info{{"info", "show an adapter's driver, devices and aspects", info}};

}  // namespace
}  // namespace ipcheck::cli

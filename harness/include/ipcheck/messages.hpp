// The channel's messages (ipcheck/channel.hpp): one struct per MsgType, each encoded to and
// decoded from a Message in one place (harness/src/messages*.cpp). Senders build a struct
// (`channel.send(msg::Barrier{name})`); readers decode one (`msg::decode<msg::Release>(m)`),
// which throws ChannelError naming the message, the field and the value found when the
// packet is another type or a field is missing, extra or malformed.
//
// The protocol is versioned: every hello starts with kProtocolVersion, and decoding a hello
// of another version throws an error that names both versions and the fix, so a parent
// refuses a role of another ipcheck build instead of misreading it.
//
// The fuzz campaign and the bench keep protocols of their own in data messages (a key names
// each message, a JSON document carries it): fuzz/src/campaign_messages.hpp,
// bench/ipc/peer_messages.hpp. DocReader below reads those documents with the same errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/channel.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck::msg {

// The first field of every hello. Bump it whenever a message of this file, or of a protocol
// in data messages, changes its fields.
inline constexpr int kProtocolVersion = 6;  // 2: peer_start; 3: initialised; 4: want_start, start_granted; 5: skip's by; 6: start's reuse, case and role (kept roles)

struct Hello {
  static constexpr MsgType type = MsgType::hello;
  int version = kProtocolVersion;
  std::string role;
  int pid = 0;
  std::string verb_mark;  // address of ipcheck_verb_mark, for the BPF audit ("" from a fuzz-role)
};

struct Start {
  static constexpr MsgType type = MsgType::start;
  nlohmann::json doc;  // the parent's start document (the runner's: start_document)
};

struct Send {
  static constexpr MsgType type = MsgType::send;
  std::string to;
  std::string tag;
  std::vector<std::byte> bytes;
  CarriedFd fd;
};

struct Deliver {
  static constexpr MsgType type = MsgType::deliver;
  std::string from;
  std::string tag;
  std::vector<std::byte> bytes;
  CarriedFd fd;
};

struct Barrier {
  static constexpr MsgType type = MsgType::barrier;
  std::string name;
};

struct Release {
  static constexpr MsgType type = MsgType::release;
  std::string name;
  std::string broken;  // "" or why the barrier broke
};

struct Check {
  static constexpr MsgType type = MsgType::check;
  verdict::CheckReport report;
};

struct Observe {
  static constexpr MsgType type = MsgType::observe;
  std::string name;
  std::string value;
  std::string clause;  // "" when the observation names none
};

struct NativeError {
  static constexpr MsgType type = MsgType::native_error;
  std::string verb;
  std::string errc;  // errc_name
  long long native = 0;
  std::string native_name;
  std::string message;
};

struct Skip {
  static constexpr MsgType type = MsgType::skip;
  std::string reason;
  std::string by;  // reports::CaseResult::skip_by: "runtime_init", "runtime" or ""
};

struct Step {
  static constexpr MsgType type = MsgType::step;
  std::string name;
  bool into = false;  // announced on the way into a blocking call: the role does not wait
};

struct Proceed {
  static constexpr MsgType type = MsgType::proceed;
  std::string name;
};

struct Audit {
  static constexpr MsgType type = MsgType::audit;
  nlohmann::json doc;
};

struct Info {
  static constexpr MsgType type = MsgType::info;
  nlohmann::json doc;  // AdapterInfo, or {"error", "errc"}, or {"harness_error"}
};

// An AdapterInfo as the info message carries it, and back. Reading throws ChannelError
// naming the field where a field has the wrong type; a missing field reads as its default.
nlohmann::json info_doc(const AdapterInfo& info);
AdapterInfo info_from_doc(const nlohmann::json& doc);

// A key and its document (JSON by convention; the reader parses it: DocReader).
struct Data {
  static constexpr MsgType type = MsgType::data;
  std::string key;
  std::string doc;
  CarriedFd fd;
};

// Before anything of a role started on demand reaches a peer: it runs now.
struct PeerStart {
  static constexpr MsgType type = MsgType::peer_start;
  std::string role;
  int pid = 0;
};

// The role's adapter is initialised: the runner frees the start slot it held
// (harness/src/runner_admission.cpp), so another role may start its runtime.
struct Initialised {
  static constexpr MsgType type = MsgType::initialised;
  double seconds = 0;  // how long Adapter::init took
};

// A role whose start document asked for it ("start_slot": true) has run Adapter::prepare
// and waits for a start slot before Adapter::init makes its contexts.
struct WantStart {
  static constexpr MsgType type = MsgType::want_start;
};

// The runner's answer when the slot is the role's (it frees it on the role's initialised).
struct StartGranted {
  static constexpr MsgType type = MsgType::start_granted;
};

struct PeerExit {
  static constexpr MsgType type = MsgType::peer_exit;
  std::string role;
  std::string how;  // ExitStatus::describe
};

struct KillPeer {
  static constexpr MsgType type = MsgType::kill_peer;
  std::string role;
  int signal = 0;
};

struct Done {
  static constexpr MsgType type = MsgType::done;
  bool aborted = false;  // "aborted" on the wire, else "ok"
  std::string message;
};

struct HarnessError {
  static constexpr MsgType type = MsgType::harness_error;
  std::string cause;
};

// Decodes `m` as a T. A descriptor moves from `m` into the struct.
template <class T>
T decode(Message& m);
template <class T>
T decode(Message&& m) {
  return decode<T>(m);
}

// Encoding lends the struct's descriptor to the message: the struct keeps it.
Message encode(const Hello& m);
Message encode(const Start& m);
Message encode(const Send& m);
Message encode(const Deliver& m);
Message encode(const Barrier& m);
Message encode(const Release& m);
Message encode(const Check& m);
Message encode(const Observe& m);
Message encode(const NativeError& m);
Message encode(const Skip& m);
Message encode(const Step& m);
Message encode(const Proceed& m);
Message encode(const Audit& m);
Message encode(const Info& m);
Message encode(const Data& m);
Message encode(const PeerExit& m);
Message encode(const PeerStart& m);
Message encode(const Initialised& m);
Message encode(const WantStart& m);
Message encode(const StartGranted& m);
Message encode(const KillPeer& m);
Message encode(const Done& m);
Message encode(const HarnessError& m);

template <> Hello decode<Hello>(Message& m);
template <> Start decode<Start>(Message& m);
template <> Send decode<Send>(Message& m);
template <> Deliver decode<Deliver>(Message& m);
template <> Barrier decode<Barrier>(Message& m);
template <> Release decode<Release>(Message& m);
template <> Check decode<Check>(Message& m);
template <> Observe decode<Observe>(Message& m);
template <> NativeError decode<NativeError>(Message& m);
template <> Skip decode<Skip>(Message& m);
template <> Step decode<Step>(Message& m);
template <> Proceed decode<Proceed>(Message& m);
template <> Audit decode<Audit>(Message& m);
template <> Info decode<Info>(Message& m);
template <> Data decode<Data>(Message& m);
template <> PeerExit decode<PeerExit>(Message& m);
template <> PeerStart decode<PeerStart>(Message& m);
template <> Initialised decode<Initialised>(Message& m);
template <> WantStart decode<WantStart>(Message& m);
template <> StartGranted decode<StartGranted>(Message& m);
template <> KillPeer decode<KillPeer>(Message& m);
template <> Done decode<Done>(Message& m);
template <> HarnessError decode<HarnessError>(Message& m);

// Any message, decoded by its type (for readers that queue what they do not want yet).
using Any = std::variant<Hello, Start, Send, Deliver, Barrier, Release, Check, Observe, NativeError, Skip, Step,
                         Proceed, Audit, Info, Data, PeerExit, KillPeer, Done, HarnessError, PeerStart, Initialised,
                         WantStart, StartGranted>;
Any decode_any(Message& m);

// Reads a JSON document member by member; every error is a ChannelError naming where the
// document came from, the member and what was found. For the protocols that travel in data
// messages and for this one's JSON fields. A null member names the whole document.
class DocReader {
 public:
  DocReader(std::string where, nlohmann::json doc) : where_(std::move(where)), doc_(std::move(doc)) {}
  // The document of a data message (throws when it is not JSON).
  explicit DocReader(const Data& d);

  const nlohmann::json& doc() const noexcept { return doc_; }
  const nlohmann::json& at(const char* member) const;  // throws when absent
  std::string text(const char* member) const;
  long long integer(const char* member) const;
  std::uint64_t count(const char* member) const;  // an unsigned integer
  bool flag(const char* member) const;
  std::vector<std::string> texts(const char* member) const;  // an array of strings
  std::vector<std::byte> bytes(const char* member) const;    // hex digits (msg::hex)

  // `convert(member)`, where any exception it throws becomes this reader's error.
  template <class F>
  auto with(const char* member, F&& convert) const {
    const nlohmann::json& j = at(member);
    try {
      return convert(j);
    } catch (const std::exception& e) {
      fail(member, j, e.what());
    }
  }

  [[noreturn]] void fail(const char* member, const nlohmann::json& found, const std::string& why) const;

 private:
  std::string where_;
  nlohmann::json doc_;
};

// Bytes as lowercase hex digits, as DocReader::bytes reads them.
std::string hex(std::span<const std::byte> bytes);

}  // namespace ipcheck::msg

// The channel's packets: fields, descriptors by SCM_RIGHTS, and clean errors. What each
// message carries is the codec's (messages_test.cpp).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>

#include <gtest/gtest.h>

#include "ipcheck/audit.hpp"
#include "ipcheck/channel.hpp"

namespace ipcheck {
namespace {

// A packet as the codec would make one, with any fields.
Message packet(MsgType type, std::vector<std::string> fields, int fd = -1) {
  Message m;
  m.type = type;
  m.fields = std::move(fields);
  m.fd = CarriedFd::lend(fd);
  return m;
}

TEST(Channel, FieldsRoundTripIncludingBinary) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a)), y(std::move(b));
  std::string bin("\0\1\2\xff", 4);
  ASSERT_TRUE(x.send(packet(MsgType::send, {"consumer", "", bin})));
  auto m = y.receive(1000);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, MsgType::send);
  ASSERT_EQ(m->fields.size(), 3u);
  EXPECT_EQ(m->fields[0], "consumer");
  EXPECT_EQ(m->fields[1], "");
  EXPECT_EQ(m->fields[2], bin);
  EXPECT_FALSE(m->fd);
}

TEST(Channel, DescriptorTravelsAndRefersToTheSameFile) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a)), y(std::move(b));
  unique_fd f(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(f);
  ASSERT_TRUE(x.send(packet(MsgType::deliver, {"p", "t", "b"}, f.get())));
  auto m = y.receive(1000);
  ASSERT_TRUE(m && m->fd);
  struct stat s1{}, s2{};
  ::fstat(f.get(), &s1);
  ::fstat(m->fd.get(), &s2);
  EXPECT_EQ(s1.st_ino, s2.st_ino);
  EXPECT_NE(m->fd.get(), f.get());
  EXPECT_TRUE(::fcntl(m->fd.get(), F_GETFD) & FD_CLOEXEC) << "received descriptors are close-on-exec";
  EXPECT_TRUE(m->fd.owned()) << "a received descriptor is the message's own";
}

TEST(Channel, TimeoutReturnsEmpty) {
  auto [a, b] = make_channel_pair();
  Channel y(std::move(b));
  EXPECT_FALSE(y.receive(10));
}

TEST(Channel, ClosedPeerIsAnError) {
  auto [a, b] = make_channel_pair();
  Channel y(std::move(b));
  a.reset();
  EXPECT_THROW(y.receive(100), ChannelError);
}

TEST(Channel, SendToClosedPeerReturnsFalse) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a));
  b.reset();
  EXPECT_FALSE(x.send(packet(MsgType::done, {"ok", ""})));
}

TEST(Channel, OversizedPacketIsRefused) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a));
  EXPECT_THROW(x.send(packet(MsgType::data, {std::string(Channel::kMaxPacket + 1, 'x')})), ChannelError);
}

TEST(Channel, FullPeerIsReportedNotBlocked) {
  auto [a, b] = make_channel_pair();
  Channel x(std::move(a));
  const std::string chunk(32 * 1024, 'x');
  Channel::TrySend r = Channel::TrySend::sent;
  for (int i = 0; i < 10000 && r == Channel::TrySend::sent; ++i) r = x.try_send(packet(MsgType::data, {chunk}));
  EXPECT_EQ(r, Channel::TrySend::full);
}

TEST(Channel, ReceivedDescriptorsDoNotLeakOnBadPackets) {
  auto [a, b] = make_channel_pair();
  Channel y(std::move(b));
  // A packet too short for its header, carrying a descriptor.
  unique_fd f(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const std::size_t before = count_open_fds();
  char junk = 1;
  iovec iov{&junk, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int fd = f.get();
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ASSERT_EQ(::sendmsg(a.get(), &msg, 0), 1);
  EXPECT_THROW(y.receive(1000), ChannelError);
  EXPECT_EQ(count_open_fds(), before);
}

}  // namespace
}  // namespace ipcheck

// emulate/net.h — Boost.Asio helpers shared by the coordinator and the worker. Internal to
// emulate/*.cc: nothing outside emulate/ includes it (Asio is heavy to compile).
#ifndef TRAINSIM_EMULATE_NET_H_
#define TRAINSIM_EMULATE_NET_H_

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <coroutine>
// Boost 1.74's Asio turns its C++20 coroutine support on for clang only with libc++; clang with
// libstdc++'s <coroutine> (the sanitizer and fuzz builds) has the same support, so say so.
#if defined(__clang__) && defined(__cpp_impl_coroutine) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#define BOOST_ASIO_HAS_STD_COROUTINE 1
#endif
#include <boost/asio.hpp>
// clang-format on
#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "emulate/protocol.h"
#include "sim/status.h"

namespace trainsim::emulate::net {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using tcp = asio::ip::tcp;

inline std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// One control message as a frame.
inline awaitable<void> Send(tcp::socket& s, const Message& m) {
  const std::string payload = Encode(m);
  const std::string frame = LengthPrefix(static_cast<uint32_t>(payload.size())) + payload;
  co_await asio::async_write(s, asio::buffer(frame), use_awaitable);
}

inline awaitable<Message> Receive(tcp::socket& s) {
  unsigned char head[4];
  co_await asio::async_read(s, asio::buffer(head), use_awaitable);
  const uint32_t n = ParseLengthPrefix(head);
  if (n > kMaxFrameBytes) throw std::runtime_error("frame of " + std::to_string(n) + " bytes");
  std::string payload(n, '\0');
  co_await asio::async_read(s, asio::buffer(payload), use_awaitable);
  Result<Message> m = Decode(payload);
  if (!m.ok()) throw std::runtime_error(m.status().message());
  co_return *m;
}

// Raw doubles as one frame (peer copies, restores from peer memory) and back.
inline awaitable<void> SendDoubles(tcp::socket& s, const std::vector<double>& v) {
  const std::string head = LengthPrefix(static_cast<uint32_t>(v.size() * sizeof(double)));
  std::array<asio::const_buffer, 2> bufs = {asio::buffer(head),
                                            asio::buffer(v.data(), v.size() * sizeof(double))};
  co_await asio::async_write(s, bufs, use_awaitable);
}

inline awaitable<std::vector<double>> ReceiveDoubles(tcp::socket& s) {
  unsigned char head[4];
  co_await asio::async_read(s, asio::buffer(head), use_awaitable);
  const uint32_t n = ParseLengthPrefix(head);
  if (n > kMaxFrameBytes * 4 || n % sizeof(double) != 0) {
    throw std::runtime_error("data frame of " + std::to_string(n) + " bytes");
  }
  std::vector<double> v(n / sizeof(double));
  co_await asio::async_read(s, asio::buffer(v.data(), n), use_awaitable);
  co_return v;
}

// A one-shot event a coroutine can wait for: a timer that never expires, cancelled by Set().
class Event {
 public:
  explicit Event(const asio::any_io_executor& ex)
      : timer_(std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max())) {}
  void Set() {
    *set_ = true;
    timer_->cancel();
  }
  bool is_set() const { return *set_; }
  awaitable<void> Wait() {
    auto timer = timer_;  // kept alive across the wait
    auto set = set_;
    while (!*set) {
      boost::system::error_code ec;
      co_await timer->async_wait(asio::redirect_error(use_awaitable, ec));
    }
  }

 private:
  std::shared_ptr<asio::steady_timer> timer_;
  std::shared_ptr<bool> set_ = std::make_shared<bool>(false);
};

// Splits "HOST:PORT"; InvalidArgument naming `what` when it is not of that form.
inline Status SplitHostPort(const std::string& text, const std::string& what, std::string* host,
                            int* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument(what + " \"" + text + "\" is not HOST:PORT (e.g. 127.0.0.1:0)");
  }
  *host = text.substr(0, colon);
  const std::string p = text.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return Status::InvalidArgument(what + " \"" + text + "\": the port must be 0-65535");
  }
  *port = static_cast<int>(v);
  return Status::Ok();
}

}  // namespace trainsim::emulate::net

#endif  // TRAINSIM_EMULATE_NET_H_

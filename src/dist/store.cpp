// The rendezvous store: a poll() loop in a thread of rank 0 holding a std::map, and a client that
// sends one request at a time. Frames are [op u8][key length u32][value length u32][key][value];
// replies are [status u8][length u32][data]. Waiting for a key is client-side polling with backoff
// (at most 50 ms between tries), which keeps the server a plain request/response loop.
#include "ember/dist/store.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "dist/socket.h"
#include "ember/dist/error.h"

namespace ember::dist {
namespace {

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kHello = 4, kBye = 5, kLost = 6 };
constexpr uint32_t kMaxFrame = 256u << 20;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

// ---- server ---------------------------------------------------------------------------------
class TcpStore::Server {
 public:
  explicit Server(int port) {
    listen_fd_ = net::listen_on(port, &port_);
    if (::pipe2(wake_, O_CLOEXEC) != 0) throw DistError("pipe() failed for the rendezvous store");
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    const char c = 'q';
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& c : clients_) ::close(c.fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return port_; }

 private:
  struct Client {
    int fd;
    int rank = -1;
    bool said_bye = false;
    std::string in;
  };

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (auto& c : clients_) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) clients_.push_back(Client{fd, -1, false, {}});
      }
      std::vector<int> closed;
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        Client& c = clients_[i - 2];
        char buf[65536];
        const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
        if (r <= 0) {
          if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          closed.push_back(c.fd);
          continue;
        }
        c.in.append(buf, static_cast<size_t>(r));
        if (!serve(c)) closed.push_back(c.fd);
      }
      for (int fd : closed) {
        auto it = std::find_if(clients_.begin(), clients_.end(), [&](const Client& c) { return c.fd == fd; });
        if (it->rank >= 0 && !it->said_bye) lost_.insert(it->rank);
        ::close(fd);
        clients_.erase(it);
      }
    }
  }

  // Answers every complete frame in c.in; false when the client sent garbage.
  bool serve(Client& c) {
    while (c.in.size() >= 9) {
      const uint32_t klen = get_u32(c.in.data() + 1), vlen = get_u32(c.in.data() + 5);
      if (klen > kMaxFrame || vlen > kMaxFrame) return false;
      if (c.in.size() < 9 + size_t(klen) + vlen) return true;
      const uint8_t op = static_cast<uint8_t>(c.in[0]);
      std::string key = c.in.substr(9, klen), value = c.in.substr(9 + klen, vlen);
      c.in.erase(0, 9 + size_t(klen) + vlen);
      uint8_t status = 1;
      std::string out;
      switch (op) {
        case kSet: data_[key] = std::move(value); break;
        case kGet: {
          auto it = data_.find(key);
          if (it == data_.end()) status = 0; else out = it->second;
          break;
        }
        case kAdd: {
          int64_t v = 0;
          if (auto it = data_.find(key); it != data_.end()) v = std::stoll(it->second);
          v += std::stoll(value);
          out = data_[key] = std::to_string(v);
          break;
        }
        case kHello: c.rank = std::stoi(key); break;
        case kBye: c.said_bye = true; break;
        case kLost:
          for (int r : lost_) out.append(out.empty() ? "" : ",").append(std::to_string(r));
          break;
        default: return false;
      }
      std::string reply(1, static_cast<char>(status));
      put_u32(reply, static_cast<uint32_t>(out.size()));
      reply += out;
      std::string error;
      // A client that does not read its reply within 10 s is treated as gone.
      if (net::write_all(c.fd, reply.data(), reply.size(), net::Clock::now() + std::chrono::seconds(10), &error) != 1)
        return false;
    }
    return true;
  }

  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::vector<Client> clients_;
  std::map<std::string, std::string> data_;
  std::set<int> lost_;
};

// ---- client ---------------------------------------------------------------------------------
struct TcpStore::Impl {
  std::mutex mu;
  bool broken = false;
};

TcpStore::TcpStore(const Options& o) : host_(o.host), port_(o.port), rank_(o.rank), timeout_(o.timeout),
                                       impl_(std::make_unique<Impl>()) {
  if (o.is_server) {
    server_ = std::make_unique<Server>(o.port);
    port_ = server_->port();
  }
  if (port_ <= 0 || port_ > 65535) throw DistError(detail::cat("rendezvous store: port ", port_, " is not a TCP port"));
  std::string error;
  // Rank 0 connects through MASTER_ADDR too, so local_address() is the interface the others use.
  fd_ = net::connect_until(host_, port_, net::Clock::now() + timeout_, &error);
  if (fd_ < 0) {
    throw DistTimeoutError(
        detail::cat("rank ", rank_, " could not reach the rendezvous store at ", host_, ":", port_, " within ",
                    timeout_.count() / 1000.0, " s (", error, ")"),
        "is rank 0 running, and do MASTER_ADDR/MASTER_PORT point at its machine on every rank?");
  }
  if (rank_ >= 0) request(kHello, std::to_string(rank_), {});
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) {
    try {
      if (rank_ >= 0) request(kBye, {}, {});
    } catch (...) {
    }
    ::close(fd_);
  }
}

std::string TcpStore::request(uint8_t op, const std::string& key, const std::string& value, bool* found,
                              std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) timeout = timeout_;
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto where = [&] { return detail::cat("the rendezvous store at ", host_, ":", port_, " (served by rank 0)"); };
  if (impl_->broken) throw PeerFailureError(detail::cat("rank ", rank_, ": lost the connection to ", where()));
  std::string frame(1, static_cast<char>(op));
  put_u32(frame, static_cast<uint32_t>(key.size()));
  put_u32(frame, static_cast<uint32_t>(value.size()));
  frame += key;
  frame += value;
  const auto deadline = net::Clock::now() + timeout;
  std::string error;
  int rc = net::write_all(fd_, frame.data(), frame.size(), deadline, &error);
  char head[5];
  if (rc == 1) rc = net::read_all(fd_, head, 5, deadline, &error);
  std::string out;
  if (rc == 1) {
    out.resize(get_u32(head + 1));
    rc = net::read_all(fd_, out.data(), out.size(), deadline, &error);
  }
  if (rc == 1) {
    if (found != nullptr) *found = head[0] != 0;
    return out;
  }
  impl_->broken = true;
  if (rc == -1) {
    throw DistTimeoutError(detail::cat("rank ", rank_, ": ", where(), " did not answer within ",
                                       timeout.count() / 1000.0, " s"),
                           "rank 0 may be stopped or overloaded");
  }
  throw PeerFailureError(detail::cat("rank ", rank_, ": ", where(), " closed the connection",
                                     error.empty() ? "" : " (" + error + ")", "; rank 0 has probably died"),
                         "look at rank 0's output for the first error");
}

void TcpStore::set(const std::string& key, const std::string& value) { request(kSet, key, value); }

bool TcpStore::try_get(const std::string& key, std::string* value) {
  bool found = false;
  std::string out = request(kGet, key, {}, &found);
  if (found) *value = std::move(out);
  return found;
}

std::string TcpStore::get(const std::string& key) { return get(key, timeout_); }

std::string TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  std::string v;
  try_get(key, &v);
  return v;
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto deadline = net::Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  std::vector<std::string> missing = keys;
  for (;;) {
    std::string v;
    missing.erase(std::remove_if(missing.begin(), missing.end(), [&](const std::string& k) { return try_get(k, &v); }),
                  missing.end());
    if (missing.empty()) return;
    if (net::Clock::now() >= deadline) {
      std::string names;
      for (size_t i = 0; i < missing.size() && i < 8; ++i) names.append(i ? ", " : "").append(missing[i]);
      if (missing.size() > 8) names += detail::cat(", ... (", missing.size(), " in all)");
      throw DistTimeoutError(detail::cat("rank ", rank_, " waited ", timeout.count() / 1000.0,
                                         " s for key(s) ", names, " in the rendezvous store at ", host_, ":", port_),
                             "a rank did not arrive: check that every rank started and uses the same MASTER_PORT");
    }
    std::this_thread::sleep_for(std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    deadline - net::Clock::now() + std::chrono::milliseconds(1))));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

int64_t TcpStore::next_sequence(const std::string& name) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return sequences_[name]++;
}

std::string TcpStore::local_address() const { return net::local_address(fd_); }

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return std::stoll(request(kAdd, key, std::to_string(delta)));
}

std::vector<int> TcpStore::lost_ranks() { return lost_ranks(timeout_); }

std::vector<int> TcpStore::lost_ranks(std::chrono::milliseconds timeout) {
  const std::string s = request(kLost, {}, {}, nullptr, timeout);
  std::vector<int> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    out.push_back(std::stoi(s.substr(i, j - i)));
    i = j + 1;
  }
  return out;
}

}  // namespace ember::dist

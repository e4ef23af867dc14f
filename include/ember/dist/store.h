// A small TCP key-value store for rendezvous: rank 0 serves it at MASTER_ADDR:MASTER_PORT, every
// rank (rank 0 too) is a client. It carries the ranks' host names, the config fingerprints, Gloo's
// connection addresses and NCCL's unique id. Every request has a timeout; nothing waits forever.
//
// The server also notices ranks that go away: a client says which rank it is when it connects, and
// a connection that closes without a goodbye marks that rank lost, so a rank whose collective fails
// can name the peer that died (lost_ranks()). Thread-safe: one connection per TcpStore guarded by
// a mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ember::dist {

class TcpStore {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // where rank 0 serves (MASTER_ADDR)
    int port = 0;                    // MASTER_PORT; 0 on the server: pick a free port (see port())
    bool is_server = false;          // rank 0: serve in a background thread, then connect to itself
    int rank = -1;                   // this client's rank, for lost-rank reports (-1: anonymous)
    std::chrono::milliseconds timeout{60000};  // connect, and every get/wait
  };
  explicit TcpStore(const Options& options);
  ~TcpStore();  // says goodbye (so this rank is not reported lost) and stops the server
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until the key exists (up to the timeout; DistTimeoutError naming the key) and returns it.
  std::string get(const std::string& key);
  std::string get(const std::string& key, std::chrono::milliseconds timeout);
  // The value now, without waiting; false when absent.
  bool try_get(const std::string& key, std::string* value);
  // Waits until every key exists; DistTimeoutError naming the missing ones.
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Adds delta to an integer counter (missing: 0) and returns the new value; atomic across ranks.
  int64_t add(const std::string& key, int64_t delta);
  // Ranks whose connection closed without a goodbye, ascending. The timeout bounds this one
  // request (default: the store's); the watchdog of a waiting collective asks with a short one.
  std::vector<int> lost_ranks();
  std::vector<int> lost_ranks(std::chrono::milliseconds timeout);

  // This end's IP address on the connection to the store: the interface that routes to rank 0,
  // which backends advertise to the other ranks.
  std::string local_address() const;
  // A per-connection counter: how many times this process asked for `name` on this store (0, 1,
  // ...). Ranks that make the same calls in the same order get the same numbers, which keeps the
  // keys of repeated rendezvous (a second group, a second check_same) apart.
  int64_t next_sequence(const std::string& name);
  int port() const { return port_; }
  const std::string& host() const { return host_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  class Server;
  std::string request(uint8_t op, const std::string& key, const std::string& value, bool* found = nullptr,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  std::unique_ptr<Server> server_;
  std::string host_;
  int port_ = 0;
  int rank_ = -1;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::map<std::string, int64_t> sequences_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::dist

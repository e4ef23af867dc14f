// Fetch tests against a local HTTP server on 127.0.0.1 (a tiny /usr/bin/python3 script the test
// writes) serving files the test wrote: a correct file, a wrong checksum, a truncated transfer, a
// 404 and a server that is gone. After each failure no file is left under the final name (and no
// temp file). Also verify_dataset, and fetch_dataset("fashion-mnist") when the Debian package is
// installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "support/files.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/fetch.h"

extern char** environ;

using namespace ember;
using namespace ember::data;
using ember::test::Bytes;
namespace fs = std::filesystem;

namespace {

// Serves <root>/<path>; /truncated/<path> announces the full Content-Length and sends half.
constexpr const char* kServer = R"PY(
import http.server, os, sys
root, portfile = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        path = self.path.lstrip('/')
        truncated = path.startswith('truncated/')
        if truncated:
            path = path[len('truncated/'):]
        full = os.path.join(root, path)
        if '..' in path or not os.path.isfile(full):
            self.send_error(404, 'no such file')
            return
        data = open(full, 'rb').read()
        self.send_response(200)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data[:len(data) // 2] if truncated else data)
server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
with open(portfile + '.tmp', 'w') as f:
    f.write(str(server.server_address[1]))
os.rename(portfile + '.tmp', portfile)
server.serve_forever()
)PY";

class LocalServer {
 public:
  explicit LocalServer(const fs::path& root, const fs::path& work) {
    const fs::path script = work / "server.py", portfile = work / "port";
    ember::test::write_text(script, kServer);
    std::string py = "/usr/bin/python3", s = script.string(), r = root.string(), p = portfile.string();
    char* argv[] = {py.data(), s.data(), r.data(), p.data(), nullptr};
    if (posix_spawn(&pid_, py.c_str(), nullptr, nullptr, argv, environ) != 0) pid_ = -1;
    // Bounded wait for the server to publish its port.
    for (int i = 0; i < 200 && pid_ > 0 && !fs::exists(portfile); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (fs::exists(portfile)) {
      const Bytes b = ember::test::read_bytes(portfile);
      port_ = std::stoi(std::string(b.begin(), b.end()));
    }
  }
  ~LocalServer() { stop(); }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }
  bool ok() const { return port_ > 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

FetchOptions quick() {
  FetchOptions o;
  o.connect_timeout_s = 5;
  o.timeout_s = 30;
  o.stall_timeout_s = 10;
  return o;
}

// Nothing under dir except the names given (no partial or temp files).
void expect_only(const fs::path& dir, std::set<std::string> names) {
  std::set<std::string> found;
  if (fs::exists(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) found.insert(e.path().filename().string());
  }
  EXPECT_EQ(found, names);
}

struct Served {
  Bytes idx, gz;
  std::string sha;  // of the decompressed IDX
};
Served make_served(const fs::path& root) {
  Served s;
  Bytes px(6 * 28 * 28);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 31);
  s.idx = ember::test::make_idx({6, 28, 28}, px);
  s.gz = ember::test::gzip_bytes(s.idx);
  s.sha = sha256_hex(s.idx);
  ember::test::write_bytes(root / "images.gz", s.gz);
  return s;
}

}  // namespace

class DataFetch : public ::testing::Test {
 protected:
  ember::test::TempDir work{"fetch"};
  fs::path root() const { return work.path() / "www"; }
  fs::path out() const { return work.path() / "out"; }
};

TEST_F(DataFetch, CorrectFileIsWrittenAndASecondCallSkipsIt) {
  Served s = make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok()) << "the local HTTP server did not start";
  const std::vector<RemoteFile> files = {{"images.gz", s.sha, "idx"}};
  FetchReport r = fetch_files(files, server.url(), out(), quick());
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].status, "downloaded");
  EXPECT_TRUE(r.files[0].verified_sha256);
  EXPECT_EQ(r.files[0].sha256, s.sha);
  EXPECT_EQ(ember::test::read_bytes(out() / "images.gz"), s.gz);
  expect_only(out(), {"images.gz"});

  server.stop();  // a verified file needs no server
  r = fetch_files(files, server.url(), out(), quick());
  EXPECT_EQ(r.files[0].status, "already present");

  // A corrupt copy on disk is replaced by a good download.
  LocalServer again(root(), work.path() / "www");
  ASSERT_TRUE(again.ok());
  ember::test::write_bytes(out() / "images.gz", Bytes(100, 7));
  r = fetch_files(files, again.url(), out(), quick());
  EXPECT_EQ(r.files[0].status, "downloaded");
  EXPECT_EQ(ember::test::read_bytes(out() / "images.gz"), s.gz);
}

TEST_F(DataFetch, WrongChecksumLeavesNoFile) {
  Served s = make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok());
  const std::string wrong(64, 'a');
  const std::string msg = ember::test::expect_error<DataError>(
      [&] { fetch_files({{"images.gz", wrong, "idx"}}, server.url(), out(), quick()); }, "SHA-256 mismatch");
  EXPECT_TRUE(ember::test::contains(msg, wrong)) << msg;
  EXPECT_TRUE(ember::test::contains(msg, s.sha)) << msg;  // what was found
  expect_only(out(), {});
}

TEST_F(DataFetch, TruncatedTransferLeavesNoFile) {
  Served s = make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok());
  ember::test::expect_error<IOError>(
      [&] { fetch_files({{"images.gz", s.sha, "idx"}}, server.url() + "/truncated", out(), quick()); },
      "/truncated/images.gz failed");
  expect_only(out(), {});
  // Without a known hash the parse catches what a short-but-"complete" body would hide.
  ember::test::write_bytes(root() / "short.gz", Bytes(s.gz.begin(), s.gz.begin() + long(s.gz.size() / 2)));
  EXPECT_THROW(fetch_files({{"short.gz", "", "idx"}}, server.url(), out(), quick()), DataError);
  expect_only(out(), {});
}

TEST_F(DataFetch, NotFoundLeavesNoFile) {
  make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok());
  ember::test::expect_error<IOError>([&] { fetch_files({{"missing.gz", "", "idx"}}, server.url(), out(), quick()); },
                                     "404");
  expect_only(out(), {});
}

TEST_F(DataFetch, ServerGoneIsAnIOError) {
  Served s = make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok());
  const std::string url = server.url();
  server.stop();
  const auto t0 = std::chrono::steady_clock::now();
  ember::test::expect_error<IOError>([&] { fetch_files({{"images.gz", s.sha, "idx"}}, url, out(), quick()); },
                                     "127.0.0.1");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  expect_only(out(), {});
}

TEST_F(DataFetch, VerifyReportsMissingCorruptAndGoodFiles) {
  VerifyReport missing = verify_dataset("fashion-mnist", out());
  EXPECT_FALSE(missing.ok());
  ASSERT_EQ(missing.files.size(), 4u);
  EXPECT_TRUE(ember::test::contains(missing.files[0].message, "missing")) << missing.files[0].message;

  // Wrong content under the right name: a mismatch naming both hashes.
  ember::test::write_bytes(out() / "train-labels-idx1-ubyte", ember::test::make_idx({2}, {1, 2}));
  VerifyReport bad = verify_dataset("fashion-mnist", out());
  EXPECT_FALSE(bad.files[1].ok);
  EXPECT_TRUE(ember::test::contains(bad.files[1].message, "SHA-256 mismatch")) << bad.files[1].message;
  EXPECT_TRUE(ember::test::contains(bad.files[1].message, dataset_files("fashion-mnist")[1].sha256));

  // MNIST has no known hash here: a parse decides.
  ember::test::write_bytes(out() / "t10k-labels-idx1-ubyte.gz",
                           ember::test::gzip_bytes(ember::test::make_idx({2}, {1, 2})));
  VerifyReport m = verify_dataset("mnist", out());
  EXPECT_TRUE(m.files[3].ok) << m.files[3].message;
  EXPECT_TRUE(ember::test::contains(m.files[3].message, "no known SHA-256"));
  EXPECT_FALSE(m.ok());  // the other three are missing
}

TEST_F(DataFetch, FashionMnistFromALocalMirror) {
  const fs::path debian = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(debian / "t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  }
  // The Debian package is the real data: its files verify against the known hashes.
  VerifyReport v = verify_dataset("fashion-mnist", debian);
  for (const auto& f : v.files) EXPECT_TRUE(f.ok) << f.name << ": " << f.message;

  fs::create_directories(root());
  for (const auto& f : dataset_files("fashion-mnist")) fs::copy_file(debian / f.name, root() / f.name,
                                                                      fs::copy_options::overwrite_existing);
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok());
  FetchOptions o = quick();
  o.base_url = server.url();
  FetchReport r = fetch_dataset("fashion-mnist", out(), o);
  ASSERT_EQ(r.files.size(), 4u);
  for (const auto& f : r.files) {
    EXPECT_EQ(f.status, "downloaded") << f.name;
    EXPECT_TRUE(f.verified_sha256);
  }
  EXPECT_TRUE(verify_dataset("fashion-mnist", out()).ok());
  Dataset test = load_dataset("fashion-mnist", {.data_dir = out(), .train = false});
  EXPECT_EQ(test.size(), 10000);
  r = fetch_dataset("fashion-mnist", out(), o);
  for (const auto& f : r.files) EXPECT_EQ(f.status, "already present");
}

// A file checked only by the SHA-256 of its bytes as served (the MNIST/CIFAR case).
TEST_F(DataFetch, AsServedHashIsChecked) {
  Served s = make_served(root());
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok()) << "the local HTTP server did not start";
  FetchReport r = fetch_files({{"images.gz", "", "idx", sha256_hex(s.gz)}}, server.url(), out(), quick());
  EXPECT_TRUE(r.files[0].verified_sha256);
  EXPECT_EQ(r.files[0].status, "downloaded");
  const std::string wrong(64, '0');
  try {
    fetch_files({{"images.gz", "", "idx", wrong}}, server.url(), work.path() / "out2", quick());
    FAIL() << "a wrong as-served hash was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("(file as served)"), std::string::npos) << e.what();
  }
  expect_only(work.path() / "out2", {});
}

// The CIFAR-10 binary tarball: downloaded, checked, extracted, then recognised as present.
TEST_F(DataFetch, CifarTarballIsExtracted) {
  const fs::path tar = root() / "cifar-10-binary.tar.gz";
  fs::create_directories(root());
  const std::string script =
      "import io, sys, tarfile\n"
      "rec = bytes([3]) + bytes(i % 251 for i in range(3072))\n"
      "with tarfile.open(sys.argv[1], 'w:gz') as t:\n"
      "    for n in ['data_batch_%d.bin' % i for i in range(1, 6)] + ['test_batch.bin']:\n"
      "        info = tarfile.TarInfo('cifar-10-batches-bin/' + n); info.size = len(rec) * 2\n"
      "        t.addfile(info, io.BytesIO(rec * 2))\n";
  ember::test::write_text(work.path() / "mk.py", script);
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (work.path() / "mk.py").string() + " " + tar.string()).c_str()), 0);
  const Bytes gz = ember::test::read_bytes(tar);
  LocalServer server(root(), work.path());
  ASSERT_TRUE(server.ok()) << "the local HTTP server did not start";
  const std::vector<RemoteFile> files = {{"cifar-10-binary.tar.gz", "", "cifar10-tar", sha256_hex(gz)}};
  FetchReport r = fetch_files(files, server.url(), out(), quick());
  EXPECT_EQ(r.files[0].status, "extracted");
  LabeledImages train = load_cifar10(out() / "cifar-10-batches-bin", true);
  EXPECT_EQ(train.n, 10);
  EXPECT_EQ(train.labels[0], 3);
  EXPECT_EQ(fetch_files(files, server.url(), out(), quick()).files[0].status, "already present");
}

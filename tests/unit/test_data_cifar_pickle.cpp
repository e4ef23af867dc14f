// CIFAR's pickled batches (the Python version torchvision downloads) through the restricted
// unpickler's NumPy profile (io::pickle::Allow::NumpyArrays): the three ways NumPy pickles an array
// (Python 2's GLOBAL + BINSTRING, protocol 2-4's _reconstruct + BUILD, protocol 5's _frombuffer +
// BYTEARRAY8) read back the same images and labels; a hostile global, a forged shape, a bad label,
// a truncated file are typed errors naming what is wrong; the weights profile still refuses NumPy.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "ember/core/error.h"
#include "ember/data/readers.h"
#include "ember/io/pth.h"
#include "io/pickle.h"
#include "support/files.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using namespace ember;
using namespace ember::data;

namespace {

// Hand-written pickle opcodes (CPython's Lib/pickle.py names).
struct PickleWriter {
  Bytes b;
  PickleWriter& op(uint8_t c) { return b.push_back(c), *this; }
  PickleWriter& raw(const std::string& s) { return b.insert(b.end(), s.begin(), s.end()), *this; }
  PickleWriter& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  PickleWriter& str(const std::string& s) { return op(0x8c).le(s.size(), 1).raw(s); }  // SHORT_BINUNICODE
  PickleWriter& py2str(const std::string& s) { return op('T').le(s.size(), 4).raw(s); }  // BINSTRING
  PickleWriter& bytes(const std::string& s) { return op('B').le(s.size(), 4).raw(s); }   // BINBYTES
  PickleWriter& int_(int64_t v) {  // BININT1, BININT2, or LONG1 of 8 bytes
    return v < 256 ? op('K').le(v, 1) : v < 65536 ? op('M').le(v, 2) : op(0x8a).le(8, 1).le(uint64_t(v), 8);
  }
  PickleWriter& stack_global(const std::string& m, const std::string& n) { return str(m).str(n).op(0x93); }
  PickleWriter& global(const std::string& m, const std::string& n) { return op('c').raw(m + "\n" + n + "\n"); }
};

enum class Style { Py2, Proto4, Proto5 };

// numpy.dtype("u1") as numpy pickles it: REDUCE then BUILD with its state.
// Python 2's cPickle (the CIFAR files' writer): SHORT_BINSTRING text and ints for the flags.
void write_text(PickleWriter& w, Style style, const std::string& s) {
  if (style == Style::Py2) w.op('U').le(s.size(), 1).raw(s); else w.str(s);
}

void write_dtype(PickleWriter& w, Style style) {
  if (style == Style::Py2) {
    w.global("numpy", "dtype").op('q').le(6, 1);
    write_text(w, style, "u1");
    w.int_(0).int_(1).op(0x87).op('R');
  } else {
    w.stack_global("numpy", "dtype").str("u1").op(0x89).op(0x88).op(0x87).op('R');
  }
  w.op('(').int_(3);
  write_text(w, style, "|");
  w.op('N').op('N').op('N').op('J').le(uint32_t(-1), 4).op('J').le(uint32_t(-1), 4).int_(0);
  w.op('t').op('b');
}

// A uint8 array of `shape` holding `data`.
void write_array(PickleWriter& w, Style style, const std::vector<int64_t>& shape, const std::string& data) {
  auto shape_tuple = [&] {
    w.op('(');
    for (int64_t d : shape) w.int_(d);
    w.op('t');
  };
  if (style == Style::Proto5) {  // _frombuffer(bytearray, dtype, shape, "C")
    w.stack_global("numpy._core.numeric", "_frombuffer").op('(').op(0x96).le(data.size(), 8).raw(data);
    write_dtype(w, style);
    shape_tuple();
    w.str("C").op('t').op('R');
    return;
  }
  if (style == Style::Py2) {
    w.global("numpy.core.multiarray", "_reconstruct").global("numpy", "ndarray").int_(0).op(0x85).py2str("b");
  } else {
    w.stack_global("numpy._core.multiarray", "_reconstruct").stack_global("numpy", "ndarray");
    w.int_(0).op(0x85).bytes("b");
  }
  w.op(0x87).op('R');
  w.op('(').int_(1);
  shape_tuple();
  write_dtype(w, style);
  w.op(0x89);
  if (style == Style::Py2) w.py2str(data); else w.bytes(data);
  w.op('t').op('b');
}

// A CIFAR batch dict {"batch_label": ..., "data": array (n, 3072), labels_key: [labels]}.
Bytes cifar_batch(Style style, const std::vector<int64_t>& labels, const std::string& labels_key = "labels",
                  std::vector<int64_t> shape = {}, std::string data = {}) {
  const int64_t n = int64_t(labels.size());
  if (shape.empty()) shape = {n, 3072};
  if (data.empty()) {
    data.resize(size_t(n) * 3072);
    for (size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7 % 251);
  }
  PickleWriter w;
  w.op(0x80).op(style == Style::Py2 ? 2 : style == Style::Proto4 ? 4 : 5);
  w.op('}').op('(');
  write_text(w, style, "batch_label");
  write_text(w, style, "testing batch 1 of 1");
  write_text(w, style, "data");
  write_array(w, style, shape, data);
  write_text(w, style, labels_key);
  w.op(']').op('q').le(9, 1).op('(');
  for (int64_t l : labels) w.int_(l);
  w.op('e').op('u').op('.');
  return w.b;
}

Bytes meta_file(const std::vector<std::string>& names, const std::string& key = "label_names") {
  PickleWriter w;
  w.op(0x80).op(4).op('}').str(key).op(']').op('(');
  for (const auto& n : names) w.str(n);
  w.op('e').op('s').op('.');
  return w.b;
}

void write(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

}  // namespace

TEST(DataCifarPickle, EveryNumpyPickleStyleReadsTheSameBatch) {
  for (Style style : {Style::Py2, Style::Proto4, Style::Proto5}) {
    const LabeledImages li = parse_cifar_pickle(cifar_batch(style, {3, 0, 9}), "batch", "labels", 10);
    EXPECT_EQ(li.n, 3);
    EXPECT_EQ(li.c, 3);
    EXPECT_EQ(li.h, 32);
    EXPECT_EQ(li.labels, (std::vector<int64_t>{3, 0, 9}));
    ASSERT_EQ(li.images.size(), 3u * 3072);
    EXPECT_EQ(li.images[1], 7);
    EXPECT_EQ(li.images[3072 * 2 + 5], uint8_t((3072 * 2 + 5) * 7 % 251));
  }
}

TEST(DataCifarPickle, HostileGlobalIsRefusedByNameNothingCalled) {
  PickleWriter w;
  w.op(0x80).op(2).global("posix", "system").str("touch /tmp/pwned").op(0x85).op('R').op('.');
  try {
    parse_cifar_pickle(w.b, "evil_batch", "labels", 10);
    FAIL() << "no error";
  } catch (const io::PthForbiddenGlobalError& e) {
    EXPECT_EQ(e.global(), "posix.system");
    EXPECT_NE(std::string(e.what()).find("evil_batch: refused"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was called"), std::string::npos) << e.what();
  }
  // numpy.ndarray may be named, never called.
  PickleWriter c;
  c.op(0x80).op(4).stack_global("numpy", "ndarray").op(')').op('R').op('.');
  EXPECT_THROW(parse_cifar_pickle(c.b, "b", "labels", 10), io::PthError);
}

TEST(DataCifarPickle, OneBufferBacksManyArraysAndReencodingIsCapped) {
  // Arrays refer to their bytes: ten arrays over one memoized buffer hold one copy.
  PickleWriter w;
  w.op(0x80).op(5).op(']').op('(');
  w.stack_global("numpy._core.numeric", "_frombuffer").op('q').le(0, 1).op('(');
  w.op(0x96).le(3072, 8).raw(std::string(3072, 'x')).op('q').le(1, 1);
  write_dtype(w, Style::Proto5);
  w.op('q').le(2, 1).op('(').int_(3072).op('t').op('q').le(3, 1).str("C").op('q').le(4, 1).op('t').op('R');
  for (int i = 0; i < 9; ++i) {
    w.op('h').le(0, 1).op('(').op('h').le(1, 1).op('h').le(2, 1).op('h').le(3, 1).op('h').le(4, 1).op('t').op('R');
  }
  w.op('e').op('.');
  size_t pos = 0;
  const io::pickle::Pickle p = io::pickle::unpickle(w.b, pos, "shared", io::pickle::Allow::NumpyArrays);
  const auto& list = p.at(p.root).items;
  ASSERT_EQ(list.size(), 10u);
  for (uint32_t i : list) EXPECT_EQ(p.at(i).items[2], p.at(list[0]).items[2]);

  // _codecs.encode of one memoized text, again and again: refused once it outgrows the pickle.
  PickleWriter e;
  e.op(0x80).op(2).op(']').op('(');
  e.global("_codecs", "encode").op('q').le(0, 1).op('X').le(1000, 4).raw(std::string(1000, 'a')).op('q').le(1, 1);
  e.str("latin1").op('q').le(2, 1).op(0x86).op('R');
  for (int i = 0; i < 10; ++i) e.op('h').le(0, 1).op('h').le(1, 1).op('h').le(2, 1).op(0x86).op('R');
  e.op('e').op('.');
  pos = 0;
  try {
    io::pickle::unpickle(e.b, pos, "bomb", io::pickle::Allow::NumpyArrays);
    FAIL() << "no error";
  } catch (const io::PthError& err) {
    EXPECT_NE(std::string(err.what()).find("_codecs.encode made more bytes than the pickle holds"), std::string::npos)
        << err.what();
  }
}

TEST(DataCifarPickle, WeightsProfileStillRefusesNumpy) {
  const Bytes b = cifar_batch(Style::Proto4, {1});
  size_t pos = 0;
  try {
    io::pickle::unpickle(b, pos, "model.pth");
    FAIL() << "no error";
  } catch (const io::PthForbiddenGlobalError& e) {
    EXPECT_EQ(e.global(), "numpy._core.multiarray._reconstruct");
  }
}

TEST(DataCifarPickle, ForgedShapesAndBadContentAreTypedErrors) {
  // The bytes must be exactly what shape x dtype says (a forged huge shape allocates nothing).
  auto expect_pickle_error = [](const Bytes& b, const std::string& piece) {
    try {
      parse_cifar_pickle(b, "batch", "labels", 10);
      FAIL() << "no error for " << piece;
    } catch (const io::PthError& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  expect_pickle_error(cifar_batch(Style::Proto4, {1, 2}, "labels", {2, 3072}, std::string(100, 'x')),
                      "u1 and shape (2, 3072) needs 6144 bytes, its data has 100");
  expect_pickle_error(cifar_batch(Style::Proto4, {1}, "labels", {int64_t(1) << 40, int64_t(1) << 40}, "ab"),
                      "shape (1099511627776, 1099511627776) needs more bytes than its data's 2");
  expect_pickle_error(cifar_batch(Style::Proto5, {1}, "labels", {4096}, std::string(3072, 'x')),
                      "shape (4096) needs 4096 bytes, its data has 3072");
  Bytes truncated = cifar_batch(Style::Proto4, {1, 2});
  truncated.resize(truncated.size() / 2);
  expect_pickle_error(truncated, "truncated");

  auto expect_data_error = [](const Bytes& b, const std::string& key, const std::string& piece) {
    try {
      parse_cifar_pickle(b, "batch", key, 10);
      FAIL() << "no error for " << piece;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  expect_data_error(cifar_batch(Style::Proto4, {1, 10}), "labels", "'labels'[1] is 10, expected an int in [0, 10)");
  expect_data_error(cifar_batch(Style::Proto4, {1, 2}), "fine_labels",
                    "no 'fine_labels' entry (its keys: 'batch_label', 'data', 'labels')");
  expect_data_error(cifar_batch(Style::Proto4, {1, 2}, "labels", {2, 1536, 2}), "labels", "expected uint8 (N, 3072)");
  expect_data_error(meta_file({"a"}), "labels", "no 'data' entry");
}

TEST(DataCifarPickle, FoldersOfBothVersionsAndTheirClassNames) {
  ember::test::TempDir tmp;
  const fs::path py = tmp.path() / "cifar-10-batches-py";
  fs::create_directories(py);
  for (int i = 1; i <= 5; ++i) write(py / ("data_batch_" + std::to_string(i)), cifar_batch(Style::Proto4, {i, i + 1}));
  write(py / "test_batch", cifar_batch(Style::Py2, {9}));
  const std::vector<std::string> names = {"airplane", "automobile", "bird", "cat", "deer",
                                          "dog", "frog", "horse", "ship", "truck"};
  write(py / "batches.meta", meta_file(names));
  const LabeledImages train = load_cifar_python(py, false, true);
  EXPECT_EQ(train.n, 10);
  EXPECT_EQ(train.labels, (std::vector<int64_t>{1, 2, 2, 3, 3, 4, 4, 5, 5, 6}));
  EXPECT_EQ(load_cifar_python(py, false, false).labels, std::vector<int64_t>{9});
  EXPECT_EQ(load_cifar_classes(py, false), names);

  const fs::path c100 = tmp.path() / "cifar-100-python";
  fs::create_directories(c100);
  write(c100 / "train", cifar_batch(Style::Proto5, {99, 42}, "fine_labels"));
  EXPECT_EQ(load_cifar_python(c100, true, true).labels, (std::vector<int64_t>{99, 42}));
  try {
    load_cifar_python(c100, true, false);
    FAIL() << "no error";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("cifar-100-python directory is missing test"), std::string::npos)
        << e.what();
  }
  // The binary version's text list.
  const fs::path bin = tmp.path() / "cifar-10-batches-bin";
  fs::create_directories(bin);
  std::string text;
  for (const auto& n : names) text += n + "\n";
  write(bin / "batches.meta.txt", Bytes(text.begin(), text.end()));
  EXPECT_EQ(load_cifar_classes(bin, false), names);
  write(bin / "batches.meta.txt", Bytes{'a', '\n'});
  EXPECT_THROW(load_cifar_classes(bin, false), DataError);
  EXPECT_THROW(load_cifar_classes(tmp.path(), false), IOError);
}

// PyTorch .pth reader (io/pth.h): files written by a real torch.save (tests/fixtures/pth/, see
// make_pth_fixtures.py) load and equal the safetensors route bit for bit; dtypes, views of a shared
// storage, a nested checkpoint and the legacy format; a hostile pickle is refused by name and runs
// nothing; every malformed file (hand-built: tests/support/pth_builder.h) is a typed error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/test_data.h"
#include "ember/core/error.h"
#include "ember/io/pth.h"
#include "ember/io/safetensors.h"
#include "ember/nn/models.h"
#include "ember/train/checkpoint.h"
#include "ember/train/init_from.h"
#include "support/files.h"
#include "support/pth_builder.h"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::io;
using namespace ember::test;

namespace {

const fs::path kDir = fs::path(ember::test::data_dir()) / "fixtures" / "pth";

PthFile load(const std::string& name) {
  const Bytes b = read_bytes(kDir / name);
  return pth_parse(b, name);
}

const StTensor& find(const PthFile& f, const std::string& name) {
  for (const auto& t : f.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

template <class T>
std::vector<T> values(const StTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

PthError error_of(const PthBytes& bytes) {
  try {
    pth_parse(bytes, "case.pth");
  } catch (const PthError& e) {
    return e;
  }
  ADD_FAILURE() << "no PthError";
  return PthError(PthErrorKind::Archive, "none");
}

void expect_kind(const PthBytes& bytes, PthErrorKind kind, const std::string& piece) {
  const PthError e = error_of(bytes);
  EXPECT_EQ(e.kind(), kind) << e.what();
  EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what() << "\nexpected: " << piece;
  EXPECT_NE(std::string(e.what()).find("case.pth"), std::string::npos) << "names the file: " << e.what();
}

PthBytes one_tensor(const PthTensorRecord& r, const std::string& data) {
  return torch_zip(state_dict_pickle({r}), {{r.key, data}});
}

}  // namespace

TEST(PthFixtures, MlpStateDictEqualsTheSafetensorsRouteBitForBit) {
  const PthFile pth = load("mlp.pth");
  const StFile st = st_load(kDir / "mlp.safetensors");
  EXPECT_EQ(pth.format, "torch.save zip archive");
  EXPECT_EQ(pth.nested_key, "");
  ASSERT_EQ(pth.tensors.size(), 4u);
  EXPECT_EQ(pth.tensors[0].name, "1.weight");  // the dict's order, not sorted
  EXPECT_EQ(pth.tensors[3].name, "3.bias");
  for (const StTensor& s : st.tensors) {
    const StTensor& p = find(pth, s.name);
    EXPECT_EQ(p.dtype, s.dtype) << s.name;
    EXPECT_EQ(p.shape, s.shape) << s.name;
    EXPECT_EQ(p.data, s.data) << s.name;
  }

  // The whole route of `--init-from`: load_checkpoint picks the reader by content, and both files
  // put the same bits into ember's zoo mlp (1 channel, 2x2 images, 2 classes).
  auto from = [](const std::string& file) {
    auto model = models::create("mlp", 2, 1, 2);
    const train::Checkpoint ck = train::load_checkpoint(kDir / file);
    train::load_weights(*model, ck.tensors, file);
    return std::make_pair(model, ck.source_note);
  };
  auto [a, note_a] = from("mlp.pth");
  auto [b, note_b] = from("mlp.safetensors");
  EXPECT_EQ(note_a, "PyTorch torch.save zip archive");
  EXPECT_EQ(note_b, "");
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].second.nbytes(), pb[i].second.nbytes());
    EXPECT_EQ(std::memcmp(pa[i].second.data_ptr<float>(), pb[i].second.data_ptr<float>(), pa[i].second.nbytes()), 0)
        << pa[i].first;
  }
}

TEST(PthFixtures, LegacyFormatEqualsTheZipFormat) {
  const PthFile zip = load("mlp.pth"), legacy = load("mlp_legacy.pth");
  EXPECT_EQ(legacy.format, "legacy torch.save pickle stream");
  ASSERT_EQ(legacy.tensors.size(), zip.tensors.size());
  for (size_t i = 0; i < zip.tensors.size(); ++i) {
    EXPECT_EQ(legacy.tensors[i].name, zip.tensors[i].name);
    EXPECT_EQ(legacy.tensors[i].shape, zip.tensors[i].shape);
    EXPECT_EQ(legacy.tensors[i].data, zip.tensors[i].data);
  }
}

TEST(PthFixtures, DtypesScalarsAndEmptyTensors) {
  const PthFile f = load("dtypes.pth");
  EXPECT_EQ(find(f, "f16").dtype, StDType::F16);
  EXPECT_EQ(values<uint16_t>(find(f, "f16")), (std::vector<uint16_t>{0x0000, 0x3400, 0x3800, 0x3a00, 0x3c00, 0x3d00}));
  EXPECT_EQ(find(f, "bf16").dtype, StDType::BF16);
  EXPECT_EQ(values<uint16_t>(find(f, "bf16")), (std::vector<uint16_t>{0x0000, 0x3e80, 0x3f00, 0x3f40, 0x3f80, 0x3fa0}));
  EXPECT_EQ(values<double>(find(f, "f64")), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  EXPECT_EQ(values<int64_t>(find(f, "i64")), (std::vector<int64_t>{-2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(values<int32_t>(find(f, "i32")), (std::vector<int32_t>{-2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(values<uint8_t>(find(f, "u8")), (std::vector<uint8_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(find(f, "bool").dtype, StDType::BOOL);
  EXPECT_EQ(values<uint8_t>(find(f, "bool")), (std::vector<uint8_t>{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(find(f, "i64").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(find(f, "scalar").shape.empty());
  EXPECT_EQ(values<float>(find(f, "scalar")), (std::vector<float>{2.5f}));
  EXPECT_EQ(find(f, "empty").shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(find(f, "empty").data.empty());
}

TEST(PthFixtures, ViewsOfOneStorageComeBackContiguous) {
  const PthFile f = load("views.pth");  // base = 0..11 as 3x4
  EXPECT_EQ(values<float>(find(f, "base")), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(find(f, "t").shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(values<float>(find(f, "t")), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(values<float>(find(f, "row")), (std::vector<float>{4, 5, 6, 7}));  // storage offset 4
  EXPECT_EQ(values<float>(find(f, "col")), (std::vector<float>{2, 6, 10}));    // stride 4, offset 2
}

TEST(PthFixtures, StateDictNestedInACheckpointIsTakenAndSaidSo) {
  const PthFile nested = load("nested.pth"), flat = load("mlp.pth");
  EXPECT_EQ(nested.nested_key, "state_dict");
  ASSERT_EQ(nested.tensors.size(), flat.tensors.size());
  for (size_t i = 0; i < flat.tensors.size(); ++i) EXPECT_EQ(nested.tensors[i].data, flat.tensors[i].data);
  EXPECT_EQ(train::load_checkpoint(kDir / "nested.pth").source_note,
            "PyTorch torch.save zip archive, the state dict under key 'state_dict'");
}

TEST(PthFixtures, HostilePickleIsRefusedByNameAndRunsNothing) {
  const fs::path marker = "/tmp/ember-pth-hostile-ran";  // make_pth_fixtures.py: `touch` of this path
  fs::remove(marker);
  const Bytes b = read_bytes(kDir / "hostile_os_system.pth");
  try {
    pth_parse(b, "hostile_os_system.pth");
    FAIL() << "accepted";
  } catch (const PthForbiddenGlobalError& e) {
    EXPECT_EQ(e.global(), "posix.system");
    EXPECT_EQ(e.kind(), PthErrorKind::ForbiddenGlobal);
    EXPECT_NE(std::string(e.what()).find("'posix.system'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hostile_os_system.pth"), std::string::npos) << e.what();
  }
  // The route every command takes (train --init-from, eval, predict, weights info).
  expect_error<PthForbiddenGlobalError>([&] { train::load_checkpoint(kDir / "hostile_os_system.pth"); },
                                        "posix.system");
  EXPECT_FALSE(fs::exists(marker)) << "the pickle's command ran";
}

TEST(PthMalformed, OtherForbiddenGlobalsAndInstanceOpcodes) {
  // builtins.eval by STACK_GLOBAL (protocol 4), as `__reduce__` tricks emit it.
  const std::string eval = "\x80\x04" + pk_str("builtins") + pk_str("eval") + "\x93" + pk_str("1") + "\x85R.";
  PthBytes z = torch_zip(eval, {});
  EXPECT_EQ(error_of(z).kind(), PthErrorKind::ForbiddenGlobal);
  expect_kind(z, PthErrorKind::ForbiddenGlobal, "'builtins.eval'");
  expect_kind(torch_zip("\x80\x02(ios\nsystem\n.", {}), PthErrorKind::ForbiddenGlobal, "'os.system'");  // INST
  expect_kind(torch_zip("\x80\x02" "ccollections\nOrderedDict\n)\x81.", {}), PthErrorKind::Pickle, "NEWOBJ");
  // An allowed global may not be called as something else: a storage type is data, not a function.
  expect_kind(torch_zip("\x80\x02" "ctorch\nFloatStorage\n)R.", {}), PthErrorKind::Pickle, "calling torch.FloatStorage");
}

TEST(PthMalformed, TruncatedAndDamagedFilesAreTypedErrorsNeverCrashes) {
  const Bytes good = read_bytes(kDir / "views.pth");
  for (size_t n = 0; n < good.size(); n += 3) {
    const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(pth_parse(cut, "cut.pth"), PthError) << "cut at " << n;
  }
  for (size_t i = 0; i < good.size(); ++i) {  // every byte flipped: parsed or refused, nothing else
    Bytes bad = good;
    bad[i] ^= 0x5a;
    try {
      pth_parse(bad, "flipped.pth");
    } catch (const FormatError&) {
    }
  }
  expect_kind(PthBytes{'P', 'K', 3, 4, 0}, PthErrorKind::Archive, "too short");
}

TEST(PthMalformed, ArchiveWithoutDataPklOrWithACompressedEntry) {
  expect_kind(stored_zip({{"archive/version", "3\n"}}), PthErrorKind::MissingEntry, "no <name>/data.pkl");
  expect_kind(stored_zip({{"archive/data.pkl", "\x80\x02}."}}, /*method=*/8), PthErrorKind::Archive, "compressed");
}

TEST(PthMalformed, PickleMachineErrors) {
  expect_kind(torch_zip("\x80\x02\xff.", {}), PthErrorKind::Pickle, "unknown or unsupported opcode 0xff");
  expect_kind(torch_zip("\x80\x02h\x07.", {}), PthErrorKind::Pickle, "memo index 7 out of range");
  expect_kind(torch_zip("\x80\x02s.", {}), PthErrorKind::Pickle, "stack underflow");
  expect_kind(torch_zip("\x80\x02}(X" + std::string("\x05\0\0\0", 4) + "ab", {}), PthErrorKind::Pickle, "truncated");
  expect_kind(torch_zip("\x80\x02}", {}), PthErrorKind::Pickle, "truncated");  // no STOP
  expect_kind(torch_zip("\x80\x02]K\x01s.", {}), PthErrorKind::Pickle, "stack underflow");
  expect_kind(torch_zip("\x80\x02K\x01K\x02K\x03s.", {}), PthErrorKind::Pickle, "SETITEM needs a dict");
  expect_kind(torch_zip("\x80\x02\x8a\x09" + std::string(9, '\1') + ".", {}), PthErrorKind::Pickle, "64 bits");
  expect_kind(torch_zip("\x80\x02]\x85.", {}), PthErrorKind::NotAStateDict, "holds a tuple");
}

TEST(PthMalformed, TensorRecordsThatDoNotFitTheirStorage) {
  const std::string six = float_bytes(6);
  PthTensorRecord r;
  EXPECT_NO_THROW(pth_parse(one_tensor(r, six), "ok.pth"));
  {
    PthTensorRecord missing = r;
    missing.key = "7";
    expect_kind(torch_zip(state_dict_pickle({missing}), {{"0", six}}), PthErrorKind::MissingEntry,
                "storage '7' is not in the file");
  }
  r.storage_numel = 7;  // the record says 7 floats, the entry holds 6
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "holds 24 bytes");
  r = {};
  r.sizes = {3, 3};  // 9 elements of a 6-element storage
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "exceed its storage");
  r = {};
  r.offset = 1;  // 6 elements from offset 1 reach element 6
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "reach element 6");
  r = {};
  r.strides = {-3, 1};
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "negative stride");
  r = {};
  r.sizes = {-2, 3};
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "negative size");
  r = {};
  r.sizes = {int64_t{1} << 40, int64_t{1} << 40};
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "overflows 64 bits");
  r = {};
  r.sizes = {1, 2};
  r.strides = {0, int64_t{1} << 62};  // in range of size, out of range of the storage, no overflow
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "reach element");
  r = {};
  r.sizes = {2}, r.strides = {1, 1};
  expect_kind(one_tensor(r, six), PthErrorKind::Tensor, "same length");
  r = {};
  r.storage_type = "ComplexFloatStorage";
  expect_kind(one_tensor(r, six), PthErrorKind::ForbiddenGlobal, "torch.ComplexFloatStorage");
}

TEST(PthFixtures, Torch03RebuildTensorRecordsRead) {
  // torch 0.3 pickled a tensor as _rebuild_tensor(storage, offset, size, stride), without v2's
  // requires_grad and hooks (old torchvision weight files in the legacy format hold these).
  PthTensorRecord r;
  std::string v2 = state_dict_pickle({r});
  const std::string tail = std::string("\x89") + "ccollections\nOrderedDict\n)R";
  v2.replace(v2.find(tail), tail.size(), "");
  v2.replace(v2.find("_rebuild_tensor_v2"), 18, "_rebuild_tensor");
  const PthFile f = pth_parse(torch_zip(v2, {{"0", float_bytes(6)}}), "torch03.pth");
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(f.tensors[0]), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(PthNested, ThePreferredKeyWinsAndSeveralUnnamedDictsAreRefused) {
  const PthTensorRecord r;
  const std::vector<std::pair<std::string, std::string>> storage{{"0", float_bytes(6)}};
  const std::string two = "\x80\x02}(" + pk_str("ema") + dict_pickle({r}) + pk_str("model") + dict_pickle({r}) +
                          pk_str("step") + pk_int(7) + "u.";
  EXPECT_EQ(pth_parse(torch_zip(two, storage), "two.pth").nested_key, "model");
  const std::string unnamed = "\x80\x02}(" + pk_str("a") + dict_pickle({r}) + pk_str("b") + dict_pickle({r}) + "u.";
  expect_kind(torch_zip(unnamed, storage), PthErrorKind::NotAStateDict, "several dicts of tensors ('a', 'b')");
}

TEST(PthByteOrder, ABigEndianArchiveIsSwappedToLittleEndian) {
  std::string be;  // 0..5 as big-endian float32, as torch.save writes them on a big-endian machine
  for (int i = 0; i < 6; ++i) {
    const std::string le = float_bytes(i + 1).substr(4 * i, 4);
    be += std::string(le.rbegin(), le.rend());
  }
  const PthTensorRecord r;
  const PthFile f = pth_parse(stored_zip({{"archive/data.pkl", state_dict_pickle({r})},
                                          {"archive/byteorder", "big"},
                                          {"archive/data/0", be}}),
                              "be.pth");
  EXPECT_EQ(values<float>(f.tensors.at(0)), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  expect_kind(stored_zip({{"archive/data.pkl", state_dict_pickle({r})}, {"archive/byteorder", "middle"}}),
              PthErrorKind::Archive, "byteorder is 'middle'");
}

TEST(PthMalformed, ObjectsThatAreNotStateDicts) {
  expect_kind(torch_zip("\x80\x02}.", {}), PthErrorKind::NotAStateDict, "empty");
  expect_kind(torch_zip("\x80\x02}" + pk_str("lr") + "K\x01s.", {}), PthErrorKind::NotAStateDict, "'lr' is a value of type int");
}

TEST(PthZooFits, TheFixtureFitsTheMlpAndALenetStateDictFitsLenet5WithItsClassCount) {
  const train::Checkpoint ck = train::load_checkpoint(kDir / "mlp.pth");
  const auto fits = train::zoo_fits(ck.tensors, ck.metadata);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].model, "mlp");
  EXPECT_EQ(fits[0].channels, 1);
  EXPECT_EQ(fits[0].image_size, 2);
  EXPECT_EQ(fits[0].num_classes, 2);

  auto lenet = models::create("lenet5", 5, 3, 32);  // 5 classes: read from the head, not assumed 10
  const auto lf = train::zoo_fits(lenet->state_dict().items(), {});
  ASSERT_FALSE(lf.empty());
  EXPECT_EQ(lf[0].model, "lenet5");
  EXPECT_EQ(lf[0].channels, 3);
  EXPECT_EQ(lf[0].image_size, 32);
  EXPECT_EQ(lf[0].num_classes, 5);
}

// ---- the object tree (ember.save / ember.load's view of the format) ----------------------------------

namespace {

uint32_t add(PthTree& t, PthValue v) {
  t.values.push_back(std::move(v));
  return uint32_t(t.values.size() - 1);
}
PthValue str_value(const std::string& s) {
  PthValue v;
  v.kind = PthKind::Str, v.s = s;
  return v;
}
PthValue int_value(int64_t i) {
  PthValue v;
  v.kind = PthKind::Int, v.i = i;
  return v;
}

}  // namespace

TEST(PthTree, NestedValuesRoundTripWithSharingAndASelfContainingList) {
  PthTree t;
  PthValue root;
  root.kind = PthKind::Dict;
  t.values.push_back(root);
  PthTensor w;
  w.data = {"w", StDType::BF16, {2}, {0x80, 0x3f, 0x00, 0xc0}};  // 1.0, -2.0
  w.requires_grad = true;
  t.tensors.push_back(w);
  PthValue tensor;
  tensor.kind = PthKind::Tensor, tensor.i = 0;
  const uint32_t tv = add(t, tensor);
  PthValue list;
  list.kind = PthKind::List;
  const uint32_t lv = add(t, list);
  t.values[lv].items = {add(t, int_value(-(int64_t{1} << 40))), lv, tv};  // [-2**40, <itself>, w]
  PthValue device, dtype, bytes, size, real;
  device.kind = PthKind::Device, device.s = "cuda", device.i = 1;
  dtype.kind = PthKind::DType, dtype.s = "float16";
  bytes.kind = PthKind::Bytes, bytes.s = std::string("\0\xff", 2);
  size.kind = PthKind::Size, size.items = {add(t, int_value(2)), add(t, int_value(3))};
  real.kind = PthKind::Float, real.f = 0.1;
  t.values[0].items = {add(t, str_value("list")), lv, add(t, str_value("again")), lv, add(t, str_value("device")),
                       add(t, device), add(t, int_value(7)), add(t, dtype), add(t, str_value("b")), add(t, bytes),
                       add(t, str_value("size")), add(t, size), add(t, str_value("x")), add(t, real)};

  const std::vector<uint8_t> file = pth_serialize_tree(t);
  const PthTree back = pth_parse_tree(file, "tree.pt");
  const PthValue& r = back.values[back.root];
  ASSERT_EQ(r.kind, PthKind::Dict);
  ASSERT_EQ(r.items.size(), 14u);
  EXPECT_EQ(r.items[1], r.items[3]) << "one list, reached twice";
  const PthValue& l = back.values[r.items[1]];
  ASSERT_EQ(l.kind, PthKind::List);
  ASSERT_EQ(l.items.size(), 3u);
  EXPECT_EQ(back.values[l.items[0]].i, -(int64_t{1} << 40));
  EXPECT_EQ(l.items[1], r.items[1]) << "the list contains itself";
  const PthValue& tb = back.values[l.items[2]];
  ASSERT_EQ(tb.kind, PthKind::Tensor);
  const PthTensor& wb = back.tensors[size_t(tb.i)];
  EXPECT_EQ(wb.data.dtype, StDType::BF16);
  EXPECT_EQ(wb.data.data, w.data.data);
  EXPECT_TRUE(wb.requires_grad);
  EXPECT_EQ(wb.location, "cpu");
  EXPECT_EQ(wb.data.name, "obj['list'][2]");
  EXPECT_EQ(back.values[r.items[5]].kind, PthKind::Device);
  EXPECT_EQ(back.values[r.items[5]].s, "cuda");
  EXPECT_EQ(back.values[r.items[5]].i, 1);
  EXPECT_EQ(back.values[r.items[6]].i, 7) << "an int key";
  EXPECT_EQ(back.values[r.items[7]].kind, PthKind::DType);
  EXPECT_EQ(back.values[r.items[7]].s, "float16");
  EXPECT_EQ(back.values[r.items[9]].s, std::string("\0\xff", 2));
  EXPECT_EQ(back.values[r.items[11]].kind, PthKind::Size);
  EXPECT_EQ(back.values[r.items[13]].f, 0.1);
}

TEST(PthTree, TheFlatWriterIsTheTreeWriterOfAnOrderedDict) {
  const PthFile mlp = load("mlp.pth");
  const std::vector<uint8_t> flat = pth_serialize(mlp.tensors);
  const PthTree tree = pth_parse_tree(flat, "flat.pt");
  ASSERT_EQ(tree.values[tree.root].kind, PthKind::OrderedDict);
  EXPECT_EQ(pth_serialize_tree(tree), flat) << "reading a state dict as a tree and writing it back: the same bytes";
  EXPECT_EQ(pth_parse(flat, "flat.pt").tensors.size(), mlp.tensors.size());
}

TEST(PthTree, ATupleThatContainsItselfAndDeepNestingAreRefused) {
  PthTree t;
  PthValue tuple;
  tuple.kind = PthKind::Tuple;
  t.values.push_back(tuple);
  t.values[0].items = {0};
  EXPECT_THROW(pth_serialize_tree(t), ValueError);

  // [[[...]]] 2000 deep, hand-written: EMPTY_LIST then (MARK ... APPENDS) nesting.
  std::vector<uint8_t> pkl{0x80, 0x02};
  for (int i = 0; i < 2000; ++i) pkl.insert(pkl.end(), {']', '('});
  for (int i = 0; i < 2000; ++i) pkl.push_back('e');
  pkl.push_back('.');
  try {
    pth_parse_tree(torch_zip(std::string(pkl.begin(), pkl.end()), {}), "deep.pt");
    ADD_FAILURE() << "no error";
  } catch (const PthError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 1000"), std::string::npos) << e.what();
  }
}

TEST(PthTree, ATorchCheckpointReadsAsATree) {
  const Bytes b = read_bytes(kDir / "nested.pth");
  const PthTree tree = pth_parse_tree(b, "nested.pth");
  ASSERT_TRUE(tree.values[tree.root].kind == PthKind::Dict || tree.values[tree.root].kind == PthKind::OrderedDict);
  EXPECT_FALSE(tree.tensors.empty());
  EXPECT_EQ(tree.format, "torch.save zip archive");
}

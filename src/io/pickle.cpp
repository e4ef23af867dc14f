// The restricted unpickler (see pickle.h). It is CPython's pickle machine (Lib/pickle.py's
// _Unpickler: a value stack, a stack of MARK positions, a memo) with every opcode that could import
// or call arbitrary code either refused or narrowed to the allow list. Each opcode consumes at
// least one byte and creates at most one value, so a pickle of N bytes runs in O(N) steps and
// holds O(N) values; no recursion anywhere.
#include "pickle.h"

#include <array>
#include <charconv>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "ember/io/pth.h"

namespace ember::io::pickle {
namespace {

// What torch.load(weights_only=True) lets a file use (torch/_weights_only_unpickler.py's
// _get_allowed_globals) that ember reads: containers, tensors and their storages (_rebuild_tensor:
// torch 0.3's record, as old legacy-format files hold it), torch.Size,
// torch.device, the dtypes (as values), _codecs.encode (protocol 2's bytes). The sparse, quantized
// and subclass rebuilders, Counter, set, bytearray and complex are left out (refused by name).
constexpr std::array<std::string_view, 28> kAllowedGlobals = {
    "collections.OrderedDict",   "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_tensor",
    "torch.FloatStorage",        "torch.DoubleStorage",             "torch.HalfStorage",
    "torch.BFloat16Storage",     "torch.LongStorage",               "torch.IntStorage",
    "torch.ShortStorage",        "torch.CharStorage",               "torch.ByteStorage",
    "torch.BoolStorage",         "torch._utils._rebuild_parameter_with_state",
    "torch.Size",                "torch.device",                    "_codecs.encode",
    "torch.float32",             "torch.float64",                   "torch.float16",
    "torch.bfloat16",            "torch.int64",                     "torch.int32",
    "torch.int16",               "torch.int8",                      "torch.uint8",
    "torch.bool",
};

// What a pickled data file may name under Allow::NumpyArrays (pickle.h): NumPy arrays as numpy 1.x
// and 2.x pickle them (numpy.core was renamed numpy._core), and protocol 2's bytes.
constexpr std::array<std::string_view, 7> kNumpyGlobals = {
    "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct", "numpy.ndarray",
    "numpy.dtype",                        "numpy.core.numeric._frombuffer",      "numpy._core.numeric._frombuffer",
    "_codecs.encode",
};

// A state dict of 10,000 tensors is ~100k values; this many means a hostile or runaway pickle
// (each value costs ~100 bytes, so the cap bounds memory at a few GB whatever the file's size).
constexpr size_t kMaxValues = size_t{1} << 24;

// Value constructors (designated initializers would leave -Wextra naming every field skipped).
Obj scalar(Kind kind, int64_t i = 0) {
  Obj o;
  o.kind = kind, o.i = i;
  return o;
}
Obj real(double f) {
  Obj o = scalar(Kind::Float);
  o.f = f;
  return o;
}
Obj text(Kind kind, std::string s) {
  Obj o = scalar(kind);
  o.s = std::move(s);
  return o;
}
Obj seq(Kind kind, std::vector<uint32_t> items) {
  Obj o = scalar(kind);
  o.items = std::move(items);
  return o;
}

class Machine {
 public:
  Machine(std::span<const uint8_t> b, size_t pos, const std::string& source, Allow allow)
      : b_(b), p_(pos), src_(source), allow_(allow) {}

  Pickle run(size_t& pos_out);

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw PthError(PthErrorKind::Pickle,
                   detail::cat(src_, ": its pickle cannot be read: ", args..., " (opcode at byte ", op_at_,
                               " of the pickle)"),
                   allow_ == Allow::NumpyArrays
                       ? std::string("the file is damaged, or is not a pickle of plain values and NumPy arrays; "
                                     "download it again")
                       : std::string("the file is damaged, or was not written by torch.save; ") + kPthStateDictHint);
  }

  const uint8_t* take(uint64_t n) {
    if (n > b_.size() - p_) fail("truncated: needs ", n, " more bytes, ", b_.size() - p_, " left");
    const uint8_t* at = b_.data() + p_;
    p_ += n;
    return at;
  }
  uint64_t take_le(int n) {
    const uint8_t* at = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | at[i];
    return v;
  }
  std::string_view take_line() {  // protocol-0 arguments end in '\n'
    const void* nl = std::memchr(b_.data() + p_, '\n', b_.size() - p_);
    if (!nl) fail("truncated: a text argument has no end of line");
    const size_t n = static_cast<const uint8_t*>(nl) - (b_.data() + p_);
    std::string_view s(reinterpret_cast<const char*>(take(n + 1)), n);
    return s;
  }
  int64_t parse_int(std::string_view s) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) fail("'", s, "' is not an integer ember reads");
    return v;
  }

  uint32_t make(Obj o) {
    if (out_.arena.size() >= kMaxValues) fail("more than ", kMaxValues, " values");
    out_.arena.push_back(std::move(o));
    return static_cast<uint32_t>(out_.arena.size() - 1);
  }
  void push(Obj o) { stack_.push_back(make(std::move(o))); }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  uint32_t pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  uint32_t top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Obj& obj(uint32_t i) { return out_.arena[i]; }
  Obj& expect(uint32_t i, Kind kind, const char* op) {
    if (obj(i).kind != kind) fail(op, " needs a ", kind_name(kind), ", got a ", kind_name(obj(i).kind));
    return obj(i);
  }

  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo index ", key, " out of range (never stored)");
    stack_.push_back(it->second);
  }
  void global(std::string name) {
    if (allow_ == Allow::NumpyArrays) {
      for (std::string_view allowed : kNumpyGlobals)
        if (name == allowed) return push(text(Kind::Global, std::move(name)));
      throw PthForbiddenGlobalError(
          detail::cat(src_, ": refused: the pickle refers to '", name,
                      "', which a data file of plain values and NumPy arrays has no use for; nothing was called"),
          name, "the file is not the dataset ember expects (or was tampered with); download it again from its source");
    }
    for (std::string_view allowed : kAllowedGlobals)
      if (name == allowed) return push(text(Kind::Global, std::move(name)));
    throw PthForbiddenGlobalError(
        detail::cat(src_, ": refused: the pickle refers to '", name,
                    "', which a weights file has no use for; nothing was called (ember reads state dicts: tensors, "
                    "OrderedDict and plain values only)"),
        name, std::string("if the file comes from a source you trust, ") + kPthStateDictHint);
  }
  void reduce();
  void reduce_numpy(const std::string& name, const std::vector<uint32_t>& a);
  void build_numpy(uint32_t target, uint32_t state);
  // Fills array `arr` (an NpArray) from a shape tuple, an NpDType and its raw bytes, checking that
  // the bytes are exactly what the shape and dtype say (overflow-safe).
  void fill_array(uint32_t arr, uint32_t shape, uint32_t dtype, uint32_t data, bool fortran);
  void int_bytes(uint64_t n) {  // LONG1/LONG4: little-endian two's complement of n bytes
    if (n > 8) fail("an integer of ", n, " bytes does not fit in 64 bits");
    uint64_t v = take_le(static_cast<int>(n));
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    push(scalar(Kind::Int, static_cast<int64_t>(v)));
  }
  void string(Kind kind, uint64_t n) {
    const uint8_t* at = take(n);
    push(text(kind, std::string(reinterpret_cast<const char*>(at), n)));
  }
  void tuple(std::vector<uint32_t> items) { push(seq(Kind::Tuple, std::move(items))); }
  void set_items(std::vector<uint32_t> kv, uint32_t dict) {
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    if (!is_dict(obj(dict).kind)) fail("SETITEM needs a dict, got a ", kind_name(obj(dict).kind));
    auto& d = obj(dict).items;
    d.insert(d.end(), kv.begin(), kv.end());
  }

  std::span<const uint8_t> b_;
  size_t p_;
  size_t op_at_ = 0;
  const std::string& src_;
  Allow allow_;
  uint64_t encoded_bytes_ = 0;  // made by _codecs.encode so far (see reduce)
  Pickle out_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

// protocol 2 pickles bytes as _codecs.encode(text, "latin1"): the text's code points are the bytes.
std::string latin1_bytes(const std::string& utf8, bool& ok) {
  std::string out;
  ok = true;
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<uint8_t>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xc2 || c == 0xc3) && i + 1 < utf8.size()) {  // U+0080..U+00FF
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3f)));
    } else {
      ok = false;
      return {};
    }
  }
  return out;
}

void Machine::reduce() {
  const uint32_t args = pop(), fn = pop();
  const std::string name = expect(fn, Kind::Global, "REDUCE").s;
  const std::vector<uint32_t> a = expect(args, Kind::Tuple, "REDUCE").items;
  if (name.starts_with("numpy.")) {
    reduce_numpy(name, a);
  } else if (name == "collections.OrderedDict") {
    if (!a.empty()) fail("OrderedDict(...) with arguments is not supported");
    push(scalar(Kind::OrderedDict));
  } else if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
    // (storage, offset, size, stride[, requires_grad, hooks]): torch 0.3's _rebuild_tensor has the
    // first four only. Checked by the caller, which knows the storages.
    push(seq(Kind::Tensor, {args}));
  } else if (name.starts_with("torch._utils._rebuild_parameter")) {
    // _rebuild_parameter(data, requires_grad, backward_hooks[, state]): the data, with the
    // parameter's requires_grad.
    if (a.size() < 2 || obj(a[0]).kind != Kind::Tensor) fail(name, " needs a tensor as its first argument");
    push(seq(Kind::Tensor, {obj(a[0]).items[0], a[1]}));
  } else if (name == "torch.Size") {  // torch.Size((2, 3))
    if (a.size() != 1 || obj(a[0]).kind != Kind::Tuple) fail("torch.Size needs one tuple");
    push(seq(Kind::Size, obj(a[0]).items));
  } else if (name == "torch.device") {  // torch.device("cuda", 0), torch.device("cpu"), torch.device("cuda:0")
    if (a.empty() || a.size() > 2 || obj(a[0]).kind != Kind::Str ||
        (a.size() == 2 && obj(a[1]).kind != Kind::Int && obj(a[1]).kind != Kind::None))
      fail("torch.device needs (type[, index])");
    Obj d = text(Kind::Device, obj(a[0]).s);
    d.i = a.size() == 2 && obj(a[1]).kind == Kind::Int ? obj(a[1]).i : -1;
    if (const size_t colon = d.s.find(':'); colon != std::string::npos && d.i < 0) {
      d.i = parse_int(std::string_view(d.s).substr(colon + 1));
      d.s.resize(colon);
    }
    push(std::move(d));
  } else if (name == "_codecs.encode") {  // bytes in protocol 2: _codecs.encode("\xff", "latin1")
    if (a.size() != 2 || obj(a[0]).kind != Kind::Str || obj(a[1]).kind != Kind::Str ||
        (obj(a[1]).s != "latin1" && obj(a[1]).s != "latin-1"))
      fail("_codecs.encode is read only as protocol 2 writes bytes: (text, 'latin1')");
    // Each call copies its text: a pickle that re-encodes one memoized text many times could make
    // far more bytes than it holds, so the copies together may not outgrow the pickle itself (a
    // writer memoizes the bytes, never the text, so a real file encodes each text once).
    encoded_bytes_ += obj(a[0]).s.size();
    if (encoded_bytes_ > b_.size()) fail("_codecs.encode made more bytes than the pickle holds");
    bool ok = false;
    std::string b = latin1_bytes(obj(a[0]).s, ok);
    if (!ok) fail("_codecs.encode of text outside latin-1");
    push(text(Kind::Bytes, std::move(b)));
  } else {
    fail("calling ", name, " is not allowed");  // a storage type or a dtype: only named, never called
  }
}

void Machine::reduce_numpy(const std::string& name, const std::vector<uint32_t>& a) {
  if (name == "numpy.dtype") {  // numpy.dtype("u1", False, True); BUILD then sets the byte order
    if (a.empty() || obj(a[0]).kind != Kind::Str) fail("numpy.dtype needs a type code");
    const std::string code = obj(a[0]).s;
    if (numpy_itemsize(code) == 0) fail("NumPy dtype '", code, "' is not read (numeric dtypes only)");
    Obj d = text(Kind::NpDType, code);
    d.i = '|';
    push(std::move(d));
  } else if (name.ends_with("._reconstruct")) {  // _reconstruct(numpy.ndarray, (0,), b"b"): BUILD fills it
    if (a.size() != 3 || obj(a[0]).kind != Kind::Global || obj(a[0]).s != "numpy.ndarray")
      fail("_reconstruct is read only as numpy pickles an ndarray: (numpy.ndarray, shape, typecode)");
    push(scalar(Kind::NpArray));
  } else if (name.ends_with("._frombuffer")) {  // _frombuffer(buffer, dtype, shape, order): protocol 5
    if (a.size() != 4 || obj(a[3]).kind != Kind::Str) fail("_frombuffer needs (buffer, dtype, shape, order)");
    const uint32_t arr = make(scalar(Kind::NpArray));
    fill_array(arr, a[2], a[1], a[0], obj(a[3]).s == "F");
    stack_.push_back(arr);
  } else {
    fail("calling ", name, " is not allowed");  // numpy.ndarray itself: only named, never called
  }
}

void Machine::fill_array(uint32_t arr, uint32_t shape, uint32_t dtype, uint32_t data, bool fortran) {
  if (obj(shape).kind != Kind::Tuple) fail("an array's shape must be a tuple, got a ", kind_name(obj(shape).kind));
  if (obj(dtype).kind != Kind::NpDType)
    fail("an array's dtype must be a numpy.dtype, got a ", kind_name(obj(dtype).kind));
  const Kind dk = obj(data).kind;
  if (dk != Kind::Bytes && dk != Kind::Str) fail("an array's data must be bytes, got a ", kind_name(dk));
  // Beyond one dimension, Fortran order is a different layout; ember's readers want C order.
  if (fortran && obj(shape).items.size() > 1) fail("a Fortran-ordered array is not read (C order only)");
  const uint64_t size = obj(data).s.size();
  uint64_t count = uint64_t(numpy_itemsize(obj(dtype).s));
  bool too_big = false;  // count would pass 2^64: never multiplied further
  std::string dims;
  for (uint32_t d : obj(shape).items) {
    if (obj(d).kind != Kind::Int || obj(d).i < 0) fail("an array's shape must hold non-negative ints");
    const auto n = static_cast<uint64_t>(obj(d).i);
    dims += (dims.empty() ? "" : ", ") + std::to_string(n);
    if (n != 0 && count > UINT64_MAX / n) too_big = true;
    if (!too_big) count *= n;
  }
  if (too_big)
    fail("an array of dtype ", obj(dtype).s, " and shape (", dims, ") needs more bytes than its data's ", size);
  if (count != size)
    fail("an array of dtype ", obj(dtype).s, " and shape (", dims, ") needs ", count, " bytes, its data has ", size);
  // The array refers to its bytes (never copies them: one buffer may back many arrays).
  Obj& a = obj(arr);
  a.items = {shape, dtype, data};
  a.i = fortran;
}

void Machine::build_numpy(uint32_t target, uint32_t state) {
  const std::vector<uint32_t> st = expect(state, Kind::Tuple, "BUILD").items;
  if (obj(target).kind == Kind::NpDType) {  // (3, '|', None, None, None, -1, -1, 0): a plain dtype
    if (st.size() < 4 || obj(st[1]).kind != Kind::Str || obj(st[1]).s.size() != 1 || obj(st[3]).kind != Kind::None)
      fail("a numpy.dtype's state must be (version, byte order, None, None, ...): structured dtypes are not read");
    obj(target).i = obj(st[1]).s[0];
    return;
  }
  // ndarray.__setstate__((version,) shape, dtype, is_fortran, data)
  if (!obj(target).items.empty()) fail("BUILD on an array that already has its data");
  const size_t o = st.size() == 5 ? 1 : 0;
  if (st.size() != 4 + o) fail("an array's state must be (version, shape, dtype, is_fortran, data)");
  const Kind fk = obj(st[o + 2]).kind;
  if (fk != Kind::Bool && fk != Kind::Int) fail("an array's is_fortran must be a bool");
  fill_array(target, st[o], st[o + 1], st[o + 3], obj(st[o + 2]).i != 0);
}

Pickle Machine::run(size_t& pos_out) {
  for (;;) {
    op_at_ = p_;
    const uint8_t op = *take(1);
    switch (op) {
      case 0x80: if (uint8_t v = *take(1); v > 5) fail("pickle protocol ", int(v), " is newer than 5"); break;  // PROTO
      case 0x95: take(8); break;  // FRAME: a length hint only
      case '.': {                 // STOP
        out_.root = pop();
        pos_out = p_;
        return std::move(out_);
      }
      case '(': marks_.push_back(stack_.size()); break;  // MARK
      case '0':                                          // POP: a value, or a MARK with nothing above it
        if (!marks_.empty() && stack_.size() == marks_.back()) marks_.pop_back();
        else pop();
        break;
      case '1': pop_mark(); break;                  // POP_MARK
      case '2': stack_.push_back(top()); break;     // DUP
      case 'N': push(scalar(Kind::None)); break;  // NONE
      case 0x88: push(scalar(Kind::Bool, 1)); break;  // NEWTRUE
      case 0x89: push(scalar(Kind::Bool, 0)); break;  // NEWFALSE
      case 'J': push(scalar(Kind::Int, static_cast<int32_t>(take_le(4)))); break;  // BININT
      case 'K': push(scalar(Kind::Int, static_cast<int64_t>(take_le(1)))); break;  // BININT1
      case 'M': push(scalar(Kind::Int, static_cast<int64_t>(take_le(2)))); break;  // BININT2
      case 0x8a: int_bytes(take_le(1)); break;                                           // LONG1
      case 0x8b: {                                                                       // LONG4
        const auto n = static_cast<int32_t>(take_le(4));
        if (n < 0) fail("LONG4 with a negative length");
        int_bytes(static_cast<uint64_t>(n));
        break;
      }
      case 'I': {  // INT (protocol 0): "01"/"00" are True/False
        std::string_view s = take_line();
        if (s == "01" || s == "00") push(scalar(Kind::Bool, s == "01"));
        else push(scalar(Kind::Int, parse_int(s)));
        break;
      }
      case 'L': {  // LONG (protocol 0): "123L"
        std::string_view s = take_line();
        if (s.ends_with('L')) s.remove_suffix(1);
        push(scalar(Kind::Int, parse_int(s)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const uint8_t* at = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | at[i];
        double d;
        std::memcpy(&d, &bits, 8);
        push(real(d));
        break;
      }
      case 'F': {  // FLOAT (protocol 0)
        std::string_view s = take_line();
        double d = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
        if (ec != std::errc() || end != s.data() + s.size()) fail("'", s, "' is not a float");
        push(real(d));
        break;
      }
      case 0x8c: string(Kind::Str, take_le(1)); break;    // SHORT_BINUNICODE
      case 'X': string(Kind::Str, take_le(4)); break;     // BINUNICODE
      case 0x8d: string(Kind::Str, take_le(8)); break;    // BINUNICODE8
      case 'U': string(Kind::Str, take_le(1)); break;     // SHORT_BINSTRING (Python 2 str)
      case 'T': {                                         // BINSTRING
        const auto n = static_cast<int32_t>(take_le(4));
        if (n < 0) fail("BINSTRING with a negative length");
        string(Kind::Str, static_cast<uint64_t>(n));
        break;
      }
      case 'C': string(Kind::Bytes, take_le(1)); break;   // SHORT_BINBYTES
      case 'B': string(Kind::Bytes, take_le(4)); break;   // BINBYTES
      case 0x8e: string(Kind::Bytes, take_le(8)); break;  // BINBYTES8
      case 0x96: string(Kind::Bytes, take_le(8)); break;  // BYTEARRAY8 (protocol 5's in-band buffers)
      case ')': tuple({}); break;                         // EMPTY_TUPLE
      case 0x85: tuple({pop()}); break;                   // TUPLE1
      case 0x86: {                                        // TUPLE2
        const uint32_t b = pop(), a = pop();
        tuple({a, b});
        break;
      }
      case 0x87: {  // TUPLE3
        const uint32_t c = pop(), b = pop(), a = pop();
        tuple({a, b, c});
        break;
      }
      case 't': tuple(pop_mark()); break;                                        // TUPLE
      case ']': push(scalar(Kind::List)); break;                               // EMPTY_LIST
      case 'l': push(seq(Kind::List, pop_mark())); break;          // LIST
      case '}': push(scalar(Kind::Dict)); break;                               // EMPTY_DICT
      case 'd': {                                                                // DICT
        const uint32_t d = make(scalar(Kind::Dict));
        set_items(pop_mark(), d);
        stack_.push_back(d);
        break;
      }
      case 'a': {  // APPEND
        const uint32_t v = pop();
        expect(top(), Kind::List, "APPEND").items.push_back(v);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<uint32_t> vs = pop_mark();
        auto& l = expect(top(), Kind::List, "APPENDS").items;
        l.insert(l.end(), vs.begin(), vs.end());
        break;
      }
      case 's': {  // SETITEM
        const uint32_t v = pop(), k = pop();
        set_items({k, v}, top());
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<uint32_t> kv = pop_mark();
        set_items(std::move(kv), top());
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        std::string module(take_line());
        global(module + "." + std::string(take_line()));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const uint32_t n = pop(), m = pop();
        global(expect(m, Kind::Str, "STACK_GLOBAL").s + "." + expect(n, Kind::Str, "STACK_GLOBAL").s);
        break;
      }
      case 'R': reduce(); break;  // REDUCE
      case 'b': {                 // BUILD: torch sets _metadata on state dicts; ignored
        const uint32_t state = pop();
        const Kind k = obj(top()).kind;
        if (k == Kind::NpDType || k == Kind::NpArray) {
          build_numpy(top(), state);
          break;
        }
        if (!is_dict(k) && k != Kind::Tensor) fail("BUILD on a ", kind_name(k));
        break;
      }
      case 'Q':  // BINPERSID
        if (allow_ == Allow::NumpyArrays) fail("persistent ids are not read in a data file");
        push(seq(Kind::PersId, {pop()}));
        break;
      case 'P': {  // PERSID (protocol 0)
        if (allow_ == Allow::NumpyArrays) fail("persistent ids are not read in a data file");
        const uint32_t s = make(text(Kind::Str, std::string(take_line())));
        push(seq(Kind::PersId, {s}));
        break;
      }
      case 'q': memo_put(take_le(1)); break;                 // BINPUT
      case 'r': memo_put(take_le(4)); break;                 // LONG_BINPUT
      case 'p': memo_put(static_cast<uint64_t>(parse_int(take_line()))); break;  // PUT
      case 0x94: memo_put(memo_.size()); break;              // MEMOIZE
      case 'h': memo_get(take_le(1)); break;                 // BINGET
      case 'j': memo_get(take_le(4)); break;                 // LONG_BINGET
      case 'g': memo_get(static_cast<uint64_t>(parse_int(take_line()))); break;  // GET
      case 'i': {  // INST "module\nname\n": imports and calls a class
        std::string module(take_line());
        global(module + "." + std::string(take_line()));
        fail("INST (create an instance) is not allowed");
      }
      case 'o': fail("OBJ (create an instance) is not allowed");
      case 0x81: fail("NEWOBJ (create an instance) is not allowed");
      case 0x92: fail("NEWOBJ_EX (create an instance) is not allowed");
      case 0x82: case 0x83: case 0x84: fail("EXT opcodes (globals from the copyreg registry) are not allowed");
      default: fail("unknown or unsupported opcode 0x", "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15]);
    }
  }
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::PersId: return "persistent id";
    case Kind::Tensor: return "tensor";
    case Kind::OrderedDict: return "OrderedDict";
    case Kind::Size: return "torch.Size";
    case Kind::Device: return "torch.device";
    case Kind::NpDType: return "numpy.dtype";
    case Kind::NpArray: return "numpy.ndarray";
  }
  return "?";
}

int64_t numpy_itemsize(const std::string& code) {
  // Codes as numpy.dtype.__reduce__ writes them: a kind letter and a size ("u1", "f8"), or "b1"/"?".
  if (code == "?" || code == "b1") return 1;
  if (code.size() < 2 || std::string_view("uif").find(code[0]) == std::string_view::npos) return 0;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(code.data() + 1, code.data() + code.size(), n);
  if (ec != std::errc() || end != code.data() + code.size()) return 0;
  const bool ok = code[0] == 'f' ? (n == 2 || n == 4 || n == 8) : (n == 1 || n == 2 || n == 4 || n == 8);
  return ok ? n : 0;
}

Pickle unpickle(std::span<const uint8_t> bytes, size_t& pos, const std::string& source, Allow allow) {
  if (pos > bytes.size()) pos = bytes.size();
  Machine m(bytes, pos, source, allow);
  return m.run(pos);
}

}  // namespace ember::io::pickle

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
  Machine(std::span<const uint8_t> b, size_t pos, const std::string& source) : b_(b), p_(pos), src_(source) {}

  Pickle run(size_t& pos_out);

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    throw PthError(PthErrorKind::Pickle,
                   detail::cat(src_, ": its pickle cannot be read: ", args..., " (opcode at byte ", op_at_,
                               " of the pickle)"),
                   std::string("the file is damaged, or was not written by torch.save; ") + kPthStateDictHint);
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
    for (std::string_view allowed : kAllowedGlobals)
      if (name == allowed) return push(text(Kind::Global, std::move(name)));
    throw PthForbiddenGlobalError(
        detail::cat(src_, ": refused: the pickle refers to '", name,
                    "', which a weights file has no use for; nothing was called (ember reads state dicts: tensors, "
                    "OrderedDict and plain values only)"),
        name, std::string("if the file comes from a source you trust, ") + kPthStateDictHint);
  }
  void reduce();
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
  if (name == "collections.OrderedDict") {
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
    bool ok = false;
    std::string b = latin1_bytes(obj(a[0]).s, ok);
    if (!ok) fail("_codecs.encode of text outside latin-1");
    push(text(Kind::Bytes, std::move(b)));
  } else {
    fail("calling ", name, " is not allowed");  // a storage type or a dtype: only named, never called
  }
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
        pop();
        const Kind k = obj(top()).kind;
        if (!is_dict(k) && k != Kind::Tensor) fail("BUILD on a ", kind_name(k));
        break;
      }
      case 'Q': push(seq(Kind::PersId, {pop()})); break;  // BINPERSID
      case 'P': {                                                       // PERSID (protocol 0)
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
  }
  return "?";
}

Pickle unpickle(std::span<const uint8_t> bytes, size_t& pos, const std::string& source) {
  if (pos > bytes.size()) pos = bytes.size();
  Machine m(bytes, pos, source);
  return m.run(pos);
}

}  // namespace ember::io::pickle

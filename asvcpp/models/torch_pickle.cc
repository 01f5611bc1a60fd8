#include "asvcpp/models/torch_pickle.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <variant>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/types.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::models {
namespace {

namespace stdfs = std::filesystem;

// Pickle opcodes (Python's Lib/pickle.py) used by torch.save, protocols 2 to 5.
enum Op : unsigned char {
  kMark = '(',
  kStop = '.',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinString = 'T',
  kShortBinString = 'U',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kNewObj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
};

// The storage classes of torch.save's persistent ids and their dtypes.
const std::map<std::string, torch::Dtype>& StorageDtypes() {
  static const std::map<std::string, torch::Dtype> dtypes = {
      {"FloatStorage", torch::kFloat32},     {"DoubleStorage", torch::kFloat64}, {"HalfStorage", torch::kFloat16},
      {"BFloat16Storage", torch::kBFloat16}, {"LongStorage", torch::kInt64},     {"IntStorage", torch::kInt32},
      {"ShortStorage", torch::kInt16},       {"CharStorage", torch::kInt8},      {"ByteStorage", torch::kUInt8},
      {"BoolStorage", torch::kBool},         {"UntypedStorage", torch::kUInt8},
  };
  return dtypes;
}

std::string StorageClass(torch::Dtype dtype) {
  for (const auto& [name, d] : StorageDtypes()) {
    if (d == dtype && name != "UntypedStorage") return name;
  }
  throw std::invalid_argument(
      fmt::format("SaveStateDict: no PyTorch storage class for dtype {}", c10::toString(dtype)));
}

// ---------------------------------------------------------------------------------------------
// Writing.

class PickleWriter {
 public:
  void Op(unsigned char op) { out_.push_back(static_cast<char>(op)); }
  void Global(const std::string& module, const std::string& name) {
    Op(kGlobal);
    out_ += module + "\n" + name + "\n";
  }
  void String(const std::string& s) {
    Op(kBinUnicode);
    Raw(static_cast<std::uint32_t>(s.size()), 4);
    out_ += s;
  }
  void Int(std::int64_t v) {
    if (v >= 0 && v < 256) {
      Op(kBinInt1);
      Raw(static_cast<std::uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      Op(kBinInt2);
      Raw(static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      Op(kBinInt);
      Raw(static_cast<std::uint64_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(v))), 4);
    } else {
      Op(kLong1);
      Raw(8, 1);
      Raw(static_cast<std::uint64_t>(v), 8);
    }
  }
  void IntTuple(at::IntArrayRef values) {
    Op(kMark);
    for (auto v : values) Int(v);
    Op(kTuple);
  }
  void NewOrderedDict() {
    Global("collections", "OrderedDict");
    Op(kEmptyTuple);
    Op(kReduce);
  }
  const std::string& bytes() const { return out_; }

 private:
  void Raw(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

}  // namespace

void SaveStateDict(const stdfs::path& path, const StateDict& state) {
  PickleWriter p;
  std::vector<at::Tensor> storages;
  p.Op(kProto);
  p.Op(2);
  p.NewOrderedDict();
  p.Op(kMark);
  for (const auto& [name, tensor] : state) {
    const at::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const std::string storage_class = StorageClass(t.scalar_type());
    p.String(name);
    // torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
    // backward_hooks), the storage as persistent id ('storage', class, key, location, numel).
    p.Global("torch._utils", "_rebuild_tensor_v2");
    p.Op(kMark);
    p.Op(kMark);
    p.String("storage");
    p.Global("torch", storage_class);
    p.String(std::to_string(storages.size()));
    p.String("cpu");
    p.Int(t.numel());
    p.Op(kTuple);
    p.Op(kBinPersId);
    p.Int(0);
    p.IntTuple(t.sizes());
    p.IntTuple(t.strides());
    p.Op(kNewFalse);
    p.NewOrderedDict();
    p.Op(kTuple);
    p.Op(kReduce);
    storages.push_back(t);
  }
  p.Op(kSetItems);
  p.Op(kStop);

  std::string archive;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, std::size_t size) {
      archive.append(static_cast<const char*>(data), size);
      return size;
    });
    writer.writeRecord("data.pkl", p.bytes().data(), p.bytes().size());
    const std::string order = "little";
    writer.writeRecord("byteorder", order.data(), order.size());
    for (std::size_t i = 0; i < storages.size(); ++i) {
      const auto& t = storages[i];
      writer.writeRecord("data/" + std::to_string(i), t.data_ptr(), t.numel() * t.element_size());
    }
    writer.writeEndOfFile();
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("{}: cannot write the state dict: {}", path.string(), e.what_without_backtrace()));
  }
  fs::WriteFileAtomic(path, archive);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Reading: the subset of Python's unpickler that torch.save's output of dicts of tensors uses.

struct PyObject;
using Obj = std::shared_ptr<PyObject>;

struct PyGlobal {
  std::string module;
  std::string name;
  std::string Full() const { return module + "." + name; }
};
using PyList = std::vector<Obj>;
struct PyTuple {
  std::vector<Obj> items;
};
using PyDict = std::vector<std::pair<Obj, Obj>>;
struct PyMark {};

struct PyObject {
  std::variant<std::monostate, bool, std::int64_t, double, std::string, at::Tensor, PyTuple, PyList, PyDict, PyGlobal,
               PyMark>
      value;
};

Obj Make(decltype(PyObject::value) v) {
  auto o = std::make_shared<PyObject>();
  o->value = std::move(v);
  return o;
}

class Unpickler {
 public:
  Unpickler(const stdfs::path& path, caffe2::serialize::PyTorchStreamReader& reader, const char* data, std::size_t size)
      : path_(path), reader_(reader), data_(data), size_(size) {}

  Obj Run() {
    while (true) {
      const unsigned char op = U8();
      switch (op) {
        case kProto:
          U8();
          break;
        case kFrame:
          Read(8);
          break;
        case kMark:
          Push(Make(PyMark{}));
          break;
        case kStop:
          return Pop();
        case kNone:
          Push(Make(std::monostate{}));
          break;
        case kNewTrue:
          Push(Make(true));
          break;
        case kNewFalse:
          Push(Make(false));
          break;
        case kBinInt: {
          std::int32_t v;
          std::memcpy(&v, Read(4), 4);
          Push(Make(static_cast<std::int64_t>(v)));
          break;
        }
        case kBinInt1:
          Push(Make(static_cast<std::int64_t>(U8())));
          break;
        case kBinInt2:
          Push(Make(static_cast<std::int64_t>(LittleEndian(2))));
          break;
        case kLong1: {
          const int n = U8();
          if (n > 8) Fail("an integer of more than 64 bits");
          std::uint64_t v = n > 0 ? LittleEndian(n) : 0;
          if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~std::uint64_t{0} << (8 * n);  // sign
          Push(Make(static_cast<std::int64_t>(v)));
          break;
        }
        case kBinFloat: {
          std::uint64_t bits = 0;
          const char* b = Read(8);
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(b[i]);
          double v;
          std::memcpy(&v, &bits, 8);
          Push(Make(v));
          break;
        }
        case kShortBinUnicode:
        case kShortBinString:
        case kShortBinBytes:
          PushString(U8());
          break;
        case kBinUnicode:
        case kBinString:
        case kBinBytes:
          PushString(LittleEndian(4));
          break;
        case kBinUnicode8:
        case kBinBytes8:
          PushString(LittleEndian(8));
          break;
        case kEmptyTuple:
          Push(Make(PyTuple{}));
          break;
        case kTuple:
          Push(Make(PyTuple{PopToMark()}));
          break;
        case kTuple1:
        case kTuple2:
        case kTuple3: {
          const std::size_t n = op - kTuple1 + 1;
          if (stack_.size() < n) Fail("a tuple opcode on a short stack");
          PyTuple t{std::vector<Obj>(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end())};
          stack_.resize(stack_.size() - n);
          Push(Make(std::move(t)));
          break;
        }
        case kEmptyList:
          Push(Make(PyList{}));
          break;
        case kList:
          Push(Make(PyList{PopToMark()}));
          break;
        case kAppend: {
          Obj v = Pop();
          AsList(Top()).push_back(v);
          break;
        }
        case kAppends: {
          auto items = PopToMark();
          auto& list = AsList(Top());
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case kEmptyDict:
          Push(Make(PyDict{}));
          break;
        case kDict: {
          auto items = PopToMark();
          PyDict d;
          for (std::size_t i = 0; i + 1 < items.size(); i += 2) d.emplace_back(items[i], items[i + 1]);
          Push(Make(std::move(d)));
          break;
        }
        case kSetItem: {
          Obj v = Pop();
          Obj k = Pop();
          AsDict(Top()).emplace_back(k, v);
          break;
        }
        case kSetItems: {
          auto items = PopToMark();
          auto& d = AsDict(Top());
          for (std::size_t i = 0; i + 1 < items.size(); i += 2) d.emplace_back(items[i], items[i + 1]);
          break;
        }
        case kEmptySet:
          Push(Make(PyList{}));
          break;
        case kGlobal: {
          std::string module = Line();
          std::string name = Line();
          Push(Make(PyGlobal{module, name}));
          break;
        }
        case kStackGlobal: {
          const std::string name = StringOf(Pop());
          const std::string module = StringOf(Pop());
          Push(Make(PyGlobal{module, name}));
          break;
        }
        case kBinPut:
          memo_[U8()] = Top();
          break;
        case kLongBinPut:
          memo_[LittleEndian(4)] = Top();
          break;
        case kMemoize:
          memo_[memo_.size()] = Top();
          break;
        case kBinGet:
          Push(Memo(U8()));
          break;
        case kLongBinGet:
          Push(Memo(LittleEndian(4)));
          break;
        case kBinPersId:
          Push(PersistentLoad(Pop()));
          break;
        case kReduce: {
          Obj args = Pop();
          Obj callable = Pop();
          Push(Reduce(callable, args));
          break;
        }
        case kNewObj: {
          Obj args = Pop();
          Obj cls = Pop();
          Push(Reduce(cls, args));
          break;
        }
        case kBuild:
          Pop();
          break;  // the state of an OrderedDict (its _metadata) or a Parameter
        default:
          Fail(fmt::format("pickle opcode 0x{:02x}", op));
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw DataError(fmt::format("{}: not a state dict asvcpp can read: unsupported {} (at byte {} of data.pkl)",
                                path_.string(), what, pos_));
  }
  const char* Read(std::size_t n) {
    if (pos_ + n > size_) Fail("end of data.pkl before its STOP opcode");
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  unsigned char U8() { return static_cast<unsigned char>(*Read(1)); }
  std::uint64_t LittleEndian(int n) {
    const char* b = Read(static_cast<std::size_t>(n));
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  std::string Line() {
    const std::size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != '\n') ++pos_;
    if (pos_ >= size_) Fail("end of data.pkl in a GLOBAL opcode");
    return std::string(data_ + start, data_ + pos_++);
  }
  void PushString(std::uint64_t n) {
    const char* p = Read(n);
    Push(Make(std::string(p, n)));
  }
  void Push(Obj o) { stack_.push_back(std::move(o)); }
  Obj Pop() {
    if (stack_.empty()) Fail("pop from an empty stack");
    Obj o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Obj& Top() {
    if (stack_.empty()) Fail("an opcode on an empty stack");
    return stack_.back();
  }
  std::vector<Obj> PopToMark() {
    std::vector<Obj> items;
    while (true) {
      Obj o = Pop();
      if (std::holds_alternative<PyMark>(o->value)) break;
      items.push_back(std::move(o));
    }
    return {items.rbegin(), items.rend()};
  }
  Obj Memo(std::uint64_t key) const {
    auto it = memo_.find(key);
    if (it == memo_.end()) Fail(fmt::format("memo key {}", key));
    return it->second;
  }
  PyList& AsList(Obj& o) {
    if (auto* l = std::get_if<PyList>(&o->value)) return *l;
    Fail("append to an object that is not a list");
  }
  PyDict& AsDict(Obj& o) {
    if (auto* d = std::get_if<PyDict>(&o->value)) return *d;
    Fail("set an item of an object that is not a dict");
  }
  std::string StringOf(const Obj& o) const {
    if (const auto* s = std::get_if<std::string>(&o->value)) return *s;
    Fail("a non-string where a string belongs");
  }
  std::int64_t IntOf(const Obj& o) const {
    if (const auto* i = std::get_if<std::int64_t>(&o->value)) return *i;
    Fail("a non-integer where an integer belongs");
  }
  std::vector<std::int64_t> IntsOf(const Obj& o) const {
    const auto* t = std::get_if<PyTuple>(&o->value);
    if (t == nullptr) Fail("a size or stride that is not a tuple");
    std::vector<std::int64_t> out;
    for (const auto& item : t->items) out.push_back(IntOf(item));
    return out;
  }

  // ('storage', storage class, key, location, numel): the record data/<key> as a flat tensor.
  Obj PersistentLoad(const Obj& pid) {
    const auto* t = std::get_if<PyTuple>(&pid->value);
    if (t == nullptr || t->items.size() < 5 || StringOf(t->items[0]) != "storage") Fail("persistent id");
    const auto* cls = std::get_if<PyGlobal>(&t->items[1]->value);
    if (cls == nullptr || cls->module != "torch" || StorageDtypes().count(cls->name) == 0) {
      Fail(fmt::format("storage type {}", cls != nullptr ? cls->Full() : "(not a class)"));
    }
    const std::string key = StringOf(t->items[2]);
    auto cached = storages_.find(key);
    if (cached != storages_.end()) return Make(cached->second);
    const torch::Dtype dtype = StorageDtypes().at(cls->name);
    const std::string record = "data/" + key;
    if (!reader_.hasRecord(record)) Fail(fmt::format("missing storage record {}", record));
    auto [ptr, bytes] = reader_.getRecord(record);
    const auto element = static_cast<std::size_t>(c10::elementSize(dtype));
    at::Tensor storage = torch::empty({static_cast<std::int64_t>(bytes / element)}, torch::dtype(dtype));
    std::memcpy(storage.data_ptr(), ptr.get(), bytes - bytes % element);
    storages_[key] = storage;
    return Make(storage);
  }

  Obj Reduce(const Obj& callable, const Obj& args) {
    const auto* g = std::get_if<PyGlobal>(&callable->value);
    const auto* a = std::get_if<PyTuple>(&args->value);
    if (g == nullptr || a == nullptr) Fail("REDUCE of an object that is not a Python class or function");
    const std::string name = g->Full();
    if (name == "collections.OrderedDict" || name == "builtins.dict") return Make(PyDict{});
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (a->items.size() < 4) Fail(name + " with too few arguments");
      const auto* storage = std::get_if<at::Tensor>(&a->items[0]->value);
      if (storage == nullptr) Fail(name + " without a storage");
      const auto sizes = IntsOf(a->items[2]);
      const auto strides = IntsOf(a->items[3]);
      const std::int64_t offset = IntOf(a->items[1]);
      std::int64_t last = offset;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] == 0) last = -1;
        if (last >= 0) last += (sizes[i] - 1) * (i < strides.size() ? strides[i] : 0);
      }
      if (sizes.size() != strides.size() || last >= storage->numel()) Fail(name + " outside its storage");
      return Make(storage->as_strided(sizes, strides, offset).clone());
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (a->items.empty() || !std::holds_alternative<at::Tensor>(a->items[0]->value)) Fail(name);
      return a->items[0];
    }
    Fail(fmt::format("Python object {}", name));
  }

  const stdfs::path& path_;
  caffe2::serialize::PyTorchStreamReader& reader_;
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::vector<Obj> stack_;
  std::map<std::uint64_t, Obj> memo_;
  std::map<std::string, at::Tensor> storages_;
};

// The state dict inside `root`: root itself, or root["state_dict"] / root["model"].
const PyDict* FindStateDict(const Obj& root) {
  const auto* d = std::get_if<PyDict>(&root->value);
  if (d == nullptr) return nullptr;
  for (const char* inner : {"state_dict", "model"}) {
    for (const auto& [k, v] : *d) {
      const auto* key = std::get_if<std::string>(&k->value);
      if (key != nullptr && *key == inner && std::holds_alternative<PyDict>(v->value))
        return &std::get<PyDict>(v->value);
    }
  }
  return d;
}

}  // namespace

StateDict LoadStateDict(const stdfs::path& path) {
  std::error_code ec;
  if (!stdfs::is_regular_file(path, ec)) throw DataError(fmt::format("{}: no such file", path.string()));
  try {
    caffe2::serialize::PyTorchStreamReader reader(path.string());
    if (reader.hasRecord("constants.pkl")) {
      throw DataError(
          fmt::format("{}: a TorchScript archive (torch.jit.save), not a state dict of torch.save", path.string()));
    }
    auto [data, size] = reader.getRecord("data.pkl");
    Unpickler unpickler(path, reader, static_cast<const char*>(data.get()), size);
    const Obj root = unpickler.Run();
    const PyDict* dict = FindStateDict(root);
    if (dict == nullptr) throw DataError(fmt::format("{}: holds no dict of tensors (a state dict)", path.string()));
    StateDict state;
    for (const auto& [k, v] : *dict) {
      const auto* key = std::get_if<std::string>(&k->value);
      if (key == nullptr) throw DataError(fmt::format("{}: a state-dict key that is not a string", path.string()));
      const auto* tensor = std::get_if<at::Tensor>(&v->value);
      if (tensor == nullptr) {
        throw DataError(fmt::format("{}: state-dict entry '{}' is not a tensor", path.string(), *key));
      }
      state.emplace_back(*key, *tensor);
    }
    return state;
  } catch (const c10::Error& e) {
    throw DataError(fmt::format("{}: not a state dict saved by torch.save (zip format, PyTorch >= 1.6): {}",
                                path.string(), std::string(e.what_without_backtrace()).substr(0, 200)));
  }
}

}  // namespace asv::models

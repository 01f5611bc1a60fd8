#include "asvcpp/features/kaldi_io.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/temp_files.h"
#include "asvcpp/base/text.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Kaldi binary I/O assumes a little-endian host");

namespace asv::features {
namespace {

constexpr std::size_t kMaxTokenLength = 64;
constexpr std::size_t kMaxKeyLength = 1 << 16;

bool IsSpace(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Bytes left in a seekable stream, or -1 when it cannot be told (pipes, stdin).
std::int64_t RemainingBytes(std::istream& is) {
  const std::streampos here = is.tellg();
  if (here == std::streampos(-1)) {
    is.clear();
    return -1;
  }
  is.seekg(0, std::ios::end);
  const std::streampos end = is.tellg();
  is.seekg(here);
  if (end == std::streampos(-1)) {
    is.clear();
    return -1;
  }
  return static_cast<std::int64_t>(end - here);
}

void ReadExact(std::istream& is, char* out, std::int64_t n, const std::string& where, const char* what) {
  if (n == 0) return;
  is.read(out, n);
  if (is.gcount() != n) {
    throw DataError(fmt::format("{}: truncated {}: expected {} bytes, found {}", where, what, n, is.gcount()));
  }
}

// Kaldi ReadToken in binary mode: skip whitespace, read a word, consume one whitespace char.
std::string ReadToken(std::istream& is, const std::string& where) {
  int c;
  while ((c = is.peek()) != EOF && IsSpace(c)) is.get();
  std::string token;
  while ((c = is.peek()) != EOF && !IsSpace(c)) {
    token.push_back(static_cast<char>(is.get()));
    if (token.size() > kMaxTokenLength) {
      throw DataError(
          fmt::format("{}: expected a Kaldi type token (FM, DM, FV, DV, CM, CM2, CM3), found binary "
                      "junk",
                      where));
    }
  }
  if (token.empty()) throw DataError(fmt::format("{}: unexpected end of data, expected a type token", where));
  if (c == EOF) throw DataError(fmt::format("{}: unexpected end of data after token '{}'", where, token));
  is.get();
  return token;
}

std::int32_t ReadInt32(std::istream& is, const std::string& where, const char* what) {
  const int size = is.get();
  if (size == EOF) throw DataError(fmt::format("{}: unexpected end of data reading {}", where, what));
  if (size != 4) {
    throw DataError(fmt::format("{}: expected a 4-byte integer for {}, size byte is {}", where, what, size));
  }
  std::int32_t v;
  ReadExact(is, reinterpret_cast<char*>(&v), 4, where, what);
  return v;
}

void CheckSize(std::istream& is, std::int64_t bytes, const std::string& where, const char* what) {
  const std::int64_t left = RemainingBytes(is);
  if (left >= 0 && bytes > left) {
    throw DataError(
        fmt::format("{}: truncated {}: needs {} bytes, only {} left in the file", where, what, bytes, left));
  }
}

template <class T>
MatrixT<T> ReadBinaryMatrix(std::istream& is, const std::string& where) {
  const std::int32_t rows = ReadInt32(is, where, "matrix rows");
  const std::int32_t cols = ReadInt32(is, where, "matrix cols");
  if (rows < 0 || cols < 0) throw DataError(fmt::format("{}: matrix has negative size {} x {}", where, rows, cols));
  const std::int64_t bytes = static_cast<std::int64_t>(rows) * cols * static_cast<std::int64_t>(sizeof(T));
  CheckSize(is, bytes, where, "matrix data");
  MatrixT<T> m(rows, cols);
  ReadExact(is, reinterpret_cast<char*>(m.data()), bytes, where, "matrix data");
  return m;
}

template <class T>
std::vector<T> ReadBinaryVector(std::istream& is, const std::string& where) {
  const std::int32_t size = ReadInt32(is, where, "vector size");
  if (size < 0) throw DataError(fmt::format("{}: vector has negative size {}", where, size));
  const std::int64_t bytes = static_cast<std::int64_t>(size) * static_cast<std::int64_t>(sizeof(T));
  CheckSize(is, bytes, where, "vector data");
  std::vector<T> v(static_cast<std::size_t>(size));
  ReadExact(is, reinterpret_cast<char*>(v.data()), bytes, where, "vector data");
  return v;
}

CompressedMatrix ReadCompressed(std::istream& is, const std::string& token, const std::string& where) {
  std::string bytes(16, '\0');
  ReadExact(is, bytes.data(), 16, where, "compressed-matrix header");
  std::int32_t rows, cols;
  std::memcpy(&rows, bytes.data() + 8, 4);
  std::memcpy(&cols, bytes.data() + 12, 4);
  if (cols != 0) {
    if (rows < 0 || cols < 0) {
      throw DataError(fmt::format("{}: compressed matrix has negative size {} x {}", where, rows, cols));
    }
    const auto format = token == "CM"    ? CompressedMatrix::Format::kOneByteWithColHeaders
                        : token == "CM2" ? CompressedMatrix::Format::kTwoByte
                                         : CompressedMatrix::Format::kOneByte;
    const std::int64_t need = CompressedMatrix::DataBytes(format, rows, cols);
    CheckSize(is, need, where, "compressed-matrix data");
    bytes.resize(static_cast<std::size_t>(16 + need));
    ReadExact(is, bytes.data() + 16, need, where, "compressed-matrix data");
  }
  return CompressedMatrix::FromBytes(token, bytes, where);
}

KaldiObject ReadBinaryObject(std::istream& is, const std::string& where) {
  const std::string token = ReadToken(is, where);
  if (token == "FM") return KaldiObject(ReadBinaryMatrix<float>(is, where), false);
  if (token == "DM") return KaldiObject(ReadBinaryMatrix<double>(is, where), false);
  if (token == "FV") return KaldiObject(ReadBinaryVector<float>(is, where), false);
  if (token == "DV") return KaldiObject(ReadBinaryVector<double>(is, where), false);
  if (token == "CM" || token == "CM2" || token == "CM3") {
    return KaldiObject(ReadCompressed(is, token, where).Decompress(), false);
  }
  throw DataError(
      fmt::format("{}: unknown object type token '{}' (expected FM, DM, FV, DV, CM, CM2 or CM3)", where, token));
}

double ParseNumber(const std::string& token, const std::string& where) {
  const char* begin = token.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0') {
    throw DataError(fmt::format("{}: expected a number in text matrix/vector data, got '{}'", where, token));
  }
  return v;
}

KaldiObject ReadTextObject(std::istream& is, const std::string& where) {
  int c;
  while ((c = is.peek()) != EOF && IsSpace(c)) is.get();
  if (c == EOF) throw DataError(fmt::format("{}: unexpected end of data, expected '['", where));
  if (c != '[') {
    throw DataError(
        fmt::format("{}: expected '[' at the start of a text object, got '{}'", where, static_cast<char>(c)));
  }
  is.get();
  // A newline right after '[' marks a matrix (Kaldi's MatrixBase::Write); otherwise a vector.
  while ((c = is.peek()) == ' ' || c == '\t') is.get();
  const bool matrix = (c == '\n' || c == '\r');
  std::vector<std::vector<double>> rows(1);
  std::string token;
  while (true) {
    c = is.get();
    if (c == EOF) throw DataError(fmt::format("{}: unexpected end of data inside a text object (missing ']')", where));
    if (c == ']') break;
    if (c == '\n' || c == ';') {
      if (!rows.back().empty()) rows.emplace_back();
      continue;
    }
    if (IsSpace(c)) continue;
    token.assign(1, static_cast<char>(c));
    while ((c = is.peek()) != EOF && !IsSpace(c) && c != ']') token.push_back(static_cast<char>(is.get()));
    rows.back().push_back(ParseNumber(token, where));
  }
  if (is.peek() == '\r') is.get();
  if (is.peek() == '\n') is.get();
  if (rows.back().empty()) rows.pop_back();
  if (!matrix && rows.size() <= 1) {
    return KaldiObject(rows.empty() ? std::vector<double>{} : rows[0], true);
  }
  const std::size_t cols = rows.empty() ? 0 : rows[0].size();
  MatrixD m(static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != cols) {
      throw DataError(
          fmt::format("{}: text matrix row {} has {} values, row 0 has {}", where, r, rows[r].size(), cols));
    }
    std::copy(rows[r].begin(), rows[r].end(), m.row(static_cast<std::int64_t>(r)));
  }
  return KaldiObject(std::move(m), true);
}

// Splits "path:123" into ("path", 123); offset -1 when there is none.
std::pair<std::string, std::int64_t> SplitOffset(const std::string& rxfilename) {
  if (!rxfilename.empty() && rxfilename.back() == '|') {
    throw DataError(fmt::format("'{}': pipes are not supported as Kaldi input", rxfilename));
  }
  if (!rxfilename.empty() && rxfilename.back() == ']' && rxfilename.find('[') != std::string::npos) {
    throw DataError(fmt::format("'{}': row/column ranges are not supported", rxfilename));
  }
  const std::size_t colon = rxfilename.rfind(':');
  if (colon == std::string::npos || colon + 1 == rxfilename.size()) return {rxfilename, -1};
  for (std::size_t i = colon + 1; i < rxfilename.size(); ++i) {
    if (rxfilename[i] < '0' || rxfilename[i] > '9') return {rxfilename, -1};
  }
  errno = 0;
  const long long offset = std::strtoll(rxfilename.c_str() + colon + 1, nullptr, 10);
  if (errno == ERANGE) throw DataError(fmt::format("'{}': offset out of range", rxfilename));
  return {rxfilename.substr(0, colon), offset};
}

// Opens `path` (reusing `stream` when it already holds it) and positions it at `offset`.
void OpenAt(std::ifstream* stream, std::string* open_path, const std::string& path, std::int64_t offset) {
  if (*open_path != path || !stream->is_open()) {
    stream->close();
    stream->clear();
    open_path->clear();
    stream->open(path, std::ios::binary);
    if (!stream->is_open()) throw DataError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    *open_path = path;
  }
  stream->clear();
  stream->seekg(0, std::ios::end);
  const std::int64_t size = static_cast<std::int64_t>(stream->tellg());
  if (offset >= size) {
    throw DataError(fmt::format("{}:{}: offset is past the end of the file ({} bytes)", path, offset, size));
  }
  stream->seekg(offset);
}

std::string Describe(const std::string& path, std::int64_t offset, const std::string& key) {
  std::string s = offset >= 0 ? fmt::format("{}:{}", path == "-" ? "<stdin>" : path, offset)
                              : (path == "-" ? std::string("<stdin>") : path);
  if (!key.empty()) s += fmt::format(" (key '{}')", key);
  return s;
}

template <class T>
std::string FormatNumber(T v) {
  return fmt::format("{}", v);
}

template <class T>
void WriteMatrixImpl(std::ostream& os, bool binary, const MatrixT<T>& m) {
  if (binary) {
    os.write("\0B", 2);
    os << (sizeof(T) == 4 ? "FM " : "DM ");
    const auto rows = static_cast<std::int32_t>(m.rows()), cols = static_cast<std::int32_t>(m.cols());
    os.put(4);
    os.write(reinterpret_cast<const char*>(&rows), 4);
    os.put(4);
    os.write(reinterpret_cast<const char*>(&cols), 4);
    os.write(reinterpret_cast<const char*>(m.data()), static_cast<std::streamsize>(sizeof(T) * m.rows() * m.cols()));
    return;
  }
  if (m.cols() == 0) {
    os << " [ ]\n";
    return;
  }
  std::string s = " [";
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    s += "\n  ";
    for (std::int64_t c = 0; c < m.cols(); ++c) {
      s += FormatNumber(m(r, c));
      s += ' ';
    }
  }
  s += "]\n";
  os << s;
}

template <class T>
void WriteVectorImpl(std::ostream& os, bool binary, const std::vector<T>& v) {
  if (binary) {
    os.write("\0B", 2);
    os << (sizeof(T) == 4 ? "FV " : "DV ");
    const auto size = static_cast<std::int32_t>(v.size());
    os.put(4);
    os.write(reinterpret_cast<const char*>(&size), 4);
    os.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(sizeof(T) * v.size()));
    return;
  }
  std::string s = " [ ";
  for (const T& x : v) {
    s += FormatNumber(x);
    s += ' ';
  }
  s += "]\n";
  os << s;
}

bool IsValidKey(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (IsSpace(static_cast<unsigned char>(c)) || c == '\0') return false;
  }
  return true;
}

std::vector<std::string> SplitOptions(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',' || c == ' ') {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// KaldiObject

Matrix KaldiObject::ToMatrix(const std::string& what) const {
  if (const auto* m = std::get_if<Matrix>(&value_)) return *m;
  if (const auto* md = std::get_if<MatrixD>(&value_)) {
    Matrix m(md->rows(), md->cols());
    for (std::int64_t i = 0; i < md->rows() * md->cols(); ++i) m.data()[i] = static_cast<float>(md->data()[i]);
    return m;
  }
  if (from_text_) {
    const auto& v = std::get<std::vector<double>>(value_);
    Matrix m(v.empty() ? 0 : 1, static_cast<std::int64_t>(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) m.data()[i] = static_cast<float>(v[i]);
    return m;
  }
  throw DataError(fmt::format("{}: expected a matrix, found a vector", what));
}

MatrixD KaldiObject::ToMatrixD(const std::string& what) const {
  if (const auto* md = std::get_if<MatrixD>(&value_)) return *md;
  if (const auto* m = std::get_if<Matrix>(&value_)) {
    MatrixD out(m->rows(), m->cols());
    for (std::int64_t i = 0; i < m->rows() * m->cols(); ++i) out.data()[i] = m->data()[i];
    return out;
  }
  if (from_text_) {
    const auto& v = std::get<std::vector<double>>(value_);
    MatrixD m(v.empty() ? 0 : 1, static_cast<std::int64_t>(v.size()));
    std::copy(v.begin(), v.end(), m.data());
    return m;
  }
  throw DataError(fmt::format("{}: expected a matrix, found a vector", what));
}

std::vector<double> KaldiObject::ToVectorD(const std::string& what) const {
  if (const auto* vd = std::get_if<std::vector<double>>(&value_)) return *vd;
  if (const auto* v = std::get_if<std::vector<float>>(&value_)) return std::vector<double>(v->begin(), v->end());
  if (from_text_) {
    const auto& m = std::get<MatrixD>(value_);
    if (m.rows() <= 1) return std::vector<double>(m.data(), m.data() + m.rows() * m.cols());
    throw DataError(fmt::format("{}: expected a vector, found a {} x {} text matrix", what, m.rows(), m.cols()));
  }
  throw DataError(fmt::format("{}: expected a vector, found a matrix", what));
}

std::vector<float> KaldiObject::ToVector(const std::string& what) const {
  if (const auto* v = std::get_if<std::vector<float>>(&value_)) return *v;
  const std::vector<double> vd = ToVectorD(what);
  std::vector<float> out(vd.size());
  for (std::size_t i = 0; i < vd.size(); ++i) out[i] = static_cast<float>(vd[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Single objects

KaldiObject ReadKaldiObject(std::istream& is, const std::string& where) {
  const int c = is.peek();
  if (c == EOF) throw DataError(fmt::format("{}: unexpected end of data, expected an object", where));
  if (c == '\0') {
    is.get();
    if (is.get() != 'B') throw DataError(fmt::format("{}: bad binary header (expected \"\\0B\")", where));
    return ReadBinaryObject(is, where);
  }
  return ReadTextObject(is, where);
}

void WriteKaldiObject(std::ostream& os, bool binary, const Matrix& value) {
  WriteMatrixImpl(os, binary, value);
}
void WriteKaldiObject(std::ostream& os, bool binary, const MatrixD& value) {
  WriteMatrixImpl(os, binary, value);
}
void WriteKaldiObject(std::ostream& os, bool binary, const std::vector<float>& value) {
  WriteVectorImpl(os, binary, value);
}
void WriteKaldiObject(std::ostream& os, bool binary, const std::vector<double>& value) {
  WriteVectorImpl(os, binary, value);
}
void WriteKaldiObject(std::ostream& os, bool binary, const CompressedMatrix& value) {
  if (!binary) {
    WriteMatrixImpl(os, false, value.Decompress());
    return;
  }
  os.write("\0B", 2);
  const std::string bytes = value.ToBytes();
  os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

KaldiObject ReadKaldiObject(const std::string& rxfilename) {
  if (rxfilename == "-") return ReadKaldiObject(std::cin, "<stdin>");
  const auto [path, offset] = SplitOffset(rxfilename);
  std::ifstream stream;
  std::string open_path;
  OpenAt(&stream, &open_path, path, offset < 0 ? 0 : offset);
  return ReadKaldiObject(stream, Describe(path, offset < 0 ? 0 : offset, ""));
}

Matrix ReadKaldiMatrix(const std::string& rxfilename) {
  return ReadKaldiObject(rxfilename).ToMatrix(rxfilename);
}

std::vector<float> ReadKaldiVector(const std::string& rxfilename) {
  return ReadKaldiObject(rxfilename).ToVector(rxfilename);
}

std::vector<std::pair<std::string, std::string>> ReadScpFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    text = fs::ReadFile(path);
  }
  std::vector<std::pair<std::string, std::string>> entries;
  std::size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    text::CheckLineLength(std::string_view(text).substr(pos, end - pos), path == "-" ? "standard input" : path,
                          line_number);
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::size_t key_end = 0;
    while (key_end < line.size() && !IsSpace(static_cast<unsigned char>(line[key_end]))) ++key_end;
    std::size_t rest_begin = key_end;
    while (rest_begin < line.size() && IsSpace(static_cast<unsigned char>(line[rest_begin]))) ++rest_begin;
    std::size_t rest_end = line.size();
    while (rest_end > rest_begin && IsSpace(static_cast<unsigned char>(line[rest_end - 1]))) --rest_end;
    if (key_end == 0 || rest_begin >= rest_end) {
      throw DataError(
          fmt::format("{}:{}: invalid script line '{}' (expected 'KEY RXFILENAME')", path, line_number, line));
    }
    entries.emplace_back(line.substr(0, key_end), line.substr(rest_begin, rest_end - rest_begin));
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------
// TableReader

struct TableReader::Impl {
  bool script = false;
  std::string path;  // archive or script file
  // Archive reading.
  std::ifstream file;
  std::istream* in = nullptr;
  // Script reading.
  std::vector<std::pair<std::string, std::string>> entries;
  std::size_t next_entry = 0;
  std::ifstream object_file;
  std::string object_path;
};

TableReader::TableReader(const std::string& rspecifier) : impl_(std::make_unique<Impl>()) {
  const std::size_t colon = rspecifier.find(':');
  bool have_type = false;
  if (colon != std::string::npos && !rspecifier.empty() && !IsSpace(static_cast<unsigned char>(rspecifier.back()))) {
    bool ok = true;
    for (const std::string& opt : SplitOptions(rspecifier.substr(0, colon))) {
      if (opt == "ark" || opt == "scp") {
        if (have_type) ok = false;
        have_type = true;
        impl_->script = opt == "scp";
      } else if (opt != "b" && opt != "t" && opt != "o" && opt != "no" && opt != "s" && opt != "ns" && opt != "cs" &&
                 opt != "ncs" && opt != "bg" && opt != "np") {
        ok = false;
      }
    }
    if (!ok) have_type = false;
  }
  if (!have_type) {
    throw DataError(
        fmt::format("'{}' is not a supported rspecifier (expected ark:FILE or scp:FILE, options b, t, o, "
                    "s, cs)",
                    rspecifier));
  }
  impl_->path = rspecifier.substr(colon + 1);
  if (impl_->script) {
    impl_->entries = ReadScpFile(impl_->path);
  } else if (impl_->path == "-") {
    impl_->in = &std::cin;
  } else {
    impl_->file.open(impl_->path, std::ios::binary);
    if (!impl_->file.is_open()) {
      throw DataError(fmt::format("{}: cannot open archive ({})", impl_->path, std::strerror(errno)));
    }
    impl_->in = &impl_->file;
  }
}

TableReader::~TableReader() = default;

bool TableReader::Next() {
  Impl& s = *impl_;
  if (s.script) {
    if (s.next_entry >= s.entries.size()) return false;
    const auto& [key, rx] = s.entries[s.next_entry++];
    key_ = key;
    if (rx == "-") {
      value_ = ReadKaldiObject(std::cin, Describe("-", -1, key));
      return true;
    }
    const auto [path, offset] = SplitOffset(rx);
    try {
      OpenAt(&s.object_file, &s.object_path, path, offset < 0 ? 0 : offset);
    } catch (const DataError& e) {
      throw DataError(fmt::format("{} (key '{}' in {})", e.what(), key, s.path));
    }
    value_ = ReadKaldiObject(s.object_file, Describe(path, offset < 0 ? 0 : offset, key));
    return true;
  }
  std::istream& is = *s.in;
  int c;
  while ((c = is.peek()) != EOF && IsSpace(c)) is.get();
  if (c == EOF) return false;
  const std::streampos key_pos = is.tellg();
  std::string key;
  while ((c = is.peek()) != EOF && !IsSpace(c)) {
    key.push_back(static_cast<char>(is.get()));
    if (key.size() > kMaxKeyLength) {
      throw DataError(fmt::format("{}: expected a key, found more than {} bytes without a space (not an archive?)",
                                  Describe(s.path, static_cast<std::int64_t>(key_pos), ""), kMaxKeyLength));
    }
  }
  if (c != ' ' && c != '\t' && c != '\n') {
    throw DataError(fmt::format("{}: archive ends after key '{}' without an object",
                                Describe(s.path, static_cast<std::int64_t>(key_pos), ""), key));
  }
  if (c != '\n') is.get();
  key_ = key;
  const std::streampos object_pos = is.tellg();
  value_ = ReadKaldiObject(is, Describe(s.path, static_cast<std::int64_t>(object_pos), key));
  return true;
}

// ---------------------------------------------------------------------------------------------
// TableWriter

TableWriter::TableWriter(const std::string& wspecifier) {
  const std::size_t colon = wspecifier.find(':');
  bool ark = false, scp = false, ok = colon != std::string::npos;
  if (ok) {
    for (const std::string& opt : SplitOptions(wspecifier.substr(0, colon))) {
      if (opt == "ark" && !ark && !scp) {
        ark = true;
      } else if (opt == "scp" && !scp) {
        scp = true;
      } else if (opt == "t") {
        binary_ = false;
      } else if (opt == "b") {
        binary_ = true;
      } else if (opt != "f" && opt != "nf") {
        ok = false;
      }
    }
  }
  if (!ok || !ark) {
    throw DataError(
        fmt::format("'{}' is not a supported wspecifier (expected ark:FILE, ark,t:FILE or "
                    "ark,scp:ARK,SCP; scp-only writing is not supported)",
                    wspecifier));
  }
  const std::string files = wspecifier.substr(colon + 1);
  if (scp) {
    const std::size_t comma = files.find(',');
    if (comma == std::string::npos) {
      throw DataError(fmt::format("'{}': ark,scp needs two file names, ARK,SCP", wspecifier));
    }
    archive_path_ = files.substr(0, comma);
    script_path_ = files.substr(comma + 1);
    if (archive_path_ == "-") throw DataError(fmt::format("'{}': an archive on stdout cannot have an scp", wspecifier));
  } else {
    archive_path_ = files;
  }
  if (archive_path_.empty() || (scp && script_path_.empty())) {
    throw DataError(fmt::format("'{}': empty file name", wspecifier));
  }
  if (archive_path_ == "-") {
    to_stdout_ = true;
    file_ = stdout;
    return;
  }
  // Through a link, the file it points at is written; a device or FIFO is written in place; a
  // directory is refused (fs::ResolveOutput).
  const fs::OutputTarget target = fs::ResolveOutput(archive_path_);
  if (target.kind == fs::OutputKind::kStream) {
    to_stream_ = true;
    file_ = std::fopen(target.path.c_str(), "wb");
    if (file_ == nullptr) {
      throw DataError(fmt::format("{}: cannot open for writing ({})", archive_path_, std::strerror(errno)));
    }
    return;
  }
  archive_target_ = target.path.string();
  const std::filesystem::path parent = target.path.parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  archive_tmp_guard_ = std::make_unique<fs::ScopedTempFile>(target.path);
  archive_tmp_ = archive_tmp_guard_->path().string();
  file_ = std::fopen(archive_tmp_.c_str(), "wb");
  if (file_ == nullptr) {
    throw DataError(fmt::format("{}: cannot create ({})", archive_tmp_, std::strerror(errno)));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

TableWriter::~TableWriter() {
  if (closed_ || to_stdout_) {
    if (to_stdout_ && file_ != nullptr) std::fflush(file_);
    return;
  }
  if (to_stream_) {
    if (file_ != nullptr) std::fclose(file_);
    return;
  }
  if (file_ != nullptr) std::fclose(file_);
  // archive_tmp_guard_ removes the temporary archive.
}

template <class T>
void TableWriter::WriteEntry(const std::string& key, const T& value) {
  if (closed_) throw DataError(fmt::format("{}: write after Close()", archive_path_));
  if (!IsValidKey(key))
    throw DataError(fmt::format("{}: invalid key '{}' (empty or with whitespace)", archive_path_, key));
  std::ostringstream os;
  os << key << ' ';
  const std::int64_t object_offset = offset_ + static_cast<std::int64_t>(key.size()) + 1;
  WriteKaldiObject(os, binary_, value);
  const std::string bytes = os.str();
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw DataError(fmt::format("{}: write failed ({})",
                                to_stdout_ ? "<stdout>" : (to_stream_ ? archive_path_ : archive_tmp_),
                                std::strerror(errno)));
  }
  offset_ += static_cast<std::int64_t>(bytes.size());
  if (!script_path_.empty()) script_ += fmt::format("{} {}:{}\n", key, archive_path_, object_offset);
}

void TableWriter::Write(const std::string& key, const Matrix& value) {
  WriteEntry(key, value);
}
void TableWriter::Write(const std::string& key, const MatrixD& value) {
  WriteEntry(key, value);
}
void TableWriter::Write(const std::string& key, const std::vector<float>& value) {
  WriteEntry(key, value);
}
void TableWriter::Write(const std::string& key, const std::vector<double>& value) {
  WriteEntry(key, value);
}
void TableWriter::WriteCompressed(const std::string& key, const Matrix& value, CompressionMethod method) {
  WriteEntry(key, CompressedMatrix::Compress(value, method));
}

void TableWriter::Close() {
  if (closed_) return;
  if (to_stdout_) {
    closed_ = true;
    if (std::fflush(file_) != 0) throw DataError(fmt::format("<stdout>: write failed ({})", std::strerror(errno)));
    return;
  }
  if (to_stream_) {
    closed_ = true;
    const bool flushed = std::fflush(file_) == 0;
    const int flush_errno = errno;
    const bool closed_ok = std::fclose(file_) == 0;
    const int close_errno = errno;
    file_ = nullptr;
    if (!flushed || !closed_ok) {
      throw DataError(fmt::format("{}: write failed ({})", archive_path_,
                                  std::strerror(!flushed ? flush_errno : close_errno)));
    }
    if (!script_path_.empty()) fs::WriteFileAtomic(script_path_, script_);
    return;
  }
  const bool ok = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  const int flush_errno = errno;
  const bool closed_ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed_ok) {
    std::remove(archive_tmp_.c_str());
    closed_ = true;
    throw DataError(fmt::format("{}: write failed ({})", archive_path_, std::strerror(flush_errno)));
  }
  if (std::rename(archive_tmp_.c_str(), archive_target_.c_str()) != 0) {
    const int e = errno;
    std::remove(archive_tmp_.c_str());
    closed_ = true;
    throw DataError(fmt::format("{}: cannot rename {} into place ({})", archive_path_, archive_tmp_, std::strerror(e)));
  }
  archive_tmp_guard_->Release();
  closed_ = true;
  if (script_path_ == "-") {
    std::fwrite(script_.data(), 1, script_.size(), stdout);
    std::fflush(stdout);
  } else if (!script_path_.empty()) {
    fs::WriteFileAtomic(script_path_, script_);
  }
}

std::vector<std::string> TableWriter::Files() const {
  std::vector<std::string> files;
  if (!to_stdout_) files.push_back(archive_path_);
  if (!script_path_.empty() && script_path_ != "-") files.push_back(script_path_);
  return files;
}

}  // namespace asv::features

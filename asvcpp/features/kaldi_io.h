// Kaldi table I/O: archives (ark), script files (scp) and single objects, for the feature
// matrices and VAD vectors that Kaldi tools and asvcpp exchange.
//
// Formats (kaldi-asr/kaldi: src/util/kaldi-table.{h,cc}, kaldi-table-inl.h, kaldi-holder-inl.h,
// src/base/io-funcs.cc, src/matrix/kaldi-matrix.cc, kaldi-vector.cc, compressed-matrix.cc):
//   archive   = repeated "KEY" ' ' OBJECT; keys are non-empty and contain no whitespace.
//   binary    OBJECT = "\0B" TOKEN ' ' ...; tokens "FM"/"DM" (float/double matrix: int32 rows,
//             int32 cols, rows·cols values row-major), "FV"/"DV" (int32 size, values),
//             "CM"/"CM2"/"CM3" (compressed_matrix.h). An int32 is written as the byte 4 then
//             4 little-endian bytes (WriteBasicType).
//   text      OBJECT = " [ 1 2 3 ]\n" for a vector, " [\n  1 2 \n  3 4 ]\n" for a matrix.
//   scp line  "KEY RXFILENAME", where RXFILENAME is "path" (object at the start of the file) or
//             "path:OFFSET" (byte offset of the object, i.e. of its "\0B", inside an archive).
// Specifiers: rspecifiers "ark:F", "scp:F" with Kaldi's ignorable options (b, t, o, no, s, ns,
// cs, ncs, bg; p is rejected); wspecifiers "ark:F", "ark,t:F", "ark,scp:A,S", "ark,scp,t:A,S"
// (b, t, f, nf allowed). F may be "-" for stdin/stdout. Pipes ("cmd |") and row ranges
// ("F:12[0:9]") are not supported and give a DataError.
// All format errors are DataError naming the file, the byte offset and, where known, the key.
#pragma once

#include <cstdint>
#include <cstdio>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "asvcpp/base/matrix.h"
#include "asvcpp/features/compressed_matrix.h"

namespace asv::fs {
class ScopedTempFile;
}

namespace asv::features {

/// One object read from a Kaldi stream. Binary objects keep their type; compressed matrices
/// are decoded to float. Text objects carry no type: they are stored in double, as a vector
/// when written on one line (" [ 1 2 ]"), as a matrix otherwise.
class KaldiObject {
 public:
  using Value = std::variant<Matrix, MatrixD, std::vector<float>, std::vector<double>>;

  KaldiObject() = default;
  KaldiObject(Value value, bool from_text) : value_(std::move(value)), from_text_(from_text) {}

  const Value& value() const noexcept { return value_; }
  bool is_matrix() const noexcept { return value_.index() <= 1; }
  /// True for text-mode objects (type unknown, stored in double).
  bool from_text() const noexcept { return from_text_; }

  /// As a float matrix [rows, cols] (double values are rounded). A text vector converts to
  /// [1, n]. Throws DataError (prefixed by `what`) for a binary vector.
  Matrix ToMatrix(const std::string& what = "object") const;
  MatrixD ToMatrixD(const std::string& what = "object") const;
  /// As a float vector. A text matrix with at most one row converts. Throws DataError for a
  /// binary matrix or a text matrix with several rows.
  std::vector<float> ToVector(const std::string& what = "object") const;
  std::vector<double> ToVectorD(const std::string& what = "object") const;

 private:
  Value value_;
  bool from_text_ = false;
};

/// Reads one object at the current position of `is` (binary "\0B" header or text).
/// `where` (e.g. "feats.ark:1234 (utt 'a')") prefixes error messages.
KaldiObject ReadKaldiObject(std::istream& is, const std::string& where);

/// Writes `value` in Kaldi's binary (with the "\0B" header) or text form.
void WriteKaldiObject(std::ostream& os, bool binary, const Matrix& value);
void WriteKaldiObject(std::ostream& os, bool binary, const MatrixD& value);
void WriteKaldiObject(std::ostream& os, bool binary, const std::vector<float>& value);
void WriteKaldiObject(std::ostream& os, bool binary, const std::vector<double>& value);
/// Binary only ("\0B" + CompressedMatrix::ToBytes); in text mode Kaldi writes the decoded matrix.
void WriteKaldiObject(std::ostream& os, bool binary, const CompressedMatrix& value);

/// Reads the object named by an rxfilename: "path", "path:OFFSET" or "-" (stdin).
/// Throws DataError naming the path and offset when the file is missing, the offset is past
/// the end or the data is malformed.
KaldiObject ReadKaldiObject(const std::string& rxfilename);
/// ReadKaldiObject(rxfilename).ToMatrix().
Matrix ReadKaldiMatrix(const std::string& rxfilename);
/// ReadKaldiObject(rxfilename).ToVector().
std::vector<float> ReadKaldiVector(const std::string& rxfilename);

/// The (key, rxfilename) lines of an scp file, in file order. Throws DataError "path:line"
/// for an empty line, a line without both fields, or a line over 1 MiB (text::CheckLineLength).
std::vector<std::pair<std::string, std::string>> ReadScpFile(const std::string& path);

/// Reads a table in order: every entry of an archive, or every line of a script file
/// (each object loaded from its rxfilename). Usage:
///   for (TableReader r("scp:feats.scp"); r.Next();) use(r.key(), r.value().ToMatrix());
class TableReader {
 public:
  /// Opens the table. Throws DataError for a malformed rspecifier or a missing file.
  explicit TableReader(const std::string& rspecifier);
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  /// Advances to the next entry; false at the end of the table. Throws DataError for
  /// malformed or truncated data, naming the file, byte offset and key.
  bool Next();
  const std::string& key() const noexcept { return key_; }
  const KaldiObject& value() const noexcept { return value_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string key_;
  KaldiObject value_;
};

/// Writes an archive, optionally with its scp, for wspecifiers "ark[,t]:A" and
/// "ark,scp[,t]:A,S". Files are written under temporary names ("A.tmp.<pid>") and renamed by
/// Close(), archive first, then the script; a writer destroyed without Close() (e.g. by an
/// exception) removes its temporary files, so a partial table is never presented as complete.
/// Temporary archives of A left by killed processes are removed when the writer opens, and an
/// interrupted asvrun removes its own (asvcpp/base/temp_files.h).
/// "-" writes to stdout directly (binary unless ",t"). A symbolic link is followed (the file it
/// points at is replaced, the link stays); a device or FIFO is written in place; a directory is
/// refused (fs::ResolveOutput).
class TableWriter {
 public:
  /// Throws DataError for a malformed or unsupported wspecifier (scp-only writing,
  /// "ark,scp:-,..." to stdout) or when a temporary file cannot be created.
  explicit TableWriter(const std::string& wspecifier);
  ~TableWriter();
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  /// Appends one entry. `key` must be non-empty without whitespace (DataError otherwise).
  void Write(const std::string& key, const Matrix& value);
  void Write(const std::string& key, const MatrixD& value);
  void Write(const std::string& key, const std::vector<float>& value);
  void Write(const std::string& key, const std::vector<double>& value);
  /// Compresses `value` (CompressedMatrix::Compress) and writes it; in text mode the
  /// decompressed matrix is written, as Kaldi does.
  void WriteCompressed(const std::string& key, const Matrix& value,
                       CompressionMethod method = CompressionMethod::kAutomatic);

  /// Flushes, syncs and renames the files into place. Throws DataError on write errors (the
  /// temporary files are then removed). Idempotent.
  void Close();

  /// The files this writer writes, as named in the wspecifier (the archive unless "-", then the
  /// script file if any), for checking that no input is among them.
  std::vector<std::string> Files() const;

 private:
  template <class T>
  void WriteEntry(const std::string& key, const T& value);

  std::string archive_path_;
  std::string script_path_;
  std::string archive_target_;  // archive_path_ with its links resolved: what the rename replaces
  std::string archive_tmp_;
  std::unique_ptr<fs::ScopedTempFile> archive_tmp_guard_;  // registered for removal on interruption
  bool binary_ = true;
  bool to_stdout_ = false;
  bool to_stream_ = false;  // a device or FIFO, written in place
  bool closed_ = false;
  std::FILE* file_ = nullptr;
  std::int64_t offset_ = 0;
  std::string script_;
};

}  // namespace asv::features

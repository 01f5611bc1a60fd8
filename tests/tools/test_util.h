// Helpers for tests that run asvrun as a subprocess in a scratch folder.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "tests/build_paths.h"

namespace asv::testing {

/// A fresh, empty folder under the system temp folder, removed on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("asv_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  /// Writes `text` to `name` inside the folder and returns the full path.
  std::filesystem::path Write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

struct CommandResult {
  int status = -1;  ///< Exit status (128 + signal when killed).
  std::string out;
  std::string err;
};

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string Slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Non-empty lines of `file` (0 when it cannot be read).
inline std::size_t CountLines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

/// True when `tool` is on the PATH.
inline bool HaveTool(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

/// A new empty file under the system temp folder (mkstemp), for one command's captured output.
inline std::filesystem::path NewCaptureFile(const char* stream) {
  std::string name = (std::filesystem::temp_directory_path() / ("asv_cmd_" + std::string(stream) + "_XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw std::runtime_error("cannot make a temporary file like " + name);
  ::close(fd);
  return name;
}

/// Runs `args` (args[0] is the program) in folder `cwd`, capturing stdout and stderr. The output
/// goes to files of its own under the system temp folder, so that tests running at once in the
/// same `cwd` never read each other's output.
inline CommandResult RunCommand(const std::vector<std::string>& args, const std::filesystem::path& cwd) {
  const auto out = NewCaptureFile("stdout");
  const auto err = NewCaptureFile("stderr");
  std::string command = "cd " + ShellQuote(cwd.string()) + " &&";
  for (const auto& a : args) command += " " + ShellQuote(a);
  command += " >" + ShellQuote(out.string()) + " 2>" + ShellQuote(err.string()) + " </dev/null";
  const int raw = std::system(command.c_str());
  CommandResult result;
  if (WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw)) result.status = 128 + WTERMSIG(raw);
  result.out = Slurp(out);
  result.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return result;
}

/// Runs `args` with the first python3 that imports the modules the script needs (PATH's python3,
/// then Debian's /usr/bin/python3, where tools/setup.sh installs python3-torch and python3-yaml);
/// nullopt when neither does (a ModuleNotFoundError, or no python3).
inline std::optional<CommandResult> RunTorchPython(std::vector<std::string> args, const std::filesystem::path& cwd) {
  for (const std::string python : {"python3", "/usr/bin/python3"}) {
    args.insert(args.begin(), python);
    auto r = RunCommand(args, cwd);
    args.erase(args.begin());
    if (r.err.find("ModuleNotFoundError") == std::string::npos && r.status != 127) return r;
  }
  return std::nullopt;
}

/// The python of tools/setup.sh's ONNX Runtime environment (tools/build_common.sh names it), or ""
/// when it is not installed.
inline std::string OnnxRuntimePython() {
  const auto r = RunCommand(
      {"bash", "-c", "source tools/build_common.sh && printf %s \"$asv_onnxruntime_venv/bin/python\""},
      ASV_SOURCE_DIR);
  if (r.status != 0 || !std::filesystem::exists(r.out)) return "";
  return RunCommand({r.out, "-c", "import onnxruntime"}, ASV_SOURCE_DIR).status == 0 ? r.out : "";
}

/// Runs the audio-in ONNX graph `graph` (a path relative to `folder`, or absolute) on the WAV file
/// `wav` in ONNX Runtime (tests/asvcpp/deploy/run_onnx.py under OnnxRuntimePython()) and returns
/// its embedding: `dim` float32 values. Throws std::runtime_error saying what failed: no ONNX
/// Runtime (tools/setup.sh installs it), run_onnx.py's exit status and stderr, an output of
/// another size.
inline std::vector<float> RunAudioOnnxGraph(const std::filesystem::path& folder, const std::string& graph,
                                            const std::string& wav, std::int64_t dim) {
  const std::string python = OnnxRuntimePython();
  if (python.empty()) throw std::runtime_error("no ONNX Runtime: run tools/setup.sh");
  const auto output = folder / "onnx_out.f32";
  std::ofstream(folder / "onnx_spec.json") << "{\"input\": \"waveform\", \"runs\": [{\"wav\": \"" << wav
                                           << "\", \"output\": \"" << output.string() << "\"}]}";
  const auto ran = RunCommand(
      {python, std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/deploy/run_onnx.py", graph, "onnx_spec.json"}, folder);
  if (ran.status != 0) {
    throw std::runtime_error("run_onnx.py exited " + std::to_string(ran.status) + ": " + ran.err);
  }
  const std::string bytes = Slurp(output);
  if (bytes.size() != static_cast<std::size_t>(dim) * sizeof(float)) {
    throw std::runtime_error("the ONNX graph gave " + std::to_string(bytes.size()) + " bytes, not " +
                             std::to_string(dim) + " float32 values");
  }
  std::vector<float> embedding(static_cast<std::size_t>(dim));
  std::memcpy(embedding.data(), bytes.data(), bytes.size());
  return embedding;
}

/// True when tools/make_demo_corpus.py can run: espeak-ng, ffmpeg and python3 are on the PATH
/// (tools/setup.sh installs them).
inline bool HaveDemoCorpusTools() { return HaveTool("espeak-ng") && HaveTool("ffmpeg") && HaveTool("python3"); }

/// Makes the tiny demo corpus (`tools/make_demo_corpus.py --small`) in `folder`/corpus.
inline CommandResult MakeTinyCorpus(const std::filesystem::path& folder) {
  return RunCommand(
      {"python3", std::string(ASV_SOURCE_DIR) + "/tools/make_demo_corpus.py", "--small", "--out", "corpus"}, folder);
}

/// The tiny demo corpus shared by the tests of this build: BinaryDir()/test_data/tiny_corpus/corpus,
/// made by MakeTinyCorpus once, under a lock, and made again only when the generator changed.
/// ctest's fixture `tiny_corpus` (tests/tools/CMakeLists.txt) makes it before the tests that use
/// it start; a test run on its own makes it itself. Tests only read it. Throws std::runtime_error
/// with the generator's output when it cannot be made.
inline std::filesystem::path SharedTinyCorpus() {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(ASV_BINARY_DIR) / "test_data/tiny_corpus";
  const fs::path generator = fs::path(ASV_SOURCE_DIR) / "tools/make_demo_corpus.py";
  fs::create_directories(root);
  const int lock = ::open((root / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + (root / "lock").string());
  const std::string stamp = std::to_string(fs::last_write_time(generator).time_since_epoch().count()) + " " +
                            std::to_string(fs::file_size(generator)) + "\n";
  std::string error;
  if (Slurp(root / "ready") != stamp) {
    fs::remove(root / "ready");
    fs::remove_all(root / "corpus");
    const auto made = MakeTinyCorpus(root);
    if (made.status == 0) {
      std::ofstream(root / "ready") << stamp;
    } else {
      error = "make_demo_corpus.py --small failed (" + std::to_string(made.status) + "): " + made.out + made.err;
    }
  }
  ::close(lock);  // Also releases the lock.
  if (!error.empty()) throw std::runtime_error(error);
  return root / "corpus";
}

/// Links the shared tiny corpus (SharedTinyCorpus) into `folder` as `folder`/corpus, so that a
/// test's configs name it as if the test had made it there. Status 0, or 1 with the reason in err.
inline CommandResult LinkTinyCorpus(const std::filesystem::path& folder) {
  CommandResult result;
  try {
    std::filesystem::create_directory_symlink(SharedTinyCorpus(), folder / "corpus");
    result.status = 0;
  } catch (const std::exception& e) {
    result.status = 1;
    result.err = e.what();
  }
  return result;
}

}  // namespace asv::testing

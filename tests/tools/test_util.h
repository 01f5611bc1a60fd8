// Helpers for tests that run asvrun as a subprocess in a scratch folder.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

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

/// Runs `args` (args[0] is the program) in folder `cwd`, capturing stdout and stderr.
inline CommandResult RunCommand(const std::vector<std::string>& args, const std::filesystem::path& cwd) {
  const auto out = cwd / ".cmd_stdout";
  const auto err = cwd / ".cmd_stderr";
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

/// True when tools/make_demo_corpus.py can run: espeak-ng, ffmpeg and python3 are on the PATH
/// (tools/setup.sh installs them).
inline bool HaveDemoCorpusTools() { return HaveTool("espeak-ng") && HaveTool("ffmpeg") && HaveTool("python3"); }

#ifdef ASV_SOURCE_DIR
/// Makes the tiny demo corpus (`tools/make_demo_corpus.py --small`) in `folder`/corpus.
inline CommandResult MakeTinyCorpus(const std::filesystem::path& folder) {
  return RunCommand({"python3", std::string(ASV_SOURCE_DIR) + "/tools/make_demo_corpus.py", "--small", "--out", "corpus"},
                    folder);
}
#endif

}  // namespace asv::testing

#include "asvcpp/data/sitw.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/table_text.h"
#include "asvcpp/data/trial_list.h"

namespace asv::data {
namespace {

namespace stdfs = std::filesystem;

// The fields of every non-blank line of `path`, with its line number (at least one line).
std::vector<std::pair<int, std::vector<std::string>>> ReadFields(const stdfs::path& path) {
  std::error_code ec;
  if (!stdfs::is_regular_file(path, ec)) throw DataError(fmt::format("{}: no such list", path.string()));
  std::vector<std::pair<int, std::vector<std::string>>> lines;
  table_text::ForEachFieldLine(path, [&](int line, const std::vector<std::string_view>& fields) {
    lines.emplace_back(line, std::vector<std::string>(fields.begin(), fields.end()));
    return true;
  });
  if (lines.empty()) throw DataError(fmt::format("{}: empty list", path.string()));
  return lines;
}

// "audio/<file>" -> "<file>".
std::string AudioFile(const std::string& field, const stdfs::path& path, int line) {
  constexpr std::string_view kPrefix = "audio/";
  if (field.size() <= kPrefix.size() || field.compare(0, kPrefix.size(), kPrefix) != 0 ||
      field.find('/', kPrefix.size()) != std::string::npos) {
    throw DataError(fmt::format("{}:{}: '{}' is not a file of the part's audio folder (audio/<file>)",
                                path.string(), line, field));
  }
  return field.substr(kPrefix.size());
}

}  // namespace

PreparedDataset PrepareSitwPart(const stdfs::path& corpus, const std::string& part, const stdfs::path& list_folder) {
  const stdfs::path root = corpus / part;
  const stdfs::path audio = root / "audio";
  // Model -> enrollment file.
  const stdfs::path enroll_path = root / "lists" / "enroll-core.lst";
  std::map<std::string, std::string> enrollment;
  std::map<std::string, int> enrolled_at;
  std::set<std::string> files;
  for (const auto& [line, fields] : ReadFields(enroll_path)) {
    if (fields.size() != 2) {
      throw DataError(fmt::format("{}:{}: expected '<model> audio/<file>', got {} field{}", enroll_path.string(), line,
                                  fields.size(), fields.size() == 1 ? "" : "s"));
    }
    const auto [it, fresh] = enrolled_at.emplace(fields[0], line);
    if (!fresh) {
      throw DataError(fmt::format("{}:{}: model '{}' is enrolled again (first on line {})", enroll_path.string(), line,
                                  fields[0], it->second));
    }
    enrollment[fields[0]] = AudioFile(fields[1], enroll_path, line);
    files.insert(enrollment[fields[0]]);
  }

  PreparedDataset result;
  result.name = part == "eval" ? "sitw" : "sitw_" + part;
  result.list_folder = list_folder;
  std::vector<std::pair<std::string, TrialList>> lists;
  for (const auto& [key_name, out_name] :
       {std::pair<std::string, std::string>{"core-core.lst", kSitwCoreCore}, {"core-multi.lst", kSitwCoreMulti}}) {
    const stdfs::path key_path = root / "keys" / key_name;
    TrialList list;
    list.source = key_path;
    for (const auto& [line, fields] : ReadFields(key_path)) {
      if (fields.size() != 3) {
        throw DataError(fmt::format("{}:{}: expected '<model> audio/<file> tgt|imp', got {} field{}", key_path.string(),
                                    line, fields.size(), fields.size() == 1 ? "" : "s"));
      }
      const auto enrolled = enrollment.find(fields[0]);
      if (enrolled == enrollment.end()) {
        throw DataError(fmt::format("{}:{}: model '{}' has no enrollment file in {}", key_path.string(), line,
                                    fields[0], enroll_path.string()));
      }
      if (fields[2] != "tgt" && fields[2] != "imp") {
        throw DataError(
            fmt::format("{}:{}: label '{}' is neither 'tgt' nor 'imp'", key_path.string(), line, fields[2]));
      }
      const std::string test = AudioFile(fields[1], key_path, line);
      files.insert(test);
      list.trials.push_back({enrolled->second, test, fields[2] == "tgt" ? "target" : "nontarget", line});
    }
    RequireBothClasses(list);
    result.trials += list.trials.size();
    lists.emplace_back(out_name, std::move(list));
  }

  DataDir dir;
  for (const auto& file : files) {
    const stdfs::path path = audio / file;
    std::error_code ec;
    if (!stdfs::is_regular_file(path, ec)) {
      throw DataError(fmt::format("{}: no such audio file (named by {} or the keys of {})", path.string(),
                                  enroll_path.string(), (root / "keys").string()));
    }
    dir.wav_scp[file] = stdfs::absolute(path).lexically_normal().string();
    dir.utt2spk[file] = file;
  }
  dir.Save(list_folder);
  for (const auto& [name, list] : lists) {
    WriteTrialList(list_folder / name, list);
    result.trial_lists.push_back(name);
  }
  result.utterances = files.size();
  result.speakers = files.size();
  ASV_LOG(Info, "{}: {} utterances, {} trial lists with {} trials -> {}", result.name, result.utterances,
          result.trial_lists.size(), result.trials, list_folder.string());
  return result;
}

}  // namespace asv::data

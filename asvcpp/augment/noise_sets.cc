#include "asvcpp/augment/noise_sets.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::augment {
namespace {

namespace stdfs = std::filesystem;

std::vector<Recording> ScanSet(const stdfs::path& folder) {
  std::error_code ec;
  if (!stdfs::is_directory(folder, ec)) {
    throw DataError(fmt::format("{}: MUSAN folder missing (paths.musan_folder must be the root of the MUSAN corpus, "
                                "with music/, speech/ and noise/; https://www.openslr.org/17/)",
                                folder.string()));
  }
  std::map<std::string, stdfs::path> by_id;
  for (auto it = stdfs::recursive_directory_iterator(folder, stdfs::directory_options::follow_directory_symlink, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    const stdfs::path& p = it->path();
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".wav" || !it->is_regular_file()) continue;
    const std::string id = p.stem().string();
    const auto [pos, inserted] = by_id.emplace(id, p);
    if (!inserted) {
      throw DataError(fmt::format("{} and {}: two MUSAN recordings named {}", pos->second.string(), p.string(), id));
    }
  }
  if (ec) throw DataError(fmt::format("{}: cannot list: {}", folder.string(), ec.message()));
  if (by_id.empty()) throw DataError(fmt::format("{}: no .wav file in this MUSAN folder", folder.string()));
  std::vector<Recording> out;
  out.reserve(by_id.size());
  for (auto& [id, path] : by_id) out.push_back({id, path});
  return out;
}

}  // namespace

MusanSets ScanMusan(const stdfs::path& musan_root) {
  std::error_code ec;
  if (!stdfs::is_directory(musan_root, ec)) {
    throw DataError(fmt::format("{}: paths.musan_folder is not a folder (the root of the MUSAN corpus, "
                                "https://www.openslr.org/17/)",
                                musan_root.string()));
  }
  MusanSets sets;
  sets.music = ScanSet(musan_root / "music");
  sets.speech = ScanSet(musan_root / "speech");
  sets.noise = ScanSet(musan_root / "noise");
  return sets;
}

std::vector<Rir> ReadRirList(const stdfs::path& list, const stdfs::path& rirs_root) {
  std::ifstream in(list);
  if (!in) throw DataError(fmt::format("{}: cannot open the RIR list", list.string()));
  std::vector<Rir> rirs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    if (tokens.empty()) continue;
    Rir rir;
    std::string path;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].rfind("--", 0) == 0) {
        if (i + 1 >= tokens.size()) {
          throw DataError(fmt::format("{}:{}: option {} has no value", list.string(), number, tokens[i]));
        }
        if (tokens[i] == "--rir-id") rir.id = tokens[i + 1];
        if (tokens[i] == "--room-id") rir.room_id = tokens[i + 1];
        ++i;
      } else if (path.empty()) {
        path = tokens[i];
      } else {
        throw DataError(fmt::format("{}:{}: more than one path: {} and {}", list.string(), number, path, tokens[i]));
      }
    }
    if (rir.id.empty()) throw DataError(fmt::format("{}:{}: no --rir-id", list.string(), number));
    if (path.empty()) throw DataError(fmt::format("{}:{}: no RIR file", list.string(), number));
    stdfs::path p(path);
    if (p.is_relative()) {
      const std::string prefix = "RIRS_NOISES/";
      p = path.rfind(prefix, 0) == 0 ? rirs_root / path.substr(prefix.size()) : rirs_root.parent_path() / p;
    }
    rir.path = p;
    rirs.push_back(std::move(rir));
  }
  if (rirs.empty()) throw DataError(fmt::format("{}: the RIR list is empty", list.string()));
  return rirs;
}

std::vector<RirSet> SimulatedRoomRirs(const stdfs::path& rirs_root) {
  std::vector<RirSet> sets;
  for (const char* room : {"smallroom", "mediumroom"}) {
    const stdfs::path list = rirs_root / "simulated_rirs" / room / "rir_list";
    std::error_code ec;
    if (!stdfs::is_regular_file(list, ec)) {
      throw DataError(fmt::format("{}: missing; paths.rirs_folder must be the unpacked RIRS_NOISES folder of "
                                  "https://www.openslr.org/28/ (rirs_noises.zip)",
                                  list.string()));
    }
    sets.push_back({room, 0.5, ReadRirList(list, rirs_root)});
  }
  return sets;
}

}  // namespace asv::augment

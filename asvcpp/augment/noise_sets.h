// The recordings that augmentation mixes into speech: MUSAN's music, speech and noise sets and
// the simulated room impulse responses of RIRS_NOISES (OpenSLR 28), found on disk as Kaldi's
// steps/data/make_musan.py and steps/data/reverberate_data_dir.py find them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace asv::augment {

/// One recording: its id (the file name without extension, as make_musan.py names it) and path.
struct Recording {
  std::string id;
  std::filesystem::path path;
};

/// MUSAN's three sets, each sorted by id.
struct MusanSets {
  std::vector<Recording> music;   ///< musan/music/**.wav (all of it: make_musan.py --use-vocals true)
  std::vector<Recording> speech;  ///< musan/speech/**.wav (babble)
  std::vector<Recording> noise;   ///< musan/noise/**.wav (foreground noises)
};

/// Finds every .wav file under `<musan_root>/music`, `/speech` and `/noise` (any depth; MUSAN
/// ships e.g. music/fma/music-fma-0000.wav). Throws DataError naming the folder when
/// `musan_root` or one of the three folders is missing or holds no .wav file, or when two files of
/// a set have the same name (their ids would collide).
MusanSets ScanMusan(const std::filesystem::path& musan_root);

/// One room impulse response of a rir_list.
struct Rir {
  std::string id;       ///< --rir-id
  std::string room_id;  ///< --room-id
  std::filesystem::path path;
};

/// A set of RIRs drawn with a probability (reverberate_data_dir.py --rir-set-parameters
/// "0.5, RIRS_NOISES/simulated_rirs/smallroom/rir_list").
struct RirSet {
  std::string name;          ///< e.g. "smallroom"
  double probability = 0.0;  ///< of drawing an RIR of this set
  std::vector<Rir> rirs;
};

/// Reads a Kaldi rir_list: lines `--rir-id ID --room-id ROOM PATH` (other `--option value` pairs
/// are ignored; blank lines skipped). A relative PATH that begins with "RIRS_NOISES/" is resolved
/// under `rirs_root` (the unpacked RIRS_NOISES folder, wherever it is), other relative paths
/// against `rirs_root`'s parent folder (where Kaldi's recipes keep RIRS_NOISES). Throws DataError
/// naming file:line for a line without a path or a --rir-id, and for a list with no RIR.
std::vector<Rir> ReadRirList(const std::filesystem::path& list, const std::filesystem::path& rirs_root);

/// The RIR sets of Kaldi's VoxCeleb recipe (egs/voxceleb/v2/run.sh): simulated_rirs/smallroom and
/// simulated_rirs/mediumroom, probability 0.5 each, read from `rirs_root` (the RIRS_NOISES
/// folder). Throws DataError naming the missing rir_list and saying where to get the archive.
std::vector<RirSet> SimulatedRoomRirs(const std::filesystem::path& rirs_root);

}  // namespace asv::augment

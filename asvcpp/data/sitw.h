// Speakers in the Wild (SITW; McLaren et al., Interspeech 2016) from the corpus's own layout,
// as ASVtorch's asvtorch/recipes/sitw/data_preparation.py (prepare_sitw) prepares it:
//
//   <sitw>/<part>/lists/enroll-core.lst   "<model> audio/<file>.flac": the enrollment file of each model
//   <sitw>/<part>/keys/core-core.lst      "<model> audio/<file>.flac tgt|imp": the trials
//   <sitw>/<part>/keys/core-multi.lst     the same, test files with several speakers
//   <sitw>/<part>/audio/*.flac
//
// for part "eval" (ASVtorch's dataset `sitw`) and "dev". Every file of the enrollment list and
// the keys is an utterance whose id is its file name ("aahtm.flac") and which is its own
// speaker (SITW's keys name models, not speakers), so the lists are ASVtorch's.
#pragma once

#include <filesystem>
#include <string>

#include "asvcpp/data/voxceleb.h"

namespace asv::data {

/// Trial-list file names a prepared SITW part holds (ASVtorch's, for both parts).
inline constexpr const char* kSitwCoreCore = "sitw_trials_core_core.txt";
inline constexpr const char* kSitwCoreMulti = "sitw_trials_core_multi.txt";

/// Prepares part `part` ("eval" or "dev") of the SITW corpus at `corpus` into `list_folder`:
/// wav.scp (id -> absolute path of `<corpus>/<part>/audio/<file>`), utt2spk and spk2utt (each
/// utterance its own speaker), and the trial lists kSitwCoreCore and kSitwCoreMulti: "<enrollment
/// file id> <test file id> target|nontarget", each key line's model replaced by its enrollment
/// file, in key order. Atomic writes; re-running rewrites the same files.
/// Throws DataError: "file:line: ..." for a line without exactly the fields above, a path not of
/// the form audio/<file>, a label other than tgt/imp, a model enrolled twice or a key naming a
/// model without an enrollment file; naming the file for a missing or empty list, a key list
/// without both target and non-target trials, and an enrollment or test file missing from
/// `<corpus>/<part>/audio`.
PreparedDataset PrepareSitwPart(const std::filesystem::path& corpus, const std::string& part,
                                const std::filesystem::path& list_folder);

}  // namespace asv::data

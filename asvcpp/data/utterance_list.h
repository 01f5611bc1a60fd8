// Utterance lists and the selection helpers the recipes use to pick training, PLDA and trial
// data (ASVtorch's UtteranceList / KaldiUtteranceSelector, reference section 4.3).
//
// Every random choice takes an explicit seed and is reproducible across runs, platforms and
// standard libraries (random.h). ASVtorch sampled speakers from a Python set (hash-order
// dependent, a different "seed 0" PLDA subset every run); here the speakers are sorted first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "asvcpp/data/table.h"

namespace asv::data {

/// One utterance and its speaker.
struct Utterance {
  std::string id;
  std::string speaker;  ///< Equal to `id` for utterances without a known speaker (SITW style).

  bool operator==(const Utterance& o) const { return id == o.id && speaker == o.speaker; }
};

/// An ordered list of utterances with a name (the data set or selection it came from).
struct UtteranceList {
  std::string name;
  std::vector<Utterance> utterances;

  std::size_t size() const { return utterances.size(); }
  bool empty() const { return utterances.empty(); }
  /// The ids in list order.
  std::vector<std::string> Ids() const;
};

/// All utterances of a utt2spk table, sorted by id (ASVtorch's choose_all).
UtteranceList AllUtterances(const Table& utt2spk, std::string name);

/// The utterances named by `ids`, in that order, duplicates removed (e.g. TrialUtterances()).
/// Throws DataError naming `name` and up to 10 missing ids when some id is not in `utt2spk`.
UtteranceList ChooseUtterances(const Table& utt2spk, const std::vector<std::string>& ids,
                               std::string name);

/// Keeps the utterances with at least `min_frames` speech frames according to `speech_frames`
/// (e.g. VAD-selected frame counts), order kept. Throws DataError when an utterance has no
/// count (the list and the counts come from different data).
UtteranceList RemoveShortUtterances(const UtteranceList& list, const Counts& speech_frames,
                                    std::int64_t min_frames);

/// Keeps the utterances of speakers that have at least `min_utterances` utterances in `list`,
/// order kept.
UtteranceList RemoveSpeakersWithFewUtterances(const UtteranceList& list, std::size_t min_utterances);

/// Keeps the utterances of `n` speakers drawn without replacement from the sorted set of
/// speakers in `list` (SampleIndices with `seed`), order kept. n >= number of speakers keeps all.
UtteranceList SelectRandomSpeakers(const UtteranceList& list, std::size_t n, std::uint64_t seed);

/// Keeps `n` utterances drawn without replacement (SampleIndices over list positions with
/// `seed`), list order kept. n >= size keeps all.
UtteranceList ChooseRandomUtterances(const UtteranceList& list, std::size_t n, std::uint64_t seed);

/// Union by id: `a`, then the utterances of `b` not in `a`, order kept.
UtteranceList Combine(const UtteranceList& a, const UtteranceList& b, std::string name);

/// The utterances of `a` whose ids are not in `b`, order kept.
UtteranceList Subtract(const UtteranceList& a, const UtteranceList& b);

/// Distinct speakers, sorted.
std::vector<std::string> Speakers(const UtteranceList& list);

/// Speaker index of each utterance, speakers numbered 0, 1, ... by first appearance in the list
/// (ASVtorch's convert_labels_to_numeric). `speakers`, if given, receives index -> speaker id.
std::vector<std::int64_t> SpeakerLabels(const UtteranceList& list,
                                        std::vector<std::string>* speakers = nullptr);

}  // namespace asv::data

#include "asvcpp/data/utterance_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "asvcpp/base/error.h"
#include "asvcpp/data/random.h"

namespace asv::data {

std::vector<std::string> UtteranceList::Ids() const {
  std::vector<std::string> ids;
  ids.reserve(utterances.size());
  for (const Utterance& u : utterances) ids.push_back(u.id);
  return ids;
}

UtteranceList AllUtterances(const Table& utt2spk, std::string name) {
  UtteranceList list{std::move(name), {}};
  list.utterances.reserve(utt2spk.size());
  for (const auto& [utt, spk] : utt2spk) list.utterances.push_back({utt, spk});
  return list;
}

UtteranceList ChooseUtterances(const Table& utt2spk, const std::vector<std::string>& ids,
                               std::string name) {
  UtteranceList list{std::move(name), {}};
  std::unordered_set<std::string> seen;
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) continue;
    const auto it = utt2spk.find(id);
    if (it == utt2spk.end()) {
      missing.push_back(id);
      continue;
    }
    list.utterances.push_back({it->first, it->second});
  }
  if (!missing.empty()) {
    std::string names;
    for (std::size_t i = 0; i < missing.size() && i < 10; ++i) names += (i ? ", " : "") + missing[i];
    if (missing.size() > 10) names += ", ...";
    throw DataError(fmt::format("{}: {} requested utterance(s) not in the data set: {}", list.name,
                                missing.size(), names));
  }
  return list;
}

UtteranceList RemoveShortUtterances(const UtteranceList& list, const Counts& speech_frames,
                                    std::int64_t min_frames) {
  UtteranceList out{list.name, {}};
  for (const Utterance& u : list.utterances) {
    const auto it = speech_frames.find(u.id);
    if (it == speech_frames.end()) {
      throw DataError(fmt::format("{}: no speech frame count for utterance '{}'", list.name, u.id));
    }
    if (it->second >= min_frames) out.utterances.push_back(u);
  }
  return out;
}

UtteranceList RemoveSpeakersWithFewUtterances(const UtteranceList& list, std::size_t min_utterances) {
  std::unordered_map<std::string, std::size_t> count;
  for (const Utterance& u : list.utterances) ++count[u.speaker];
  UtteranceList out{list.name, {}};
  for (const Utterance& u : list.utterances) {
    if (count[u.speaker] >= min_utterances) out.utterances.push_back(u);
  }
  return out;
}

UtteranceList SelectRandomSpeakers(const UtteranceList& list, std::size_t n, std::uint64_t seed) {
  const std::vector<std::string> speakers = Speakers(list);
  std::unordered_set<std::string> chosen;
  for (const std::size_t i : SampleIndices(speakers.size(), n, seed)) chosen.insert(speakers[i]);
  UtteranceList out{list.name, {}};
  for (const Utterance& u : list.utterances) {
    if (chosen.count(u.speaker)) out.utterances.push_back(u);
  }
  return out;
}

UtteranceList ChooseRandomUtterances(const UtteranceList& list, std::size_t n, std::uint64_t seed) {
  UtteranceList out{list.name, {}};
  for (const std::size_t i : SampleIndices(list.size(), n, seed)) out.utterances.push_back(list.utterances[i]);
  return out;
}

UtteranceList Combine(const UtteranceList& a, const UtteranceList& b, std::string name) {
  UtteranceList out{std::move(name), a.utterances};
  std::unordered_set<std::string> seen;
  for (const Utterance& u : a.utterances) seen.insert(u.id);
  for (const Utterance& u : b.utterances) {
    if (seen.insert(u.id).second) out.utterances.push_back(u);
  }
  return out;
}

UtteranceList Subtract(const UtteranceList& a, const UtteranceList& b) {
  std::unordered_set<std::string> remove;
  for (const Utterance& u : b.utterances) remove.insert(u.id);
  UtteranceList out{a.name, {}};
  for (const Utterance& u : a.utterances) {
    if (!remove.count(u.id)) out.utterances.push_back(u);
  }
  return out;
}

std::vector<std::string> Speakers(const UtteranceList& list) {
  std::vector<std::string> speakers;
  speakers.reserve(list.size());
  for (const Utterance& u : list.utterances) speakers.push_back(u.speaker);
  std::sort(speakers.begin(), speakers.end());
  speakers.erase(std::unique(speakers.begin(), speakers.end()), speakers.end());
  return speakers;
}

std::vector<std::int64_t> SpeakerLabels(const UtteranceList& list, std::vector<std::string>* speakers) {
  std::unordered_map<std::string, std::int64_t> index;
  std::vector<std::int64_t> labels;
  labels.reserve(list.size());
  if (speakers) speakers->clear();
  for (const Utterance& u : list.utterances) {
    const auto [it, inserted] = index.emplace(u.speaker, static_cast<std::int64_t>(index.size()));
    if (inserted && speakers) speakers->push_back(u.speaker);
    labels.push_back(it->second);
  }
  return labels;
}

}  // namespace asv::data

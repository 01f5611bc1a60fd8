// The exclusions of the x-vector recipes' training and PLDA data: utterance-id prefixes (with
// augmented copies, whose ids extend the clean id) and a speaker list file.
#include "recipes/shared/xvector/data_selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "asvcpp/base/error.h"

namespace asv::recipes::xvector {
namespace {

namespace stdfs = std::filesystem;

TEST(DataSelectionTest, PrefixesAndSpeakersLeaveTheirUtterancesOut) {
  features::DatasetUtterances data;
  data.ids = {"id10001-vidA", "id10001-vidA-reverb", "id10001-vidB", "id10002-vidC", "id10003-vidD"};
  data.speakers = {"id10001", "id10001", "id10001", "id10002", "id10003"};
  for (const auto& id : data.ids) data.stored[id] = {id + ".ark:1", id + ".vad:1"};
  const auto kept = ExcludeUtterances(data, {"id10001-vidA"}, {"id10003"});
  EXPECT_EQ(kept.ids, (std::vector<std::string>{"id10001-vidB", "id10002-vidC"}));
  EXPECT_EQ(kept.speakers, (std::vector<std::string>{"id10001", "id10002"}));
  ASSERT_EQ(kept.stored.size(), 2u);
  EXPECT_EQ(kept.stored.at("id10002-vidC").feats, "id10002-vidC.ark:1");
  // Nothing to exclude: everything kept, in order.
  EXPECT_EQ(ExcludeUtterances(data, {}, {}).ids, data.ids);
}

TEST(DataSelectionTest, SpeakerListOneIdPerLine) {
  const stdfs::path dir = stdfs::temp_directory_path() / ("data_selection_test_" + std::to_string(::getpid()));
  stdfs::create_directories(dir);
  std::ofstream(dir / "good.txt") << "id10001\n\n  id10002  \nid10001\n";
  EXPECT_EQ(ReadSpeakerList(dir / "good.txt"), (std::set<std::string>{"id10001", "id10002"}));
  std::ofstream(dir / "bad.txt") << "id10001\nid10002 id10003\n";
  try {
    ReadSpeakerList(dir / "bad.txt");
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "bad.txt").string() + ":2: expected one speaker id per line, found 2 fields");
  }
  std::ofstream(dir / "empty.txt") << "\n";
  try {
    ReadSpeakerList(dir / "empty.txt");
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "empty.txt").string() + ": the speaker list is empty");
  }
  EXPECT_THROW(ReadSpeakerList(dir / "missing.txt"), DataError);
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::recipes::xvector

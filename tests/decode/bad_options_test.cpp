// Bad speculative-decoding options are clear errors at engine creation, never
// a crash: each names the key and what to do.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <string>

#include "tests/support/shared_model_engine.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

Status create(const std::string& decode, const std::string& model = "tok512-ar-1m.gguf") {
  return support::shared_model_engine(model, "[decode]\n" + decode).status();
}

TEST(SpeculativeOptions, DraftTokensOutOfRange) {
  EXPECT_THAT(create("proposer = \"ngram\"\ndraft_tokens = 0\n").message(),
              HasSubstr("decode.draft_tokens: 0 is out of range; allowed: [1, 256]"));
  EXPECT_THAT(create("proposer = \"self_draft\"\ndraft_tokens = 1000000000\n").message(),
              HasSubstr("decode.draft_tokens: 1000000000 is out of range"));
}

TEST(SpeculativeOptions, MoreDraftTokensThanTheBatchHolds) {
  const Status st = create("proposer = \"self_draft\"\ndraft_tokens = 40\nmax_batch = 32\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("more than decode.max_batch = 32"));
}

TEST(SpeculativeOptions, ATreeLargerThanTheBatch) {
  const Status st = create("proposer = \"tree\"\ntree_tokens = 300\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("decode.tree_tokens = 300 needs 301 tokens"));
  EXPECT_THAT(st.message(), HasSubstr("raise decode.max_batch"));
}

TEST(SpeculativeOptions, MissingDraftModel) {
  EXPECT_THAT(create("proposer = \"ar_draft\"\n").message(),
              HasSubstr("decode.draft_model is empty"));
  const Status st = create("proposer = \"ar_draft\"\ndraft_model = \"no-such-draft.gguf\"\n");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("decode.draft_model"));
  EXPECT_THAT(st.message(), HasSubstr("no-such-draft.gguf"));
}

TEST(SpeculativeOptions, DraftModelOfAnotherVocabulary) {
  // aidreams260K has 512 tokens too, but other pieces.
  const Status st = create(
      "proposer = \"ar_draft\"\ndraft_model = \"aidreams260K.bin\"\n"
      "draft_tokenizer = \"aidreams260K_tok512.bin\"\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("aidreams260K.bin and target model"));
  EXPECT_THAT(st.message(), HasSubstr("differ at token"));
  EXPECT_THAT(st.message(), HasSubstr("must share the target's tokenizer"));
}

TEST(SpeculativeOptions, DraftLayersBeyondTheModel) {
  const Status st = create("proposer = \"self_draft\"\ndraft_layers = 6\n");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("decode.draft_layers = 6, but model"));
  EXPECT_THAT(st.message(), HasSubstr("has 6 layers; self-drafting runs fewer"));
}

TEST(SpeculativeOptions, TreeOverAnUnknownOrUnfitDrafter) {
  EXPECT_THAT(create("proposer = \"tree\"\ntree_drafter = \"selfdraft\"\n").message(),
              HasSubstr("no proposer plugin 'selfdraft'; did you mean 'self_draft'"));
  EXPECT_THAT(create("proposer = \"tree\"\ntree_drafter = \"none\"\n").message(),
              HasSubstr("proposer 'none' cannot expand a tree"));
  // The drafter's own keys are checked too.
  EXPECT_THAT(create("proposer = \"tree\"\ntree_drafter = \"ngram\"\nngram_n = 0\n").message(),
              HasSubstr("decode.ngram_n: 0 is out of range"));
  EXPECT_THAT(create("proposer = \"tree\"\ndraft_modle = \"x\"\n").message(),
              HasSubstr("unknown key 'decode.draft_modle'"));
}

}  // namespace
}  // namespace tessera

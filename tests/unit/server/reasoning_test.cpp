// Splitting <think> blocks off chat answers: known answers (thoughts, empty thoughts, no
// thoughts, a block cut short, a prompt that opened the block, tags later in the text), and
// the streaming property: however the text is cut into pieces, the pieces' deltas add up to
// the split of the whole text.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/reasoning.h"

namespace gufo::server {
namespace {

struct Case {
  std::string text;
  bool prompt_opened;
  std::string reasoning;
  std::string content;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"<think>\nI should use ls.\n</think>\n\nUse ls -l.", false, "I should use ls.", "Use ls -l."},
      {"<think>\n\n</think>\n\nHello.", false, "", "Hello."},
      {"Hello <think>x</think> world", false, "", "Hello <think>x</think> world"},
      {"  \n<think>a</think>b", false, "a", "b"},
      {"<think>first\n\n  second\n</think>\n\nanswer\n\nwith </think> and <think> inside ", false, "first\n\n  second",
       "answer\n\nwith </think> and <think> inside "},
      {"<think>\ncut short by max_tokens  \n", false, "cut short by max_tokens", ""},
      {"<think>\ncut in the tag </thi", false, "cut in the tag </thi", ""},
      {"<thi", false, "", "<thi"},
      {"<think", false, "", "<think"},
      {"\n\n", false, "", "\n\n"},
      {"", false, "", ""},
      {"<|im_end|> is text here", false, "", "<|im_end|> is text here"},
      {"I reason.\n</think>\n\nThe answer.", true, "I reason.", "The answer."},
      {"still reasoning when cut", true, "still reasoning when cut", ""},
      {"\n</think>\n\nNo thoughts.", true, "", "No thoughts."},
      {"<tool_call>\n{\"name\": \"f\"}\n</tool_call>", false, "", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>"},
      {"<think>\nCall f.\n</think>\n\n<tool_call>\n{}\n</tool_call>", false, "Call f.",
       "<tool_call>\n{}\n</tool_call>"},
      {"<think>ünïcödé ✓</think>日本語", false, "ünïcödé ✓", "日本語"},
  };
  return all;
}

TEST(Reasoning, SplitsKnownAnswers) {
  for (const Case& c : cases()) {
    const ReasoningDelta d = split_reasoning(c.text, c.prompt_opened);
    EXPECT_EQ(d.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(d.content, c.content) << c.text;
  }
}

ReasoningDelta split_in_pieces(const std::string& text, bool prompt_opened, const std::vector<size_t>& cuts) {
  ReasoningSplitter splitter(prompt_opened);
  ReasoningDelta sum;
  size_t from = 0;
  for (size_t cut : cuts) {
    const ReasoningDelta d = splitter.feed(std::string_view(text).substr(from, cut - from));
    sum.reasoning += d.reasoning;
    sum.content += d.content;
    from = cut;
  }
  const ReasoningDelta d1 = splitter.feed(std::string_view(text).substr(from));
  const ReasoningDelta d2 = splitter.finish();
  sum.reasoning += d1.reasoning + d2.reasoning;
  sum.content += d1.content + d2.content;
  return sum;
}

TEST(Reasoning, StreamedPiecesAddUpToTheWholeSplit) {
  std::mt19937 rng(20261204);
  for (const Case& c : cases()) {
    for (size_t cut = 0; cut <= c.text.size(); ++cut) {  // every single cut
      const ReasoningDelta d = split_in_pieces(c.text, c.prompt_opened, {cut});
      EXPECT_EQ(d.reasoning, c.reasoning) << c.text << " cut at " << cut;
      EXPECT_EQ(d.content, c.content) << c.text << " cut at " << cut;
    }
    for (int trial = 0; trial < 50; ++trial) {  // byte by byte, and random pieces
      std::vector<size_t> cuts;
      for (size_t i = 1; i < c.text.size(); ++i) {
        if (trial == 0 || rng() % 3 == 0) cuts.push_back(i);
      }
      const ReasoningDelta d = split_in_pieces(c.text, c.prompt_opened, cuts);
      EXPECT_EQ(d.reasoning, c.reasoning) << c.text;
      EXPECT_EQ(d.content, c.content) << c.text;
    }
  }
}

TEST(Reasoning, SendsThoughtsAsTheyComeAndHoldsOnlyWhatIsUndecided) {
  ReasoningSplitter s;
  EXPECT_EQ(s.feed("<thi").reasoning, "");  // may still be the tag
  EXPECT_EQ(s.feed("nk>\nOne").reasoning, "One");
  EXPECT_EQ(s.feed(" two\n").reasoning, " two");  // the newline may end the thoughts
  EXPECT_EQ(s.feed("three</").reasoning, "\nthree");
  const ReasoningDelta end = s.feed("think>\n\nAnswer");
  EXPECT_EQ(end.reasoning, "");
  EXPECT_EQ(end.content, "Answer");
  EXPECT_EQ(s.feed(" more").content, " more");
  const ReasoningDelta rest = s.finish();
  EXPECT_EQ(rest.reasoning + rest.content, "");
}

TEST(Reasoning, LongWhitespaceRunsFedTokenByTokenKeepEveryByte) {
  // Held whitespace is remembered between pieces (not rescanned); the bytes must still all
  // come out in the right place: before <think>, inside the thoughts, and after a partial tag.
  const std::string run(5000, '\n');
  const std::string text = run + "<think>" + run + "a" + run + "b </th" + run + "</think>" + run + "c" + run;
  ReasoningSplitter s;
  ReasoningDelta sum;
  for (char c : text) {
    const ReasoningDelta d = s.feed(std::string_view(&c, 1));
    sum.reasoning += d.reasoning;
    sum.content += d.content;
  }
  const ReasoningDelta rest = s.finish();
  EXPECT_EQ(sum.reasoning + rest.reasoning, "a" + run + "b </th");
  EXPECT_EQ(sum.content + rest.content, "c" + run);
}

TEST(Reasoning, SeesWhetherThePromptOpenedTheBlock) {
  EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_opens_thinking("<think>"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_thinking(""));
}

TEST(Reasoning, FormatNamesAreLlamaCpps) {
  EXPECT_EQ(parse_reasoning_format("none"), false);
  EXPECT_EQ(parse_reasoning_format("deepseek"), true);
  EXPECT_EQ(parse_reasoning_format("auto"), true);
  EXPECT_EQ(parse_reasoning_format("hidden"), std::nullopt);
}

}  // namespace
}  // namespace gufo::server

// access_log_line: the fields a web-server access log has (address, request line, status,
// time) plus tokens when the request generated; a client's path cannot forge a second line.
#include <gtest/gtest.h>

#include "server/access_log.h"

namespace gufo::server {
namespace {

TEST(AccessLog, OneLineWithTokensWhenTheRequestGenerated) {
  const auto start = std::chrono::steady_clock::now();
  const AccessRecord generated{.start = start, .prompt_tokens = 31, .completion_tokens = 16};
  EXPECT_EQ(access_log_line("127.0.0.1", "POST", "/v1/chat/completions", 200, generated,
                            start + std::chrono::milliseconds(48)),
            "gufo serve: 127.0.0.1 \"POST /v1/chat/completions\" 200 31+16 tokens 48 ms\n");
  const AccessRecord plain{.start = start};
  EXPECT_EQ(access_log_line("", "GET", "/health", 200, plain, start + std::chrono::microseconds(300)),
            "gufo serve: - \"GET /health\" 200 0 ms\n");
  const AccessRecord refused{.start = start, .prompt_tokens = 7};  // cancelled before a token
  EXPECT_EQ(access_log_line("::1", "POST", "/v1/completions", 499, refused, start),
            "gufo serve: ::1 \"POST /v1/completions\" 499 7+0 tokens 0 ms\n");
}

TEST(AccessLog, ControlCharactersAndQuotesInTheRequestLineCannotForgeALine) {
  const AccessRecord r{.start = std::chrono::steady_clock::now()};
  const std::string line = access_log_line("10.0.0.1", "GET", "/x\n\"GET /admin\" 200\r\x7f", 404, r, r.start);
  EXPECT_EQ(line, "gufo serve: 10.0.0.1 \"GET /x??GET /admin? 200??\" 404 0 ms\n");
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  // httplib logs a refused request line with the method as the client sent it.
  EXPECT_EQ(access_log_line("10.0.0.1", "GE\x1b[2J\"T", "/", 400, r, r.start),
            "gufo serve: 10.0.0.1 \"GE?[2J?T /\" 400 0 ms\n");
}

}  // namespace
}  // namespace gufo::server

// The access log of `gufo serve`: one line per answered request on stderr, as web servers
// write them, with what an LLM server adds (prompt and completion tokens):
//   gufo serve: 127.0.0.1 "POST /v1/chat/completions" 200 31+16 tokens 48 ms
// Off with `gufo serve --log-disable`.
// Tested by tests/unit/server/access_log_test.cpp and tests/functional/lifecycle.test.mjs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gufo::server {

struct AccessRecord {
  std::chrono::steady_clock::time_point start{};
  int64_t prompt_tokens = -1;  // -1: the request generated nothing
  int64_t completion_tokens = -1;
  bool routed = false;  // set before routing, cleared by the logger
};

// NOTE(access-log): cpp-httplib serves a request, its streamed answer included, from first
// byte to last on one thread of its pool, so the record of the request being served lives in
// a thread_local: reset before routing, filled by the route, read by the logger after the
// last byte went out.
AccessRecord& current_access_record();

std::string access_log_line(const std::string& remote_addr, const std::string& method, const std::string& path,
                            int status, const AccessRecord& record, std::chrono::steady_clock::time_point end);

}  // namespace gufo::server

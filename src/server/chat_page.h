// The chat page that `gufo serve` answers GET / with: src/server/web/chat.html, built into the
// binary by src/server/web/embed_chat_page.cmake (chat_page.cpp in the build folder), with the
// hashes of its inline script and style for the Content-Security-Policy.
// Tested by tests/functional/chat_page.test.mjs (headless Chromium).
#pragma once

#include <string_view>

namespace gufo::server {

struct ChatPage {
  std::string_view html;           // the whole file, UTF-8
  std::string_view script_sha256;  // base64 SHA-256 of the text of its only <script> element
  std::string_view style_sha256;   // the same for its only <style> element
};

const ChatPage& chat_page();

}  // namespace gufo::server

# Turns the chat page (chat.html) into a C++ source at build time:
#   cmake -DINPUT=chat.html -DOUTPUT=chat_page.cpp -P embed_chat_page.cmake
# The bytes go into an array (no delimiter can clash with the file), and the text of its one
# <script> and one <style> element is hashed (SHA-256, base64) for the Content-Security-Policy
# that GET / sends (server/chat_page.h). src/server/CMakeLists.txt runs it when chat.html changes.
cmake_minimum_required(VERSION 3.25)
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DINPUT=chat.html -DOUTPUT=chat_page.cpp -P embed_chat_page.cmake")
endif()
file(READ "${INPUT}" html)
# NOTE(csp): a browser hashes an element's text after the HTML parser turned CRLF into LF, so
# a file with CR bytes would hash differently here than there, and its script would not run.
string(FIND "${html}" "\r" cr)
if(NOT cr EQUAL -1)
  message(FATAL_ERROR "${INPUT}: has a CR byte (at ${cr}); save it with LF line ends")
endif()

# The base64 of a hex string (RFC 4648 section 4, with padding).
function(hex_to_base64 hex out_var)
  set(alphabet "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
  string(LENGTH "${hex}" n_hex)
  set(result "")
  set(at 0)
  while(at LESS n_hex)
    string(SUBSTRING "${hex}" ${at} 6 group)  # up to 3 bytes
    string(LENGTH "${group}" n_group)
    set(padded "${group}")
    while(NOT padded MATCHES "^......$")
      string(APPEND padded "0")
    endwhile()
    math(EXPR value "0x${padded}")
    foreach(shift 18 12 6 0)
      math(EXPR index "(${value} >> ${shift}) & 63")
      string(SUBSTRING "${alphabet}" ${index} 1 digit)
      string(APPEND result "${digit}")
    endforeach()
    if(n_group EQUAL 2)
      string(REGEX REPLACE "..$" "==" result "${result}")
    elseif(n_group EQUAL 4)
      string(REGEX REPLACE ".$" "=" result "${result}")
    endif()
    math(EXPR at "${at} + 6")
  endwhile()
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

# The base64 SHA-256 of the text of the file's only <tag> element.
function(element_hash tag out_var)
  set(open "<${tag}>")
  set(close "</${tag}>")
  string(FIND "${html}" "${open}" begin)
  string(FIND "${html}" "${open}" last_begin REVERSE)
  string(FIND "${html}" "${close}" end)
  string(FIND "${html}" "${close}" last_end REVERSE)
  if(begin EQUAL -1 OR NOT begin EQUAL last_begin OR end EQUAL -1 OR NOT end EQUAL last_end OR end LESS begin)
    message(FATAL_ERROR "${INPUT}: needs exactly one '${open}' and one '${close}' (also not in comments), in that order")
  endif()
  string(LENGTH "${open}" n_open)
  math(EXPR text_begin "${begin} + ${n_open}")
  math(EXPR text_length "${end} - ${text_begin}")
  string(SUBSTRING "${html}" ${text_begin} ${text_length} text)
  string(SHA256 digest "${text}")
  hex_to_base64("${digest}" base64)
  set(${out_var} "${base64}" PARENT_SCOPE)
endfunction()

element_hash(script script_sha256)
element_hash(style style_sha256)

file(READ "${INPUT}" bytes HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${bytes}")
string(REPEAT "'[^']*'," 16 sixteen)  # CMake's regular expressions have no {16}
string(REGEX REPLACE "(${sixteen})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp" "// Generated from src/server/web/chat.html by src/server/web/embed_chat_page.cmake: do not edit.
#include \"server/chat_page.h\"

namespace gufo::server {

namespace {
constexpr char kHtml[] = {
    ${bytes}};
}  // namespace

const ChatPage& chat_page() {
  static const ChatPage page{.html = std::string_view(kHtml, sizeof(kHtml)),
                             .script_sha256 = \"${script_sha256}\",
                             .style_sha256 = \"${style_sha256}\"};
  return page;
}

}  // namespace gufo::server
")
# Only a changed source touches the output, so an unchanged page rebuilds nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

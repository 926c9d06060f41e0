// Ids that responses carry (chatcmpl-..., msg_..., resp_..., call_...): a prefix and random
// letters and digits, unique in practice and never reused across restarts.
#pragma once

#include <string>
#include <string_view>

namespace gufo::server {

std::string random_id(std::string_view prefix, size_t n_random = 24);

}  // namespace gufo::server

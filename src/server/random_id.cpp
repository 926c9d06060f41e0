// random_id (see random_id.h).
#include "server/random_id.h"

#include <random>

namespace gufo::server {

std::string random_id(std::string_view prefix, size_t n_random) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id(prefix);
  for (size_t i = 0; i < n_random; ++i) id += kAlnum[rng() % 62];
  return id;
}

}  // namespace gufo::server

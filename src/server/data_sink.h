// Writing an answer's bytes to cpp-httplib's sink: false when the client has gone.
#pragma once

#include <httplib.h>

#include <string>

namespace gufo::server {

inline bool write_all(httplib::DataSink& sink, const std::string& data) { return sink.write(data.data(), data.size()); }

}  // namespace gufo::server

// The listening socket of `gufo serve`, as cpp-httplib's defaults leave it, made right:
// - exclusive: httplib sets SO_REUSEPORT, which lets a second server bind a port that one is
//   already listening on, and the kernel then splits connections between the two. Only
//   SO_REUSEADDR is kept (a restart may bind over connections in TIME_WAIT);
// - a deep accept queue (see widen_listen_backlog);
// - why a bind failed, in the kernel's words ("Address already in use");
// - at shutdown, idle kept-alive connections end now, not at their timeout.
// Tested by tests/functional/lifecycle.test.mjs (a second server on a taken port).
#pragma once

#include <string>

namespace gufo::server {

// httplib's SocketOptions hook: SO_REUSEADDR, and not SO_REUSEPORT.
void exclusive_socket_options(int fd);

// Raises the accept backlog of this process's listening socket on `port` to SOMAXCONN.
void widen_listen_backlog(int port);

// Shuts the reading side of every connection this process accepted on `port`, so that
// threads waiting for a kept-alive connection's next request (up to the keep-alive timeout)
// see its end at once; answers being written are not affected. `writes_too`: the writing
// side as well, for answers that a client stopped reading.
void shut_connections(int port, bool writes_too);

// Binds a throw-away socket to host:port the way httplib does, to say why httplib could not:
// strerror of the failure ("Address already in use"), or "cannot resolve ..." for a bad host.
std::string describe_bind_failure(const std::string& host, int port);

}  // namespace gufo::server

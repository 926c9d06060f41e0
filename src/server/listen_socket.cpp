// The listening socket's options (see listen_socket.h).
#include "server/listen_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gufo::server {

void exclusive_socket_options(int fd) {
  const int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

namespace {

// The local port of a TCP socket, or -1.
int local_port(int fd) {
  sockaddr_storage addr{};
  socklen_t addr_len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

// Calls `visit(fd, listening)` for each socket of this process whose local port is `port`.
// httplib does not hand out its sockets, so they are found in /proc/self/fd.
template <typename Visit>
void for_each_socket_on_port(int port, Visit visit) {
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return;
  while (const dirent* entry = readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) continue;  // not a socket
    if (local_port(fd) == port) visit(fd, listening != 0);
  }
  closedir(fds);
}

}  // namespace

// NOTE(http): httplib 0.11 listens with a backlog of 5. A burst of new connections (16
// clients at once) overflows it and the kernel drops the excess, which the clients retry
// after a 1 s SYN timeout: a second of time-to-first-token for nothing. Calling listen()
// again on the listening socket only raises its backlog.
void widen_listen_backlog(int port) {
  for_each_socket_on_port(port, [](int fd, bool listening) {
    if (listening) ::listen(fd, SOMAXCONN);
  });
}

// NOTE(http): httplib waits for the next request on a kept-alive connection for the whole
// keep-alive timeout (30 s here) and looks at its stop flag only between requests, so a
// stopped server would linger until every client hung up.
void shut_connections(int port, bool writes_too) {
  for_each_socket_on_port(port, [writes_too](int fd, bool listening) {
    if (!listening) ::shutdown(fd, writes_too ? SHUT_RDWR : SHUT_RD);
  });
}

std::string describe_bind_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return "cannot resolve '" + host + "': " + gai_strerror(rc);
  }
  std::string why = "no usable address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    exclusive_socket_options(fd);
    const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    if (!bound) why = std::strerror(errno);
    ::close(fd);
    if (bound) {
      why = "the port was taken and then released while binding; try again";
      break;
    }
  }
  freeaddrinfo(found);
  return why;
}

}  // namespace gufo::server

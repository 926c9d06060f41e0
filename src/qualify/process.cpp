// run_process: posix_spawn in a new process group, so that a timeout also ends what the
// program started (the functional suite starts servers of its own).
#include "qualify/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX gives no header for it

namespace gufo::qualify {

namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;  // set by interrupt_on_signals' handler

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t eq = text.find('=');
    if (eq != std::string::npos) vars[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [name, value] : extra) vars[name] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Owns the posix_spawn attribute objects for one start.
struct SpawnSetup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

Result<bool> check_writable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{path + ": cannot write the log (" + std::strerror(errno) + ")"};
  ::close(fd);
  return true;
}

}  // namespace

std::string ProcessOutcome::describe(double timeout_s) const {
  std::ostringstream s;
  if (timed_out) {
    s << "timed out after " << timeout_s << " s";
  } else if (signal != 0) {
    s << "killed by signal " << signal;
  } else {
    s << "exit " << exit_code;
  }
  return s.str();
}

Result<ProcessOutcome> run_process(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Error{"run_process: no program given"};
  if (auto ok = check_writable(spec.stdout_path); !ok) return ok.error();
  if (!spec.stderr_path.empty()) {
    if (auto ok = check_writable(spec.stderr_path); !ok) return ok.error();
  }
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, 1, spec.stdout_path.c_str(), O_WRONLY | O_TRUNC, 0644);
  if (spec.stderr_path.empty()) {
    posix_spawn_file_actions_adddup2(&setup.actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&setup.actions, 2, spec.stderr_path.c_str(), O_WRONLY | O_TRUNC, 0644);
  }
  if (!spec.working_dir.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, spec.working_dir.c_str());
  // Its own group; no blocked signals and default dispositions (this process may ignore some,
  // e.g. under nohup, and a program must not inherit that).
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigdefault(&setup.attr, &all);

  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = environment_with(spec.env);
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(env);
  const Clock::time_point start = Clock::now();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), envp.data());
  if (rc != 0) return Error{spec.argv[0] + ": cannot start (" + std::strerror(rc) + ")"};

  ProcessOutcome outcome;
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.timeout_s));
  // NOTE(qualify): the leader is reaped only after its group is killed, so that its process
  // id (the group's id) cannot be reused by another process in between.
  bool killed = false;
  for (;;) {
    siginfo_t info{};
    const int waited = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (waited == 0 && info.si_pid == pid) break;
    if (waited < 0 && errno != EINTR) break;
    if (g_interrupted != 0 || Clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      killed = true;
      outcome.timed_out = g_interrupted == 0;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);  // what the program left running in its group (a server) goes too
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (killed && g_interrupted != 0) return Error{"interrupted: " + spec.argv[0] + " and its processes were stopped"};
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

void interrupt_on_signals() {
  struct sigaction action {};
  action.sa_handler = [](int) { g_interrupted = 1; };
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

std::string read_tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  if (text.size() <= max_bytes) return text;
  text = text.substr(text.size() - max_bytes);
  const size_t eol = text.find('\n');
  return eol == std::string::npos ? text : text.substr(eol + 1);
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open"};
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

}  // namespace gufo::qualify

// gufo: one binary, one subcommand per job (docs/architecture.md, "Command line").
// Parsing errors exit 2; a subcommand's own failures exit 1 with one line on stderr.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/command.h"
#include "diagnose/build_info.h"

namespace gufo::cli {

int report_error(const Error& error) {
  std::string line = error.message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';  // one line, always
  }
  std::fprintf(stderr, "gufo: error: %s\n", line.c_str());
  return 1;
}

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"Gufo: local LLM inference engine and OpenAI-compatible server", "gufo"};
  app.require_subcommand(0, 1);
  // --help shows each option's default; subcommands copy this setting when they are added.
  app.option_defaults()->always_capture_default();
  const diagnose::BuildInfo& build = diagnose::build_info();
  app.set_version_flag(
      "--version", std::string("gufo ") + std::string(build.version) + " (" + std::string(build.git_revision) + ")");

  std::vector<Command> commands;
  commands.push_back(register_inspect(app));
  commands.push_back(register_diagnose(app));
  commands.push_back(register_convert(app));
  commands.push_back(register_tokenize(app));
  commands.push_back(register_detokenize(app));
  commands.push_back(register_run(app));
  commands.push_back(register_chat(app));
  commands.push_back(register_quality(app));
  commands.push_back(register_bench(app));
  commands.push_back(register_render_template(app));
  commands.push_back(register_quantize(app));
  commands.push_back(register_synth(app));
  commands.push_back(register_serve(app));
  commands.push_back(register_qualify(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gufo: usage error: %s (see gufo --help)\n", e.what());
    return 2;
  }

  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  std::fputs(app.help().c_str(), stdout);
  return 0;
}

}  // namespace
}  // namespace gufo::cli

int main(int argc, char** argv) {
  // NOTE(cli): the edge of the program: anything thrown below becomes one line and exit 1.
  try {
    return gufo::cli::run_main(argc, argv);
  } catch (const std::bad_array_new_length& e) {  // a size gone wrong, not a full memory
    std::fprintf(stderr, "gufo: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // NOTE(cli): the host ran out of memory (or of address space under a ulimit): say so in
    // words; "std::bad_alloc" tells a user nothing.
    std::fprintf(stderr, "gufo: error: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gufo: error: %s\n", e.what());
    return 1;
  }
}

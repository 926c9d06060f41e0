// The shape every `gufo` subcommand has: it registers its flags on a CLI11 subcommand and
// returns the action that runs once parsing succeeded. Actions return the exit code:
// 0 success, 1 bad input or failure (one line on stderr, see report_error), 2 usage.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string_view>

#include "core/result.h"

namespace gufo::cli {

using CommandAction = std::function<int()>;

struct Command {
  CLI::App* app = nullptr;  // the registered subcommand
  CommandAction run;        // called when app->parsed()
};

// Prints "gufo: error: <message>" as one line on stderr and returns exit code 1.
int report_error(const Error& error);

// Each subcommand lives in its own <name>_command.cpp.
Command register_inspect(CLI::App& root);
Command register_diagnose(CLI::App& root);
Command register_convert(CLI::App& root);
Command register_tokenize(CLI::App& root);
Command register_detokenize(CLI::App& root);
Command register_run(CLI::App& root);
Command register_chat(CLI::App& root);
Command register_quality(CLI::App& root);
Command register_bench(CLI::App& root);
Command register_render_template(CLI::App& root);
Command register_quantize(CLI::App& root);
Command register_synth(CLI::App& root);
Command register_serve(CLI::App& root);
Command register_qualify(CLI::App& root);

}  // namespace gufo::cli

#pragma once
// Diagnostics as both command lines build and report them: one about a whole file, the file
// name given to diagnostics that have none, and a command-line parse error (as JSON too when
// the command line asked for --json, so that stdout stays one JSON document).

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <string_view>

#include "models/base/result.hpp"
#include "sim/io/error_json.hpp"

namespace hetsim::cli {

using hetsim::about;  // models/base/result.hpp

/// `d` with `file` named where they name none; with `bad_input_only`, only the bad-input ones
/// (a device that fails is the environment, not a file).
inline Diagnostics named_in(Diagnostics d, const std::string& file, bool bad_input_only = false) {
  for (auto& x : d)
    if (x.where.file.empty() && (!bad_input_only || x.kind == ErrorKind::BadInput)) x.where.file = file;
  return d;
}

/// Ends a command line CLI11 could not parse: its help or its message (CLI11 prints them),
/// the error document on stdout when --json was asked for; 0 for --help, else 2.
inline int parse_failed(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (app.exit(e) == 0) return 0;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--json") {
      std::cout << io::error_json({about("", "", e.what(), "run with --help for the options")}) << std::flush;
      break;
    }
  return exit_status(ErrorKind::BadInput);
}

}  // namespace hetsim::cli

// `stagewatch ARGS...` for the run subcommands (run, runs, advise, pipelines), in this process,
// as main() parses and dispatches them, with what they print.
#pragma once

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "app/pipelines_cli.h"
#include "app/runs_cli.h"
#include "config/config.h"

namespace stagewatch::testing {

struct CliOutput {
  int code = 0;
  std::string out, err;
};

// `Cli`: the class that adds the subcommands (RunsCli, PipelinesCli).
template <typename Cli>
CliOutput RunCliOf(std::vector<std::string> args, const Config& config) {
  CLI::App app;
  Cli cli(app);
  args.insert(args.begin(), "stagewatch");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  std::streambuf* cout = std::cout.rdbuf(out.rdbuf());
  std::streambuf* cerr = std::cerr.rdbuf(err.rdbuf());
  int code = 0;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    code = cli.Dispatch(config).value_or(-1);
  } catch (const CLI::ParseError& e) {
    code = app.exit(e);
  }
  std::cout.rdbuf(cout);
  std::cerr.rdbuf(cerr);
  return {code, out.str(), err.str()};
}

inline CliOutput RunCli(std::vector<std::string> args, const Config& config = Config{}) {
  return RunCliOf<RunsCli>(std::move(args), config);
}

}  // namespace stagewatch::testing

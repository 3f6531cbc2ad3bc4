// The error model: every diagnostic has a kind, the exit status follows from it, and the JSON
// error document carries the same (docs/formats.md#error-json).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/io/error_json.hpp"
#include "sim/io/output_file.hpp"

namespace hetsim {
namespace {

TEST(ErrorModel, ExitStatusFollowsFromTheKind) {
  EXPECT_EQ(exit_status(ErrorKind::Environment), 1);
  EXPECT_EQ(exit_status(ErrorKind::BadInput), 2);
  EXPECT_EQ(exit_status(ErrorKind::DoesNotFit), 3);
  EXPECT_EQ(exit_status(ErrorKind::Internal), 4);
  EXPECT_EQ(Diagnostic{}.kind, ErrorKind::BadInput);  // readers' default
}

TEST(ErrorModel, TheWorstKindDecides) {
  auto d = [](ErrorKind k) { return Diagnostic{{}, "", "m", "", k}; };
  EXPECT_EQ(worst_kind({}), ErrorKind::BadInput);
  EXPECT_EQ(worst_kind({d(ErrorKind::DoesNotFit)}), ErrorKind::DoesNotFit);
  EXPECT_EQ(worst_kind({d(ErrorKind::DoesNotFit), d(ErrorKind::BadInput)}), ErrorKind::BadInput);
  EXPECT_EQ(worst_kind({d(ErrorKind::BadInput), d(ErrorKind::Environment), d(ErrorKind::DoesNotFit)}),
            ErrorKind::Environment);
  EXPECT_EQ(worst_kind({d(ErrorKind::Environment), d(ErrorKind::Internal), d(ErrorKind::BadInput)}),
            ErrorKind::Internal);
  for (const auto& x : with_kind({d(ErrorKind::BadInput), d(ErrorKind::DoesNotFit)}, ErrorKind::Environment))
    EXPECT_EQ(x.kind, ErrorKind::Environment);
}

TEST(ErrorModel, ErrorJsonCarriesEveryFieldAndTheKind) {
  const Diagnostics d{{{"a.toml", 3, 7}, "training.seq_len", "must be positive", "seq_len ≥ 1"},
                      {{"", 0, 0}, "", "device failed", "", ErrorKind::Environment}};
  const auto j = nlohmann::json::parse(io::error_json(d));
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["kind"], "environment");
  EXPECT_EQ(j["error"]["exit_status"], 1);
  ASSERT_EQ(j["error"]["diagnostics"].size(), 2U);
  const auto& first = j["error"]["diagnostics"][0];
  EXPECT_EQ(first["file"], "a.toml");
  EXPECT_EQ(first["line"], 3);
  EXPECT_EQ(first["column"], 7);
  EXPECT_EQ(first["key"], "training.seq_len");
  EXPECT_EQ(first["message"], "must be positive");
  EXPECT_EQ(first["hint"], "seq_len ≥ 1");
  EXPECT_EQ(first["kind"], "bad_input");
}

TEST(ErrorModel, ErrorJsonSurvivesBytesThatAreNotUtf8) {
  // A message may quote a user's file name or key that is not UTF-8: still one valid document.
  const Diagnostics d{{{"bad\xff\xfe.toml", 1, 1}, "k\x80", "unknown name '\xc3'", ""}};
  std::string text;
  ASSERT_NO_THROW(text = io::error_json(d));
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(ErrorModel, AFileThatCannotBeWrittenIsTheEnvironment) {
  const auto errs = io::write_files_atomic({{"/proc/hetsim-cannot-write/x.json", "{}"}});
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(worst_kind(errs), ErrorKind::Environment);
}

}  // namespace
}  // namespace hetsim

#pragma once
// HETSIM_ASSERT(cond, msg): a violated precondition or impossible state is a programmer bug.
// Prints the message with file and line, then aborts. Bad input never reaches it: it gets a
// Diagnostic instead. (A macro, not std::source_location: clang-tidy 14 cannot parse libstdc++
// 12's <source_location>.)

namespace hetsim::detail {
[[noreturn]] void assert_fail(const char* cond, const char* msg, const char* file, int line);
}

#define HETSIM_ASSERT(cond, msg)                                                  \
  do {                                                                            \
    if (!(cond)) ::hetsim::detail::assert_fail(#cond, (msg), __FILE__, __LINE__); \
  } while (false)

#pragma once
// SplitMix64's finaliser (Steele, Lea, Flood 2014): spreads a 64-bit value over all 64 bits, to
// derive independent generator seeds from a scenario's seed and the coordinates of a draw. The
// draws themselves use std::mt19937_64 and no std:: distribution (whose algorithms differ
// between standard libraries), so that the same seed gives the same bytes everywhere.

#include <cstdint>

namespace hetsim {

/// The finaliser: z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb;
/// z ^= z >> 31.
[[nodiscard]] constexpr std::uint64_t splitmix_finalise(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// SplitMix64's golden-ratio increment.
inline constexpr std::uint64_t kSplitmixGamma = 0x9e3779b97f4a7c15ull;

}  // namespace hetsim

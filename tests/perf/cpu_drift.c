/* How steady is this machine's core? A fixed fp32 loop (a 256³ matrix product, scalar C) timed
 * every second for 40 s, GFLOP/s per second on stdout. Run on an otherwise idle machine:
 *   cc -O3 -march=native -o /tmp/cpu_drift tests/perf/cpu_drift.c && /tmp/cpu_drift
 * docs/benchmarks.md (the heterogeneous loop) reads its spread as the floor under the executor's
 * measured-against-predicted errors on that machine. */
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { N = 256, SECONDS = 40 };
static float a[N * N], b[N * N], c[N * N];

int main(void) {
  for (int i = 0; i < N * N; ++i) {
    a[i] = 1e-3f * (float)(i % 7);
    b[i] = 1e-3f * (float)(i % 5);
  }
  const double t0 = now();
  for (int s = 0; s < SECONDS; ++s) {
    const double start = now();
    long products = 0;
    while (now() - start < 1.0) {
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < N; ++k) {
          const float x = a[i * N + k];
          for (int j = 0; j < N; ++j) c[i * N + j] += x * b[k * N + j];
        }
      ++products;
    }
    printf("%.0f s %.2f GFLOP/s\n", now() - t0, (double)products * 2.0 * N * N * N / (now() - start) / 1e9);
    fflush(stdout);
  }
  return c[5] > 0 ? 0 : 1;
}

/*
** data.h -- the data of bench/peers' collectives, shared by the MPI program
** (collectives.c) and the copy floor (floor.c): what each rank holds, the
** buffer sizes, and the check of an output.
*/
#ifndef PEERS_DATA_H
#define PEERS_DATA_H
#include <string.h>

/* the value rank r holds at element i of its input */
static int value(int r, long i) { return (int)((r * 131L + i * 7L) % 1000L); }

/* the collective's buffer sizes in elements: input and output */
static void sizes(const char *op, long count, int n, long *in, long *out) {
  if (strcmp(op, "allgather") == 0) { *in = count; *out = count * n; }
  else if (strcmp(op, "alltoall") == 0) { *in = count * n; *out = count * n; }
  else { *in = count; *out = count; }
}

/* what element i of rank me's output must hold */
static int expect(const char *op, int me, int n, long count, long i) {
  long src = i / count, at = i % count;
  int r, sum = 0;
  if (strcmp(op, "allgather") == 0) return value((int)src, at);
  if (strcmp(op, "alltoall") == 0) return value((int)src, (long)me * count + at);
  for (r = 0; r < n; r++) sum += value(r, i);
  return sum;
}

/* the wrong elements of rank me's output */
static long wrong(const char *op, const int *out, int me, int n, long count, long nout) {
  long i, bad = 0;
  for (i = 0; i < nout; i++) bad += out[i] != expect(op, me, n, count, i);
  return bad;
}

#endif

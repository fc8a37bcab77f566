/*
** floor.c -- the copy floor of bench/peers: the least work any emulator that
** lands real data does for a collective, with no model at all. One process
** holds every rank's buffers (as shmemlab and SMPI do) and, per iteration,
** moves each output byte once from where it comes from: one memcpy per
** (rank, peer) shard (allgather, alltoall), or the sum made once and copied
** to every rank (allreduce). One thread. The outputs are checked afterwards
** as collectives.c checks its own.
**
**   floor OP BYTES ITERS RANKS
**
** Prints "floor op=OP bytes=B iters=N wrong=W". Its wall time over SMPI's
** bounds the wall ratio a one-thread emulator can reach at that size.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

/* one iteration of op over n ranks of count elements each */
static void step(const char *op, int **in, int **out, int n, long count) {
  int p, q;
  long i;
  size_t shard = (size_t)count * sizeof(int);
  if (strcmp(op, "allgather") == 0) {
    for (p = 0; p < n; p++)
      for (q = 0; q < n; q++) memcpy(out[p] + (long)q * count, in[q], shard);
  } else if (strcmp(op, "alltoall") == 0) {
    for (p = 0; p < n; p++)
      for (q = 0; q < n; q++) memcpy(out[p] + (long)q * count, in[q] + (long)p * count, shard);
  } else {
    memcpy(out[0], in[0], shard);
    for (q = 1; q < n; q++)
      for (i = 0; i < count; i++) out[0][i] += in[q][i];
    for (p = 1; p < n; p++) memcpy(out[p], out[0], shard);
  }
}

int main(int argc, char **argv) {
  int n, r, it, iters, **in, **out;
  long count, nin, nout, i, bad = 0;
  if (argc != 5 || (strcmp(argv[1], "allgather") && strcmp(argv[1], "alltoall") &&
                    strcmp(argv[1], "allreduce")) || atol(argv[2]) < 4 || atoi(argv[3]) < 1 ||
      atoi(argv[4]) < 1) {
    fprintf(stderr, "usage: floor allgather|alltoall|allreduce BYTES ITERS RANKS\n");
    return 2;
  }
  count = atol(argv[2]) / 4;
  iters = atoi(argv[3]);
  n = atoi(argv[4]);
  sizes(argv[1], count, n, &nin, &nout);
  in = calloc((size_t)n, sizeof(*in));
  out = calloc((size_t)n, sizeof(*out));
  if (in == NULL || out == NULL) { fprintf(stderr, "floor: out of memory\n"); return 1; }
  for (r = 0; r < n; r++) {
    in[r] = malloc((size_t)nin * sizeof(int));
    out[r] = calloc((size_t)nout, sizeof(int));
    if (in[r] == NULL || out[r] == NULL) { fprintf(stderr, "floor: out of memory\n"); return 1; }
    for (i = 0; i < nin; i++) in[r][i] = value(r, i);
  }
  for (it = 0; it < iters; it++) step(argv[1], in, out, n, count);
  for (r = 0; r < n; r++) bad += wrong(argv[1], out[r], r, n, count, nout);
  printf("floor op=%s bytes=%ld iters=%d wrong=%ld\n", argv[1], count * 4, iters, bad);
  for (r = 0; r < n; r++) { free(in[r]); free(out[r]); }
  free(in);
  free(out);
  return bad == 0 ? 0 : 1;
}

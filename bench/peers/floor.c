/*
** floor.c -- the copy floor of bench/peers: the least work any emulator that
** lands real data does for a collective, with no model at all. One process
** holds every rank's buffers (as shmemlab and SMPI do) and, per iteration,
** moves each output byte once from where it comes from: one memcpy per
** (rank, peer) shard (allgather, alltoall), or the sum made once and copied
** to every rank (allreduce). The outputs are checked afterwards as
** collectives.c checks its own.
**
**   floor OP BYTES ITERS RANKS [THREADS]
**
** Prints "floor op=OP bytes=B iters=N threads=T copy_s=S cpu_s=C wrong=W", S
** the wall seconds of the iterations alone (no set-up, no check), C the
** process's CPU seconds over them. S over SMPI's
** whole wall bounds the wall ratio an emulator landing the same bytes on
** THREADS threads (default 1) can reach at that size. With more than one
** thread the ranks' outputs are split over the threads (allreduce: the
** elements), each iteration ending at a barrier.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data.h"

/* what a thread copies: ranks [p0, p1), elements [e0, e1) of an allreduce */
typedef struct {
  const char *op;
  int **in, **out, n, iters, p0, p1;
  long count, e0, e1;
  pthread_barrier_t *bar;
} part;

/* one iteration of a thread's part of op */
static void step(const part *w) {
  int p, q;
  long i;
  size_t shard = (size_t)w->count * sizeof(int), piece = (size_t)(w->e1 - w->e0) * sizeof(int);
  if (strcmp(w->op, "allgather") == 0) {
    for (p = w->p0; p < w->p1; p++)
      for (q = 0; q < w->n; q++) memcpy(w->out[p] + (long)q * w->count, w->in[q], shard);
  } else if (strcmp(w->op, "alltoall") == 0) {
    for (p = w->p0; p < w->p1; p++)
      for (q = 0; q < w->n; q++)
        memcpy(w->out[p] + (long)q * w->count, w->in[q] + (long)p * w->count, shard);
  } else {
    memcpy(w->out[0] + w->e0, w->in[0] + w->e0, piece);
    for (q = 1; q < w->n; q++)
      for (i = w->e0; i < w->e1; i++) w->out[0][i] += w->in[q][i];
    for (p = 1; p < w->n; p++) memcpy(w->out[p] + w->e0, w->out[0] + w->e0, piece);
  }
}

/* a thread: its part of every iteration */
static void *worker(void *arg) {
  const part *w = arg;
  int it;
  for (it = 0; it < w->iters; it++) {
    step(w);
    pthread_barrier_wait(w->bar);
  }
  return NULL;
}

/* seconds of a clock */
static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* iters iterations of op on t threads: wall seconds, and CPU seconds in cpu */
static double copies(const char *op, int **in, int **out, int n, long count, int iters, int t,
                     double *cpu) {
  part w[64];
  pthread_t th[64];
  pthread_barrier_t bar;
  double t0;
  int k;
  pthread_barrier_init(&bar, NULL, (unsigned)t);
  for (k = 0; k < t; k++) {
    w[k] = (part){ op, in, out, n, iters, n * k / t, n * (k + 1) / t, count, count * k / t,
                   count * (k + 1) / t, &bar };
  }
  *cpu = now(CLOCK_PROCESS_CPUTIME_ID);
  t0 = now(CLOCK_MONOTONIC);
  for (k = 1; k < t; k++) pthread_create(&th[k], NULL, worker, &w[k]);
  worker(&w[0]);
  for (k = 1; k < t; k++) pthread_join(th[k], NULL);
  t0 = now(CLOCK_MONOTONIC) - t0;
  *cpu = now(CLOCK_PROCESS_CPUTIME_ID) - *cpu;
  pthread_barrier_destroy(&bar);
  return t0;
}

int main(int argc, char **argv) {
  int n, r, iters, t, **in, **out;
  long count, nin, nout, i, bad = 0;
  double secs, cpu;
  if ((argc != 5 && argc != 6) || (strcmp(argv[1], "allgather") && strcmp(argv[1], "alltoall") &&
                                   strcmp(argv[1], "allreduce")) || atol(argv[2]) < 4 ||
      atoi(argv[3]) < 1 || atoi(argv[4]) < 1 || (argc == 6 && (atoi(argv[5]) < 1 ||
                                                              atoi(argv[5]) > 64))) {
    fprintf(stderr, "usage: floor allgather|alltoall|allreduce BYTES ITERS RANKS [THREADS]\n");
    return 2;
  }
  count = atol(argv[2]) / 4;
  iters = atoi(argv[3]);
  n = atoi(argv[4]);
  t = argc == 6 ? atoi(argv[5]) : 1;
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
  secs = copies(argv[1], in, out, n, count, iters, t, &cpu);
  for (r = 0; r < n; r++) bad += wrong(argv[1], out[r], r, n, count, nout);
  printf("floor op=%s bytes=%ld iters=%d threads=%d copy_s=%.6f cpu_s=%.6f wrong=%ld\n", argv[1],
         count * 4, iters, t, secs, cpu, bad);
  for (r = 0; r < n; r++) { free(in[r]); free(out[r]); }
  free(in);
  free(out);
  return bad == 0 ? 0 : 1;
}

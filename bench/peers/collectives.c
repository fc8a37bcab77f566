/*
** collectives.c -- the MPI side of bench/peers: one collective (allgather,
** alltoall or allreduce of int32) at one size, a number of iterations, with
** real data that is checked afterwards. Built with SimGrid's smpicc, run by
** smpirun on the platform bench/peers/platform.lua writes; MPI_Wtime is the
** simulated clock there.
**
**   smpirun ... collectives OP BYTES ITERS
**
** BYTES is what shmemlab's --count means times 4: a rank's contribution
** (allgather), one shard per destination (alltoall), the vector (allreduce).
** Prints one line: "peers op=OP bytes=B iters=N sim_us=T wrong=W", T the
** slowest rank's simulated time per iteration, W the wrong elements.
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

/* run the collective once */
static void run(const char *op, const int *in, int *out, long count) {
  if (strcmp(op, "allgather") == 0)
    MPI_Allgather(in, (int)count, MPI_INT, out, (int)count, MPI_INT, MPI_COMM_WORLD);
  else if (strcmp(op, "alltoall") == 0)
    MPI_Alltoall(in, (int)count, MPI_INT, out, (int)count, MPI_INT, MPI_COMM_WORLD);
  else
    MPI_Allreduce(in, out, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  int me, n, it, iters;
  long count, nin, nout, i, bad, allbad;
  int *in, *out;
  double t0, dt, slowest;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc != 4 || (strcmp(argv[1], "allgather") && strcmp(argv[1], "alltoall") &&
                    strcmp(argv[1], "allreduce")) || atol(argv[2]) < 4 || atoi(argv[3]) < 1) {
    if (me == 0) fprintf(stderr, "usage: collectives allgather|alltoall|allreduce BYTES ITERS\n");
    MPI_Finalize();
    return 2;
  }
  count = atol(argv[2]) / 4;
  iters = atoi(argv[3]);
  sizes(argv[1], count, n, &nin, &nout);
  in = malloc((size_t)nin * sizeof(int));
  out = calloc((size_t)nout, sizeof(int));
  if (in == NULL || out == NULL) { fprintf(stderr, "collectives: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  for (i = 0; i < nin; i++) in[i] = value(me, i);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (it = 0; it < iters; it++) run(argv[1], in, out, count);
  dt = (MPI_Wtime() - t0) / iters;
  bad = wrong(argv[1], out, me, n, count, nout);
  MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("peers op=%s bytes=%ld iters=%d sim_us=%.3f wrong=%ld\n", argv[1], count * 4, iters,
           slowest * 1e6, allbad);
  free(in);
  free(out);
  MPI_Finalize();
  return allbad == 0 ? 0 : 1;
}

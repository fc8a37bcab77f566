/*
** window.c -- the SMPI side of bench/peers/scale.lua: the shape of shmemlab's
** timing-only allgather at scale, no bytes moved. Every rank takes BYTES from
** every other rank, WINDOW transfers in flight at a time (shmemlab's blocks:
** each block has one get in flight), the peers in the order r+1, r+2, ...
** Buffers are SMPI_SHARED_MALLOC'd, so SMPI copies nothing: its CPU is the
** simulation's alone. Built with SimGrid's smpicc, run by smpirun.
**
**   smpirun ... window BYTES WINDOW
**
** Prints one line: "window bytes=B window=W sim_us=T", T the slowest rank's
** simulated time.
*/
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXW 256

int main(int argc, char **argv) {
  int me, n, w, i, sent = 0, got = 0, posted_s = 0, posted_r = 0;
  long bytes;
  char *sbuf, *rbuf;
  MPI_Request req[2 * MAXW];
  double t0, dt, slowest;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc != 3 || atol(argv[1]) < 1 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAXW) {
    if (me == 0) fprintf(stderr, "usage: window BYTES WINDOW (1..%d)\n", MAXW);
    MPI_Finalize();
    return 2;
  }
  bytes = atol(argv[1]);
  w = atoi(argv[2]);
  sbuf = SMPI_SHARED_MALLOC((size_t)bytes);
  rbuf = SMPI_SHARED_MALLOC((size_t)bytes);
  for (i = 0; i < 2 * w; i++) req[i] = MPI_REQUEST_NULL;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  /* slot i < w: a receive from me - (k + 1); slot w + i: a send to me + (k + 1) */
  for (i = 0; i < w && posted_r < n - 1; i++, posted_r++)
    MPI_Irecv(rbuf, (int)bytes, MPI_CHAR, (me - posted_r - 1 + n) % n, 0, MPI_COMM_WORLD, &req[i]);
  for (i = 0; i < w && posted_s < n - 1; i++, posted_s++)
    MPI_Isend(sbuf, (int)bytes, MPI_CHAR, (me + posted_s + 1) % n, 0, MPI_COMM_WORLD, &req[w + i]);
  while (got < n - 1 || sent < n - 1) {
    int idx;
    MPI_Waitany(2 * w, req, &idx, MPI_STATUS_IGNORE);
    if (idx == MPI_UNDEFINED) break;
    if (idx < w) {
      got++;
      if (posted_r < n - 1) {
        MPI_Irecv(rbuf, (int)bytes, MPI_CHAR, (me - posted_r - 1 + n) % n, 0, MPI_COMM_WORLD,
                  &req[idx]);
        posted_r++;
      }
    } else {
      sent++;
      if (posted_s < n - 1) {
        MPI_Isend(sbuf, (int)bytes, MPI_CHAR, (me + posted_s + 1) % n, 0, MPI_COMM_WORLD,
                  &req[idx]);
        posted_s++;
      }
    }
  }
  dt = MPI_Wtime() - t0;
  MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (me == 0) printf("window bytes=%ld window=%d sim_us=%.3f\n", bytes, w, slowest * 1e6);
  SMPI_SHARED_FREE(sbuf);
  SMPI_SHARED_FREE(rbuf);
  MPI_Finalize();
  return 0;
}

/*
** test_flow.c -- the flow / pipe-queue timing core driven from C, without
** Lua: a multi-PE, multi-block kernel (chunked puts through shared links,
** vector ops, flags between pipes, profiling frames, barrier_all) run
**   - twice on fresh machines: kernel times, trace and counters identical;
**   - with the Nth realloc of the launch failing, for every N: the launch
**     either reports out of memory (SL_ENOMEM from a primitive or
**     SL_STEP_NOMEM) or gives exactly the reference timing, never another;
**   - after each such failed launch, on the same machine: the reference
**     timing exactly (sl_launch_abort leaves nothing behind).
** Last line printed: "N passed, N failed"; exit status 1 on any failure.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl.h"

#include "check.h"


/* ---------------------------------------------------------------- realloc */

static long realloc_calls, realloc_fail_at = -1;

/* the failure of one realloc (a place for a debugger's breakpoint) */
static __attribute__((noinline)) void *realloc_fails(void) {
  printf("%s", "");
  return NULL;
}

/* realloc that fails on call number realloc_fail_at (counting from 1) */
void *realloc(void *p, size_t n) {
  static void *(*real)(void *, size_t);
  if (real == NULL) *(void **)&real = dlsym(RTLD_NEXT, "realloc");
  if (++realloc_calls == realloc_fail_at) return realloc_fails();
  return real(p, n);
}

/* ---------------------------------------------------------------- machine */

#define NPES 4
#define BDIM 3
#define NB (NPES * BDIM)
#define ELEMS 8192               /* int32 per put: 32 KiB */
#define MAXREC 4096

/* a 910B-like parameter block (lua/shmemlab/socs/Ascend910B.lua) */
static sl_params params(void) {
  sl_params p;
  memset(&p, 0, sizeof(p));
  p.n_pes = NPES; p.cores = 48; p.ub_bytes = 192 * 1024; p.pes_per_server = 2;
  p.dies_per_card = 1; p.core_ghz = 1.85; p.cycle2us = 50;
  p.mte2_bytes_per_cycle = 32; p.mte3_bytes_per_cycle = 64; p.mte_setup_ns = 200;
  p.issue_ns = 10; p.scalar_ns = 5; p.vec_bytes_per_cycle = 256; p.vec_setup_ns = 20;
  p.hbm_GBps = 1600; p.local_alpha_ns = 300; p.hccs_GBps = 28; p.hccs_alpha_ns = 500;
  p.hccs_read_eff = 0.9; p.hccs_write_eff = 0.95; p.sio_GBps = 224; p.sio_alpha_ns = 200;
  p.rdma_GBps = 25; p.rdma_alpha_ns = 1500; p.signal_ns = 20; p.poll_ns = 100;
  p.pipe_barrier_ns = 20; p.queue_depth = 4; p.barrier_base_ns = 1000;
  p.sync_all_ns = 500; p.launch_us = 4; p.host_GBps = 24; p.host_setup_us = 10;
  p.sym_heap_bytes = 16 << 20; p.prof_pe = 1; p.time_limit_us = 0;
  return p;
}

/* what a launch gave */
typedef struct result {
  int status;                   /* SL_OK, SL_ENOMEM or another failure */
  double kus[NPES];
  size_t ntrace;
  sl_trace_rec rec[MAXREC];     /* times from the launch start */
  int64_t cycles[BDIM][4], count[BDIM][4];
} result;

typedef struct world { sl_machine *m; int src, dst; } world;

/* a machine with its two symmetric buffers (NULL machine on failure) */
static world world_new(void) {
  world w;
  sl_params p = params();
  int st;
  w.m = sl_machine_new(&p, &st);
  w.src = w.dst = -1;
  if (w.m == NULL) return w;
  w.src = sl_alloc(w.m, SL_SPACE_SYM, SL_INT32, ELEMS, "src");
  w.dst = sl_alloc(w.m, SL_SPACE_SYM, SL_INT32, 2 * ELEMS, "dst");
  sl_trace_enable(w.m, MAXREC);
  return w;
}

/* a GM location: buffer buf on pe, elems further */
static sl_loc gm(const world *w, int buf, int pe, int64_t elems) {
  sl_loc l;
  memset(&l, 0, sizeof(l));
  l.buf = buf; l.pe = pe; l.dtype = SL_INT32;
  l.off = elems * 4;
  l.cap = sl_getbuf(w->m, buf)->bytes;
  return l;
}

/* ---------------------------------------------------------------- kernel */

typedef struct blockst { int pc; sl_loc ub, ub2; } blockst;

/* step pc of block blk's program; 1 when the program has ended */
static int step(world *w, blockst *s, int blk, int *st) {
  sl_machine *m = w->m;
  int pe, b, peer;
  sl_loc d, g;
  sl_block_where(m, blk, &pe, &b);
  peer = (pe + 1 + b) % NPES;
  switch (s->pc++) {
    case 0: *st = sl_ub_alloc(m, blk, SL_INT32, 1024, &s->ub); return 0;
    case 1: *st = sl_ub_alloc(m, blk, SL_INT32, 256, &s->ub2); return 0;
    case 2: *st = sl_prof(m, blk, 1, 0); return 0;
    case 3:                             /* 32 KiB in 4 KiB chunks: the queues fill */
      d = gm(w, w->dst, pe, (int64_t)b * 1024);
      g = gm(w, w->src, pe, 0);
      *st = sl_mte(m, blk, 0, &d, &g, &s->ub, 4096, ELEMS - b * 1024, peer, b);
      return 0;
    case 4: g = gm(w, w->src, peer, 0);   /* a get from the peer while the puts run */
      *st = sl_data_copy(m, blk, &s->ub2, &g, 256, 0); return 0;
    case 5: *st = sl_set_flag(m, blk, SL_EV_MTE2_V, 0); return 0;
    case 6: *st = sl_wait_flag(m, blk, SL_EV_MTE2_V, 0); return 0;
    case 7: *st = sl_vec(m, blk, SL_OP_ADD, &s->ub2, &s->ub2, &s->ub2, 0, 256); return 0;
    case 8: *st = sl_set_flag(m, blk, SL_EV_V_MTE3, 1); return 0;
    case 9: *st = sl_wait_flag(m, blk, SL_EV_V_MTE3, 1); return 0;
    case 10: d = gm(w, w->dst, pe, ELEMS + (int64_t)b * 256);
      *st = sl_data_copy(m, blk, &d, &s->ub2, 256, 0); return 0;
    case 11: *st = sl_set_flag(m, blk, SL_EV_MTE3_S, 2); return 0;
    case 12: *st = sl_wait_flag(m, blk, SL_EV_MTE3_S, 2); return 0;   /* S on a busy pipe */
    case 13: *st = sl_prof(m, blk, 1, 1); return 0;
    case 14: *st = sl_quiet(m, blk); return 0;
    case 15: *st = sl_barrier_all(m, blk); return 0;
    default: *st = SL_OK; return 1;
  }
}

/* run the kernel on w; fills r */
static void run(world *w, result *r) {
  blockst bs[NB];
  int blk, i;
  double e2e, start;
  memset(bs, 0, sizeof(bs));
  memset(r, 0, sizeof(*r));
  sl_trace_clear(w->m);
  sl_prof_reset(w->m);
  if ((r->status = sl_launch_begin(w->m, BDIM)) != SL_OK) return;
  for (;;) {
    int k = sl_step(w->m, &blk), st = SL_OK;
    if (k == SL_STEP_DONE) break;
    if (k != SL_STEP_RESUME) {
      r->status = k == SL_STEP_NOMEM ? SL_ENOMEM : SL_EDEADLOCK;
      sl_launch_abort(w->m);
      return;
    }
    for (;;) {
      if (step(w, &bs[blk], blk, &st)) { sl_block_done(w->m, blk); break; }
      if (st != SL_OK) { r->status = st; sl_launch_abort(w->m); return; }
      if (sl_must_yield(w->m, blk)) break;
    }
  }
  sl_launch_end(w->m, r->kus, &e2e, &start);
  r->ntrace = sl_trace_count(w->m);
  for (i = 0; i < (int)r->ntrace && i < MAXREC; i++) {
    sl_time t0 = (sl_time)llround(start * SL_PS_PER_US);
    r->rec[i] = *sl_trace_get(w->m, (size_t)i);
    r->rec[i].start -= t0;
    r->rec[i].end -= t0;
  }
  for (i = 0; i < BDIM; i++) {
    int f;
    for (f = 0; f < 4; f++) sl_prof_get(w->m, i, f, &r->cycles[i][f], &r->count[i][f]);
  }
}

/* do two results agree (times, trace, and the counters when cycles) */
static int same(const result *a, const result *b, int cycles) {
  int i;
  if (a->status != b->status || a->ntrace != b->ntrace) return 0;
  for (i = 0; i < NPES; i++) if (a->kus[i] != b->kus[i]) return 0;
  if (memcmp(a->rec, b->rec, a->ntrace * sizeof(a->rec[0])) != 0) return 0;
  if (memcmp(a->count, b->count, sizeof(a->count)) != 0) return 0;
  return !cycles || memcmp(a->cycles, b->cycles, sizeof(a->cycles)) == 0;
}

/* ---------------------------------------------------------------- tests */

static result ref, got;

/* two fresh machines agree, and the kernel did what it should */
static void test_determinism(void) {
  world w1 = world_new(), w2 = world_new();
  run(&w1, &ref);
  run(&w2, &got);
  CHECK(ref.status == SL_OK, "reference launch: status %d", ref.status);
  CHECK(same(&ref, &got, 1), "two fresh machines differ");
  CHECK(ref.ntrace > (size_t)NB * 8, "trace of %zu records", ref.ntrace);
  CHECK(ref.count[0][1] == 1 && ref.count[BDIM - 1][1] == 1, "frame 1 counted once");
  CHECK(ref.kus[0] > 0 && ref.kus[NPES - 1] > 0, "kernel times");
  run(&w1, &got);                       /* and again on the same machine */
  CHECK(same(&ref, &got, 0), "a second launch on the same machine differs");
  sl_machine_free(w1.m);
  sl_machine_free(w2.m);
}

/* the Nth realloc of the launch fails, for every N the launch makes */
static void test_oom(void) {
  long calls, n, nomem = 0, clean = 0;
  world w = world_new();
  realloc_calls = 0;
  run(&w, &got);
  calls = realloc_calls;
  sl_machine_free(w.m);
  CHECK(calls > 10, "the launch grows its pools (%ld reallocs)", calls);
  for (n = 1; n <= calls; n++) {
    w = world_new();
    realloc_calls = 0;
    realloc_fail_at = n;
    run(&w, &got);
    realloc_fail_at = -1;
    if (got.status == SL_ENOMEM) nomem++;
    else if (got.status == SL_OK && same(&ref, &got, 1)) clean++;
    else CHECK(0, "realloc %ld of %ld failed: status %d, times %s", n, calls, got.status,
               same(&ref, &got, 0) ? "right" : "wrong");
    if (got.status != SL_OK) {          /* the same machine, a good launch */
      run(&w, &got);
      CHECK(got.status == SL_OK && same(&ref, &got, 0),
            "after the out-of-memory launch (realloc %ld): status %d", n, got.status);
    }
    sl_machine_free(w.m);
  }
  CHECK(nomem > 0, "some launches ran out of memory (%ld)", nomem);
  printf("oom: %ld reallocs, %ld reported out of memory, %ld unaffected\n", calls, nomem,
         clean);
}

/* main */
int main(void) {
  test_determinism();
  test_oom();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}

/*
** test_flow.c -- the flow / pipe-queue timing core driven from C, without
** Lua: a multi-PE, multi-block kernel (chunked puts through shared links,
** vector ops, flags between pipes, profiling frames, barrier_all) run
**   - twice on fresh machines: kernel times, trace and counters identical;
**   - with the Nth realloc of the launch failing, for every N: the launch
**     either reports out of memory (SL_ENOMEM from a primitive or
**     SL_STEP_NOMEM) or gives exactly the reference timing, never another;
**   - after each such failed launch, on the same machine: the reference
**     timing exactly (sl_launch_abort leaves nothing behind);
**   - random programs on random topologies, the solver's invariants checked
**     after every primitive and every event: the running block not behind
**     the clock, every change settled by the next instant, no
**     resource over its capacity, every flow at its cap or at the top rate of
**     a full resource (max-min fair), and the run repeatable (40 seeds;
**     SL_FLOW_SEEDS=N in the environment runs N), and on 16 PEs x 16 blocks,
**     where a change connects to hundreds of flows; there too, the test of
**     whether the keys due at an instant are chains' alone reads what a walk of
**     the whole end heap finds;
**   - those 16 x 16 programs with every fill's resources in a tree, with the
**     fills of more than 4 in one, and with none (m->rs_tree): times, trace
**     and solver counters identical.
** Last line printed: "N passed, N failed"; exit status 1 on any failure.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

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
#define MAXPES 16                /* the big random world: 16 PEs x 16 blocks */
#define MAXBDIM 16
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
  p.l2_bytes = 0; p.l2_read_bytes_per_cycle = 110; p.dma_queue_depth = 2;   /* no L2 here */
  p.data_op_engine_type = SL_DOP_MTE | SL_DOP_ROCE;   /* its PEs span servers */
  return p;
}

/* what a launch gave */
typedef struct result {
  int status;                   /* SL_OK, SL_ENOMEM or another failure */
  double kus[MAXPES];
  size_t ntrace;
  sl_trace_rec rec[MAXREC];     /* times from the launch start */
  int64_t cycles[MAXBDIM][4], count[MAXBDIM][4];
} result;

typedef struct world { sl_machine *m; int src, dst, bdim; } world;

static world world_of(const sl_params *pp);

/* a machine with its two symmetric buffers (NULL machine on failure) */
static world world_new(void) {
  sl_params p = params();
  return world_of(&p);
}

/* the same of parameters p */
static world world_of(const sl_params *pp) {
  world w;
  sl_params p = *pp;
  int st;
  w.m = sl_machine_new(&p, &st);
  w.src = w.dst = -1;
  w.bdim = BDIM;
  if (w.m == NULL) return w;
  w.src = sl_alloc(w.m, SL_SPACE_SYM, SL_INT32, ELEMS, "src", 0);
  w.dst = sl_alloc(w.m, SL_SPACE_SYM, SL_INT32, 2 * ELEMS, "dst", 0);
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

typedef struct blockst { int pc; sl_loc ub, ub2; uint64_t rng; } blockst;
typedef int (*stepfn)(world *w, blockst *s, int blk, int *st);
static int fair(sl_machine *m);
static int check_fair;                  /* check the solver every check_fair-th step */

/* step pc of block blk's program; 1 when the program has ended */
static int step(world *w, blockst *s, int blk, int *st) {
  sl_machine *m = w->m;
  int pe, b, peer;
  sl_loc d, g;
  sl_block_where(m, blk, &pe, &b);
  peer = (pe + 1 + b) % sl_machine_params(m)->n_pes;
  switch (s->pc++) {
    case 0: *st = sl_ub_alloc(m, blk, SL_INT32, 1024, 0, &s->ub); return 0;
    case 1: *st = sl_ub_alloc(m, blk, SL_INT32, 256, 0, &s->ub2); return 0;
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

/* run the kernel whose steps are stepf on w; fills r */
static void run_with(world *w, result *r, stepfn stepf, uint64_t seed) {
  static blockst bs[MAXPES * MAXBDIM];
  int blk, i, nb = sl_machine_params(w->m)->n_pes * w->bdim;
  long steps = 0;
  double e2e, start;
  memset(bs, 0, sizeof(bs));
  for (i = 0; i < nb; i++) bs[i].rng = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 7919 + 1;
  memset(r, 0, sizeof(*r));
  sl_trace_clear(w->m);
  sl_prof_reset(w->m);
  if ((r->status = sl_launch_begin(w->m, w->bdim)) != SL_OK) return;
  for (;;) {
    int k = sl_step(w->m, &blk), st = SL_OK;
    if (k == SL_STEP_DONE) break;
    if (k != SL_STEP_RESUME) {
      r->status = k == SL_STEP_NOMEM ? SL_ENOMEM : SL_EDEADLOCK;
      sl_launch_abort(w->m);
      return;
    }
    for (;;) {
      if (check_fair && ++steps % check_fair == 0 &&
          (!fair(w->m) || w->m->blocks[blk].t < w->m->now)) {
        printf("block %d at %lld, the clock at %lld\n", blk, (long long)w->m->blocks[blk].t,
               (long long)w->m->now);
        r->status = -1;
        sl_launch_abort(w->m);
        return;
      }
      if (stepf(w, &bs[blk], blk, &st)) { sl_block_done(w->m, blk); break; }
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
  for (i = 0; i < w->bdim; i++) {
    int f;
    for (f = 0; f < 4; f++) sl_prof_get(w->m, i, f, &r->cycles[i][f], &r->count[i][f]);
  }
}

/* run the fixed kernel */
static void run(world *w, result *r) { run_with(w, r, step, 0); }

/* do two results agree (times, trace, and the counters when cycles) */
static int same(const result *a, const result *b, int cycles) {
  int i;
  if (a->status != b->status || a->ntrace != b->ntrace) return 0;
  for (i = 0; i < MAXPES; i++) if (a->kus[i] != b->kus[i]) return 0;
  if (memcmp(a->rec, b->rec, a->ntrace * sizeof(a->rec[0])) != 0) return 0;
  if (memcmp(a->count, b->count, sizeof(a->count)) != 0) return 0;
  return !cycles || memcmp(a->cycles, b->cycles, sizeof(a->cycles)) == 0;
}

/* ---------------------------------------------------------------- random */

/* xorshift64: the next number of a block's stream */
static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* one random primitive of block blk (a program of 24, then barrier_all) */
static int rstep(world *w, blockst *s, int blk, int *st) {
  sl_machine *m = w->m;
  int pe, b, npes = sl_machine_params(m)->n_pes, peer;
  uint64_t x = rnd(&s->rng);
  int64_t n = 8 * (int64_t)(1 + (x >> 8) % 512);          /* 32 B .. 16 KiB */
  sl_loc g;
  sl_block_where(m, blk, &pe, &b);
  peer = (int)((x >> 20) % (uint64_t)npes);
  g = gm(w, w->src, peer, (int64_t)((x >> 30) % 4096));
  *st = SL_OK;
  if (s->pc == 0) { s->pc++; *st = sl_ub_alloc(m, blk, SL_INT32, 4096, 0, &s->ub); return 0; }
  if (s->pc == 25) { s->pc++; *st = sl_barrier_all(m, blk); return 0; }
  if (s->pc++ > 25) return 1;
  switch ((x >> 40) % 8) {
    case 0: case 1: *st = sl_data_copy(m, blk, &s->ub, &g, n, 0); break;
    case 2: case 3: g = gm(w, w->dst, peer, (int64_t)((x >> 30) % 8192));
      *st = sl_data_copy(m, blk, &g, &s->ub, n, 0); break;
    case 4: {
      sl_loc d = gm(w, w->dst, pe, 0), src = gm(w, w->src, pe, 0);
      *st = sl_mte(m, blk, (int)(x & 1), (x & 1) ? &src : &d, (x & 1) ? &d : &src, &s->ub,
                   1024 * (int64_t)(1 + (x >> 50) % 4), n, peer, b % 8);
      break;
    }
    case 5: *st = sl_vec(m, blk, SL_VEC_MULS, &s->ub, &s->ub, NULL, 2, n); break;
    case 6: {
      int ev = (int)((x >> 50) % SL_NEVENTS);
      *st = sl_set_flag(m, blk, ev, 3);
      if (*st == SL_OK) *st = sl_wait_flag(m, blk, ev, 3);
      break;
    }
    default: *st = (x >> 50) % 2 ? sl_quiet(m, blk) : sl_pipe_barrier(m, blk, SL_PIPE_MTE2);
      break;
  }
  return 0;
}

/* the solver's invariants now (between events every rate holds): the
** changes of the current instant are settled first, as the next event would */
/* are the keys due by t some, and all chains'? (the whole end heap walked) */
static int chain_walk(const sl_machine *m, sl_time t) {
  int32_t i, n = 0;
  for (i = 0; i < m->fh.n; i++) {
    const sl_flow *f = &m->flows[m->fh.h[i].id];
    if (m->fh.h[i].k > t) continue;
    if (f->gn <= 0 || f->eng == SLI_ENG_GHOST) return 0;
    n++;
  }
  return n > 0;
}

/* sli_flow_chain_only (the due subtree alone) as the walk finds, before now,
** at now, at the first entries' keys and the last's, with the flows as they
** are (no chains: 0), every flow a chain's (1 from the first due key on) and
** that but the heap's last entry (0 once it is due); gn put back after */
static int chain_only_ok(sl_machine *m) {
  static int64_t gn[4096];
  int32_t i, n = m->fh.n;
  int v, j, ok = 1;
  if (n == 0 || n > 4096) return 1;
  for (i = 0; i < n; i++) gn[i] = m->flows[m->fh.h[i].id].gn;
  for (v = 0; v < 3 && ok; v++) {
    sl_time ts[12];
    int nt = 0;
    if (v > 0) for (i = 0; i < n; i++) m->flows[m->fh.h[i].id].gn = i == n - 1 && v == 2 ? 0 : 1;
    ts[nt++] = m->now - 1;
    ts[nt++] = m->now;
    ts[nt++] = m->fh.h[n - 1].k;
    for (i = 0; i < n && nt < 12; i += 1 + i) ts[nt++] = m->fh.h[i].k;
    for (j = 0; j < nt && ok; j++) {
      ok = sli_flow_chain_only(m, ts[j]) == chain_walk(m, ts[j]);
      if (!ok) printf("chain_only at %lld (case %d of %d flows) differs\n", (long long)ts[j], v, n);
    }
  }
  for (i = 0; i < n; i++) m->flows[m->fh.h[i].id].gn = gn[i];
  return ok;
}

static int fair(sl_machine *m) {
  static double load[4096];
  int32_t i;
  int k;
  if (m->ndirty != 0 && m->settle_t > m->now) {
    printf("changes of %lld unsettled at %lld\n", (long long)m->settle_t, (long long)m->now);
    return 0;
  }
  if (m->ndirty != 0) sli_flow_settle(m, m->settle_t);
  if (!chain_only_ok(m)) return 0;
  memset(load, 0, m->nres * sizeof(load[0]));
  for (i = 0; i < m->fh.n; i++) {
    const sl_flow *f = &m->flows[m->fh.h[i].id];
    if (!(f->rate > 0) || f->rate > f->cap * (1 + 1e-9) || f->end < m->now) {
      printf("flow %d: rate %g cap %g end %lld now %lld\n", (int)m->fh.h[i].id, f->rate, f->cap,
             (long long)f->end, (long long)m->now);
      return 0;
    }
    for (k = 0; k < f->nres; k++) load[f->at[k].res] += f->rate * f->at[k].w;
  }
  for (i = 0; i < (int32_t)m->nres; i++)
    if (load[i] > m->allres[i].C * (1 + 1e-6)) {
      printf("resource %d over capacity: %g of %g\n", (int)i, load[i], m->allres[i].C);
      return 0;
    }
  for (i = 0; i < m->fh.n; i++) {     /* a bottleneck: a full resource it tops */
    const sl_flow *f = &m->flows[m->fh.h[i].id];
    int ok = f->rate >= f->cap * (1 - 1e-9);
    for (k = 0; k < f->nres && !ok; k++) {
      const sl_res *r = &m->allres[f->at[k].res];
      int32_t j, top = load[f->at[k].res] >= r->C * (1 - SL_FAIR_TOL);
      for (j = 0; j < r->nfl && top; j++)
        top = m->flows[sl_slot_f(&r->fl[j])].rate <= f->rate * (1 + SL_FAIR_TOL) * (1 + 1e-9);
      ok = top;
    }
    if (!ok) { printf("flow %d below its cap without a bottleneck\n", (int)m->fh.h[i].id); return 0; }
  }
  return 1;
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
  if (calls == 0) {                     /* valgrind's allocator took realloc */
    printf("oom: skipped, realloc is not this program's\n");
    return;
  }
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

/* random programs on random topologies: the solver's invariants hold */
static void test_random(void) {
  int seed, fails = 0, nseeds = getenv("SL_FLOW_SEEDS") ? atoi(getenv("SL_FLOW_SEEDS")) : 40;
  uint64_t x = 88172645463325252ull;
  check_fair = 1;
  for (seed = 1; seed <= nseeds; seed++) {
    sl_params p = params();
    world w1, w2;
    p.queue_depth = 1 + (int)(rnd(&x) % 6);
    p.hccs_switch = (int)(rnd(&x) % 2);
    p.pes_per_server = rnd(&x) % 2 ? 2 : 4;
    p.dies_per_card = p.hccs_switch && rnd(&x) % 2 ? 2 : 1;
    p.hccs_GBps = 28 * (1 + (double)(rnd(&x) % 8));
    if (p.hccs_switch && rnd(&x) % 3 == 0) p.supernode_dies = NPES;   /* one fabric */
    w1 = world_of(&p);
    w2 = world_of(&p);
    run_with(&w1, &ref, rstep, (uint64_t)seed);
    run_with(&w2, &got, rstep, (uint64_t)seed);
    if (ref.status != SL_OK || !same(&ref, &got, 1)) fails++;
    CHECK(ref.status == SL_OK, "random seed %d: status %d", seed, ref.status);
    CHECK(same(&ref, &got, 1), "random seed %d: two runs differ", seed);
    sl_machine_free(w1.m);
    sl_machine_free(w2.m);
  }
  check_fair = 0;
  printf("random: %d seeds, %d failed\n", nseeds, fails);
}

/* random programs of 16 PEs x 16 blocks, so that a change connects to far
** more flows than a search bounded by their number would re-rate: the
** solver's invariants hold there too */
static void test_random_big(void) {
  int seed, fails = 0;
  uint64_t x = 0x2545F4914F6CDD1Dull;
  check_fair = 7;
  for (seed = 1; seed <= 4; seed++) {
    sl_params p = params();
    world w;
    p.n_pes = MAXPES;
    p.pes_per_server = seed % 2 ? 4 : 8;
    p.hccs_switch = seed > 2;
    p.queue_depth = 1 + (int)(rnd(&x) % 4);
    w = world_of(&p);
    w.bdim = MAXBDIM;
    run_with(&w, &ref, rstep, (uint64_t)seed + 1000);
    if (ref.status != SL_OK) fails++;
    CHECK(ref.status == SL_OK, "big random seed %d: status %d", seed, ref.status);
    sl_machine_free(w.m);
  }
  check_fair = 0;
  printf("random 16 x 16: 4 seeds, %d failed\n", fails);
}

/* the 16 x 16 random programs with every fill's resources in a tree, with
** those of more than 4 (trees and walks in turn on one machine) and with none:
** the same times, trace, counters and solver work (the tree's top, kept up to
** date as keys change, is the least resource the walk finds) */
static void test_fill_tree(void) {
  static const int32_t at[2] = { 0, 4 };
  int seed, t;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (seed = 1; seed <= 2; seed++) {
    sl_params p = params();
    sl_flow_stats s1, s2;
    world w1, w2;
    p.n_pes = MAXPES;
    p.pes_per_server = 8;
    p.hccs_switch = seed > 1;
    p.queue_depth = 1 + (int)(rnd(&x) % 4);
    w2 = world_of(&p);
    w2.bdim = MAXBDIM;
    w2.m->rs_tree = INT32_MAX;          /* none */
    run_with(&w2, &got, rstep, (uint64_t)seed + 2000);
    sl_machine_flow_stats(w2.m, &s2);
    for (t = 0; t < 2; t++) {
      w1 = world_of(&p);
      w1.bdim = MAXBDIM;
      w1.m->rs_tree = at[t];
      run_with(&w1, &ref, rstep, (uint64_t)seed + 2000);
      sl_machine_flow_stats(w1.m, &s1);
      CHECK(ref.status == SL_OK, "fill tree %d seed %d: status %d", at[t], seed, ref.status);
      CHECK(same(&ref, &got, 1), "fill tree %d seed %d: times differ from the walk's", at[t],
            seed);
      CHECK(memcmp(&s1, &s2, sizeof(s1)) == 0 && s1.fills > 100,
            "fill tree %d seed %d: solver counters differ (fills %lld / %lld)", at[t], seed,
            (long long)s1.fills, (long long)s2.fills);
      sl_machine_free(w1.m);
    }
    sl_machine_free(w2.m);
  }
  printf("fill tree: 2 seeds on 16 x 16, trees from 0 and 4 resources\n");
}

/* main */
int main(void) {
  test_determinism();
  test_oom();
  test_random();
  test_random_big();
  test_fill_tree();
  printf("%d passed, %d failed\n", npass, nfail);
  return nfail ? 1 : 0;
}

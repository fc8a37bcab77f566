/*
** machine.c -- the machine: creation from a parameter block, topology and
** paths, the life of a launch, cycle profiling counters.
*/
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* picoseconds of ns nanoseconds, rounded */
sl_time sli_ps(double ns) { return (sl_time)llround(ns * 1000.0); }

/* the latencies, each at most a second: a larger one (or NaN) would wrap the
** picosecond clock or round to nothing; the name of a bad one or NULL */
static const char *latency_check(const sl_params *p) {
  static const struct { const char *name; size_t off; double max; } lat[] = {
#define LAT_NS(f) { #f, offsetof(sl_params, f), 1e9 }
    LAT_NS(mte_setup_ns), LAT_NS(issue_ns), LAT_NS(scalar_ns), LAT_NS(vec_setup_ns),
    LAT_NS(local_alpha_ns), LAT_NS(hccs_alpha_ns), LAT_NS(sio_alpha_ns),
    LAT_NS(rdma_alpha_ns), LAT_NS(signal_ns), LAT_NS(poll_ns), LAT_NS(pipe_barrier_ns),
    LAT_NS(barrier_base_ns), LAT_NS(sync_all_ns), LAT_NS(sdma_setup_ns),
    LAT_NS(rdma_setup_ns), LAT_NS(udma_setup_ns), LAT_NS(sdma_task_ns),
    LAT_NS(rdma_task_ns), LAT_NS(udma_task_ns), LAT_NS(settle_ns),
#undef LAT_NS
    { "launch_us", offsetof(sl_params, launch_us), 1e6 },
    { "host_setup_us", offsetof(sl_params, host_setup_us), 1e6 },
  };
  size_t i;
  for (i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
    double v;
    memcpy(&v, (const char *)p + lat[i].off, sizeof(v));
    if (!(v >= 0 && v <= lat[i].max)) return lat[i].name;
  }
  return NULL;
}

/* validate the parameter block; returns the name of a bad field or NULL */
const char *sl_params_check(const sl_params *p) {
  if (p->n_pes < 1 || p->n_pes > 65536) return "pes";
  if (p->cores < 1 || p->cores > 1024) return "aiv_cores";
  if (p->ub_bytes < 1024 || p->ub_bytes > ((int64_t)1 << 30)) return "ub_bytes";
  if (p->pes_per_server < 1) return "pes_per_server";
  if (p->dies_per_card < 1 || p->pes_per_server % p->dies_per_card != 0)
    return "dies_per_card";
  if (p->supernode_dies < 0 || (p->supernode_dies > 0 &&
      (!p->hccs_switch || p->supernode_dies % p->dies_per_card != 0)))
    return "supernode_dies";
  if (!(p->core_ghz > 0)) return "core_ghz";
  if (!(p->cycle2us > 0)) return "cycle2us";
  if (!(p->mte2_bytes_per_cycle > 0)) return "mte2_bytes_per_cycle";
  if (!(p->mte3_bytes_per_cycle > 0)) return "mte3_bytes_per_cycle";
  if (p->l2_bytes < 0) return "l2_bytes";
  if (!(p->l2_read_bytes_per_cycle > 0)) return "l2_read_bytes_per_cycle";
  if (!(p->vec_bytes_per_cycle > 0)) return "vec_bytes_per_cycle";
  if (!(p->hbm_GBps > 0)) return "hbm_GBps";
  if (!(p->hccs_GBps > 0)) return "hccs_GBps";
  if (!(p->hccs_read_eff > 0) || p->hccs_read_eff > 1) return "hccs_read_eff";
  if (!(p->hccs_write_eff > 0) || p->hccs_write_eff > 1) return "hccs_write_eff";
  if (!(p->sio_GBps > 0)) return "sio_GBps";
  if (!(p->rdma_GBps > 0)) return "rdma_GBps";
  if (!(p->sdma_GBps >= 0)) return "sdma_GBps";
  if (!(p->udma_GBps >= 0)) return "udma_GBps";
  if (!(p->host_GBps > 0)) return "host_GBps";
  if (p->sym_heap_bytes < 16) return "sym_heap_bytes";
  if (p->prof_pe < -1 || p->prof_pe >= p->n_pes) return "prof_pe";
  if (p->queue_depth < 1 || p->queue_depth > 255) return "queue_depth";
  if (p->dma_queue_depth < 1 || p->dma_queue_depth > 255) return "dma_queue_depth";
  if (p->check < 0 || p->check > 15) return "check";
  if (p->instruction_budget < 0) return "instruction_budget";
  if (p->spin_limit < 0) return "spin_limit";
  if (p->primitive_limit < 0) return "primitive_limit";
  if (p->time_limit_us < 0) return "time_limit_us";
  if (p->timing_only && (p->check & (SL_CHECK_RACE | SL_CHECK_INIT))) return "check";
  if (p->data_op_engine_type < 1 || p->data_op_engine_type > SL_DOP_ALL)
    return "data_op_engine_type";            /* the library's is_valid_data_op_engine_type */
  return latency_check(p);
  return NULL;
}

/* the machine's timing figures in picoseconds, from the profile's nanoseconds */
static void set_ps(sl_machine *m, const sl_params *p) {
  m->ps.issue = sli_ps(p->issue_ns);
  m->ps.scalar = sli_ps(p->scalar_ns);
  m->ps.signal = sli_ps(p->signal_ns);
  m->ps.poll = sli_ps(p->poll_ns);
  m->ps.pipe_barrier = sli_ps(p->pipe_barrier_ns);
  m->ps.barrier_base = sli_ps(p->barrier_base_ns);
  m->ps.sync_all = sli_ps(p->sync_all_ns);
  m->ps.vec_setup = sli_ps(p->vec_setup_ns);
  m->ps.mte_setup = sli_ps(p->mte_setup_ns);
  m->ps.settle = sli_ps(p->settle_ns);
  m->ps.alpha[SL_PATH_LOCAL] = sli_ps(p->local_alpha_ns);
  m->ps.alpha[SL_PATH_HCCS] = sli_ps(p->hccs_alpha_ns);
  m->ps.alpha[SL_PATH_SIO] = sli_ps(p->sio_alpha_ns);
  m->ps.alpha[SL_PATH_RDMA] = sli_ps(p->rdma_alpha_ns);
  m->ps.dma_setup[SL_ENG_SDMA] = sli_ps(p->sdma_setup_ns);
  m->ps.dma_setup[SL_ENG_RDMA] = sli_ps(p->rdma_setup_ns);
  m->ps.dma_setup[SL_ENG_UDMA] = sli_ps(p->udma_setup_ns);
  m->ps.dma_task[SL_ENG_SDMA] = sli_ps(p->sdma_task_ns);
  m->ps.dma_task[SL_ENG_RDMA] = sli_ps(p->rdma_task_ns);
  m->ps.dma_task[SL_ENG_UDMA] = sli_ps(p->udma_task_ns);
}

/* a new machine, or NULL with *status set */
sl_machine *sl_machine_new(const sl_params *p, int *status) {
  sl_machine *m;
  size_t ncore, n = (size_t)p->n_pes;
  if (sl_params_check(p) != NULL) { *status = SL_EARG; return NULL; }
  m = calloc(1, sizeof(*m));
  if (m == NULL) { *status = SL_ENOMEM; return NULL; }
  m->p = *p;
  set_ps(m, p);
  ncore = n * (size_t)p->cores;
  m->ub = calloc(ncore, sizeof(*m->ub));
  m->ubcap = calloc(ncore, sizeof(*m->ubcap));
  m->nhccs = p->hccs_switch ? 2 * p->n_pes : p->n_pes * p->pes_per_server;
  m->nres = n + (size_t)m->nhccs + n + 2 * n + 2 * n;
  m->allres = calloc(m->nres, sizeof(*m->allres));
  if (m->allres != NULL) {
    m->hbm = m->allres;
    m->hccs = m->hbm + n;
    m->sio = m->hccs + m->nhccs;
    m->nic = m->sio + n;
    m->dma = m->nic + 2 * n;
  }
  if (m->allres != NULL) sli_res_init(m);
  sli_res_clear(m, 0);
  sli_pools_reset(m);
  m->sync_count = calloc(n, sizeof(*m->sync_count));
  m->sync_tmax = calloc(n, sizeof(*m->sync_tmax));
  (void)sli_l2_new(m);                  /* NULL when it fails: checked below */
  if (p->check & SL_CHECK_INIT) m->ubinit = calloc(ncore, sizeof(*m->ubinit));
  if (p->timing_only) m->ubmap = calloc(ncore, sizeof(*m->ubmap));
  m->site = -1;
  if (!m->ub || !m->ubcap || !m->allres || ((p->check & SL_CHECK_INIT) && !m->ubinit) ||
      (p->timing_only && !m->ubmap) ||
      !m->sync_count || !m->sync_tmax || (p->l2_bytes > 0 && !m->l2) ||
      sli_team_world(m) != SL_OK) {
    sl_machine_free(m);
    *status = SL_ENOMEM;
    return NULL;
  }
  *status = SL_OK;
  return m;
}

/* release everything */
void sl_machine_free(sl_machine *m) {
  size_t i, ncore;
  int j;
  if (m == NULL) return;
  ncore = (size_t)m->p.n_pes * (size_t)m->p.cores;
  if (m->ub && m->ubmap) for (i = 0; i < ncore; i++) free(m->ub[i]);
  sli_ub_free(m);
  if (m->ubmap) for (i = 0; i < ncore; i++) free(m->ubmap[i].r);
  free(m->ubmap);
  for (j = 0; j < m->nbufs; j++) {
    sli_buf_data_free(&m->bufs[j]); sli_bmap_free(m->bufs[j].init); free(m->bufs[j].wait_heads);
  }
  if (m->ubinit) for (i = 0; i < ncore; i++) sli_bmap_free(m->ubinit[i]);
  free(m->ubinit); free(m->reports);
  free(m->ub); free(m->ubcap); free(m->bufs); free(m->segs);
  sli_race_free(m);
  sli_team_free(m);
  if (m->allres) sli_res_clear(m, 1);
  free(m->allres);
  sli_pool_free64(&m->evs_mem); free(m->fifo); free(m->wfifo); sli_pool_free64(&m->blocks_mem);
  sli_kheap_free(&m->heap); sli_kheap_free(&m->fheap);
  for (i = 0; i < SL_NLANES; i++) free(m->lq[i].k);
  sli_pool_free64(&m->ops_mem); sli_pool_free64(&m->toks_mem); sli_pool_free64(&m->marks_mem);
  free(m->fev.id); free(m->fop.id); free(m->ftok.id); free(m->fmark.id);
  free(m->kq); free(m->lzb);
  sli_lazy_free(m);
  sli_chain_free(m);
  free(m->sync_count); free(m->sync_tmax); free(m->l2);
  free(m->prof_cycles); free(m->prof_count); free(m->shadow);
  free(m->trace);
  free(m);
}

/* parameters in force */
const sl_params *sl_machine_params(const sl_machine *m) { return &m->p; }

/* last error text */
const char *sl_machine_err(const sl_machine *m) { return m->err; }

/* argument position of the last error (0 = none) */
int sl_machine_err_arg(const sl_machine *m) { return m->err_arg; }

/* renumber the last error's argument through map[0..n) (0: none of the caller's) */
void sl_machine_map_err_arg(sl_machine *m, const int *map, int n) {
  m->err_arg = m->err_arg > 0 && m->err_arg < n ? map[m->err_arg] : 0;
}

/* current virtual time */
sl_time sl_machine_now(const sl_machine *m) { return m->now; }

/* name of a path kind */
const char *sl_path_name(int path) {
  static const char *const names[] = { "local", "hccs", "sio", "rdma" };
  return (path >= 0 && path < SL_NPATHS) ? names[path] : "?";
}

/* PEs that reach each other without RDMA: a supernode's switch fabric, or
** a server */
int sli_domain(const sl_params *p) {
  return p->supernode_dies > 0 ? p->supernode_dies : p->pes_per_server;
}

/* kind of path between two PEs */
int sl_path(const sl_machine *m, int from, int to) {
  int pps = sli_domain(&m->p), dpc = m->p.dies_per_card;
  if (from == to) return SL_PATH_LOCAL;
  if (from / pps != to / pps) return SL_PATH_RDMA;
  if (dpc > 1 && from / dpc == to / dpc) return SL_PATH_SIO;
  return SL_PATH_HCCS;
}

/* what reaches PE to from PE from (MemEntityDefault::CanReachDataOperators
** of memfabric_hybrid, which the library's reach_info_init copies into
** topo_list): MTE wherever SDMA reaches (the server or supernode), SDMA and
** UDMA there when the init names them, RoCE to every PE when it names ROCE */
unsigned sl_reach(const sl_machine *m, int from, int to) {
  unsigned dop = (unsigned)m->p.data_op_engine_type, r = 0;
  if (sl_path(m, from, to) != SL_PATH_RDMA) r = SL_DOP_MTE | (dop & (SL_DOP_SDMA | SL_DOP_UDMA));
  return r | (dop & SL_DOP_ROCE);
}

/* bytes that crossed each kind of path so far */
int64_t sl_path_bytes(const sl_machine *m, int path) {
  return (path >= 0 && path < SL_NPATHS) ? m->path_bytes[path] : 0;
}

/* out of line, and opaque to gcc's interprocedural passes, which would see
** the size's two values and expand the memset again (below) */
#if defined(__GNUC__) && !defined(__clang__)
#define NOT_INLINE __attribute__((noipa))
#elif defined(__GNUC__)
#define NOT_INLINE __attribute__((noinline))
#else
#define NOT_INLINE
#endif

/* zero n bytes at p through the C library's memset: a memset of a size the
** compiler knows (blocks_clear's is one of two constants) is expanded inline
** as rep stosq, whose start-up for about 1 KiB cost more than the library's
** vector stores (an empty 2 x 16 launch 5.7 -> 5.3 us, alternated runs) */
static NOT_INLINE void bytes_zero(void *p, size_t n) { memset(p, 0, n); }

/* zero what a launch reads of its n blocks before writing it: each block up
** to flagsite (flagsite too in synccheck runs), not the arrays after it
** (sli.h), most of a block's bytes; one memset of the whole array was most
** of a short launch's cost */
static void blocks_clear(sl_machine *m, int n) {
  size_t clear = (m->p.check & SL_CHECK_SYNC) ? offsetof(sl_block, tok)
                                              : offsetof(sl_block, flagsite);
  int i;
  for (i = 0; i < n; i++) bytes_zero(&m->blocks[i], clear);
}

/* start a launch of block_dim blocks on every PE */
int sl_launch_begin(sl_machine *m, int block_dim) {
  int i, n, e0;
  if (m->running) return sli_err(m, SL_ESTATE, 0, "a launch is already running");
  if (block_dim < 1 || block_dim > m->p.cores)
    return sli_err(m, SL_EARG, 2,
        "block_dim must be in 1..%d (AIV cores per PE), got %d", m->p.cores,
        block_dim);
  n = m->p.n_pes * block_dim;
  if (n > m->capblocks) {               /* kept across launches: no first touch */
    if (!sli_pool_grow64(&m->blocks_mem, (void **)&m->blocks, 0, n, sizeof(*m->blocks)))
      return sli_err(m, SL_ENOMEM, 0, "not enough memory");
    m->capblocks = n;
  }
  blocks_clear(m, n);
  sli_res_clear(m, 0);
  sli_pools_reset(m);
  m->oom = 0;
  m->block_dim = block_dim;
  m->nb = n;
  m->ndone = 0;
  m->bar_count = 0;
  m->bar_noquiet = 0;
  m->bar_tmax = 0;
  sli_team_reset(m);
  memset(m->sync_count, 0, (size_t)m->p.n_pes * sizeof(*m->sync_count));
  memset(m->sync_tmax, 0, (size_t)m->p.n_pes * sizeof(*m->sync_tmax));
  sli_l2_reset(m);
  m->gen++;
  m->quiet = m->lprims = m->quiet_max = 0;   /* the runaway guard's (the blocks' are */
  m->quiet_land = m->nland;                   /* cleared above) */
  if ((e0 = sli_race_begin(m)) != SL_OK) return e0;   /* before any event exists */
  m->t0 = m->now + sli_ps(m->p.launch_us * 1000.0);
  m->tlimit = sli_time_limit(m, m->t0);
  for (i = 0; i < n; i++) {
    sl_block *b = &m->blocks[i];
    int e;
    b->pe = i / block_dim;
    b->b = i % block_dim;
    b->t = m->t0;
    for (e = 0; e < SL_NPIPES; e++) b->pipe[e] = b->done[e] = m->t0;
    b->inflight = b->fence = b->end = m->t0;
    for (e = 0; e < SL_NENG; e++) {
      sl_dmaq *q = &b->dq[e];
      b->dma_pending[e] = 0, b->dma_done[e] = m->t0;
      q->head = q->tail = -1, q->kick = -1;
      q->nwait = q->nadm = q->cur = q->streaming = 0;
      q->free_at = m->t0;
    }
    b->wnext = -1;
    b->scratch = -1;
    for (e = 0; e < SL_NQ; e++) b->qhead[e] = b->qtail[e] = b->mhead[e] = -1, b->kick[e] = -1;
    sli_wake(m, i, m->t0);
    if (b->state != B_READY) {
      sli_clear_events(m);
      return sli_err(m, SL_ENOMEM, 0, "not enough memory");
    }
  }
  m->running = 1;
  return SL_OK;
}

/* the running block finished its code: it ends when its pipes drained */
void sl_block_done(sl_machine *m, int blk) {
  sli_progress(m);                       /* a block that ends is progress */
  sli_drain(m, blk, SL_DRAIN_ALL | SL_DRAIN_ENGINES, ACT_END);
}

/* end of a launch: per-PE kernel time and the end-to-end time */
void sl_launch_end(sl_machine *m, double *kernel_us, double *e2e_us,
                   double *start_us) {
  sl_time tmax = m->t0;
  int i;
  for (i = 0; i < m->p.n_pes; i++) kernel_us[i] = 0;
  for (i = 0; i < m->nb; i++) {
    const sl_block *b = &m->blocks[i];
    double k = (double)(b->end - m->t0) / SL_PS_PER_US;
    if (k > kernel_us[b->pe]) kernel_us[b->pe] = k;
    if (b->end > tmax) tmax = b->end;
  }
  if (m->now > tmax) tmax = m->now;
  *start_us = (double)m->t0 / SL_PS_PER_US;
  *e2e_us = m->p.launch_us + (double)(tmax - m->t0) / SL_PS_PER_US;
  m->now = tmax;
  m->running = 0;
}

/* abandon a launch: pending events are dropped, waiters forgotten */
void sl_launch_abort(sl_machine *m) {
  sli_clear_events(m);
  sli_unpark_all(m);
  sli_res_clear(m, 0);
  sli_pools_reset(m);
  m->running = 0;
}

/* 1 while a launch runs */
int sl_running(const sl_machine *m) { return m->running; }

/* virtual time since the running kernel started */
double sl_kernel_now_us(const sl_machine *m) {
  return (double)(m->now - m->t0) / SL_PS_PER_US;
}

/* launch generation (UB views of older launches are stale) */
uint32_t sl_machine_gen(const sl_machine *m) { return m->gen; }

/* 1 when the block waits (a signal, a barrier, sync_all, a flag, its pipes) */
int sl_block_parked(const sl_machine *m, int blk) {
  int s = m->blocks[blk].state;
  return s == B_SIGNAL || s == B_BARRIER || s == B_SYNC || s == B_FLAG ||
         s == B_DRAIN || s == B_QUEUE || s == B_AMO || s == B_TEAM;
}

/* 1 while the block runs (it has neither parked nor been rescheduled) */
int sl_block_running(const sl_machine *m, int blk) {
  return m->blocks[blk].state == B_RUN;
}

/* blocks per PE of the launch */
int sl_block_dim(const sl_machine *m) { return m->block_dim; }

/* PE and block index of a global block number */
void sl_block_where(const sl_machine *m, int blk, int *pe, int *block) {
  *pe = m->blocks[blk].pe;
  *block = m->blocks[blk].b;
}

/* block's virtual time since the kernel start */
double sl_block_time_us(const sl_machine *m, int blk) {
  return (double)(m->blocks[blk].t - m->t0) / SL_PS_PER_US;
}

/* innermost open profiling frame of a block (-1 when none) */
int sl_block_frame(const sl_machine *m, int blk) {
  const sl_block *b = &m->blocks[blk];
  return b->fdepth > 0 ? b->fr[b->fdepth - 1].id : -1;
}

/* frames a block has open (prof_start with no prof_end yet): their number,
** the innermost's id and the site of its prof_start (-1: none known) */
int sl_block_open_frames(const sl_machine *m, int blk, int *frame, int32_t *site) {
  const sl_block *b = &m->blocks[blk];
  *frame = b->fdepth > 0 ? b->fr[b->fdepth - 1].id : -1;
  *site = b->fdepth > 0 ? b->fr[b->fdepth - 1].site : -1;
  return b->fdepth;
}

/* what a block gets as it resumes: SL_RES_NONE, SL_RES_INT (a woken wait's
** value), SL_RES_YIELDED (v values it yielded and left on its own stack) */
int sl_block_result(sl_machine *m, int blk, int64_t *v) {
  sl_block *b = &m->blocks[blk];
  int k = b->retkind;
  *v = b->ret;
  b->retkind = SL_RES_NONE;
  return k;
}

/* count one primitive of block blk before it runs (doc/guard.md "Runaway
** kernels"): SL_RUN_SPIN when all blocks together have called more than
** spin_limit primitives since the last progress (sli_progress: a copy or
** scalar read other than its block's last four, a vector op landed, a signal or
** set_value changed a value, a block ended) and the block itself called
** more than spin_limit / SPIN_SHARE of them, SL_RUN_TOTAL when the block
** has called more than primitive_limit in this launch (a backstop for a
** loop that makes progress forever: vector ops, signals of new values).
** The spin count is the launch's as a whole, so that a launch of many blocks
** that all spin stops after as many primitives as one block would; counts,
** never wall time */
/* the least share of a spin a block must have called itself to be stopped:
** spin_limit / SPIN_SHARE of it (122 of the default 1 M), so that thousands of
** blocks each doing a little scalar work before the first copy lands are not
** taken for a spin (a machine of 1024 PEs x 48 blocks is 49152 blocks) */
#define SPIN_SHARE 8192

int sl_prim_tick(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  if (m->nland != m->quiet_land) {
    m->quiet_land = m->nland;
    m->quiet = 0;
  }
  if (b->spin_land != m->quiet_land) {
    b->spin_land = m->quiet_land;
    b->spin = 0;
  }
  b->spin++;
  b->nprims++;
  m->lprims++;
  if (++m->quiet > m->quiet_max) m->quiet_max = m->quiet;
  if (m->p.spin_limit > 0 && m->quiet > m->p.spin_limit && b->spin > m->p.spin_limit / SPIN_SHARE)
    return SL_RUN_SPIN;
  if (m->p.primitive_limit > 0 && b->nprims > m->p.primitive_limit) return SL_RUN_TOTAL;
  return SL_RUN_OK;
}

/* a block's runaway counts: primitives in this launch, and in the machine's
** quiet streak (0 when it called none since something last landed) */
void sl_block_prims(const sl_machine *m, int blk, int64_t *launch, int64_t *quiet) {
  const sl_block *b = &m->blocks[blk];
  *launch = b->nprims;
  *quiet = b->spin_land == m->quiet_land ? b->spin : 0;
}

/* the launch's runaway counts: primitives of all blocks, the longest quiet
** streak (the measure spin_limit's default is set against) */
void sl_guard_stats(const sl_machine *m, int64_t *prims, int64_t *quiet_max) {
  *prims = m->lprims;
  *quiet_max = m->quiet_max;
}

/* keep a value for a block that yields before returning it */
void sl_block_stash(sl_machine *m, int blk, int kind, int64_t v) {
  m->blocks[blk].retkind = kind;
  m->blocks[blk].ret = v;
}

/* the system counter of a block now */
static int64_t counter(const sl_machine *m, sl_time t) {
  return (int64_t)floor((double)t * m->p.cycle2us / SL_PS_PER_US);
}

/* system_cycle(): the counter at the block's S pipe */
int64_t sl_system_cycle(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  b->t += m->ps.scalar;
  return counter(m, b->t);
}

/* profiled PE (-1 = off) */
int sl_prof_pe(const sl_machine *m) { return m->p.prof_pe; }

/* choose the profiled PE (-1 = off) */
int sl_prof_set_pe(sl_machine *m, int pe) {
  if (pe < -1 || pe >= m->p.n_pes)
    return sli_err(m, SL_EARG, 1, "PE %d out of range 0..%d", pe, m->p.n_pes - 1);
  m->p.prof_pe = pe;
  return SL_OK;
}

/* clear every profiling counter */
void sl_prof_reset(sl_machine *m) {
  free(m->prof_cycles); free(m->prof_count); free(m->shadow);
  m->prof_cycles = m->prof_count = m->shadow = NULL;
}

/* the shadow counters of every PE: frame read at t */
void sli_shadow_add(sl_machine *m, int pe, int block, int frame, int end, sl_time t) {
  int64_t *sh, c = counter(m, t);
  if (m->shadow == NULL) return;
  sh = m->shadow + (((size_t)pe * SL_PROF_MAX_BLOCK + (size_t)block) *
                    SL_SHADOW_FRAMES + (size_t)frame) * 2;
  if (end) { sh[0] += c; sh[1] += 1; } else sh[0] -= c;
}

/* the profiled PE's frame read, once its PipeBarrier(ALL) drained the pipes */
void sli_prof_read(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  int frame = (int)b->wval, end = b->wcmp;
  size_t slot = (size_t)b->b * SL_PROF_MAX_FRAME + (size_t)frame;
  int64_t c;
  b->t += m->ps.pipe_barrier;
  c = counter(m, b->t);
  if (end) { m->prof_cycles[slot] += c; m->prof_count[slot] += 1; }
  else m->prof_cycles[slot] -= c;
  if (frame < SL_SHADOW_FRAMES) sli_shadow_add(m, b->pe, b->b, frame, end, b->t);
}

/* make room for the counters; 0 when out of memory */
static int prof_alloc(sl_machine *m) {
  if (m->prof_cycles == NULL) {
    size_t n = (size_t)SL_PROF_MAX_BLOCK * SL_PROF_MAX_FRAME;
    m->prof_cycles = calloc(n, sizeof(int64_t));
    m->prof_count = calloc(n, sizeof(int64_t));
  }
  if (m->shadow == NULL)
    m->shadow = calloc((size_t)m->p.n_pes * SL_PROF_MAX_BLOCK * SL_SHADOW_FRAMES * 2,
                       sizeof(int64_t));
  if (!m->prof_cycles || !m->prof_count || !m->shadow) {
    sl_prof_reset(m);
    return 0;
  }
  return 1;
}

/* SHMEMI_PROF_START (end = 0) / SHMEMI_PROF_END (end = 1) */
int sl_prof(sl_machine *m, int blk, int frame, int end) {
  sl_block *b = &m->blocks[blk];
  if (frame < 0)
    return sli_err(m, SL_EARG, 1, "frame must be >= 0, got %d", frame);
  sli_queue_only(m, blk);               /* it reads its own clock and pipes alone */
  if (end) {
    if (b->fdepth > 0 && b->fr[b->fdepth - 1].id == frame) {
      b->fdepth--;
      if (SLI_TRACING(m))
        sli_trace(m, b->fr[b->fdepth].start, b->t, b->pe, b->b, 1, frame, 0, -1, -1);
    }
  } else if (b->fdepth < SL_FSTACK) {
    b->fr[b->fdepth].id = frame;
    b->fr[b->fdepth].site = m->site;
    b->fr[b->fdepth++].start = b->t;
  }
  if (frame >= SL_PROF_MAX_FRAME || b->b >= SL_PROF_MAX_BLOCK) return SL_OK;
  if (!prof_alloc(m)) return sli_err(m, SL_ENOMEM, 0, "not enough memory");
  if (b->pe == m->p.prof_pe) {          /* a real PipeBarrier(ALL), then the read */
    b->wval = frame;
    b->wcmp = end;
    return sli_drain(m, blk, SL_DRAIN_ALL, ACT_PROF);
  }
  if (frame >= SL_SHADOW_FRAMES) return SL_OK;
  /* read where a PipeBarrier(ALL) would, without one */
  return sli_mark(m, blk, frame, end) == SL_OK ? SL_OK
       : sli_err(m, SL_ENOMEM, 0, "not enough memory");
}

/* counters of the profiled PE */
int sl_prof_get(const sl_machine *m, int block, int frame, int64_t *cycles,
                int64_t *count) {
  size_t slot;
  if (m->prof_cycles == NULL || block < 0 || block >= SL_PROF_MAX_BLOCK ||
      frame < 0 || frame >= SL_PROF_MAX_FRAME) return 0;
  slot = (size_t)block * SL_PROF_MAX_FRAME + (size_t)frame;
  *cycles = m->prof_cycles[slot];
  *count = m->prof_count[slot];
  return 1;
}

/* shadow counters of any PE */
int sl_shadow_get(const sl_machine *m, int pe, int block, int frame,
                  int64_t *cycles, int64_t *count) {
  const int64_t *sh;
  if (m->shadow == NULL || pe < 0 || pe >= m->p.n_pes || block < 0 ||
      block >= SL_PROF_MAX_BLOCK || frame < 0 || frame >= SL_SHADOW_FRAMES)
    return 0;
  sh = m->shadow + (((size_t)pe * SL_PROF_MAX_BLOCK + (size_t)block) *
                    SL_SHADOW_FRAMES + (size_t)frame) * 2;
  *cycles = sh[0];
  *count = sh[1];
  return 1;
}

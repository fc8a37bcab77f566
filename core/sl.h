/*
** sl.h -- the shmemlab engine: an emulated cluster of Ascend-class NPUs on a
** deterministic virtual clock. Plain C11; knows nothing of Lua. The binding
** (core/lshmemlab*.c) drives it: it runs one coroutine per (PE, block) and calls
** the primitives below on behalf of the block that is running.
**
** Time is an int64 count of picoseconds. Every change to shared state is an
** event handled in (time, sequence) order; a copy reads its source and writes
** its destination when it completes.
*/
#ifndef SL_H
#define SL_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* Only luaopen_shmemlab_core leaves core.so (nm -D): what the headers declare is hidden. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

typedef int64_t sl_time;                 /* picoseconds */
#define SL_PS_PER_US 1000000.0

/* status codes; sl_machine.err holds the detailed message */
enum {
  SL_OK = 0,
  SL_EARG,        /* bad argument: m->err_arg names which one */
  SL_EOOB,        /* out-of-bounds access (nothing was touched) */
  SL_EFLAG,       /* set_flag / wait_flag misuse */
  SL_EFREED,      /* use of a freed symmetric buffer */
  SL_ENOMEM,      /* host allocation failed */
  SL_EHEAP,       /* symmetric heap exhausted */
  SL_ESTATE,      /* call in the wrong state (e.g. outside a launch) */
  SL_EDEADLOCK,   /* every block waits and nothing is pending */
  SL_ETIME,       /* virtual-time limit reached */
  SL_ESKIP,       /* checked run: the access was reported and skipped */
  SL_EUNBACKED    /* timing-only: data asked of memory that holds no bytes */
};
const char *sl_strerror(int code);

/* pipes of an AIV core */
enum { SL_PIPE_S, SL_PIPE_V, SL_PIPE_MTE2, SL_PIPE_MTE3, SL_NPIPES };
/* the DMA engines a block drives besides its MTE pipes: not a pipe of the
** core (it queues nothing there), a thread of racecheck and a name in
** reports and traces ("DMA") */
#define SL_PIPE_DMA SL_NPIPES

/* the transport engines of include/device/gm2gm/engine/ besides MTE: SDMA
** (A2/A3, over HCCS/SIO), RDMA (RoCE, through the NICs), UDMA (Ascend950) */
enum { SL_ENG_SDMA, SL_ENG_RDMA, SL_ENG_UDMA, SL_NENG };
const char *sl_engine_name(int eng);

/* the 12 legal AIV hard events, SRC_DST */
enum {
  SL_EV_S_V, SL_EV_S_MTE2, SL_EV_S_MTE3, SL_EV_V_S, SL_EV_V_MTE2,
  SL_EV_V_MTE3, SL_EV_MTE2_S, SL_EV_MTE2_V, SL_EV_MTE2_MTE3, SL_EV_MTE3_S,
  SL_EV_MTE3_V, SL_EV_MTE3_MTE2, SL_NEVENTS
};
#define SL_NEVENT_IDS 8
const char *sl_event_name(int ev);
int sl_event_find(const char *name);     /* -1 when unknown */
int sl_event_dst(int ev);                /* the pipe that waits for it, -1 when unknown */
const char *sl_pipe_name(int pipe);
int sl_pipe_find(const char *name);      /* -1 unknown, SL_NPIPES = "ALL" */

/* kinds of path a transfer takes */
enum { SL_PATH_LOCAL, SL_PATH_HCCS, SL_PATH_SIO, SL_PATH_RDMA, SL_NPATHS };
const char *sl_path_name(int path);

/* signal operations and comparisons (CANN SHMEM numbering) */
enum { SL_SIGNAL_SET = 0, SL_SIGNAL_ADD = 1 };
enum { SL_CMP_EQ = 0, SL_CMP_NE, SL_CMP_GT, SL_CMP_GE, SL_CMP_LT, SL_CMP_LE,
       SL_NCMP };
const char *sl_cmp_name(int cmp);

/* memory spaces */
enum { SL_SPACE_GM, SL_SPACE_SYM, SL_SPACE_HOST, SL_SPACE_UB };
const char *sl_space_name(int space);

/* every figure of the timing model; filled from a SoC profile */
typedef struct sl_params {
  int n_pes;
  int cores;                /* AIV cores per PE */
  int64_t ub_bytes;         /* usable UB per core */
  int pes_per_server;
  int dies_per_card;        /* 2 on A3 (SIO between the dies), else 1 */
  int hccs_switch;          /* 1: HCCS through a switch (ports), 0: full mesh */
  int supernode_dies;       /* PEs on one switch fabric (A3 supernode); 0 = a server */
  double core_ghz;          /* AI core clock */
  double cycle2us;          /* system counter ticks per microsecond */
  double mte2_bytes_per_cycle, mte3_bytes_per_cycle;
  double mte_setup_ns;      /* fixed cost of one MTE transfer */
  int64_t l2_bytes;         /* a PE's L2 (0: none) */
  double l2_read_bytes_per_cycle;  /* MTE2 from L2 (mte2_bytes_per_cycle: from HBM) */
  double issue_ns;          /* S pipe cost to issue an instruction */
  double scalar_ns;         /* get_value / set_value */
  double vec_bytes_per_cycle, vec_setup_ns;
  double hbm_GBps;          /* per PE, shared by its cores */
  double local_alpha_ns;    /* GM access latency */
  double hccs_GBps;         /* per link (mesh) or per port (switch), one way */
  double hccs_alpha_ns, hccs_read_eff, hccs_write_eff;
  double sio_GBps, sio_alpha_ns;
  double rdma_GBps, rdma_alpha_ns;  /* per PE NIC, one way */
  double sdma_GBps, sdma_setup_ns;  /* a PE's SDMA engines (0: none); a transfer's fixed cost */
  double rdma_setup_ns;     /* RoCE: WQE, doorbell and NIC work of a transfer */
  double udma_GBps, udma_setup_ns;  /* Ascend950's UDMA (0 GB/s: the SoC has none) */
  double sdma_task_ns, rdma_task_ns, udma_task_ns;  /* a descriptor's engine time after
                                                     ** its stream, which no queue hides */
  int dma_queue_depth;      /* descriptors an engine queue holds at once (set up or streaming) */
  double signal_ns;         /* S pipe cost of a signal write */
  double poll_ns;           /* wake-up delay of a satisfied wait */
  double pipe_barrier_ns;
  int queue_depth;          /* instructions a pipe's queue holds before S stalls */
  double barrier_base_ns;   /* barrier_all: base + stages * path alpha */
  double sync_all_ns;
  double launch_us;         /* kernel launch cost (host to device) */
  double host_GBps, host_setup_us;  /* aclrtMemcpy host<->device */
  int64_t sym_heap_bytes;   /* symmetric heap per PE */
  int prof_pe;              /* cycle profiling PE, -1 = off */
  int64_t time_limit_us;    /* 0 = none */
  int check;                /* SL_CHECK_* bits: a checked run records, skips, goes on */
  int64_t instruction_budget; /* Lua instructions a block may run between primitives
                                 (counted once the binding's watchdog arms its hook) */
  int64_t spin_limit;       /* primitives a block may call in a row while the
                            ** machine clock stands still (0 = none) */
  int64_t primitive_limit;  /* primitives one block may call in a launch (0 = none) */
  int scalar_amo;           /* 1: Ascend950's scalar and RDMA engine atomics (fetch,
                            ** inc, set, swap, compare-swap, bitwise; the wide adds) */
  int timing_only;          /* 1: buffers hold no bytes unless allocated backed */
  int run_ahead;            /* 1: a block runs ahead through primitives that only queue
                            ** to its own pipes (sim.c sl_must_yield); same times, fewer
                            ** wake-ups; 0: it yields to every block due before it */
  int data_op_engine_type;  /* SL_DOP_* bits: the init's engines (aclshmemx_init_attr's
                            ** option_attr.data_op_engine_type) */
  double settle_ns;         /* the flow solver's window: flow starts and ends within
                            ** it settle together (0: exact; core/flow.c) */
  int chain_flow;           /* 1: a pipelined chain whose one leg sets the pace is one
                            ** flow in a timing-only machine (core/chain.c) */
} sl_params;

/* data_op_engine_type_t (shmem_common_types.h): the engines a job inits; the
** same bits name what reaches a peer (its topo_list entry, sl_reach) */
enum { SL_DOP_MTE = 0x01, SL_DOP_SDMA = 0x02, SL_DOP_ROCE = 0x04, SL_DOP_UDMA = 0x08,
       SL_DOP_ALL = 0x0f };

/* check modes (mssanitizer / compute-sanitizer tools) */
enum { SL_CHECK_MEM = 1, SL_CHECK_RACE = 2, SL_CHECK_SYNC = 4, SL_CHECK_INIT = 8 };

/* kinds of report of a checked run */
enum { SL_R_OOB, SL_R_FREED, SL_R_UNINIT, SL_R_RACE, SL_R_SYNC, SL_NREPORTS };

/* one (deduplicated) report */
typedef struct sl_report {
  int32_t kind, write, space, buf, pe;      /* what was touched, on which PE */
  int64_t off, bytes, cap;
  int32_t by_pe, by_block, pipe, frame, site;
  double time_us;
  int32_t o_pe, o_block, o_pipe, o_site, o_write;   /* race: the other side */
  int32_t flag;                              /* synccheck: event * SL_NEVENT_IDS + id, or -1 */
  char msg[200];                             /* synccheck: what went wrong */
  int64_t count;
} sl_report;


typedef struct sl_machine sl_machine;
typedef struct sl_bytemap sl_bytemap;   /* initcheck's shadow of one buffer */

size_t sl_report_count(const sl_machine *m);
const sl_report *sl_report_get(const sl_machine *m, size_t i);
void sl_report_clear(sl_machine *m);
/* the Lua source line (an id the binding interns) of the primitive running */
void sl_set_site(sl_machine *m, int32_t site);
/* a stuck checked launch: report every waiting block, then end it cleanly */
void sl_launch_salvage(sl_machine *m);

/* a place in memory: buffer (or UB of a core) + PE + byte offset */
typedef struct sl_loc {
  int32_t buf;              /* buffer id, or -1 for UB */
  int32_t pe;
  int32_t core;             /* UB only */
  int32_t dtype;
  int64_t off;              /* bytes from the start of the allocation */
  int64_t cap;              /* bytes of the allocation (bounds) */
  int64_t base;             /* UB: byte offset of the allocation in the UB */
} sl_loc;

/* buffers */
typedef struct sl_buf {
  int space;
  int dtype;
  int freed;
  int32_t lead;             /* data's bytes past the start of its calloc (a page start) */
  int64_t n;                /* elements per PE */
  int64_t bytes;            /* bytes per PE */
  int64_t sym_off;          /* symmetric heap offset */
  int64_t stride;           /* bytes between PE copies (0 for host) */
  uint8_t *data;            /* NULL: unbacked (timing-only), reads are refused */
  size_t mapped;            /* data's size when it is a mapping of its own, else 0 */
  uint64_t gen;             /* moves at every write of its bytes (sli_gm_written) */
  char name[32];
  int32_t waiters;          /* blocks waiting on it (0: none) */
  int32_t *wait_heads;      /* per PE copy: head of the list of its waiters */
  sl_bytemap *init;         /* initcheck: the bytes written since allocation */
  int32_t lazy_src;         /* staged chunks reading it whose bytes did not move */
} sl_buf;

/* machine */
const char *sl_params_check(const sl_params *p);   /* bad field or NULL */
sl_machine *sl_machine_new(const sl_params *p, int *status);
void sl_machine_free(sl_machine *m);
const sl_params *sl_machine_params(const sl_machine *m);
const char *sl_machine_err(const sl_machine *m);
int sl_machine_err_arg(const sl_machine *m);
/* renumber the last error's argument through map[arg] (a call built of others) */
void sl_machine_map_err_arg(sl_machine *m, const int *map, int n);
sl_time sl_machine_now(const sl_machine *m);
int64_t sl_machine_events(const sl_machine *m);   /* events handled so far */
/* events handled so far of kind k (0 wake-up, 1 copy, 2 vector op, 3 signal,
** 4 pipe, 5 flow end, 6 DMA issue, 7 DMA queue; 0 for any other k) */
int64_t sl_machine_events_of(const sl_machine *m, int k);
/* what the flow solver did since the machine was made: transfers started,
** those of them that went on in their pipe's last flow, instants settled,
** flows re-rated in them, fills (progressive fillings), and the flows those
** fills filled (widening fills again with more) */
typedef struct sl_flow_stats {
  int64_t starts, continued, settles, rerated, fills, filled;
} sl_flow_stats;
void sl_machine_flow_stats(const sl_machine *m, sl_flow_stats *s);
int sl_path(const sl_machine *m, int from_pe, int to_pe);
/* the transports (SL_DOP_* bits) by which PE from reaches PE to, as the
** library's reach_info_init fills topo_list: MTE (and SDMA, UDMA when the
** init names them) inside a server or supernode, RoCE to every PE when it
** names ROCE */
unsigned sl_reach(const sl_machine *m, int from_pe, int to_pe);
int64_t sl_path_bytes(const sl_machine *m, int path);

/* n elements of esz bytes, saturating at INT64_MAX (then out of bounds); the
** common case (|n| and esz below 2^31: no product overflows) without the division */
static inline int64_t sl_nbytes(int64_t n, int64_t esz) {
  if ((uint64_t)n + (uint64_t)INT32_MAX <= 2u * (uint64_t)INT32_MAX && esz > 0 && esz <= INT32_MAX)
    return n * esz;
  return (n > INT64_MAX / esz || n < -(INT64_MAX / esz)) ? INT64_MAX : n * esz;
}

/* memory; flags: SL_ALLOC_BACKED keeps bytes in a timing-only machine (signals,
** flags, whatever steers control flow); a data machine backs every buffer */
enum { SL_ALLOC_BACKED = 1 };
int sl_alloc(sl_machine *m, int space, int dtype, int64_t n, const char *name, int flags);
/* the same at a multiple of align bytes of the heap (symmetric; a power of
** two, 16 at least), and with zeroed its bytes count as written (calloc) */
int sl_alloc_sym(sl_machine *m, int space, int dtype, int64_t n, const char *name,
                 int flags, int64_t align, int zeroed);
int sl_free(sl_machine *m, int buf);
/* free the buffer a whole view spans (SL_EARG for a sub-view) */
int sl_free_view(sl_machine *m, const sl_loc *l, int64_t bytes);
const sl_buf *sl_getbuf(const sl_machine *m, int buf);
int64_t sl_heap_used(const sl_machine *m);
void sl_heap_huge(void);
/* the same for a block of n bytes at p that the C library mapped apart (heap
** growth does not cover it): its whole 2 MiB pages, from SL_HEAP_BLOCK bytes on */
#define SL_HEAP_BLOCK ((size_t)4 << 20)
void sl_heap_block(void *p, size_t n);
/* checked host pointer to bytes at l in *p; of an unbacked buffer a read is
** SL_EUNBACKED and a write gives *p = NULL (nothing to write: it is dropped) */
int sl_host_ptr(sl_machine *m, const sl_loc *l, int64_t bytes, int write, uint8_t **p);
/* the host wrote bytes at l (initcheck) */
void sl_mark_init(sl_machine *m, const sl_loc *l, int64_t bytes);
int sl_memcpy(sl_machine *m, const sl_loc *dst, const sl_loc *src,
              int64_t bytes, double *cost_us);

/* launches */
/* SL_STEP_NOMEM: the launch ran out of host memory (sl_launch_abort it) */
enum { SL_STEP_RESUME, SL_STEP_DONE, SL_STEP_DEADLOCK, SL_STEP_TIMEOUT, SL_STEP_NOMEM };
int sl_launch_begin(sl_machine *m, int block_dim);
int sl_step(sl_machine *m, int *blk);
void sl_block_done(sl_machine *m, int blk);
void sl_launch_end(sl_machine *m, double *kernel_us, double *e2e_us,
                   double *start_us);
void sl_launch_abort(sl_machine *m);
int sl_running(const sl_machine *m);
uint32_t sl_machine_gen(const sl_machine *m);
double sl_kernel_now_us(const sl_machine *m);   /* now, from the kernel start */
int sl_block_parked(const sl_machine *m, int blk);
int sl_block_running(const sl_machine *m, int blk);
int sl_block_dim(const sl_machine *m);
void sl_block_where(const sl_machine *m, int blk, int *pe, int *block);
double sl_block_time_us(const sl_machine *m, int blk);
int sl_block_frame(const sl_machine *m, int blk);
/* runaway kernels: why sl_prim_tick stops a block */
enum { SL_RUN_OK = 0, SL_RUN_SPIN, SL_RUN_TOTAL };
int sl_prim_tick(sl_machine *m, int blk);
void sl_block_prims(const sl_machine *m, int blk, int64_t *launch, int64_t *quiet);
int sl_block_open_frames(const sl_machine *m, int blk, int *frame, int32_t *site);
void sl_guard_stats(const sl_machine *m, int64_t *prims, int64_t *quiet_max);
int sl_describe_waits(const sl_machine *m, char *out, size_t size);
/* what a resumed block gets back (sl_block_result, sl_block_stash): nothing,
** one integer (a woken wait's value), one number (v holds a double's
** bits: a float atomic's old value), or the values it yielded itself, still
** on its own stack (v of them) */
enum { SL_RES_NONE = 0, SL_RES_INT = 1, SL_RES_NUM = 2, SL_RES_YIELDED = 3 };
int sl_block_result(sl_machine *m, int blk, int64_t *v);
void sl_block_stash(sl_machine *m, int blk, int kind, int64_t v);
/* the block's staging UB for the staged puts/gets (carved once per launch
** unless set_mte_config named one) and the event id they chain with */
int sl_ub_scratch(sl_machine *m, int blk, int dtype, sl_loc *out, int *id);
int sl_set_mte_config(sl_machine *m, int blk, const sl_loc *ub, int64_t ub_bytes, int id);
#define SL_SCRATCH_BYTES 16384
#define SL_SCRATCH_ID 7
/* 1 when the block ran ahead of the earliest event: it must yield */
int sl_must_yield(sl_machine *m, int blk);
int sl_block_ahead(const sl_machine *m, int blk);   /* ran ahead: yield before a non-queue primitive */
/* 1 when a get_value / set_value of the block's UB may run ahead (mte.c) */
int sl_scalar_ahead(const sl_machine *m, int blk);
/* ... or one of element i of ub, which no pending work of the block touches */
int sl_scalar_ahead_at(const sl_machine *m, int blk, const sl_loc *ub, int64_t i);

/* primitives; blk is the running block. flags: SL_ALLOC_BACKED as sl_alloc */
int sl_ub_alloc(sl_machine *m, int blk, int dtype, int64_t n, int flags, sl_loc *out);
int sl_data_copy(sl_machine *m, int blk, const sl_loc *dst, const sl_loc *src,
                 int64_t elems, int pad);
int sl_set_flag(sl_machine *m, int blk, int ev, int id);
int sl_wait_flag(sl_machine *m, int blk, int ev, int id);
int sl_pipe_barrier(sl_machine *m, int blk, int pipe);
int sl_set_atomic(sl_machine *m, int blk, int op, int dtype);
int sl_get_value(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                 double *num, int64_t *ival);
int sl_set_value(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                 double num, int64_t ival, int isint);
/* the same, told what sl_scalar_ahead_at said of the element just before
** (ahead 0 or 1; nothing ran between), which it then need not ask again;
** ahead -1: it asks, as the two above do */
int sl_get_value_ahead(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                       double *num, int64_t *ival, int ahead);
int sl_set_value_ahead(sl_machine *m, int blk, const sl_loc *ub, int64_t i,
                       double num, int64_t ival, int isint, int ahead);
/* scalar passes (scalar.c): the accesses of a GetValue / SetValue loop in
** one call, run only while sl_scalar_ahead holds. ub: per_expert, seen,
** per_rank, marks */
int sl_scalar_topk_count(sl_machine *m, int blk, const sl_loc *topk, int64_t first, int64_t K,
                         int64_t E, int64_t per, const sl_loc *const ub[4], int64_t at);
int sl_scalar_histogram(sl_machine *m, int blk, const sl_loc *src, int64_t first,
                        int64_t count, int64_t lo, int64_t hi, const sl_loc *cnt,
                        const sl_loc *idx);
/* MoE routes (route.c): tokens x topk expert ids drawn as shmemlab.moe's
** uniform routing draws them, from its splitmix64 state *x (moved on) */
int sl_route_uniform(uint64_t *x, int64_t experts, int topk, int64_t tokens, int64_t *taken,
                     int32_t *out);
/* ... and rows ids counted per expert and per group of `group` experts */
int sl_route_count(const int32_t *ids, int64_t rows, int64_t experts, int64_t group,
                   int64_t *per_expert, int64_t *per_group);
/* sl_vec's op code is overloaded by sign: a positive code is one of the
** binary ops, the atomic codes SL_OP_ADD/MAX/MIN (dtype.h) reused (dst = a
** op b, two sources); zero or negative is one of these one-source ops (dst =
** f(a), or Duplicate's scalar). SL_VEC_IS_BINARY tells them apart */
enum { SL_VEC_MULS = 0, SL_VEC_CAST = -1, SL_VEC_DUP = -2, SL_VEC_COPY = -3,
       SL_VEC_ABS = -4, SL_VEC_RMAX = -5, SL_VEC_CAST_RINT = -6 };
#define SL_VEC_IS_BINARY(op) ((op) > 0)
/* SL_VEC_RMAX writes one element of dst (ReduceMax of n elements of a);
** the casts take a dst of another dtype */
/* the UB forms: put (dst gm, src ub) or get (dst ub, src gm), one copy */
int sl_mte_ub(sl_machine *m, int blk, int get, const sl_loc *gm, const sl_loc *ub,
              int64_t elems, int pe);
int sl_vec(sl_machine *m, int blk, int op, const sl_loc *dst,
           const sl_loc *a, const sl_loc *b, double s, int64_t n);
int64_t sl_system_cycle(sl_machine *m, int blk);
int sl_mte(sl_machine *m, int blk, int get, const sl_loc *dst,
           const sl_loc *src, const sl_loc *ub, int64_t ub_bytes,
           int64_t elems, int pe, int id);
/* a double-buffered chain of mte_put_nbi / mte_get_nbi chunks through the
** halves (bufs = 2) or the whole (bufs = 1) of a UB tensor of ub_n elements,
** what op.get_pipelined / put_pipelined issue: each chunk waits for its
** half's MTE3_MTE2 flag (from the second round on), moves through it and
** sets the flag; then MTE2 waits for the last writes. sl_mte_pipe_step
** issues the next of those primitives (PX_DONE: none left), so the caller
** lets the block yield between them exactly where the chunked calls would */
enum { PX_WAIT, PX_MOVE, PX_SET, PX_DRAIN, PX_DONE };
typedef struct sl_pipe_xfer {
  sl_loc dst, src, ub;
  int64_t count, half;      /* elements, and elements of one buffer */
  int64_t done;             /* elements issued */
  int32_t get, pe, bufs;
  int32_t c, step, drained; /* chunks issued, the next primitive, final waits done */
} sl_pipe_xfer;
int sl_mte_pipe_step(sl_machine *m, int blk, sl_pipe_xfer *x);
/* chains issued as one flow (chain_flow) and as chunks since the machine was made */
void sl_machine_chains(const sl_machine *m, int64_t *one, int64_t *chunked);
void sl_machine_ghosts(const sl_machine *m, int64_t *ghosts, int64_t *late);
int sl_signal_op(sl_machine *m, int blk, const sl_loc *sig, int64_t v,
                 int op, int pe, int after_mte3);
int sl_signal_ahead(const sl_machine *m);
int sl_signal_wait(sl_machine *m, int blk, const sl_loc *sig, int cmp,
                   int64_t v, int64_t *got);
/* point-to-point synchronisation over a set of elements (CANN SHMEM's
** p2p_sync family): wait for, or test once, all / any / some of the n
** elements of ivars that status does not exclude (status[i] != 0) holding
** `ivars[i] cmp value`, or `cmp vals[i]` (the _vector forms). ret: ALL 1 or 0
** (a test; a wait returns 1), ANY the lowest index satisfied or -1 (SIZE_MAX),
** SOME the count, the indices ascending in idx. A parked wait wakes with it */
enum { SL_WS_ALL, SL_WS_ANY, SL_WS_SOME };
typedef struct sl_wset {
  sl_loc ivars, status, vals, idx;  /* status, vals, idx used when has_* */
  int has_status, has_vals, has_idx;
  int64_t n;
  int mode, cmp;
  int64_t ival;                     /* the value, integer ivars */
  double fval;                      /* the value, float ivars */
  const char *name;                 /* the call, for messages (a static string) */
} sl_wset;
/* 1 when dtype t can be waited on (the library's ACLSHMEM_P2P_SYNC_TYPE_FUNC) */
int sl_p2p_dtype(int t);
int sl_wait_set(sl_machine *m, int blk, const sl_wset *w, int test, int64_t *ret);
/* hcomm's WaitSignalValue: poll a GM flag into UB (data_copy, MTE2_S,
** GetValue, compare) until cmp holds; emulated without a Lua loop */
int sl_poll_until(sl_machine *m, int blk, const sl_loc *flag, const sl_loc *ub,
                  int64_t elems, int cmp, int64_t v, int64_t *got);
/* one element to / from PE pe (aclshmem_NAME_p / _g): floats take fv, integers iv */
int sl_p(sl_machine *m, int blk, const sl_loc *dst, int64_t iv, double fv, int pe);
int sl_g(sl_machine *m, int blk, const sl_loc *src, int pe, int64_t *iv, double *fv);
/* atomics (shmem_device_amo.h); SET and ADD are the signal ops' codes */
enum { SL_AMO_SET = SL_SIGNAL_SET, SL_AMO_ADD = SL_SIGNAL_ADD, SL_AMO_INC, SL_AMO_CAS,
       SL_AMO_FETCH, SL_AMO_AND, SL_AMO_OR, SL_AMO_XOR };
typedef struct sl_amo_form {
  const char *name;         /* "atomic_fetch_add" */
  int op, fetch;            /* SL_AMO_*; 1: returns the old value (synchronous) */
  unsigned types;           /* dtypes (bit per sl_dtype) its untyped and typed calls declare */
  unsigned own[4];          /* dtypes each engine's own call takes (index SL_ENGINE_*; 0 unused) */
  unsigned engines;         /* the engines that declare it as their own call (bit per SL_ENGINE_*) */
} sl_amo_form;
/* who carries an atomic: the library's choice by topology, or the engine a
** call names (aclshmemx_mte_atomic_*, _roce_atomic_*, _udma_atomic_*) */
enum { SL_ENGINE_AUTO, SL_ENGINE_MTE, SL_ENGINE_ROCE, SL_ENGINE_UDMA };
extern const sl_amo_form sl_amo_forms[];   /* ends with a NULL name */
/* the library's name of a dtype in its typed calls (half, bfloat16, float, int32) */
const char *sl_dtype_cann(int t);
/* an atomic of form f on element dst of PE pe: value iv / fv, compare_swap's
** cond; ub the scratch UB (atomic_add's UB + MTE3 path); engine SL_ENGINE_*
** (roce: through the NICs whatever the PEs). A fetching form
** parks the block: its old value comes with the wake-up */
int sl_amo(sl_machine *m, int blk, const sl_amo_form *f, int engine, const sl_loc *dst,
           const sl_loc *ub, int64_t iv, double fv, int64_t cond, int pe);
/* teams (shmem_host_team.h, shmem_device_team.h): made and destroyed on the
** host; a team is one or more strided groups of PEs (a split of a team splits
** each group), every query answered as PE pe sees it (its own group) */
#define SL_TEAM_WORLD 0
#define SL_TEAM_INVALID (-1)
#define SL_MAX_TEAMS 2048         /* ACLSHMEM_MAX_TEAMS */
int sl_team_split_strided(sl_machine *m, int parent, int start, int stride, int size,
                          int *out);
int sl_team_split_2d(sl_machine *m, int parent, int x_range, int *xt, int *yt);
int sl_team_destroy(sl_machine *m, int team);
int sl_team_my_pe(const sl_machine *m, int team, int pe);      /* -1: not a member */
int sl_team_n_pes(const sl_machine *m, int team, int pe);      /* -1: not a member */
int sl_team_global(const sl_machine *m, int team, int n, int pe);
int sl_team_translate(const sl_machine *m, int src, int src_pe, int dest, int pe);
/* the team collectives: aclshmem_barrier (a quiet first), aclshmem_sync (no
** quiet), aclshmemx_roce_barrier (roce_quiet to the team, then roce_sync),
** aclshmemx_roce_team_sync (a dissemination over RoCE writes) */
enum { SL_TEAM_BARRIER, SL_TEAM_SYNC, SL_TEAM_ROCE_BARRIER, SL_TEAM_ROCE_SYNC };
int sl_team_barrier(sl_machine *m, int blk, int team, int kind);
int sl_quiet(sl_machine *m, int blk);
/* a DMA engine's transfer of elems from src to dst, one of them PE pe's
** copy of a symmetric buffer (get: src, else dst), through relay (-1: none;
** UDMA's relay mode) and, with sig, then sig = value (UDMA put_signal);
** nothing of the block's MTE pipes, back at issue; ub is the call's UB
** workspace (its descriptor staging, NULL for none). Errors number the
** arguments dst 1, src 2, ub 3, elems 4, pe 5, relay 6, sig 7, value 8 */
int sl_dma(sl_machine *m, int blk, int eng, int get, const sl_loc *dst,
           const sl_loc *src, const sl_loc *ub, int64_t elems, int pe, int relay,
           const sl_loc *sig, int64_t value);
/* sl_dma's put whose descriptor lands dst = dst op src (op SL_OP_ADD, MAX or
** MIN; dst and src of one dtype): HCCL's SDMA inline reduce and RDMA write
** with reduce, timed as the put */
int sl_dma_reduce(sl_machine *m, int blk, int eng, const sl_loc *dst, const sl_loc *src,
                  const sl_loc *ub, int64_t elems, int pe, int op);
/* the engine's quiet: S waits until every transfer of the block on it landed */
int sl_dma_quiet(sl_machine *m, int blk, int eng);
int sl_fence(sl_machine *m, int blk);
int sl_barrier_all(sl_machine *m, int blk);
int sl_sync_all(sl_machine *m, int blk);
/* aclshmem_sync_all: every block of every PE, no quiet (sl_sync_all is
** Ascend C's SyncAll, the blocks of one PE) */
int sl_shmem_sync_all(sl_machine *m, int blk);

/* cycle profiling */
int sl_prof(sl_machine *m, int blk, int frame, int end);
void sl_prof_reset(sl_machine *m);
/* profiled PE's counters: returns 0 when profiling is off */
int sl_prof_get(const sl_machine *m, int block, int frame, int64_t *cycles,
                int64_t *count);
int sl_prof_pe(const sl_machine *m);
int sl_prof_set_pe(sl_machine *m, int pe);
/* shadow frames of every PE (frames < SL_SHADOW_FRAMES, blocks < 64) */
#define SL_PROF_MAX_FRAME 1024
#define SL_PROF_MAX_BLOCK 64
#define SL_SHADOW_FRAMES 16
int sl_shadow_get(const sl_machine *m, int pe, int block, int frame,
                  int64_t *cycles, int64_t *count);

/* trace of the last launches (per transfer / frame slices), when enabled */
typedef struct sl_trace_rec {
  sl_time start, end;
  int32_t pe, block;
  int32_t kind;             /* 0 transfer, 1 frame, 2 signal, 3 wake */
  int32_t path;             /* transfer path / frame id */
  int64_t bytes;
  int32_t peer_pe, peer_block;  /* signal: the waking block */
} sl_trace_rec;
void sl_trace_enable(sl_machine *m, int64_t max_records);
size_t sl_trace_count(const sl_machine *m);
const sl_trace_rec *sl_trace_get(const sl_machine *m, size_t i);
void sl_trace_clear(sl_machine *m);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif

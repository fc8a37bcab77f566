/*
** sli.h -- internal structures of the engine, shared by the core sources only.
*/
#ifndef SLI_H
#define SLI_H

#include "sl.h"

/* kinds of event */
enum { EV_WAKE, EV_COPY, EV_VEC, EV_SIGNAL };

/* block states */
enum { B_IDLE, B_READY, B_RUN, B_SIGNAL, B_BARRIER, B_SYNC, B_DONE };

/* a resolved place, enough to reach the bytes at completion */
typedef struct sl_addr {
  int32_t buf, pe, core, dtype;
  int64_t off;
} sl_addr;

/* event payload (the heap orders small keys that point here) */
typedef struct sl_event {
  int32_t kind, blk;
  int32_t op, vop;          /* atomic mode (copies), vector op */
  sl_addr dst, src, src2;
  int64_t n;                /* bytes (copy) or elements (vector) */
  int64_t val;              /* signal value */
  double s;                 /* vector scalar */
  int32_t site;             /* checked runs: the issuing Lua line */
  int32_t snap;             /* racecheck: the release a signal carries */
  int32_t next_free;
} sl_event;

typedef struct sl_key {
  sl_time t;
  uint64_t seq;
  int32_t ev;
} sl_key;

#define SL_FSTACK 16

typedef struct sl_block {
  sl_time t;                /* S pipe: where the block's code is */
  sl_time pipe[SL_NPIPES];  /* free_at of each pipe: when it takes the next one */
  sl_time done[SL_NPIPES];  /* when all a pipe's work has landed (flags fire) */
  sl_time flag[SL_NEVENTS][SL_NEVENT_IDS];
  uint16_t flagset[SL_NEVENTS];
  sl_time inflight;         /* latest completion of what it issued */
  sl_time fence;            /* remote writes land no earlier than this */
  sl_time end;
  int32_t pe, b, state;
  int32_t atomic, atomic_dtype;
  /* what it waits for */
  sl_addr w;
  int32_t wcmp, wnext;
  int32_t wsite;            /* checked runs: the line it waits at */
  int64_t wval;
  sl_addr wub;              /* polling wait: UB that receives the flag */
  int64_t wbytes;
  sl_time wfirst, wperiod;  /* first poll completion, poll period (0: none) */
  /* value handed back when it resumes */
  int32_t retkind;
  int64_t ret;
  int64_t ub_top;
  int64_t scratch;          /* UB offset of the scratch, -1 = none */
  uint8_t qn[3], qh[3];     /* queue fill and head of V, MTE2, MTE3 */
  int32_t fdepth;
  int32_t fid[SL_FSTACK];
  sl_time fstart[SL_FSTACK];
} sl_block;

/* a shared resource (HBM, link, port, NIC): its busy intervals ahead of now,
** sorted and disjoint; a transfer fills the gaps first come first served */
typedef struct sl_res {
  sl_time *iv;              /* pairs start, end; live from head to n */
  int32_t head, n, cap;
} sl_res;

typedef struct sl_seg { int64_t off, size; } sl_seg;

typedef struct sl_race sl_race;   /* racecheck state (race.c) */

/* figures of the profile in picoseconds, computed once */
typedef struct sl_ps {
  sl_time issue, scalar, signal, poll, pipe_barrier, barrier_base, sync_all,
          vec_setup, mte_setup;
  sl_time alpha[SL_NPATHS];
} sl_ps;

struct sl_machine {
  sl_params p;
  sl_ps ps;
  char err[512];
  int err_arg;
  sl_time now;
  /* buffers */
  sl_buf *bufs;
  int nbufs, capbufs;
  sl_seg *segs;             /* symmetric heap, sorted by offset */
  int nsegs, capsegs;
  int64_t heap_used;
  /* UB storage per (pe, core), grown to the high-water mark */
  uint8_t **ub;
  int64_t *ubcap;
  /* shared resources */
  sl_res *hbm, *hccs, *sio, *nic;
  int nhccs;
  sl_res *allres;           /* every resource, for clean-up */
  size_t nres;
  int64_t path_bytes[SL_NPATHS];
  /* events */
  sl_event *evs;
  int32_t nevs, capevs, free_ev;
  sl_key *heap;
  int32_t nheap, capheap;
  sl_key *fifo;              /* keys scheduled in (time, seq) order: no heap work */
  int32_t fhead, fn, fcap;
  uint64_t seq;
  /* the launch */
  int running, block_dim, nb, ndone;
  int cur;                  /* the block resumed last */
  sl_block *blocks;
  int32_t bar_count;
  sl_time bar_tmax;
  int32_t *sync_count;
  sl_time *sync_tmax;
  sl_time t0;
  sl_time *qring;           /* [block][3][queue_depth] completion times */
  uint32_t gen;             /* launch generation (UB views expire) */
  /* profiling */
  int64_t *prof_cycles, *prof_count;       /* [64][1024] */
  int64_t *shadow;                          /* [pe][64][16][2] */
  /* checked runs */
  int32_t site;             /* Lua line of the primitive being run */
  sl_report *reports;
  size_t nreports, capreports;
  uint8_t **ubinit;         /* initcheck: initialised bytes of each UB */
  sl_race *race;            /* racecheck: clocks and shadows */
  /* trace */
  sl_trace_rec *trace;
  size_t ntrace, captrace, maxtrace;
};

/* sim.c */
int sli_push(sl_machine *m, sl_time t, const sl_event *e);
sl_event *sli_newev(sl_machine *m, int32_t *id);
int sli_schedule(sl_machine *m, sl_time t, int32_t id);
void sli_wake(sl_machine *m, int blk, sl_time t);
sl_time sli_top(const sl_machine *m);
void sli_clear_events(sl_machine *m);
int sli_err(sl_machine *m, int code, int arg, const char *fmt, ...);
#define SLI_TRACING(m) ((m)->maxtrace > 0)
void sli_trace(sl_machine *m, sl_time start, sl_time end, int pe, int block,
               int kind, int path, int64_t bytes, int ppe, int pblock);

/* mem.c */
uint8_t *sli_ptr(sl_machine *m, const sl_addr *a);
void sli_addr(const sl_loc *l, sl_addr *a);
int sli_bounds(sl_machine *m, const sl_loc *l, int64_t bytes, int write,
               const char *what, int arg, int by_pe, int by_block);
int sli_ub_reserve(sl_machine *m, int pe, int core, int64_t top);

/* mte.c */
void sli_apply(sl_machine *m, sl_event *e, sl_time t);
sl_time sli_ps(double ns);
sl_time sli_alpha(const sl_machine *m, int path);
void sli_res_clear(sl_machine *m, int release);
void sli_queue(sl_machine *m, sl_block *b, int pipe, sl_time end, int admit);

/* check.c */
int sli_report(sl_machine *m, int kind, const sl_loc *l, int64_t bytes, int write,
               int blk, int pipe, const char *msg);
void sli_init_write(sl_machine *m, const sl_addr *a, int64_t bytes);
int sli_init_read(sl_machine *m, const sl_addr *a, int64_t bytes, int blk, int pipe,
                  int32_t site);
void sli_check_block_done(sl_machine *m, int blk);
uint8_t *sli_init_ptr(sl_machine *m, const sl_addr *a);

/* race.c */
void sli_race_free(sl_machine *m);
int sli_race_begin(sl_machine *m);
void sli_race_issue(sl_machine *m, int blk, int pipe);
void sli_race_set_flag(sl_machine *m, int blk, int ev, int id, int src);
void sli_race_wait_flag(sl_machine *m, int blk, int ev, int id, int dst);
void sli_race_barrier(sl_machine *m, int blk, int pipe);
void sli_race_meet(sl_machine *m, int pe);
int32_t sli_race_release(sl_machine *m, int blk);
void sli_race_acquire(sl_machine *m, int blk, int32_t snap);
void sli_race_acquire_thread(sl_machine *m, int blk, uint32_t from);
void sli_race_access(sl_machine *m, int blk, int pipe, const sl_loc *l, int64_t bytes,
                     int write);
void sli_race_signal(sl_machine *m, const sl_addr *a, int32_t snap, int add);
void sli_race_observe(sl_machine *m, int blk, const sl_addr *a);
void sli_report_race(sl_machine *m, const sl_loc *l, int64_t bytes, int write, int blk,
                     int pipe, int oblk, int opipe, int32_t osite, int owrite);

/* sync.c */
void sli_notify(sl_machine *m, const sl_addr *a, int64_t bytes, sl_time t,
                int from_blk);
int sli_flag_set(sl_machine *m, sl_block *b, int ev, int id);
int sli_flag_wait(sl_machine *m, sl_block *b, int ev, int id);
int sli_park(sl_machine *m, int blk, const sl_addr *a);
void sli_unpark_all(sl_machine *m);

#endif

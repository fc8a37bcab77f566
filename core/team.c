/*
** team.c -- teams (include/host/team/shmem_host_team.h,
** include/device/team/shmem_device_team.h) and their barrier and sync
** (shmem_device_cc.h). The lab has one host for every PE, so a team is the
** union of what each PE's host would hold: one or more strided groups of
** PEs, a PE in at most one of them. A split of a team splits each of its
** groups; split_2d gives a PE the x team and the y team of its own group.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sli.h"

/* one strided group of a team */
typedef struct sl_tgroup {
  int32_t first, stride, size;
  int32_t count;            /* blocks arrived at its barrier or sync */
  sl_time tmax;             /* the latest arrival */
} sl_tgroup;

struct sl_team {
  int used;
  int ngroups;
  sl_tgroup *g;
  int32_t *group;           /* per PE: its group, -1 when not a member */
};

/* the team of id, or NULL when it is not one (TEAM_INVALID, destroyed) */
static sl_team *team_at(const sl_machine *m, int id) {
  return id >= 0 && id < m->nteams && m->teams[id].used ? &m->teams[id] : NULL;
}

/* free the teams of a machine */
void sli_team_free(sl_machine *m) {
  int i;
  for (i = 0; i < m->nteams; i++) { free(m->teams[i].g); free(m->teams[i].group); }
  free(m->teams);
  m->teams = NULL;
  m->nteams = 0;
}

/* a free team slot with room for ngroups groups (-1: out of memory / full) */
static int team_new(sl_machine *m, int ngroups) {
  int id;
  sl_team *t;
  for (id = 0; id < m->nteams && m->teams[id].used; id++) {}
  if (id == SL_MAX_TEAMS) return -1;
  if (id == m->nteams) {
    sl_team *nt = realloc(m->teams, (size_t)(id + 1) * sizeof(*nt));
    if (nt == NULL) return -1;
    m->teams = nt;
    memset(&nt[id], 0, sizeof(*nt));
    m->nteams = id + 1;
  }
  t = &m->teams[id];
  free(t->g);
  free(t->group);
  t->g = calloc((size_t)ngroups, sizeof(*t->g));
  t->group = malloc((size_t)m->p.n_pes * sizeof(*t->group));
  if (t->g == NULL || t->group == NULL) return -1;
  memset(t->group, 0xff, (size_t)m->p.n_pes * sizeof(*t->group));
  t->ngroups = 0;
  t->used = 1;
  return id;
}

/* add group (first, stride, size) to team t */
static void team_add(sl_team *t, int first, int stride, int size) {
  sl_tgroup *g = &t->g[t->ngroups];
  int r;
  g->first = first;
  g->stride = stride;
  g->size = size;
  for (r = 0; r < size; r++) t->group[first + r * stride] = t->ngroups;
  t->ngroups++;
}

/* TEAM_WORLD: every PE, one group (made with the machine) */
int sli_team_world(sl_machine *m) {
  int id = team_new(m, 1);
  if (id != SL_TEAM_WORLD) return SL_ENOMEM;
  team_add(&m->teams[id], 0, 1, m->p.n_pes);
  return SL_OK;
}

/* the parent of a split: a team, no launch running */
static int split_parent(sl_machine *m, int parent, sl_team **t) {
  if (m->running) return sli_err(m, SL_ESTATE, 0, "teams are made on the host, not in a launch");
  if ((*t = team_at(m, parent)) == NULL)
    return sli_err(m, SL_EARG, 1, "not a team (%d)", parent);
  return SL_OK;
}

/* aclshmem_team_split_strided: PEs start, start + stride, ... (size of them)
** of each group of the parent; they must lie in every group */
int sl_team_split_strided(sl_machine *m, int parent, int start, int stride, int size,
                          int *out) {
  sl_team *p;
  int i, id, st;
  *out = SL_TEAM_INVALID;
  if ((st = split_parent(m, parent, &p)) != SL_OK) return st;
  if (start < 0) return sli_err(m, SL_EARG, 2, "start must not be negative, got %d", start);
  if (stride < 1) return sli_err(m, SL_EARG, 3, "stride must be positive, got %d", stride);
  if (size < 1) return sli_err(m, SL_EARG, 4, "size must be positive, got %d", size);
  for (i = 0; i < p->ngroups; i++)
    if ((int64_t)start + (int64_t)(size - 1) * stride >= p->g[i].size)
      return sli_err(m, SL_EARG, 4, "PE %lld of the new team is not in the parent team "
                     "(%d PEs)", (long long)start + (long long)(size - 1) * stride,
                     (int)p->g[i].size);
  if ((id = team_new(m, p->ngroups)) < 0)
    return sli_err(m, SL_ENOMEM, 0, "no room for another team (at most %d)", SL_MAX_TEAMS);
  p = &m->teams[parent];                        /* the table may have moved */
  for (i = 0; i < p->ngroups; i++)
    team_add(&m->teams[id], p->g[i].first + start * p->g[i].stride, p->g[i].stride * stride,
             size);
  *out = id;
  return SL_OK;
}

/* aclshmem_team_split_2d: each group of the parent, ranks in rows of x_range,
** gives x teams (the rows) and y teams (the columns) */
int sl_team_split_2d(sl_machine *m, int parent, int x_range, int *xt, int *yt) {
  sl_team *p;
  int i, j, st, nx = 0;
  *xt = *yt = SL_TEAM_INVALID;
  if ((st = split_parent(m, parent, &p)) != SL_OK) return st;
  if (x_range < 1) return sli_err(m, SL_EARG, 2, "x_range must be positive, got %d", x_range);
  for (i = 0; i < p->ngroups; i++) {
    int x = x_range < p->g[i].size ? x_range : p->g[i].size;
    nx += (p->g[i].size + x - 1) / x;
  }
  if ((*xt = team_new(m, nx)) < 0 || (*yt = team_new(m, nx * x_range)) < 0) {
    if (*xt >= 0) m->teams[*xt].used = 0;
    *xt = *yt = SL_TEAM_INVALID;
    return sli_err(m, SL_ENOMEM, 0, "no room for two more teams (at most %d)", SL_MAX_TEAMS);
  }
  p = &m->teams[parent];
  for (i = 0; i < p->ngroups; i++) {
    const sl_tgroup *g = &p->g[i];
    int x = x_range < g->size ? x_range : g->size, rows = (g->size + x - 1) / x;
    for (j = 0; j < rows; j++)
      team_add(&m->teams[*xt], g->first + j * x * g->stride, g->stride,
               j == rows - 1 && g->size % x ? g->size % x : x);
    for (j = 0; j < x; j++)
      team_add(&m->teams[*yt], g->first + j * g->stride, g->stride * x,
               g->size / x + (j < g->size % x ? 1 : 0));
  }
  return SL_OK;
}

/* aclshmem_team_destroy: TEAM_INVALID or a destroyed team does nothing (as
** the library); TEAM_WORLD stays */
int sl_team_destroy(sl_machine *m, int id) {
  sl_team *t = team_at(m, id);
  if (m->running) return sli_err(m, SL_ESTATE, 0, "teams are destroyed on the host, not in a launch");
  if (id == SL_TEAM_WORLD) return sli_err(m, SL_EARG, 1, "TEAM_WORLD cannot be destroyed");
  if (t != NULL) t->used = 0;
  return SL_OK;
}

/* PE pe's number in team id, -1 when it is not a member (or no team) */
int sl_team_my_pe(const sl_machine *m, int id, int pe) {
  const sl_team *t = team_at(m, id);
  int g;
  if (t == NULL || pe < 0 || pe >= m->p.n_pes || (g = t->group[pe]) < 0) return -1;
  return (pe - t->g[g].first) / t->g[g].stride;
}

/* the PEs of PE pe's group of team id, -1 when it is not a member */
int sl_team_n_pes(const sl_machine *m, int id, int pe) {
  const sl_team *t = team_at(m, id);
  if (t == NULL || pe < 0 || pe >= m->p.n_pes || t->group[pe] < 0) return -1;
  return t->g[t->group[pe]].size;
}

/* aclshmem_team_pe_mapping: the global PE of number n of PE pe's group */
int sl_team_global(const sl_machine *m, int id, int n, int pe) {
  const sl_team *t = team_at(m, id);
  const sl_tgroup *g;
  if (t == NULL || pe < 0 || pe >= m->p.n_pes || t->group[pe] < 0) return -1;
  g = &t->g[t->group[pe]];
  return n >= 0 && n < g->size ? g->first + n * g->stride : -1;
}

/* aclshmem_team_translate_pe as PE pe sees it: number src_pe of its group
** of src, as a number of its group of dest (-1 when not in it) */
int sl_team_translate(const sl_machine *m, int src, int src_pe, int dest, int pe) {
  int global = sl_team_global(m, src, src_pe, pe);
  const sl_team *t = team_at(m, dest);
  if (global < 0 || t == NULL || t->group[pe] < 0 || t->group[global] != t->group[pe]) return -1;
  return sl_team_my_pe(m, dest, global);
}

/* forget every half-done barrier (a new launch) */
void sli_team_reset(sl_machine *m) {
  int i, j;
  for (i = 0; i < m->nteams; i++)
    for (j = 0; j < m->teams[i].ngroups; j++) { m->teams[i].g[j].count = 0; m->teams[i].g[j].tmax = 0; }
}

/* ceil(log2(n)): the rounds of a dissemination among n */
static int rounds(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

/* what aclshmemx_roce_team_sync among size PEs costs after its last
** arrival, as the library runs it: the counter's store, then ceil(log2 size)
** rounds, each an RDMA write of the 4-byte counter to the PE shift ahead
** (WQE and doorbell from S, the NIC's setup, the bytes, RDMA's alpha to land),
** the roce_quiet that polls for it (an issue), and the wait on the slot the
** PE shift behind writes (a poll) */
static sl_time roce_sync_cost(const sl_machine *m, int size) {
  sl_time round = m->ps.issue + m->ps.signal + m->ps.dma_setup[SL_ENG_RDMA] +
                  sli_ps(4.0 / m->p.rdma_GBps) + m->ps.alpha[SL_PATH_RDMA] + m->ps.issue +
                  m->ps.poll;
  return m->ps.signal + (sl_time)rounds(size) * round;
}

/* a block arrives at its team's collective (after its quiet, if any); the
** last block of the group releases every one of them */
void sli_team_arrive(sl_machine *m, int blk) {
  sl_block *b = &m->blocks[blk];
  sl_team *t = &m->teams[b->wteam];
  sl_tgroup *g = &t->g[t->group[b->pe]];
  int r, i, kind = b->wsync;
  sl_time at;
  b->state = B_TEAM;
  if (b->t > g->tmax) g->tmax = b->t;
  if (++g->count < g->size * m->block_dim) return;
  at = g->tmax + (kind >= SL_TEAM_ROCE_BARRIER ? roce_sync_cost(m, g->size)
                  : sli_barrier_cost(m, g->first, g->first + (g->size - 1) * g->stride,
                                     g->size));
  g->count = 0;
  g->tmax = 0;
  /* after a full quiet the engines meet too; a roce_barrier joined its RDMA
  ** transfers into S at its roce_quiet, a sync orders only S */
  sli_race_meet_pes(m, g->first, g->stride, g->size, kind != SL_TEAM_BARRIER);
  for (r = 0; r < g->size; r++)
    for (i = 0; i < m->block_dim; i++) {
      int k = (g->first + r * g->stride) * m->block_dim + i;
      if (m->blocks[k].state == B_TEAM) sli_wake(m, k, at);
    }
}

/* a team collective of kind SL_TEAM_* (see sl.h) by block blk; a
** roce_barrier of a PE outside the team returns at once, as the library's */
int sl_team_barrier(sl_machine *m, int blk, int id, int kind) {
  sl_block *b = &m->blocks[blk];
  const sl_team *t = team_at(m, id);
  if (t == NULL) return sli_err(m, SL_EARG, 1, "not a team (%d)", id);
  if (t->group[b->pe] < 0 && kind == SL_TEAM_ROCE_BARRIER) return SL_OK;
  if (t->group[b->pe] < 0)
    return sli_err(m, SL_EARG, 1, "PE %d is not a member of team %d", (int)b->pe, id);
  b->wteam = id;
  b->wsync = kind;
  b->wsite = m->site;
  switch (kind) {
    case SL_TEAM_BARRIER:                                   /* a quiet first */
      return sli_drain(m, blk, SL_DRAIN_ALL | SL_DRAIN_ENGINES, ACT_TEAM);
    case SL_TEAM_ROCE_BARRIER:                              /* roce_quiet to each peer */
      sli_race_dma_quiet(m, blk);
      b->t += (sl_time)(t->g[t->group[b->pe]].size - 1) * m->ps.issue;
      return sli_drain(m, blk, SL_DRAIN_DMA(SL_ENG_RDMA), ACT_TEAM);
    default:
      b->t += m->ps.issue;
      sli_team_arrive(m, blk);
      return SL_OK;
  }
}

/* what a block waiting at a team barrier waits for */
int sli_team_what(const sl_machine *m, const sl_block *b, char *out, size_t size) {
  const sl_team *t = &m->teams[b->wteam];
  const sl_tgroup *g = &t->g[t->group[b->pe]];
  static const char *const names[] = { "barrier", "sync", "roce_barrier", "roce_sync" };
  return snprintf(out, size, "%s(team %d) (%d of %d blocks of its %d PEs arrived)",
                  names[b->wsync], (int)b->wteam, (int)g->count,
                  (int)(g->size * m->block_dim), (int)g->size);
}

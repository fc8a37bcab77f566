/*
** lshmemlab_machine.c -- machines: core.new from a flat table of timing
** figures, memory, parameters, host copies and the task rows they leave,
** __gc/__close.
*/
#include "lshmemlab.h"

typedef struct pfield { const char *name; size_t off; char kind; } pfield;
#define PF(n, f, k) { n, offsetof(sl_params, f), k }
static const pfield pfields[] = {
  PF("pes", n_pes, 'i'), PF("aiv_cores", cores, 'i'),
  PF("ub_bytes", ub_bytes, 'l'), PF("pes_per_server", pes_per_server, 'i'),
  PF("dies_per_card", dies_per_card, 'i'), PF("hccs_switch", hccs_switch, 'b'),
  PF("supernode_dies", supernode_dies, 'i'),
  PF("core_ghz", core_ghz, 'd'), PF("cycle2us", cycle2us, 'd'),
  PF("mte2_bytes_per_cycle", mte2_bytes_per_cycle, 'd'),
  PF("mte3_bytes_per_cycle", mte3_bytes_per_cycle, 'd'),
  PF("mte_setup_ns", mte_setup_ns, 'd'), PF("issue_ns", issue_ns, 'd'),
  PF("l2_bytes", l2_bytes, 'l'), PF("l2_read_bytes_per_cycle", l2_read_bytes_per_cycle, 'd'),
  PF("scalar_ns", scalar_ns, 'd'),
  PF("vec_bytes_per_cycle", vec_bytes_per_cycle, 'd'),
  PF("vec_setup_ns", vec_setup_ns, 'd'), PF("hbm_GBps", hbm_GBps, 'd'),
  PF("local_alpha_ns", local_alpha_ns, 'd'), PF("hccs_GBps", hccs_GBps, 'd'),
  PF("hccs_alpha_ns", hccs_alpha_ns, 'd'),
  PF("hccs_read_eff", hccs_read_eff, 'd'),
  PF("hccs_write_eff", hccs_write_eff, 'd'), PF("sio_GBps", sio_GBps, 'd'),
  PF("sio_alpha_ns", sio_alpha_ns, 'd'), PF("rdma_GBps", rdma_GBps, 'd'),
  PF("rdma_alpha_ns", rdma_alpha_ns, 'd'), PF("signal_ns", signal_ns, 'd'),
  PF("sdma_GBps", sdma_GBps, 'd'), PF("sdma_setup_ns", sdma_setup_ns, 'd'),
  PF("rdma_setup_ns", rdma_setup_ns, 'd'), PF("udma_GBps", udma_GBps, 'd'),
  PF("udma_setup_ns", udma_setup_ns, 'd'), PF("sdma_task_ns", sdma_task_ns, 'd'),
  PF("rdma_task_ns", rdma_task_ns, 'd'), PF("udma_task_ns", udma_task_ns, 'd'),
  PF("dma_queue_depth", dma_queue_depth, 'i'),
  PF("poll_ns", poll_ns, 'd'), PF("pipe_barrier_ns", pipe_barrier_ns, 'd'),
  PF("queue_depth", queue_depth, 'i'),
  PF("barrier_base_ns", barrier_base_ns, 'd'),
  PF("sync_all_ns", sync_all_ns, 'd'), PF("launch_us", launch_us, 'd'),
  PF("host_GBps", host_GBps, 'd'), PF("host_setup_us", host_setup_us, 'd'),
  PF("sym_heap_bytes", sym_heap_bytes, 'l'), PF("prof_pe", prof_pe, 'i'),
  PF("time_limit_us", time_limit_us, 'l'), PF("check", check, 'i'),
  PF("instruction_budget", instruction_budget, 'l'),
  PF("spin_limit", spin_limit, 'l'), PF("primitive_limit", primitive_limit, 'l'),
  PF("scalar_amo", scalar_amo, 'b'),
  PF("timing_only", timing_only, 'b'), PF("settle_ns", settle_ns, 'd'),
  PF("run_ahead", run_ahead, 'b'), PF("chain_flow", chain_flow, 'b'),
  PF("data_op_engine_type", data_op_engine_type, 'i'),
  { NULL, 0, 0 }
};

/* fill p from the table at index 1: every field of pfields, typed and in range */
static void read_params(lua_State *L, sl_params *p) {
  const pfield *f;
  memset(p, 0, sizeof(*p));
  for (f = pfields; f->name; f++) {
    char *at = (char *)p + f->off;
    int t = lua_getfield(L, 1, f->name);
    if (t == LUA_TNIL)
      luaL_error(L, "bad argument #1 to 'new' (field '%s' missing)", f->name);
    if (f->kind == 'b') *(int *)at = lua_toboolean(L, -1);
    else if (f->kind == 'd') {
      int ok;
      double d = (double)lua_tonumberx(L, -1, &ok);
      if (!ok) luaL_error(L, "bad argument #1 to 'new' (field '%s' "
                                 "must be a number)", f->name);
      *(double *)at = d;
    } else {
      int ok;
      lua_Integer n = lua_tointegerx(L, -1, &ok);
      if (!ok) luaL_error(L, "bad argument #1 to 'new' (field '%s' "
                                 "must be an integer)", f->name);
      if (f->kind == 'i') {
        if (n < -2147483647 || n > 2147483647)
          luaL_error(L, "bad argument #1 to 'new' (field '%s' out of "
                            "range)", f->name);
        *(int *)at = (int)n;
      } else *(int64_t *)at = (int64_t)n;
    }
    lua_pop(L, 1);
  }
}

/* core.new(params): a machine from a flat table of every timing figure */
int lsl_new(lua_State *L) {
  sl_params p;
  lmach *lm;
  int st;
  luaL_checktype(L, 1, LUA_TTABLE);
  read_params(L, &p);
  lm = (lmach *)lua_newuserdatauv(L, sizeof(lmach), 5);
  lm->magic = MACH_MAGIC;
  lm->run = NULL;
  lm->m = NULL;
  lm->cur = -1;
  lm->sites = NULL;
  memset(&lm->wd, 0, sizeof(lm->wd));
  luaL_setmetatable(L, MACHINE_MT);
  lm->m = sl_machine_new(&p, &st);
  if (lm->m == NULL) {
    if (st == SL_EARG)
      return luaL_error(L, "bad argument #1 to 'new' (profile figure '%s' is "
                        "out of range)", sl_params_check(&p));
    return luaL_error(L, "not enough memory for a machine of %d PEs", p.n_pes);
  }
  lm->budget = p.instruction_budget;
  lm->n_pes = p.n_pes;
  lm->check = p.check;
  lua_newtable(L);                       /* the facade's own fields */
  lua_setiuservalue(L, -2, 1);
  luaL_getmetatable(L, VIEW_MT);         /* its views' metatable, at hand for lsl_newview */
  lua_setiuservalue(L, -2, 2);
  memset(lm->ev_s, 0, sizeof(lm->ev_s));
  memset(lm->dt_s, 0, sizeof(lm->dt_s));
  lua_createtable(L, EV_SEEN, 0);        /* the event names of ev_s */
  lua_setiuservalue(L, -2, 3);
  lua_newtable(L);                       /* the blocks' coroutines (lshmemlab_launch.c) */
  lua_setiuservalue(L, -2, 4);
  lua_newtable(L);                       /* the k tables of blocks (lshmemlab_launch.c) */
  lua_setiuservalue(L, -2, 5);
  return 1;
}

/* forget lsl_set_site's cache */
static void sites_free(lmach *lm) {
  int i;
  if (lm->sites == NULL) return;
  for (i = 0; i < NSITES; i++) { free(lm->sites[i].src); free(lm->sites[i].vsrc); }
  free(lm->sites);
  lm->sites = NULL;
}

/* a copy of a string (NULL when out of memory) */
char *lsl_copy_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

/* __gc / __close / close: free the engine (idempotent) */
static int m_close(lua_State *L) {
  lmach *lm = (lmach *)luaL_checkudata(L, 1, MACHINE_MT);
  if (lm->m != NULL && !sl_running(lm->m)) {
    lsl_wd_list_remove(lm);
    sl_machine_free(lm->m);
    lm->m = NULL;
    sites_free(lm);
    lua_pushnil(L);                       /* its kept coroutines may go */
    lua_setiuservalue(L, 1, 4);
    lua_pushnil(L);                       /* and its kept k tables */
    lua_setiuservalue(L, 1, 5);
  }
  return 0;
}

/* m:state(): the facade's table kept with the machine */
static int m_state(lua_State *L) {
  luaL_checkudata(L, 1, MACHINE_MT);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* allocate in a space: (dtype, n [, name [, mode]]) from argument a on, at
** a multiple of align bytes of the heap, zeroed for initcheck too (calloc) */
static int alloc_at(lua_State *L, int space, int a, int64_t align, int zeroed) {
  lmach *lm = lsl_checkmach(L, 1);
  int dt = lsl_checkdtype(L, a);
  lua_Integer n = luaL_checkinteger(L, a + 1);
  const char *name = luaL_optstring(L, a + 2, NULL);
  int flags = lsl_checkmode(L, a + 3);
  const sl_buf *b;
  sl_loc l;
  int id;
  if (n <= 0) return luaL_argerror(L, a + 1, "size must be positive");
  if (sl_running(lm->m)) return luaL_error(L, "cannot allocate during a launch");
  id = sl_alloc_sym(lm->m, space, dt, (int64_t)n, name, flags, align, zeroed);
  if (id < 0) return lsl_engine_error(L, lm->m, -id, 1);
  b = sl_getbuf(lm->m, id);
  memset(&l, 0, sizeof(l));
  l.buf = id;
  l.pe = -1;
  l.dtype = dt;
  l.cap = b->bytes;
  lsl_newview(L, 1, lm, &l, b->n);
  return 1;
}

/* m:alloc(dtype, n [, name [, mode]]): GM buffer on every PE */
static int m_alloc(lua_State *L) { return alloc_at(L, SL_SPACE_GM, 2, 16, 0); }

/* m:malloc(dtype, n [, name [, mode]]): symmetric heap buffer */
static int m_malloc(lua_State *L) { return alloc_at(L, SL_SPACE_SYM, 2, 16, 0); }

/* m:calloc(dtype, n [, name [, mode]]): aclshmem_calloc, zeroed (and written,
** for initcheck) */
static int m_calloc(lua_State *L) { return alloc_at(L, SL_SPACE_SYM, 2, 16, 1); }

/* m:align(alignment, dtype, n [, name [, mode]]): aclshmem_align, at a
** multiple of alignment bytes of the heap (a power of two; 16 at least in effect) */
static int m_align(lua_State *L) {
  lua_Integer a = luaL_checkinteger(L, 2);
  luaL_argcheck(L, a > 0 && (a & (a - 1)) == 0 && a <= ((lua_Integer)1 << 40), 2,
                "alignment must be a power of two up to 2^40");
  return alloc_at(L, SL_SPACE_SYM, 3, a < 16 ? 16 : (int64_t)a, 0);
}

/* m:host(dtype, n [, name [, mode]]): host buffer */
static int m_host(lua_State *L) { return alloc_at(L, SL_SPACE_HOST, 2, 16, 0); }

/* m:free(buf): aclshmem_free; free(nil) does nothing */
static int m_free(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  lview *v;
  const sl_buf *b;
  int st;
  if (lua_isnoneornil(L, 2)) return 0;
  v = lsl_checkview(L, 2);
  if (v->lm != lm || v->l.buf < 0)
    return luaL_argerror(L, 2, "not a buffer of this machine");
  b = sl_getbuf(lm->m, v->l.buf);
  if (b->space != SL_SPACE_SYM && b->space != SL_SPACE_GM && b->space != SL_SPACE_HOST)
    return luaL_argerror(L, 2, "not a buffer");
  if ((st = sl_free_view(lm->m, &v->l, v->n * (int64_t)sl_dtype_size(v->l.dtype))) != SL_OK)
    return lsl_engine_error(L, lm->m, st, 1);
  return 0;
}

/* m:params(): the figures in force */
static int m_params(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  const sl_params *p = sl_machine_params(lm->m);
  const pfield *f;
  lua_newtable(L);
  for (f = pfields; f->name; f++) {
    const char *at = (const char *)p + f->off;
    if (f->kind == 'b') lua_pushboolean(L, *(const int *)at);
    else if (f->kind == 'd') lua_pushnumber(L, (lua_Number)*(const double *)at);
    else if (f->kind == 'i') lua_pushinteger(L, *(const int *)at);
    else lua_pushinteger(L, (lua_Integer)*(const int64_t *)at);
    lua_setfield(L, -2, f->name);
  }
  return 1;
}

/* m:now(): virtual time in microseconds */
static int m_now(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  lua_pushnumber(L, (lua_Number)sl_machine_now(lm->m) / SL_PS_PER_US);
  return 1;
}

/* m:events(): events the scheduler handled since the machine was made */
static int m_events(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  lua_pushinteger(L, (lua_Integer)sl_machine_events(lm->m));
  return 1;
}

/* m:event_kinds(): the events m:events() counts, by kind: {wake, copy, vec,
** signal, pipe, flow, dma, dmaq} (a block resumed; a copy, vector op or signal
** landed; a pipe took its next instruction; a flow ended; a DMA descriptor
** reached its engine's queue; that queue went on) */
static int m_event_kinds(lua_State *L) {
  static const char *const names[] = { "wake", "copy", "vec", "signal", "pipe", "flow",
                                       "dma", "dmaq" };
  lmach *lm = lsl_checkmach(L, 1);
  int k;
  lua_createtable(L, 0, 8);
  for (k = 0; k < 8; k++) {
    lua_pushinteger(L, (lua_Integer)sl_machine_events_of(lm->m, k));
    lua_setfield(L, -2, names[k]);
  }
  return 1;
}

/* m:flow_stats(): {starts, continued, settles, rerated, fills, filled} of the
** flow solver since the machine was made: transfers started, those that went
** on in their pipe's last flow, instants settled, flows re-rated, fills, and
** the flows those fills filled (widening fills again with more) */
static int m_flow_stats(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  sl_flow_stats s;
  sl_machine_flow_stats(lm->m, &s);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)s.starts); lua_setfield(L, -2, "starts");
  lua_pushinteger(L, (lua_Integer)s.continued); lua_setfield(L, -2, "continued");
  lua_pushinteger(L, (lua_Integer)s.settles); lua_setfield(L, -2, "settles");
  lua_pushinteger(L, (lua_Integer)s.rerated); lua_setfield(L, -2, "rerated");
  lua_pushinteger(L, (lua_Integer)s.fills); lua_setfield(L, -2, "fills");
  lua_pushinteger(L, (lua_Integer)s.filled); lua_setfield(L, -2, "filled");
  return 1;
}

/* push a table of two counts {ka = a, kb = b} */
static int m_pair(lua_State *L, const char *ka, int64_t a, const char *kb, int64_t b) {
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)a); lua_setfield(L, -2, ka);
  lua_pushinteger(L, (lua_Integer)b); lua_setfield(L, -2, kb);
  return 1;
}

/* m:chains(): {one, chunked}: the pipelined chains issued as one flow
** (chain_flow) and as chunks since the machine was made */
static int m_chains(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int64_t one, chunked;
  sl_machine_chains(lm->m, &one, &chunked);
  return m_pair(L, "one", one, "chunked", chunked);
}

/* m:ghosts(): {ghosts, late}: the one-flow chains' other-leg chunks run as
** flows of their own, and those that ended too late to time as the chunked
** chain (chain.c) */
static int m_ghosts(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int64_t ghosts, late;
  sl_machine_ghosts(lm->m, &ghosts, &late);
  return m_pair(L, "ghosts", ghosts, "late", late);
}

/* m:heap_used(): bytes of the symmetric heap in use */
static int m_heap_used(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  lua_pushinteger(L, (lua_Integer)sl_heap_used(lm->m));
  return 1;
}

/* m:path_bytes(): bytes moved so far per kind of path */
static int m_path_bytes(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int i;
  lua_createtable(L, 0, SL_NPATHS);
  for (i = 0; i < SL_NPATHS; i++) {
    lua_pushinteger(L, (lua_Integer)sl_path_bytes(lm->m, i));
    lua_setfield(L, -2, sl_path_name(i));
  }
  return 1;
}

/* m:path(a, b): kind of path between two PEs */
static int m_path(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int n = sl_machine_params(lm->m)->n_pes;
  lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
  luaL_argcheck(L, a >= 0 && a < n, 2, "PE out of range");
  luaL_argcheck(L, b >= 0 && b < n, 3, "PE out of range");
  lua_pushstring(L, sl_path_name(sl_path(lm->m, (int)a, (int)b)));
  return 1;
}

/*
** Task rows. state.tasks[pe] holds a PE's rows flat, TASK_W values a row
** (name, type, stream_id, task_id, start_us, stop_us), at [0] how many rows
** it was given and at [-1] the task_rows it is laid for; m:tasks (init.lua)
** makes the row tables when asked. A store laid for task_rows = cap > 0
** writes row r (from 1) over row r - cap: a ring, so a long loop of launches
** keeps a bounded heap and nothing is moved; cap 0 keeps all. A launch adds
** a row per PE, and a table per row was a tenth of what an empty 2 x 16
** launch cost (its allocation, six setfields, and the collector traversing
** up to 512 live rows per PE).
*/
#define TASK_W 6

/* the n rows given to the store on top, laid for was, laid again for cap
** (state.task_rows changed: m:state() is open to a script): the last rows
** it holds, at most cap, from row 1 on, the rest cleared; how many it kept */
static lua_Integer rows_relay(lua_State *L, lua_Integer n, lua_Integer was, lua_Integer cap) {
  lua_Integer held = (was > 0 && n > was) ? was : n;
  lua_Integer keep = (cap > 0 && held > cap) ? cap : held, r, j;
  lua_createtable(L, (int)(keep * TASK_W), 0);
  for (r = n - keep; r < n; r++)                   /* row r + 1, oldest first */
    for (j = 1; j <= TASK_W; j++) {
      lua_rawgeti(L, -2, (was > 0 ? r % was : r) * TASK_W + j);
      lua_rawseti(L, -2, (r - n + keep) * TASK_W + j);
    }
  for (j = 1; j <= held * TASK_W; j++) {           /* back, nil past keep */
    lua_rawgeti(L, -1, j);
    lua_rawseti(L, -3, j);
  }
  lua_pop(L, 1);
  lua_pushinteger(L, cap);
  lua_rawseti(L, -2, -1);
  return keep;
}

/* add a row to the rows on top (a ring of cap rows, 0: no bound): the name
** and type at ni and ni + 1, then stream 1, task id, start and stop */
static void row_add(lua_State *L, int ni, lua_Integer cap, lua_Integer id, double start,
                    double stop) {
  lua_Integer n, was, at;
  lua_rawgeti(L, -1, 0);
  n = lua_tointeger(L, -1);               /* nil (a new PE's): 0 */
  lua_rawgeti(L, -2, -1);
  was = lua_tointeger(L, -1);
  lua_pop(L, 2);
  if (was != cap) n = rows_relay(L, n, was, cap);
  at = (cap > 0 ? n % cap : n) * TASK_W;
  lua_pushvalue(L, ni); lua_rawseti(L, -2, at + 1);
  lua_pushvalue(L, ni + 1); lua_rawseti(L, -2, at + 2);
  lua_pushinteger(L, 1); lua_rawseti(L, -2, at + 3);
  lua_pushinteger(L, id); lua_rawseti(L, -2, at + 4);
  lua_pushnumber(L, (lua_Number)start); lua_rawseti(L, -2, at + 5);
  lua_pushnumber(L, (lua_Number)stop); lua_rawseti(L, -2, at + 6);
  lua_pushinteger(L, n + 1); lua_rawseti(L, -2, 0);
}

/* m:reach(a, b): PE a's topo_list entry for PE b, the SL_DOP_* bits of the
** transports that reach it (data_op_engine_type's values: MTE 1, SDMA 2,
** ROCE 4, UDMA 8) */
static int m_reach(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int n = sl_machine_params(lm->m)->n_pes;
  lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
  luaL_argcheck(L, a >= 0 && a < n, 2, "PE out of range");
  luaL_argcheck(L, b >= 0 && b < n, 3, "PE out of range");
  lua_pushinteger(L, (lua_Integer)sl_reach(lm->m, (int)a, (int)b));
  return 1;
}

/* add a task row (name, type, stream_id, task_id, start_us, stop_us) to
** state.tasks[pe] of the machine at index mi (msprof's task_time rows; the
** ring row_add keeps) */
void lsl_add_task(lua_State *L, int mi, int pe, const char *name,
                     const char *type, double start, double stop) {
  lua_Integer id, cap;
  int top = lua_gettop(L);
  lua_pushstring(L, name);
  lua_pushstring(L, type);
  lua_getiuservalue(L, mi, 1);
  lua_getfield(L, -1, "task_id");
  id = lua_tointeger(L, -1) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, id);
  lua_setfield(L, -2, "task_id");
  lua_getfield(L, -1, "task_rows");
  cap = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (lua_getfield(L, -1, "tasks") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "tasks");
  }
  if (lua_rawgeti(L, -1, pe) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, pe);
  }
  row_add(L, top + 1, cap, id, start, stop);
  lua_settop(L, top);
}

/* the rows of a launch that started at start: lsl_add_task's row for each PE
** pe in order, stopping at start + kus[pe], the kernel's name and type the
** strings at ni and ni + 1; the state's fields looked up once, the strings
** not interned again */
void lsl_add_launch_tasks(lua_State *L, int mi, int ni, int npes, double start,
                          const double *kus) {
  lua_Integer id, cap;
  int pe, st, tasks;
  luaL_checkstack(L, 8, "task rows");
  lua_getiuservalue(L, mi, 1);
  st = lua_gettop(L);
  lua_getfield(L, st, "task_id");
  id = lua_tointeger(L, -1);
  lua_getfield(L, st, "task_rows");
  cap = lua_tointeger(L, -1);
  if (lua_getfield(L, st, "tasks") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, st, "tasks");
  }
  tasks = lua_gettop(L);
  for (pe = 0; pe < npes; pe++) {
    if (lua_rawgeti(L, tasks, pe) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_rawseti(L, tasks, pe);
    }
    row_add(L, ni, cap, ++id, start, start + kus[pe]);
    lua_pop(L, 1);
  }
  lua_pushinteger(L, id);
  lua_setfield(L, st, "task_id");
  lua_settop(L, st - 1);
}

/* m:memcpy(dst, src [, n]): aclrtMemcpy host<->device; returns its cost */
static int m_memcpy(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  lview *d = lsl_checkview(L, 2), *s = lsl_checkview(L, 3);
  lua_Integer n = luaL_optinteger(L, 4, d->n < s->n ? d->n : s->n);
  sl_loc dl = d->l, sl = s->l;
  double cost = 0, before;
  int st;
  if (d->lm != lm || s->lm != lm) return luaL_error(L, "views of another machine");
  if (dl.buf < 0 || sl.buf < 0) return luaL_error(L, "UB is not reachable by memcpy");
  if (dl.dtype != sl.dtype) return luaL_argerror(L, 2, "dtype mismatch");
  if ((dl.pe < 0 && sl_getbuf(lm->m, dl.buf)->space != SL_SPACE_HOST) ||
      (sl.pe < 0 && sl_getbuf(lm->m, sl.buf)->space != SL_SPACE_HOST))
    return luaL_error(L, "memcpy names one PE: use buf:on(pe)");
  if (dl.pe < 0) dl.pe = 0;
  if (sl.pe < 0) sl.pe = 0;
  if (n <= 0 || n > ((lua_Integer)1 << 40)) return luaL_argerror(L, 4, "count must be in 1..2^40");
  before = (double)sl_machine_now(lm->m) / SL_PS_PER_US;
  st = sl_memcpy(lm->m, &dl, &sl, (int64_t)n * (int64_t)sl_dtype_size(dl.dtype),
                 &cost);
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  sl_mark_init(lm->m, &dl, (int64_t)n * (int64_t)sl_dtype_size(dl.dtype));
  {                        /* a task of the device side's PE */
    int host_dst = sl_getbuf(lm->m, dl.buf)->space == SL_SPACE_HOST;
    double now = (double)sl_machine_now(lm->m) / SL_PS_PER_US;
    lsl_add_task(L, 1, host_dst ? sl.pe : dl.pe, "aclrtMemcpy", "MEMCPY_ASYNC", before, now);
  }
  lua_pushnumber(L, cost);
  return 1;
}

/* __tostring of a machine */
static int m_tostring(lua_State *L) {
  lmach *lm = (lmach *)luaL_checkudata(L, 1, MACHINE_MT);
  const sl_params *p;
  if (lm->m == NULL) { lua_pushliteral(L, "shmemlab machine (closed)"); return 1; }
  p = sl_machine_params(lm->m);
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, "soc");
  lua_pushfstring(L, "shmemlab machine %s: %d PEs (%d per server), %d AIV cores "
                  "of %d KiB UB, heap %d of %d KiB used, t = %f us",
                  lua_isstring(L, -1) ? lua_tostring(L, -1) : "custom", p->n_pes,
                  p->pes_per_server, p->cores, (int)(p->ub_bytes / 1024),
                  (int)(sl_heap_used(lm->m) / 1024),
                  (int)(p->sym_heap_bytes / 1024),
                  (lua_Number)sl_machine_now(lm->m) / SL_PS_PER_US);
  return 1;
}

/* m:runaway_counts(): the last launch's primitives (all blocks) and its
** longest run of primitives with no progress, the count spin_limit bounds */
static int m_runaway_counts(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int64_t prims, quiet;
  sl_guard_stats(lm->m, &prims, &quiet);
  return m_pair(L, "primitives", prims, "quiet_max", quiet);
}

/* the machine's own methods */
const luaL_Reg lsl_machine_methods[] = {
  {"alloc", m_alloc}, {"malloc", m_malloc}, {"calloc", m_calloc}, {"align", m_align},
  {"host", m_host}, {"free", m_free}, {"memcpy", m_memcpy}, {"params", m_params},
  {"now", m_now}, {"events", m_events}, {"event_kinds", m_event_kinds}, {"flow_stats", m_flow_stats},
  {"chains", m_chains}, {"ghosts", m_ghosts},
  {"heap_used", m_heap_used}, {"path_bytes", m_path_bytes}, {"path", m_path}, {"reach", m_reach},
  {"state", m_state}, {"close", m_close}, {"runaway_counts", m_runaway_counts},
  {NULL, NULL}
};

/* the machine's metamethods (__index is set to its methods at luaopen) */
const luaL_Reg lsl_machine_meta[] = {
  {"__gc", m_close}, {"__close", m_close}, {"__tostring", m_tostring},
  {"__index", NULL}, {NULL, NULL}
};

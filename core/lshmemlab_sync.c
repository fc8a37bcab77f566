/*
** lshmemlab_sync.c -- kernel primitives, part two: signals, p2p and atomics,
** quiet, fences and barriers, profiling frames, and teams.
*/
#include "lshmemlab.h"

/* k:signal_op(sig, value, op, pe) */
static int k_signal_op(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck_s(L, &blk);
  sl_loc g = lsl_kloc(L, lm, 2);
  lua_Integer v = kint(L, 3);
  lua_Integer op = kint(L, 4);
  luaL_argcheck(L, op == SL_SIGNAL_SET || op == SL_SIGNAL_ADD, 4,
                "signal op must be SIGNAL_SET or SIGNAL_ADD");
  int pe = lsl_checkpe(L, lm, 5);
  return lsl_kdone(L, lm, blk, sl_signal_op(lm->m, blk, &g, (int64_t)v, (int)op, pe, 0), 0);
}

/* k:signal_wait_until(sig, cmp, value): the value that satisfied it */
static int k_signal_wait_until(lua_State *L) {
  int blk, st;
  lmach *lm = lsl_kcheck(L, &blk, k_signal_wait_until);
  sl_loc g = lsl_kloc(L, lm, 2);
  lua_Integer cmp = kint(L, 3);
  lua_Integer v = kint(L, 4);
  int64_t got = 0;
  if ((cmp < 0 || cmp >= SL_NCMP) && !(sl_machine_params(lm->m)->check & SL_CHECK_SYNC))
    return luaL_argerror(L, 3, lua_pushfstring(L, "comparison must be CMP_EQ..CMP_LE "
                         "(0..5), got %d", (int)cmp));
  st = sl_signal_wait(lm->m, blk, &g, (int)cmp, (int64_t)v, &got);
  if (st != SL_OK && st != SL_ESKIP) return lsl_engine_error(L, lm->m, st, 1);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* value at wake */
  lua_pushinteger(L, (lua_Integer)got);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* the p2p_sync calls (shmem_device_p2p_sync.h): a set form takes (ivars,
** nelems, [indices,] status|nil, cmp, value|cmp_values), a single one
** (ivar, cmp, value) or, for wait, (ivar, value) with CMP_NE */
typedef struct p2p_form {
  const char *name;
  int mode, test, vec, some, single, ne;
} p2p_form;
static const p2p_form p2p_forms[] = {
  {"wait_until", SL_WS_ALL, 0, 0, 0, 1, 0}, {"wait", SL_WS_ALL, 0, 0, 0, 1, 1},
  {"wait_until_all", SL_WS_ALL, 0, 0, 0, 0, 0},
  {"wait_until_any", SL_WS_ANY, 0, 0, 0, 0, 0},
  {"wait_until_some", SL_WS_SOME, 0, 0, 1, 0, 0},
  {"wait_until_all_vector", SL_WS_ALL, 0, 1, 0, 0, 0},
  {"wait_until_any_vector", SL_WS_ANY, 0, 1, 0, 0, 0},
  {"wait_until_some_vector", SL_WS_SOME, 0, 1, 1, 0, 0},
  {"test", SL_WS_ALL, 1, 0, 0, 1, 0}, {"test_all", SL_WS_ALL, 1, 0, 0, 0, 0},
  {"test_any", SL_WS_ANY, 1, 0, 0, 0, 0}, {"test_some", SL_WS_SOME, 1, 0, 1, 0, 0},
  {"test_all_vector", SL_WS_ALL, 1, 1, 0, 0, 0},
  {"test_any_vector", SL_WS_ANY, 1, 1, 0, 0, 0},
  {"test_some_vector", SL_WS_SOME, 1, 1, 1, 0, 0},
  {NULL, 0, 0, 0, 0, 0, 0}
};
/* the type names of ACLSHMEM_P2P_SYNC_TYPE_FUNC and the lab's dtypes */
static const char *const p2p_types[][2] = {
  {"float", "fp32"}, {"int8", "int8"}, {"int16", "int16"}, {"int32", "int32"},
  {"int64", "int64"}, {"uint8", "uint8"}, {"uint16", "uint16"}, {"uint32", "uint32"},
  {"uint64", "uint64"}, {"char", "int8"}, {NULL, NULL}
};

/* the comparison value at index i into w (the set's dtype decides its type) */
static void p2p_value(lua_State *L, lmach *lm, const p2p_form *f, sl_wset *w, int i) {
  if (f->vec) {
    w->vals = lsl_kloc(L, lm, i);
    w->has_vals = 1;
  } else if (sl_dtype_isfloat((sl_dtype)w->ivars.dtype)) {
    w->fval = (double)luaL_checknumber(L, i);
  } else {
    w->ival = (int64_t)kint(L, i);
  }
}

/* the arguments of a p2p_sync call into w; *map gets sl_wait_set's error
** argument (1 ivars 2 n 3 status 4 cmp 5 value 6 idx) -> the call's */
static void p2p_args(lua_State *L, lmach *lm, const p2p_form *f, int dt, sl_wset *w,
                     int *map) {
  int a = 3;
  memset(w, 0, sizeof(*w));
  w->mode = f->mode;
  w->name = f->name;
  w->ivars = lsl_kloc(L, lm, 2);
  if (dt >= 0 && w->ivars.dtype != dt)
    luaL_argerror(L, 2, lua_pushfstring(L, "%s view expected, got %s", sl_dtype_name(dt),
                  sl_dtype_name(w->ivars.dtype)));
  map[1] = 1;
  if (f->single) {
    w->n = 1;
    w->cmp = f->ne ? SL_CMP_NE : (int)kint(L, a++);
    map[4] = 2; map[5] = a - 1;
    p2p_value(L, lm, f, w, a);
    return;
  }
  w->n = (int64_t)kint(L, a++);
  map[2] = 2;
  if (f->some) { w->idx = lsl_kloc(L, lm, a++); w->has_idx = 1; map[6] = 3; }
  if (!lua_isnoneornil(L, a)) { w->status = lsl_kloc(L, lm, a); w->has_status = 1; }
  map[3] = a++ - 1;
  w->cmp = (int)kint(L, a++);
  map[4] = a - 2;
  p2p_value(L, lm, f, w, a);
  map[5] = a - 1;
}

/* every p2p_sync call: upvalue 1 the form, 2 the dtype its name fixes (-1 none) */
static int k_p2p(lua_State *L) {
  int blk, st, map[7] = { 0, 0, 0, 0, 0, 0, 0 };
  lmach *lm = lsl_kcheck(L, &blk, k_p2p);
  const p2p_form *f = &p2p_forms[lua_tointeger(L, lua_upvalueindex(1))];
  sl_wset w;
  int64_t ret = 0;
  p2p_args(L, lm, f, (int)lua_tointeger(L, lua_upvalueindex(2)), &w, map);
  st = sl_wait_set(lm->m, blk, &w, f->test, &ret);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, map, 7);
  if (st != SL_OK && st != SL_ESKIP) return lsl_kdone(L, lm, blk, st, 0);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* the result at wake */
  if (!f->test && f->mode == SL_WS_ALL) return lsl_kdone(L, lm, blk, SL_OK, 0);
  lua_pushinteger(L, (lua_Integer)ret);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* register the p2p_sync calls in the table at the top: each form untyped
** (any p2p dtype) and under every type name the library has ("float_test") */
void lsl_p2p_register(lua_State *L) {
  int i, j;
  for (i = 0; p2p_forms[i].name != NULL; i++) {
    lua_pushinteger(L, i);
    lua_pushinteger(L, -1);
    lua_pushcclosure(L, k_p2p, 2);
    lua_setfield(L, -2, p2p_forms[i].name);
    for (j = 0; p2p_types[j][0] != NULL; j++) {
      int dt = sl_dtype_find(p2p_types[j][1]);
      if (dt < 0) continue;                 /* a type the lab does not have yet */
      lua_pushinteger(L, i);
      lua_pushinteger(L, dt);
      lua_pushcclosure(L, k_p2p, 2);
      lua_pushfstring(L, "%s_%s", p2p_types[j][0], p2p_forms[i].name);
      lua_insert(L, -2);
      lua_settable(L, -3);
    }
  }
}

/* the value argument i for an element of dtype dt: *iv or *fv */
static void elem_value(lua_State *L, int i, int dt, int64_t *iv, double *fv) {
  if (sl_dtype_isfloat((sl_dtype)dt)) *fv = (double)luaL_checknumber(L, i);
  else *iv = (int64_t)kint(L, i);
}

/* the view at i, of the dtype upvalue 2 names (-1: any) */
static sl_loc typed_loc(lua_State *L, lmach *lm, int i) {
  sl_loc l = lsl_kloc(L, lm, i);
  int dt = (int)lua_tointeger(L, lua_upvalueindex(2));
  if (dt >= 0 && l.dtype != dt)
    luaL_argerror(L, i, lua_pushfstring(L, "%s view expected, got %s", sl_dtype_name(dt),
                  sl_dtype_name(l.dtype)));
  return l;
}

/* k:p(dst, value, pe) / k:NAME_p: one element to PE pe (upvalue 1: 0 p, 1 g) */
static int k_pg(lua_State *L) {
  int blk, st;
  lmach *lm = lsl_kcheck(L, &blk, k_pg);
  sl_loc l = typed_loc(L, lm, 2);
  int64_t iv = 0;
  double fv = 0;
  if (lua_tointeger(L, lua_upvalueindex(1)) == 0) {
    elem_value(L, 3, l.dtype, &iv, &fv);
    return lsl_kdone(L, lm, blk, sl_p(lm->m, blk, &l, iv, fv, lsl_checkpe(L, lm, 4)), 0);
  }
  st = sl_g(lm->m, blk, &l, lsl_checkpe(L, lm, 3), &iv, &fv);
  if (st != SL_OK) return lsl_kdone(L, lm, blk, st, 0);
  if (sl_dtype_isfloat((sl_dtype)l.dtype)) lua_pushnumber(L, (lua_Number)fv);
  else lua_pushinteger(L, (lua_Integer)iv);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

static int amo_body(lua_State *L, int resumed);

/* an atomic goes on after the yield its scratch UB asked for */
static int amo_cont(lua_State *L, int status, lua_KContext ctx) {
  (void)status; (void)ctx;
  return amo_body(L, 1);
}

/* every atomic (upvalue 1: its sl_amo_forms index, 2: the dtype its name
** fixes or -1, 3: the engine an engine's own call names, none = by the
** topology): (dst, [cond,] [value,] pe); atomic_add's UB + MTE3 path
** carves the scratch UB first, as blocking_body does */
static int amo_body(lua_State *L, int resumed) {
  int blk, st, a = 3, map[4] = { 0, 1, 0, 0 };
  lmach *lm = lsl_kcheck(L, &blk, NULL);
  const sl_amo_form *f = &sl_amo_forms[lua_tointeger(L, lua_upvalueindex(1))];
  sl_loc d = typed_loc(L, lm, 2), u;
  int64_t iv = 0, cond = 0;
  double fv = 0;
  int pe;
  if (f->op == SL_AMO_CAS) cond = (int64_t)kint(L, a++);
  if (f->op != SL_AMO_INC && f->op != SL_AMO_FETCH) elem_value(L, a++, d.dtype, &iv, &fv);
  pe = lsl_checkpe(L, lm, a);
  map[3] = a - 1;
  if (f->op == SL_AMO_ADD && !f->fetch) {
    int id;                              /* atomic_add chains with event id 0 (sl_amo) */
    if ((st = sl_ub_scratch(lm->m, blk, d.dtype, &u, &id)) != SL_OK)
      return lsl_engine_error(L, lm->m, st, 1);
    if (!resumed && sl_must_yield(lm->m, blk)) return lua_yieldk(L, 0, 0, amo_cont);
  }
  st = sl_amo(lm->m, blk, f, (int)lua_tointeger(L, lua_upvalueindex(3)), &d,
              f->op == SL_AMO_ADD && !f->fetch ? &u : NULL, iv, fv, cond, pe);
  if (st == SL_EARG) sl_machine_map_err_arg(lm->m, map, 4);
  if (st == SL_OK && f->fetch) return lua_yield(L, 0);   /* the old value at wake */
  return lsl_kdone(L, lm, blk, st, 0);
}

/* k:atomic_*(...) */
static int k_amo(lua_State *L) { return amo_body(L, 0); }

/* register name, and NAME_name for every dtype of mask, as closures of fn
** with upvalues (index, dtype) in the table at the top */
static void typed_register(lua_State *L, const char *name, lua_CFunction fn, int index,
                           unsigned mask) {
  int dt;
  lua_pushinteger(L, index);
  lua_pushinteger(L, -1);
  lua_pushcclosure(L, fn, 2);
  lua_setfield(L, -2, name);
  for (dt = 0; dt < SL_NDTYPES; dt++) {
    if (!(mask & (1u << dt))) continue;
    lua_pushfstring(L, "%s_%s", sl_dtype_cann(dt), name);
    lua_pushinteger(L, index);
    lua_pushinteger(L, dt);
    lua_pushcclosure(L, fn, 2);
    lua_settable(L, -3);
    if (dt == SL_INT8) {                     /* the library's char is int8 here */
      lua_pushfstring(L, "char_%s", name);
      lua_pushinteger(L, index);
      lua_pushinteger(L, dt);
      lua_pushcclosure(L, fn, 2);
      lua_settable(L, -3);
    }
  }
}

/* register p, g and the atomics, untyped and typed, and the engines' own
** atomics (mte_atomic_add, roce_atomic_fetch_xor, udma_atomic_swap, ...) */
void lsl_amo_register(lua_State *L) {
  static const char *const engines[] = { NULL, "mte", "roce", "udma" };
  int i, e;
  typed_register(L, "p", k_pg, 0, ~0u);
  typed_register(L, "g", k_pg, 1, ~0u);
  for (i = 0; sl_amo_forms[i].name != NULL; i++) {
    typed_register(L, sl_amo_forms[i].name, k_amo, i,
                   sl_amo_forms[i].types);
    for (e = SL_ENGINE_MTE; e <= SL_ENGINE_UDMA; e++) {
      if (!(sl_amo_forms[i].engines & (1u << e))) continue;
      lua_pushfstring(L, "%s_%s", engines[e], sl_amo_forms[i].name);
      lua_pushinteger(L, i);
      lua_pushinteger(L, -1);
      lua_pushinteger(L, e);
      lua_pushcclosure(L, k_amo, 3);
      lua_settable(L, -3);
    }
  }
}

/* k:wait_signal_value(flag, ub, count [, cmp [, value]]): hcomm's soft-sync
** Wait; polls the GM flag into UB until flag[0] cmp value; returns flag[0] */
static int k_wait_signal_value(lua_State *L) {
  int blk, st;
  lmach *lm = lsl_kcheck(L, &blk, k_wait_signal_value);
  sl_loc f = lsl_kloc(L, lm, 2), u = lsl_kloc(L, lm, 3);
  lua_Integer n = kint(L, 4);
  lua_Integer cmp = kint(L, 5);
  lua_Integer v = kint(L, 6);
  int64_t got = 0;
  st = sl_poll_until(lm->m, blk, &f, &u, (int64_t)n, (int)cmp, (int64_t)v, &got);
  if (st != SL_OK && st != SL_ESKIP) return lsl_engine_error(L, lm->m, st, 1);
  if (sl_block_parked(lm->m, blk)) return lua_yield(L, 0);  /* value at wake */
  lua_pushinteger(L, (lua_Integer)got);
  return lsl_kdone(L, lm, blk, SL_OK, 1);
}

/* k:quiet() */
static int k_quiet(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_quiet);
  return lsl_kdone(L, lm, blk, sl_quiet(lm->m, blk), 0);
}

/* k:set_mte_config(ub [, ub_bytes [, sync_id]]): aclshmemx_set_mte_config,
** the staging UB (default: the whole tensor) and event id (default 7) of the
** block's staged calls for the rest of the launch */
static int k_set_mte_config(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_set_mte_config);
  sl_loc u = lsl_kloc(L, lm, 2);
  lua_Integer bytes = luaL_optinteger(L, 3, u.buf < 0 ? u.cap - u.off : 1);
  lua_Integer id = luaL_optinteger(L, 4, SL_SCRATCH_ID);
  return lsl_kdone(L, lm, blk, sl_set_mte_config(lm->m, blk, &u, (int64_t)bytes, (int)id), 0);
}

/* k:mte_quiet(): aclshmemx_mte_quiet, PipeBarrier(ALL): the block's MTE work
** landed (its DMA engines' transfers are not waited for) */
static int k_mte_quiet(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_mte_quiet);
  return lsl_kdone(L, lm, blk, sl_pipe_barrier(lm->m, blk, SL_NPIPES), 0);
}

/* k:fence() */
static int k_fence(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_fence);
  return lsl_kdone(L, lm, blk, sl_fence(lm->m, blk), 0);
}

/* k:barrier_all() */
static int k_barrier_all(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_barrier_all);
  return lsl_kdone(L, lm, blk, sl_barrier_all(lm->m, blk), 0);
}

/* k:shmem_sync_all(): aclshmem_sync_all, every block of every PE (no quiet) */
static int k_shmem_sync_all(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_shmem_sync_all);
  return lsl_kdone(L, lm, blk, sl_shmem_sync_all(lm->m, blk), 0);
}

/* k:ascendc_sync_all(), k:sync_all(): Ascend C's SyncAll, the blocks of this PE */
static int k_sync_all(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_sync_all);
  return lsl_kdone(L, lm, blk, sl_sync_all(lm->m, blk), 0);
}

/* k:my_pe() */
static int k_my_pe(lua_State *L) {
  int blk, pe, b;
  lmach *lm = lsl_kcheck(L, &blk, k_my_pe);
  sl_block_where(lm->m, blk, &pe, &b);
  lua_pushinteger(L, pe);
  return 1;
}

/* k:ptr(buf, pe): the symmetric buffer's copy on PE pe */
static int k_ptr(lua_State *L) {
  int blk;
  lmach *lm = lsl_kcheck(L, &blk, k_ptr);
  lview *v = lsl_checkanyview(L, 2);
  int pe = lsl_checkpe(L, lm, 3);
  if (v->lm != lm) return luaL_argerror(L, 2, "view of another machine");
  if (v->l.buf < 0 || sl_getbuf(lm->m, v->l.buf)->space != SL_SPACE_SYM)
    return luaL_argerror(L, 2, "not a symmetric buffer (allocate it with m:malloc)");
  lsl_push_pe_view(L, 2, v, pe);
  return 1;
}

/* shared body of prof_start / prof_end */
static int prof_prim(lua_State *L, int end) {
  int blk;
  lmach *lm = lsl_kcheck_q(L, &blk);
  lua_Integer f = kint(L, 2);
  luaL_argcheck(L, f >= 0, 2, "frame must be >= 0");
  if (!end && !lm->check) lsl_set_site(L, lm);   /* a frame left open names its prof_start */
  return lsl_kdone(L, lm, blk, sl_prof(lm->m, blk, f > 1000000 ? 1000000 : (int)f, end), 0);
}

/* k:prof_start(frame) */
static int k_prof_start(lua_State *L) { return prof_prim(L, 0); }

/* k:prof_end(frame) */
static int k_prof_end(lua_State *L) { return prof_prim(L, 1); }

/* ------------------------------------------------------------------ */
/* teams                                                               */
/* ------------------------------------------------------------------ */

/* m:team_split_strided(parent, start, stride, size): the new team */
static int m_team_split_strided(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int t, st = sl_team_split_strided(lm->m, (int)luaL_checkinteger(L, 2),
                                    (int)luaL_checkinteger(L, 3), (int)luaL_checkinteger(L, 4),
                                    (int)luaL_checkinteger(L, 5), &t);
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  lua_pushinteger(L, t);
  return 1;
}

/* m:team_split_2d(parent, x_range): the x team and the y team */
static int m_team_split_2d(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int x, y, st = sl_team_split_2d(lm->m, (int)luaL_checkinteger(L, 2),
                                  (int)luaL_checkinteger(L, 3), &x, &y);
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  lua_pushinteger(L, x);
  lua_pushinteger(L, y);
  return 2;
}

/* m:team_destroy(team) */
static int m_team_destroy(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int st = sl_team_destroy(lm->m, (int)luaL_checkinteger(L, 2));
  if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  return 0;
}

/* the answer to team query kind (0 my_pe, 1 n_pes, 2 translate_pe, 3
** pe_mapping) as PE pe sees it, its arguments from index i on */
static lua_Integer team_answer(lua_State *L, lmach *lm, int kind, int i, int pe) {
  int t = (int)luaL_checkinteger(L, i);
  switch (kind) {
    case 0: return sl_team_my_pe(lm->m, t, pe);
    case 1: return sl_team_n_pes(lm->m, t, pe);
    case 2: return sl_team_translate(lm->m, t, (int)luaL_checkinteger(L, i + 1),
                                     (int)luaL_checkinteger(L, i + 2), pe);
    default: return sl_team_global(lm->m, t, (int)luaL_checkinteger(L, i + 1), pe);
  }
}

/* m:team_my_pe(team, pe), m:team_n_pes(team, pe), m:team_translate_pe(src,
** src_pe, dest, pe) (upvalue: the kind of team_answer) */
static int m_team_query(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int kind = (int)lua_tointeger(L, lua_upvalueindex(1));
  /* the PE asked for: every PE sees its own group of a team */
  lua_pushinteger(L, team_answer(L, lm, kind, 2, lsl_checkpe(L, lm, kind == 2 ? 5 : 3)));
  return 1;
}

/* k:team_my_pe(team), k:team_n_pes(team), k:team_translate_pe(src, src_pe,
** dest), k:team_pe_mapping(team, n) (upvalue: the kind of team_answer) */
static int k_team_query(lua_State *L) {
  int blk, pe, b;
  lmach *lm = lsl_kcheck(L, &blk, k_team_query);
  sl_block_where(lm->m, blk, &pe, &b);
  lua_pushinteger(L, team_answer(L, lm, (int)lua_tointeger(L, lua_upvalueindex(1)), 2, pe));
  return 1;
}

/* the RoCE collectives' explicit workspace at i (a UB tensor of 128 bytes
** at least, the header's "larger than 128 Bytes") and its sync_id at i + 1 */
static void roce_workspace(lua_State *L, lmach *lm, int i) {
  sl_loc u = lsl_kloc(L, lm, i);
  lua_Integer id = lua_isnoneornil(L, i + 1) ? 0 : luaL_checkinteger(L, i + 1);
  if (u.buf >= 0) luaL_argerror(L, i, "UB tensor expected, got GM");
  if (u.cap - u.off < 128)
    luaL_argerror(L, i, lua_pushfstring(L, "the engine's UB workspace needs 128 bytes at "
                  "least (the tensor holds %d)", (int)(u.cap - u.off)));
  luaL_argcheck(L, id >= 0 && id < SL_NEVENT_IDS, i + 1, "event id must be in 0..7");
}

/* k:barrier(team) / k:sync(team) / k:roce_barrier(team [, ub, sync_id]) /
** k:roce_sync(team [, ub, sync_id]) (upvalue 1: SL_TEAM_*; upvalue 2 set:
** the _all forms, TEAM_WORLD without a team argument) */
static int k_team_barrier(lua_State *L) {
  int blk, kind = (int)lua_tointeger(L, lua_upvalueindex(1));
  int all = lua_toboolean(L, lua_upvalueindex(2)), a = all ? 2 : 3;
  lmach *lm = lsl_kcheck(L, &blk, k_team_barrier);
  int t = all ? SL_TEAM_WORLD : (int)luaL_checkinteger(L, 2);
  if (kind >= SL_TEAM_ROCE_BARRIER && !lua_isnoneornil(L, a)) roce_workspace(L, lm, a);
  return lsl_kdone(L, lm, blk, sl_team_barrier(lm->m, blk, t, kind), 0);
}

/* register the team calls: machine methods at index mi, block methods at bi */
void lsl_team_register(lua_State *L, int mi, int bi) {
  static const struct { const char *name; lua_CFunction fn; int up, block; } calls[] = {
    {"team_my_pe", m_team_query, 0, 0}, {"team_n_pes", m_team_query, 1, 0},
    {"team_translate_pe", m_team_query, 2, 0},
    {"team_my_pe", k_team_query, 0, 1}, {"team_n_pes", k_team_query, 1, 1},
    {"team_translate_pe", k_team_query, 2, 1}, {"team_pe_mapping", k_team_query, 3, 1},
    {"barrier", k_team_barrier, SL_TEAM_BARRIER, 1}, {"sync", k_team_barrier, SL_TEAM_SYNC, 1},
    {"roce_barrier", k_team_barrier, SL_TEAM_ROCE_BARRIER, 1},
    {"roce_team_sync", k_team_barrier, SL_TEAM_ROCE_SYNC, 1},
    {"roce_sync", k_team_barrier, SL_TEAM_ROCE_SYNC, 1},
    {"roce_barrier_all", k_team_barrier, SL_TEAM_ROCE_BARRIER, 2},
    {"roce_sync_all", k_team_barrier, SL_TEAM_ROCE_SYNC, 2},
    {NULL, NULL, 0, 0}
  };
  int i;
  for (i = 0; calls[i].name != NULL; i++) {
    lua_pushinteger(L, calls[i].up);
    lua_pushboolean(L, calls[i].block == 2);
    lua_pushcclosure(L, calls[i].fn, 2);
    lua_setfield(L, calls[i].block ? bi : mi, calls[i].name);
  }
}

/* the kernel primitives of this file (upvalue: event name -> number) */
const luaL_Reg lsl_sync_methods[] = {
  {"signal_op", k_signal_op}, {"signal_wait_until", k_signal_wait_until},
  {"wait_signal_value", k_wait_signal_value}, {"quiet", k_quiet}, {"fence", k_fence},
  {"barrier_all", k_barrier_all}, {"sync_all", k_sync_all}, {"ascendc_sync_all", k_sync_all},
  {"shmem_sync_all", k_shmem_sync_all}, {"my_pe", k_my_pe},
  {"mte_quiet", k_mte_quiet}, {"set_mte_config", k_set_mte_config},
  {"ptr", k_ptr}, {"prof_start", k_prof_start}, {"prof_end", k_prof_end},
  {NULL, NULL}
};

/* the machine's team methods */
const luaL_Reg lsl_team_methods[] = {
  {"team_split_strided", m_team_split_strided}, {"team_split_2d", m_team_split_2d},
  {"team_destroy", m_team_destroy},
  {NULL, NULL}
};

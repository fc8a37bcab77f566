/*
** lshmemlab_report.c -- a machine's reports: profiled PE, cycle rows, shadow
** rows, traces and the checks' reports.
*/
#include "lshmemlab.h"

/* m:prof_pe([pe]): get, or set (-1 = off), the profiled PE */
static int m_prof_pe(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  if (!lua_isnoneornil(L, 2)) {
    lua_Integer pe = luaL_checkinteger(L, 2);
    int st;
    if (pe < -1 || pe >= sl_machine_params(lm->m)->n_pes)
      return luaL_argerror(L, 2, lua_pushfstring(L, "PE %I out of range 0..%d", pe,
                                                 sl_machine_params(lm->m)->n_pes - 1));
    st = sl_prof_set_pe(lm->m, (int)pe);
    if (st != SL_OK) return lsl_engine_error(L, lm->m, st, 1);
  }
  lua_pushinteger(L, sl_prof_pe(lm->m));
  return 1;
}

/* m:reset_prof() */
static int m_reset_prof(lua_State *L) {
  sl_prof_reset(lsl_checkmach(L, 1)->m);
  return 0;
}

/* one counter row {block=, frame=, cycles=, count= [, pe=]} */
static void prof_row(lua_State *L, int pe, int b, int f, int64_t cy, int64_t ct) {
  lua_createtable(L, 0, 5);
  if (pe >= 0) { lua_pushinteger(L, pe); lua_setfield(L, -2, "pe"); }
  lua_pushinteger(L, b); lua_setfield(L, -2, "block");
  lua_pushinteger(L, f); lua_setfield(L, -2, "frame");
  lua_pushinteger(L, (lua_Integer)cy); lua_setfield(L, -2, "cycles");
  lua_pushinteger(L, (lua_Integer)ct); lua_setfield(L, -2, "count");
}

/* m:prof_rows(): counters of the profiled PE with a non-zero count */
static int m_prof_rows(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int b, f, n = 0;
  lua_newtable(L);
  for (b = 0; b < SL_PROF_MAX_BLOCK; b++)
    for (f = 0; f < SL_PROF_MAX_FRAME; f++) {
      int64_t cy, ct;
      if (!sl_prof_get(lm->m, b, f, &cy, &ct) || ct == 0) continue;
      prof_row(L, -1, b, f, cy, ct);
      lua_rawseti(L, -2, ++n);
    }
  return 1;
}

/* m:shadow_rows(): frame counters of every PE (frames < 16) */
static int m_shadow_rows(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  int pe, b, f, n = 0, npes = sl_machine_params(lm->m)->n_pes;
  lua_newtable(L);
  for (pe = 0; pe < npes; pe++)
    for (b = 0; b < SL_PROF_MAX_BLOCK; b++)
      for (f = 0; f < SL_SHADOW_FRAMES; f++) {
        int64_t cy, ct;
        if (!sl_shadow_get(lm->m, pe, b, f, &cy, &ct)) return 1;
        if (ct == 0) continue;
        prof_row(L, pe, b, f, cy, ct);
        lua_rawseti(L, -2, ++n);
      }
  return 1;
}

/* m:trace(max): start recording (0 = off) */
static int m_trace(lua_State *L) {
  lmach *lm = lsl_checkmach(L, 1);
  sl_trace_enable(lm->m, (int64_t)luaL_optinteger(L, 2, 1000000));
  return 0;
}

/* m:trace_records([clear]): recorded slices as tables, times in us */
static int m_trace_records(lua_State *L) {
  static const char *const kinds[] = { "mte", "frame", "signal", "wake" };
  lmach *lm = lsl_checkmach(L, 1);
  size_t i, n = sl_trace_count(lm->m);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const sl_trace_rec *r = sl_trace_get(lm->m, i);
    lua_createtable(L, 0, 9);
    lua_pushstring(L, kinds[r->kind]); lua_setfield(L, -2, "kind");
    lua_pushnumber(L, (lua_Number)r->start / SL_PS_PER_US); lua_setfield(L, -2, "ts");
    lua_pushnumber(L, (lua_Number)(r->end - r->start) / SL_PS_PER_US);
    lua_setfield(L, -2, "dur");
    lua_pushinteger(L, r->pe); lua_setfield(L, -2, "pe");
    lua_pushinteger(L, r->block); lua_setfield(L, -2, "block");
    if (r->kind == 1) { lua_pushinteger(L, r->path); lua_setfield(L, -2, "frame"); }
    else if (r->kind != 3) {
      lua_pushstring(L, sl_path_name(r->path)); lua_setfield(L, -2, "path");
      lua_pushinteger(L, (lua_Integer)r->bytes); lua_setfield(L, -2, "bytes");
      lua_pushinteger(L, r->peer_pe); lua_setfield(L, -2, "peer_pe");
      if (r->kind == 0) {
        lua_pushstring(L, sl_pipe_name(r->peer_block)); lua_setfield(L, -2, "pipe");
      }
    } else {
      lua_pushinteger(L, r->peer_pe); lua_setfield(L, -2, "peer_pe");
      lua_pushinteger(L, r->peer_block); lua_setfield(L, -2, "peer_block");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  if (lua_toboolean(L, 2)) sl_trace_clear(lm->m);
  return 1;
}

/* m:check_reports([clear]): the reports of checked runs (sites as ids) */
static int m_check_reports(lua_State *L) {
  static const char *const kinds[] = { "out_of_bounds", "use_after_free",
                                       "uninitialized_read", "race", "sync" };
  lmach *lm = lsl_checkmach(L, 1);
  int clear = lua_toboolean(L, 2);
  size_t i, n = sl_report_count(lm->m);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    const sl_report *r = sl_report_get(lm->m, i);
    lua_createtable(L, 0, 20);
    lua_pushstring(L, kinds[r->kind]); lua_setfield(L, -2, "kind");
    lua_pushinteger(L, (lua_Integer)r->count); lua_setfield(L, -2, "count");
    lua_pushboolean(L, r->write); lua_setfield(L, -2, "write");
    lua_pushinteger(L, (lua_Integer)r->bytes); lua_setfield(L, -2, "bytes");
    if (r->space >= 0) {
      lua_pushstring(L, sl_space_name(r->space)); lua_setfield(L, -2, "space");
      lua_pushstring(L, r->buf < 0 ? "UB" : sl_getbuf(lm->m, r->buf)->name);
      lua_setfield(L, -2, "buffer");
      lua_pushinteger(L, r->pe); lua_setfield(L, -2, "pe");
      lua_pushinteger(L, (lua_Integer)r->off); lua_setfield(L, -2, "offset");
      lua_pushinteger(L, (lua_Integer)r->cap); lua_setfield(L, -2, "size");
    }
    lua_pushinteger(L, r->by_pe); lua_setfield(L, -2, "by_pe");
    lua_pushinteger(L, r->by_block); lua_setfield(L, -2, "by_block");
    if (r->pipe >= 0) { lua_pushstring(L, sl_pipe_name(r->pipe)); lua_setfield(L, -2, "pipe"); }
    lua_pushinteger(L, r->frame); lua_setfield(L, -2, "frame");
    lua_pushnumber(L, (lua_Number)r->time_us); lua_setfield(L, -2, "time_us");
    lua_pushinteger(L, r->site); lua_setfield(L, -2, "site");
    if (r->o_site >= 0 || r->o_pe >= 0) {
      lua_pushinteger(L, r->o_site); lua_setfield(L, -2, "other_site");
      lua_pushinteger(L, r->o_pe); lua_setfield(L, -2, "other_pe");
      lua_pushinteger(L, r->o_block); lua_setfield(L, -2, "other_block");
      if (r->o_pipe >= 0) {
        lua_pushstring(L, sl_pipe_name(r->o_pipe)); lua_setfield(L, -2, "other_pipe");
      }
      lua_pushboolean(L, r->o_write); lua_setfield(L, -2, "other_write");
    }
    if (r->msg[0]) { lua_pushstring(L, r->msg); lua_setfield(L, -2, "what"); }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  if (clear) sl_report_clear(lm->m);
  return 1;
}

/* the machine's report methods */
const luaL_Reg lsl_report_methods[] = {
  {"prof_pe", m_prof_pe}, {"reset_prof", m_reset_prof}, {"prof_rows", m_prof_rows},
  {"shadow_rows", m_shadow_rows}, {"trace", m_trace}, {"trace_records", m_trace_records},
  {"check_reports", m_check_reports},
  {NULL, NULL}
};

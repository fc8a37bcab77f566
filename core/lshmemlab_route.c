/*
** lshmemlab_route.c -- core.route_uniform and core.route_count (lsl_
** prefix): shmemlab.moe's uniform routes drawn, and a PE's rows counted, by
** the core (route.c) into the Lua tables moe.lua and shmemlab.deepep build,
** so that a large run's routes are not drawn or counted by Lua loops.
*/
#include "lshmemlab.h"

/* core.route_uniform(seed, pes, tokens, experts, topk) -> choice: choice[p]
** (p = 0 .. pes - 1) the array (1-based) of PE p's tokens x topk expert ids
** (0-based), drawn as moe.routes draws a uniform routing from moe.rng(seed):
** the PEs in order from one stream */
int lsl_route_uniform(lua_State *L) {
  uint64_t x = (uint64_t)luaL_checkinteger(L, 1);
  lua_Integer pes = luaL_checkinteger(L, 2), tokens = luaL_checkinteger(L, 3);
  lua_Integer experts = luaL_checkinteger(L, 4), topk = luaL_checkinteger(L, 5);
  lua_Integer p, i, rows;
  int32_t *out;
  int64_t *taken;
  luaL_argcheck(L, pes >= 1 && pes <= INT32_MAX, 2, "out of range");
  luaL_argcheck(L, tokens >= 1 && tokens <= INT32_MAX, 3, "out of range");
  luaL_argcheck(L, experts >= 1 && experts <= INT32_MAX, 4, "out of range");
  luaL_argcheck(L, topk >= 1 && topk <= experts && tokens <= INT32_MAX / topk, 5,
                "out of range");
  rows = tokens * topk;
  out = (int32_t *)lua_newuserdatauv(L, (size_t)rows * sizeof(int32_t), 0);
  taken = (int64_t *)lua_newuserdatauv(L, (size_t)topk * sizeof(int64_t), 0);
  lua_createtable(L, 0, (int)pes);
  for (p = 0; p < pes; p++) {
    if (sl_route_uniform(&x, (int64_t)experts, (int)topk, (int64_t)tokens, taken, out) != SL_OK)
      return luaL_error(L, "route_uniform: bad sizes");
    lua_createtable(L, (int)rows, 0);
    for (i = 0; i < rows; i++) {
      lua_pushinteger(L, (lua_Integer)out[i]);
      lua_rawseti(L, -2, i + 1);
    }
    lua_rawseti(L, -2, p);
  }
  return 1;
}

/* a 0-based Lua array of n counts (t[0 .. n - 1]), pushed */
static void push_counts(lua_State *L, const int64_t *c, lua_Integer n) {
  lua_Integer i;
  lua_createtable(L, 0, (int)n);
  for (i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)c[i]);
    lua_rawseti(L, -2, i);
  }
}

/* core.route_count(ids, rows, experts, group) -> per_expert, per_group: the
** expert ids ids[1 .. rows] (integers in [0, experts)) counted per expert
** (per_expert[e], e = 0 .. experts - 1) and per group of `group` experts
** (per_group[g], g = 0 .. experts / group - 1, the last one partial) */
int lsl_route_count(lua_State *L) {
  lua_Integer rows = luaL_checkinteger(L, 2), experts = luaL_checkinteger(L, 3);
  lua_Integer group = luaL_checkinteger(L, 4), groups, i;
  int32_t *ids;
  int64_t *pe, *pg;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argcheck(L, rows >= 0 && rows <= INT32_MAX, 2, "out of range");
  luaL_argcheck(L, experts >= 1 && experts <= INT32_MAX, 3, "out of range");
  luaL_argcheck(L, group >= 1 && group <= experts, 4, "out of range");
  groups = (experts + group - 1) / group;
  ids = (int32_t *)lua_newuserdatauv(L, (size_t)(rows > 0 ? rows : 1) * sizeof(int32_t), 0);
  pe = (int64_t *)lua_newuserdatauv(L, (size_t)(experts + groups) * sizeof(int64_t), 0);
  pg = pe + experts;
  memset(pe, 0, (size_t)(experts + groups) * sizeof(int64_t));
  for (i = 0; i < rows; i++) {
    int isint;
    lua_Integer e;
    lua_rawgeti(L, 1, i + 1);
    e = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint || e < 0 || e >= experts)
      return luaL_error(L, "route_count: row %I is not an expert id in [0, %I)", i + 1, experts);
    ids[i] = (int32_t)e;
  }
  if (sl_route_count(ids, (int64_t)rows, (int64_t)experts, (int64_t)group, pe, pg) != SL_OK)
    return luaL_error(L, "route_count: bad ids");
  push_counts(L, pe, experts);
  push_counts(L, pg, groups);
  return 2;
}

/*
** lshmemlab_route.c -- core.route_uniform (lsl_ prefix): shmemlab.moe's
** uniform routes drawn by the core (route.c) into the Lua tables moe.lua
** builds, so that a large run's routes are not drawn by a Lua loop.
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

/*
** route.c -- MoE routes drawn in C (sl_route_ prefix): shmemlab.moe's
** uniform routing (moe.rng's splitmix64 stream, draw_uniform's picks), bit
** for bit, so that drawing the routes of a large run (millions of (token, k)
** rows) is not a Lua loop. Binding: lshmemlab_route.c (core.route_uniform).
*/
#include <math.h>

#include "sl.h"

/* the next value of moe.rng's stream at state *x (its u64) */
static uint64_t split_next(uint64_t *x) {
  uint64_t z;
  *x += 0x9E3779B97F4A7C15u;
  z = *x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

/* moe.rng's uniform(): the top 53 bits of the next value, in [0, 1) */
static double split_uniform(uint64_t *x) {
  return (double)(split_next(x) >> 11) * 0x1p-53;
}

/* one token's topk distinct experts of `experts` as moe.lua's draw picks them
** with every weight 1, in O(topk^2): the total is then the count of untaken
** experts and u - 1 - 1 ... is exact, so draw picks the (floor(u * total) +
** 1)-th untaken expert (the last when u rounds up to the total). taken[0 ..
** k): the picks so far, ascending (1-based); out[k] = pick - 1 */
static void draw_token(uint64_t *x, int64_t experts, int topk, int64_t *taken, int32_t *out) {
  int k, t, at;
  for (k = 0; k < topk; k++) {
    int64_t total = experts - k;
    int64_t pick = (int64_t)floor(split_uniform(x) * (double)total) + 1;
    if (pick > total) pick = total;
    for (t = 0; t < k && taken[t] <= pick; t++) pick++;
    for (at = k; at > 0 && taken[at - 1] > pick; at--) taken[at] = taken[at - 1];
    taken[at] = pick;
    out[k] = (int32_t)(pick - 1);
  }
}

/* tokens tokens' picks of topk distinct experts each into out (tokens x
** topk, row-major), drawn from the stream at *x (moved on); taken: topk
** scratch integers. Returns SL_EARG when topk is not in [1, experts] or
** experts does not fit an int32 */
int sl_route_uniform(uint64_t *x, int64_t experts, int topk, int64_t tokens, int64_t *taken,
                     int32_t *out) {
  int64_t t;
  if (topk < 1 || topk > experts || experts > INT32_MAX) return SL_EARG;
  for (t = 0; t < tokens; t++) draw_token(x, experts, topk, taken, out + t * topk);
  return SL_OK;
}

/* rows expert ids ids[0 .. rows) counted: per_expert[e] rows to expert e (of
** experts), per_group[e / group] rows to each group of `group` experts (a
** PE's experts). Returns SL_EARG (nothing counted after the id) when an id
** lies outside [0, experts) */
int sl_route_count(const int32_t *ids, int64_t rows, int64_t experts, int64_t group,
                   int64_t *per_expert, int64_t *per_group) {
  int64_t i;
  for (i = 0; i < rows; i++) {
    if (ids[i] < 0 || ids[i] >= experts) return SL_EARG;
    per_expert[ids[i]]++;
    per_group[ids[i] / group]++;
  }
  return SL_OK;
}

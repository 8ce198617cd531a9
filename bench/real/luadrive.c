/* SPDX-License-Identifier: MIT */
/*
 * bench/real/luadrive.c — an application embedding Lua 5.4, for bench/real_projects.py (issue
 * 33): this file is never compiled with the plugin, the Lua library it links is. Its main is
 * not instrumented, so every Lua API call it makes is the outermost activation of a group:
 * one implicit event each (docs/accounting.md, "Events and iterations").
 *
 * Each iteration does what a host program scripting itself in Lua does: builds a table of
 * records from C (lua_createtable, lua_pushinteger/lua_pushstring, lua_seti/lua_setfield),
 * calls a Lua function on it (lua_getglobal, lua_pcall: the VM, the string library,
 * tables), reads the results back (lua_geti, lua_tointegerx, lua_tolstring, lua_rawlen), and
 * every 64th iteration compiles the script again (luaL_loadstring: the parser). Deterministic:
 * the checksum it prints must be the same for every build.
 *
 * Usage: luadrive [iterations]   prints "checksum <hex>" and "cpu_ns=N" (the thread CPU time of
 * the iterations, CLOCK_THREAD_CPUTIME_ID).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

static const char script[] =
    "function summarize(recs, tag)\n"
    "  local total, names = 0, {}\n"
    "  for i = 1, #recs do\n"
    "    local r = recs[i]\n"
    "    total = total + r.qty * r.price\n"
    "    names[#names + 1] = string.upper(r.name) .. ':' .. r.qty\n"
    "  end\n"
    "  table.sort(names)\n"
    "  local s = table.concat(names, ',')\n"
    "  s = s:gsub('[AEIOU]', function(c) return c:lower() end)\n"
    "  return string.format('%s/%d/%s', tag, total, s:sub(1, 40)), total, #names\n"
    "end\n";

static const char *const words[] = {"ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi"};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void load_script(lua_State *L)
{
    if (luaL_loadstring(L, script) != LUA_OK || lua_pcall(L, 0, 0, 0) != LUA_OK) {
        fprintf(stderr, "luadrive: %s\n", lua_tostring(L, -1));
        exit(2);
    }
}

/* One iteration; returns what it read back, folded into h. */
static uint64_t iteration(lua_State *L, unsigned it, uint64_t h)
{
    enum { RECS = 12 };
    char name[32];
    if (it % 64 == 0)
        load_script(L);
    lua_getglobal(L, "summarize");
    lua_createtable(L, RECS, 0);
    for (int i = 1; i <= RECS; i++) {
        unsigned k = (it * 7u + (unsigned)i * 13u) % 97u;
        lua_createtable(L, 0, 3);
        snprintf(name, sizeof name, "%s%s%u", words[k % 8], words[(k / 8) % 8], k);
        lua_pushstring(L, name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, (lua_Integer)(k % 10 + 1));
        lua_setfield(L, -2, "qty");
        lua_pushinteger(L, (lua_Integer)(k * 3 + 5));
        lua_setfield(L, -2, "price");
        lua_seti(L, -2, i);
    }
    lua_pushfstring(L, "it%d", (int)(it % 1000));
    if (lua_pcall(L, 2, 3, 0) != LUA_OK) {
        fprintf(stderr, "luadrive: %s\n", lua_tostring(L, -1));
        exit(2);
    }
    size_t n = 0;
    const char *s = lua_tolstring(L, -3, &n);
    for (size_t i = 0; i < n; i++)
        h = mix(h, (unsigned char)s[i]);
    h = mix(h, (uint64_t)lua_tointegerx(L, -2, NULL));
    h = mix(h, (uint64_t)lua_tointegerx(L, -1, NULL));
    lua_settop(L, 0);
    return h;
}

int main(int argc, char **argv)
{
    unsigned iterations = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
    lua_State *L = luaL_newstate();
    if (!L)
        return 2;
    luaL_openlibs(L);
    uint64_t h = 0;
    long long t0 = thread_cpu_ns();
    for (unsigned it = 0; it < iterations; it++)
        h = iteration(L, it, h);
    long long cpu = thread_cpu_ns() - t0;
    lua_close(L);
    printf("checksum %016llx\ncpu_ns=%lld\n", (unsigned long long)h, cpu);
    return 0;
}

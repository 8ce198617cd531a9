/* SPDX-License-Identifier: MIT */
/*
 * perfgroup/abi.h — the contract between the compiler plugins and the runtime.
 *
 * Both plugins (plugin-gcc/, plugin-clang/) include this header and take every name, size and
 * number from it, so the two can never drift apart. The runtime (runtime/) implements it.
 *
 * What a plugin emits for each instrumented function F (in group "addon", file group "core"):
 *
 *     static struct perfgroup_site __perfgroup_site_F
 *         __attribute__((section(PERFGROUP_SITES_SECTION), aligned(8), used)) = {
 *         PERFGROUP_ABI_VERSION, flags, line,
 *         "addon\0core",         -- PERFGROUP_SITE_GROUPS: attribute group, NUL, file group
 *         "F\0src/addon.c",      -- PERFGROUP_SITE_WHERE: function (mangled), NUL, file
 *         0,                     -- runtime cache slot
 *         0 };                   -- runtime re-entry key
 *
 *     rettype F(args) {
 *         uint64_t tok = 0;
 *         if ((__perfgroup_site_F.key | PERFGROUP_TLS_CUR.mask) != ~0 || CFA > PERFGROUP_TLS_CUR.sp)
 *             tok = PERFGROUP_HOOK_ENTER(&__perfgroup_site_F);
 *         try { body } finally { if (tok != 0) PERFGROUP_HOOK_EXIT(&__perfgroup_site_F, tok); }
 *     }
 *
 * CFA: the function's canonical frame address (the caller's stack pointer at the call), as
 * __builtin_dwarf_cfa() gives it (in a copy inlined into a caller, the caller's). The test
 * is the re-entry check, inline: see "Re-entry without a call" below. With weak-hooks the
 * plugins emit instead `if (&PERFGROUP_HOOK_ENTER) tok = PERFGROUP_HOOK_ENTER(&site)` (the
 * thread-local may not exist: no runtime linked) and `if (&PERFGROUP_HOOK_EXIT)` around the
 * exit.
 *
 * and, once per module (executable or shared object), a reference that makes the module's
 * sites known to the runtime: PERFGROUP_MODULE_REGISTER is called from a constructor with the
 * module's __start_/__stop_ bounds of the section (see "Modules" below).
 *
 * History of PERFGROUP_ABI_VERSION:
 *   1  first version: 32-byte site, enter returns a token, exit takes it back.
 *   2  40-byte site with the re-entry key; the thread-local PERFGROUP_TLS_CUR; an exit hook
 *      is called only with a token that is not 0.
 *   3  lite frames (both plugins): PERFGROUP_TLS_CUR grows to 32 bytes (ctl, top after mask
 *      and sp, which stay at 0 and 8), the token PERFGROUP_TOKEN_LITE, the exit
 *      __perfgroup_exit_lite (referenced weak: see below). A module says 3 (its constructor's
 *      abi_version, its sites' version) when its code may make lite frames; ABI 2's sequence
 *      (either plugin's weak-hooks mode) still says 2.
 * The runtime accepts every version from PERFGROUP_ABI_VERSION_MIN to PERFGROUP_ABI_VERSION,
 * mixed in one process and in one event: ABI 2 code reads only mask and sp, and calls the
 * hooks wherever ABI 3 code would make a lite frame. A runtime of ABI 2 refuses a module of
 * ABI 3 at its registration (the message on stderr, the runtime off): the module links and
 * loads without __perfgroup_exit_lite (a weak reference), and its code never reads past
 * mask and sp while its keys are 0 (a lite frame needs a key with bit 63 set: below).
 */
#ifndef PERFGROUP_ABI_H
#define PERFGROUP_ABI_H

#include <stddef.h>
#include <stdint.h>

#define PERFGROUP_ABI_VERSION 3u
/* The oldest version this runtime accepts, and the version of a module without lite frames. */
#define PERFGROUP_ABI_VERSION_MIN 2u
#define PERFGROUP_ABI_VERSION_NO_LITE 2u

/* Hook names. Plugins must build their calls from these macros, never from literals. */
#define PERFGROUP_HOOK_ENTER       __perfgroup_enter
#define PERFGROUP_HOOK_EXIT        __perfgroup_exit
#define PERFGROUP_MODULE_REGISTER  __perfgroup_register_module
#define PERFGROUP_STR_(x) #x
#define PERFGROUP_STR(x) PERFGROUP_STR_(x)
#define PERFGROUP_HOOK_ENTER_NAME      PERFGROUP_STR(PERFGROUP_HOOK_ENTER)
#define PERFGROUP_HOOK_EXIT_NAME       PERFGROUP_STR(PERFGROUP_HOOK_EXIT)
/* (abi3) A lite frame's exit that found no lite transition left. */
#define PERFGROUP_HOOK_EXIT_LITE       __perfgroup_exit_lite
#define PERFGROUP_HOOK_EXIT_LITE_NAME  PERFGROUP_STR(PERFGROUP_HOOK_EXIT_LITE)
#define PERFGROUP_HOOK_LANDED          __perfgroup_landed
#define PERFGROUP_HOOK_LANDED_NAME     PERFGROUP_STR(PERFGROUP_HOOK_LANDED)
/* The thread-local the inline re-entry check reads (struct perfgroup_cur, initial-exec). */
#define PERFGROUP_TLS_CUR          __perfgroup_cur
#define PERFGROUP_TLS_CUR_NAME     PERFGROUP_STR(PERFGROUP_TLS_CUR)
#define PERFGROUP_MODULE_REGISTER_NAME PERFGROUP_STR(PERFGROUP_MODULE_REGISTER)

/* The ELF section holding every site descriptor of a module, and its bound symbols. */
#define PERFGROUP_SITES_SECTION      "perfgroup_sites"
#define PERFGROUP_SITES_START_NAME   "__start_perfgroup_sites"
#define PERFGROUP_SITES_STOP_NAME    "__stop_perfgroup_sites"
/* Name of the per-module constructor a plugin emits (one per module, hidden, COMDAT/weak so
 * that N translation units of one module give one constructor). */
#define PERFGROUP_MODULE_CTOR_NAME   "__perfgroup_module_ctor"

/* Flags (struct perfgroup_site.flags). */
#define PERFGROUP_SITE_F_GCC        0x0001u /* emitted by the GCC plugin */
#define PERFGROUP_SITE_F_CLANG      0x0002u /* emitted by the Clang plugin */
#define PERFGROUP_SITE_F_CXX        0x0004u /* function name is a C++ mangled name */
#define PERFGROUP_SITE_F_INLINE     0x0008u /* inline/template/COMDAT: may appear in N TUs */
#define PERFGROUP_SITE_F_ATTR       0x0010u /* the attribute group is set (first string non-empty) */
#define PERFGROUP_SITE_F_FILEGROUP  0x0020u /* the file group is set (second string non-empty) */
/* A thread's root function (a start routine given to pthread_create/thrd_create): entered
 * as a thread's outermost frame with no event open, it opens no implicit event (its callees
 * do, docs/accounting.md). The runtime treats `main` so whatever the flag says. */
#define PERFGROUP_SITE_F_ROOT       0x0040u
/* Not a function's site but an entry pointing at one (GCC): its `cache` holds the site's
 * address, set when emitted; the runtime registers that site instead and never writes the
 * entry. The site of a COMDAT function (inline, template) is then a hidden COMDAT variable
 * of its own outside PERFGROUP_SITES_SECTION, so a module keeps one whichever units emit the
 * function (GCC puts every COMDAT variable of one named section into the COMDAT group of the
 * unit's first one: the section itself cannot hold them), and each unit's section holds an
 * indirect entry for it. A runtime older than the flag registers the entry as a site of the
 * same function (name, file, line) and resolves the real site at its first call. */
#define PERFGROUP_SITE_F_INDIRECT   0x0080u

/*
 * One static, writable descriptor per instrumented function, in PERFGROUP_SITES_SECTION.
 * Fixed size 40, alignment 8, so the section is a dense array (emit with an explicit
 * user alignment of 8: GCC raises statics >= 32 bytes to 32 otherwise, leaving holes).
 *
 *   offset  size  field
 *        0     2  version   PERFGROUP_ABI_VERSION, or PERFGROUP_ABI_VERSION_NO_LITE for code
 *                           that makes no lite frames
 *        2     2  flags     PERFGROUP_SITE_F_*
 *        4     4  line      line of the function's definition (0 if unknown)
 *        8     8  groups    "attr\0file\0": attribute group, NUL, file group, NUL; either may
 *                           be empty (""), not both
 *       16     8  where     "function\0file\0": function name (assembler/mangled), NUL,
 *                           defining file as the compiler saw it, NUL
 *       24     8  cache     owned by the runtime (0 when emitted); the runtime stores its
 *                           resolved per-function record here (PERFGROUP_SITE_F_INDIRECT: the
 *                           site's address, emitted so, never written)
 *       32     8  key       owned by the runtime (0 when emitted, and while the function must
 *                           always call its hooks): the complement of the re-entry bits of the
 *                           function's active groups, tested against PERFGROUP_TLS_CUR.mask
 */
struct perfgroup_site {
    uint16_t version;
    uint16_t flags;
    uint32_t line;
    const char *groups;
    const char *where;
    void *cache;
    uint64_t key;
};

/*
 * Re-entry without a call. A call of a function whose every active group is already running
 * on the thread (the stopwatches started by enclosing frames) changes nothing: most calls of
 * a code base put into groups. The runtime gives each group a bit (the first 63 groups that
 * are active), keeps per thread the mask of the groups running in the current event and the
 * stack position of the innermost frame that started one (the enter hook's CFA), and writes
 * in each site the complement of its function's active groups' bits. A call whose site key
 * has a 0 only where the thread's mask has a 1 (key | mask == ~0: every active group of the
 * function runs) and whose CFA is at or below that position (a callee of that frame, not a
 * call made after a longjmp out of it) skips both hooks. Key 0 (as emitted, a group without
 * a bit, trace mode, the text trace) never skips: the mask never has bit 63. sp == 0: no
 * skipping (no frame, no event open, ...). The runtime re-keys every site when a group's
 * activation or the recording mode changes.
 *
 *   offset  size  field
 *        0     8  mask  bit b: the group of bit b is running in the thread's current event
 *        8     8  sp    the innermost frame's stack position; 0: no skipping
 *       16     8  ctl   (abi3, lite frames) the thread's control words, never NULL: a static
 *                       one whose `left` is 0 until the runtime gives the thread its own
 *       24     8  top   (abi3) the innermost frame: a lite frame's re-entry bit (0-63),
 *                       PERFGROUP_TOP_RT (the runtime's innermost frame) or PERFGROUP_TOP_NONE
 *
 * Lite frames (abi3, both plugins; docs/accounting.md "Lite frames"): in an event the runtime
 * made hot, a call that starts exactly one group (s = ~(key | mask) has one bit, not bit 63:
 * a key of 0 never makes one), below the innermost frame, with more than one lite transition
 * `left` (tested in that order: ctl is read last, so code whose keys are 0 — a module a
 * runtime of ABI 2 refused — never reads past sp), makes no call: it saves mask, sp and top in locals, counts
 * `left` down, sets mask |= its bit, sp = its CFA, top = its bit, counts one activation in
 * ctl->acts[bit]; its exit counts `left` down and restores them (left <= 1: through
 * __perfgroup_exit_lite). The runtime samples segments by setting `left`, and its ticker
 * stores 1 there (a word in the heap, never another thread's TLS) to force a reading.
 */
struct perfgroup_lite {
    uint64_t left;      /* lite transitions left before one goes through the runtime; <= 1: none */
    uint32_t acts[64];  /* lite activations per re-entry bit, folded into the groups at commit */
};
struct perfgroup_cur {
    uint64_t mask;
    uintptr_t sp;
    struct perfgroup_lite *ctl;
    uint64_t top;
};
#define PERFGROUP_TOP_RT   64u
#define PERFGROUP_TOP_NONE 65u
/* The token of a lite frame (made inline): never a runtime token (their bits 48-63 are 0). */
#define PERFGROUP_TOKEN_LITE 0x8000000000000000ull

#ifdef __cplusplus
#define PERFGROUP_ABI_NOTHROW_ noexcept
extern "C" {
#else
#define PERFGROUP_ABI_NOTHROW_ __attribute__((nothrow))
#endif
#define PERFGROUP_ABI_EXPORT_ __attribute__((visibility("default")))

/*
 * Called at function entry. Returns a token the exit hook gets back; 0 means "nothing to do
 * at exit" (switch off, re-entry of running groups). Never throws, never calls user code,
 * never blocks.
 */
PERFGROUP_ABI_EXPORT_ uint64_t PERFGROUP_HOOK_ENTER(struct perfgroup_site *site) PERFGROUP_ABI_NOTHROW_;

/* The thread's re-entry state: written by the runtime only, read by instrumented code. */
PERFGROUP_ABI_EXPORT_ extern __thread struct perfgroup_cur PERFGROUP_TLS_CUR
    __attribute__((tls_model("initial-exec")));

/*
 * Called on every way out of the function — return, and unwinding of an exception — with
 * the token its enter returned, when that is not 0. Exits may be skipped (longjmp, exit(), a frame without
 * unwind tables): the runtime resynchronises from the token and the stack position.
 */
PERFGROUP_ABI_EXPORT_ void PERFGROUP_HOOK_EXIT(struct perfgroup_site *site, uint64_t token) PERFGROUP_ABI_NOTHROW_;
/* (abi3) A lite frame's exit that found no lite transition left, with the state its entry
 * saved. Plugins reference it weak (only a lite frame calls it, and a runtime without it never
 * keys the module's sites): a module of ABI 3 links and loads with a runtime of ABI 2, which
 * then refuses it at its registration rather than at the link or dlopen. */
PERFGROUP_ABI_EXPORT_ void PERFGROUP_HOOK_EXIT_LITE(struct perfgroup_site *site, uint64_t mask, uintptr_t sp,
                                                 uint64_t top) PERFGROUP_ABI_NOTHROW_;

/*
 * Called right after every call of a returns_twice function (setjmp, sigsetjmp, _setjmp,
 * __builtin_setjmp; not vfork) in every function of a unit the plugins compile, instrumented
 * or not, as `if (&PERFGROUP_HOOK_LANDED) PERFGROUP_HOOK_LANDED()`: when a longjmp lands there,
 * the frames below the landing function are dead and the runtime drops them at once (else a
 * later call at their depth could take them for live ancestors: docs/accounting.md, "Skipped
 * exits"). On setjmp's first return it finds none. Referenced weak: no link dependency, no
 * ABI version of its own (a runtime without it is never called).
 */
PERFGROUP_ABI_EXPORT_ void PERFGROUP_HOOK_LANDED(void) PERFGROUP_ABI_NOTHROW_;

/*
 * Called once per module from the plugin-emitted constructor, with the bounds of that
 * module's PERFGROUP_SITES_SECTION. abi_version lets the runtime refuse a module built for
 * another ABI (reported once on stderr; the runtime then stays off rather than miscount): one
 * outside PERFGROUP_ABI_VERSION_MIN .. PERFGROUP_ABI_VERSION.
 * Safe to call before main, from several modules, and more than once for one module.
 */
PERFGROUP_ABI_EXPORT_ void PERFGROUP_MODULE_REGISTER(uint32_t abi_version, struct perfgroup_site *start,
                               struct perfgroup_site *stop) PERFGROUP_ABI_NOTHROW_;

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(struct perfgroup_site) == 40, "perfgroup_site must be 40 bytes");
static_assert(alignof(struct perfgroup_site) == 8, "perfgroup_site must be 8-aligned");
static_assert(offsetof(struct perfgroup_site, key) == 32, "perfgroup_site.key at 32");
static_assert(sizeof(struct perfgroup_cur) == 32, "perfgroup_cur must be 32 bytes");
static_assert(offsetof(struct perfgroup_cur, sp) == 8, "perfgroup_cur.sp at 8");
static_assert(offsetof(struct perfgroup_cur, mask) == 0, "perfgroup_cur.mask at 0 (ABI 2)");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct perfgroup_site) == 40, "perfgroup_site must be 40 bytes");
_Static_assert(_Alignof(struct perfgroup_site) == 8, "perfgroup_site must be 8-aligned");
_Static_assert(offsetof(struct perfgroup_site, key) == 32, "perfgroup_site.key at 32");
_Static_assert(sizeof(struct perfgroup_cur) == 32, "perfgroup_cur must be 32 bytes");
_Static_assert(offsetof(struct perfgroup_cur, sp) == 8, "perfgroup_cur.sp at 8");
_Static_assert(offsetof(struct perfgroup_cur, mask) == 0, "perfgroup_cur.mask at 0 (ABI 2)");
#endif

#endif /* PERFGROUP_ABI_H */
